"""A task's excluded days (SPEC §20): ``exclude_dates`` (local dates) and ``holidays`` (a country's
public holidays, optionally one subdivision's, from the ``holidays`` package).

The dates are read in the cron schedule's own zone: an occurrence whose local date is excluded is
not an occurrence at all — it is never fired, never counted, and the preview and the timeline show
it struck through. Only cron schedules take exclusions (an interval or a once schedule has no
calendar of its own). Pure but for the holiday tables, which are computed per year and cached.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import holidays as holiday_tables

from app.core.errors import InvalidInput

MAX_DATES = 366
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
EXCLUDED_DATE = "excluded date"
_ONLY_CRON = ("only a cron schedule has local dates to exclude; write the schedule as cron, or send "
              "exclude_dates [] and holidays null with it")


@dataclasses.dataclass(frozen=True)
class Holidays:
    country: str
    subdivision: str | None = None

    def as_json(self) -> dict[str, str | None]:
        return {"country": self.country, "subdivision": self.subdivision}

    def label(self) -> str:
        return f"{self.country}-{self.subdivision}" if self.subdivision else self.country


@dataclasses.dataclass(frozen=True)
class Exclusions:
    """Excluded local dates; ``reason(day)`` says why a day is excluded (None: it is not)."""

    dates: frozenset[dt.date] = frozenset()
    holidays: Holidays | None = None

    def __bool__(self) -> bool:
        return bool(self.dates) or self.holidays is not None

    def reason(self, day: dt.date) -> str | None:
        if self.holidays is not None:
            name = _year_table(self.holidays.country, self.holidays.subdivision, day.year).get(day)
            if name is not None:
                return name
        return EXCLUDED_DATE if day in self.dates else None

    def days_between(self, first: dt.date, last: dt.date) -> list[tuple[dt.date, str]]:
        """The excluded days in ``[first, last]`` with their reasons, ascending."""
        found: dict[dt.date, str] = {day: EXCLUDED_DATE for day in self.dates if first <= day <= last}
        if self.holidays is not None:
            for year in range(first.year, last.year + 1):
                table = _year_table(self.holidays.country, self.holidays.subdivision, year)
                found.update((day, name) for day, name in table.items() if first <= day <= last)
        return sorted(found.items())

    # -- the stored form (two columns of scheduled_tasks) -------------------------------------
    def dates_json(self) -> str:
        return json.dumps(sorted(day.isoformat() for day in self.dates))

    def holidays_json(self) -> str | None:
        return None if self.holidays is None else json.dumps(self.holidays.as_json(), sort_keys=True)

    def as_json(self) -> dict[str, Any]:
        """The API form: ``{"exclude_dates": [...], "holidays": {...} | None}``."""
        return {"exclude_dates": sorted(day.isoformat() for day in self.dates),
                "holidays": None if self.holidays is None else self.holidays.as_json()}


NONE = Exclusions()


def stored(exclude_dates: str | None, holidays: str | None) -> Exclusions:
    """The exclusions of a task row's two columns (written by :func:`check`, so trusted)."""
    dates = frozenset(dt.date.fromisoformat(day) for day in json.loads(exclude_dates or "[]"))
    table = json.loads(holidays) if holidays else None
    return Exclusions(dates, Holidays(table["country"], table.get("subdivision")) if table else None)


def of_task(task: Any) -> Exclusions:
    return stored(getattr(task, "exclude_dates", None), getattr(task, "holidays", None))


def check(exclude_dates: object, holidays: object, *, cron: bool = True) -> Exclusions:
    """Validate the two API fields; raises InvalidInput naming ``exclude_dates``, ``holidays``,
    ``holidays.country`` or ``holidays.subdivision``. ``cron``: whether the schedule is cron."""
    exclusions = Exclusions(_dates(exclude_dates), _holidays(holidays))
    if exclusions and not cron:
        raise InvalidInput("exclude_dates" if exclusions.dates else "holidays", _ONLY_CRON)
    return exclusions


def _dates(value: object) -> frozenset[dt.date]:
    if value is None:
        return frozenset()
    if not isinstance(value, list | tuple):
        raise InvalidInput("exclude_dates", "must be a list of dates such as [\"2026-12-24\"]")
    if len(value) > MAX_DATES:
        raise InvalidInput("exclude_dates", f"holds {len(value)} dates; the limit is {MAX_DATES}")
    days = set()
    for item in value:
        days.add(_date(item))
    return frozenset(days)


def _date(item: object) -> dt.date:
    if isinstance(item, str) and _ISO_DATE.fullmatch(item):
        try:
            return dt.date.fromisoformat(item)
        except ValueError:
            pass
    raise InvalidInput("exclude_dates", f"{str(item)[:40]!r} is not a date written YYYY-MM-DD")


def _holidays(value: object) -> Holidays | None:
    if value is None:
        return None
    if isinstance(value, str):  # "US", "DE-BY": the country and its subdivision in one code
        country, _, subdivision = value.partition("-")
        value = {"country": country, "subdivision": subdivision or None}
    if not isinstance(value, dict) or set(value) - {"country", "subdivision"}:
        raise InvalidInput("holidays", "must be null or {\"country\": \"US\", \"subdivision\": null}")
    country = value.get("country")
    supported = holiday_tables.list_supported_countries(include_aliases=False)
    if not isinstance(country, str) or country.upper() not in holiday_tables.list_supported_countries():
        raise InvalidInput("holidays.country", f"{str(country)[:20]!r} is not a country code the holidays "
                           "calendar knows (ISO 3166-1 alpha-2, such as US, DE or GB)")
    country = canonical_country(country.upper())
    subdivision = value.get("subdivision")
    if subdivision in (None, ""):
        return Holidays(country)
    known = {code.upper(): code for code in supported[country]}
    if not isinstance(subdivision, str) or subdivision.upper() not in known:
        listed = ", ".join(sorted(known)[:12]) + (", …" if len(known) > 12 else "")
        raise InvalidInput("holidays.subdivision", f"{str(subdivision)[:20]!r} is not a subdivision of {country}"
                           + (f" (known: {listed})" if known else f"; {country} has none"))
    return Holidays(country, known[subdivision.upper()])


@lru_cache(maxsize=64)
def canonical_country(code: str) -> str:
    """The calendar's own ISO alpha-2 code for an alias it takes (UK → GB, USA → US)."""
    return str(holiday_tables.country_holidays(code).country)


@lru_cache(maxsize=512)
def _year_table(country: str, subdivision: str | None, year: int) -> dict[dt.date, str]:
    """One year's public holidays by date, named in English where the calendar has it."""
    languages: Iterable[str] = holiday_tables.country_holidays(country).supported_languages or ()
    language = "en_US" if "en_US" in languages else None
    table = holiday_tables.country_holidays(country, subdiv=subdivision, years=year, language=language)
    return {day: name for day, name in table.items() if day.year == year}
