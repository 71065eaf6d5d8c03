"""The exclusion suffix of a schedule phrase (SPEC §20): ``excluding 2026-12-24 and 2026-12-31``,
``except Dec 24 2026``, ``excluding US holidays``, ``excluding public holidays in DE-BY``.

The result is what a task stores (contract B): sorted, unique local dates "YYYY-MM-DD" and at most
one holiday calendar ``{"country": "DE", "subdivision": "BY"}`` the ``holidays`` package knows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from functools import cache

from app.schedules.exclusions import canonical_country
from app.schedules.phrases_time import calendar_day, starts_date
from app.schedules.phrases_words import Cursor, Kind, refuse

INTRODUCERS = ("excluding", "except", "but", "skipping", "without")
MAX_EXCLUDED_DATES = 366
_REGION = re.compile(r"(?P<country>[a-z]{2})(?:-(?P<subdivision>[a-z0-9]{1,5}))?")
_HOLIDAY_WORDS = ("holidays", "holiday")


@dataclass
class Exclusions:
    """What the suffix excluded, and how it was typed (for refusals)."""

    dates: list[str] = field(default_factory=list)
    holidays: dict[str, str | None] | None = None
    typed: str = ""


def exclusions(cursor: Cursor, today: date) -> Exclusions:
    """The exclusion suffix at the cursor, if any (an empty Exclusions when there is none)."""
    if not cursor.is_word(*INTRODUCERS):
        return Exclusions()
    start = cursor.at
    if cursor.take().value == "but":
        cursor.expect('"not"', "not")
    cursor.accept("on", "for")
    found = Exclusions()
    while True:
        _item(cursor, today, found)
        if not cursor.separator():
            break
        cursor.accept("on")
    if len(found.dates) > MAX_EXCLUDED_DATES:
        raise refuse(f"at most {MAX_EXCLUDED_DATES} dates can be excluded, not {len(found.dates)}")
    found.dates = sorted(set(found.dates))
    found.typed = cursor.since(start)
    return found


def _item(cursor: Cursor, today: date, found: Exclusions) -> None:
    if starts_date(cursor):
        day = calendar_day(cursor)
        if day.year is None:
            raise refuse(f'"{day.typed}" needs a year (e.g. {day.typed} {today.year}): an excluded date is one '
                         "day, not the same day every year")
        excluded = date(day.year, day.month, day.day)
        if excluded < today:
            raise refuse(f'"{day.typed}" is in the past (today is {today.isoformat()})')
        found.dates.append(excluded.isoformat())
        return
    start = cursor.at
    region = _holiday_region(cursor)
    if found.holidays is not None:
        raise refuse(f'"{cursor.since(start)}": only one holiday calendar can be excluded')
    found.holidays = _calendar(region, cursor.since(start))


def _holiday_region(cursor: Cursor) -> str:
    """``US holidays``, ``DE-BY public holidays``, ``public holidays in DE-BY``, ``holidays in US``."""
    token = cursor.peek()
    if token is not None and token.kind is Kind.WORD and _REGION.fullmatch(token.value) and \
            (cursor.is_word(*_HOLIDAY_WORDS, ahead=1) or cursor.is_word("public", "bank", ahead=1)):
        region = cursor.take()
        cursor.accept("public", "bank")
        cursor.expect('"holidays"', *_HOLIDAY_WORDS)
        return cursor.quote(region)
    if cursor.accept("public", "bank") or cursor.is_word(*_HOLIDAY_WORDS):
        cursor.expect('"holidays"', *_HOLIDAY_WORDS)
        cursor.expect('"in" and a country code, e.g. "holidays in US" or "public holidays in DE-BY"', "in")
        region = cursor.peek()
        if region is None or region.kind is not Kind.WORD:
            raise cursor.unexpected("a country code such as US, or a country and subdivision such as DE-BY")
        return cursor.quote(cursor.take())
    raise cursor.unexpected("a date (2026-12-24, Dec 24 2026) or a holiday calendar (US holidays, "
                            "public holidays in DE-BY)")


@cache
def _supported() -> dict[str, tuple[str, ...]]:
    import holidays  # imported on first use: the package loads hundreds of calendars

    return {code.upper(): tuple(subs) for code, subs in holidays.list_supported_countries().items()}


def _calendar(region: str, typed: str) -> dict[str, str | None]:
    match = _REGION.fullmatch(region.lower())
    if match is None:
        raise refuse(f'"{region}" is not a country code such as US or a country and subdivision such as DE-BY')
    country, wanted = match["country"].upper(), match["subdivision"]
    supported = _supported()
    if country not in supported:
        raise refuse(f'"{typed}": {country} is not a country the holiday calendar knows (use an ISO 3166 '
                     "code such as US, DE, FR)")
    country = canonical_country(country)  # an alias the calendar takes (UK, USA) is stored as its code
    if wanted is None:
        return {"country": country, "subdivision": None}
    for subdivision in supported[country]:
        if subdivision.lower() == wanted:
            return {"country": country, "subdivision": subdivision}
    known = ", ".join(s for s in supported[country] if len(s) <= 5) or "none"
    raise refuse(f'"{typed}": {wanted.upper()} is not a subdivision of {country} (it has {known})')
