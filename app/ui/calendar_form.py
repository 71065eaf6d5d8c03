"""The dialog's SPEC §20 exclusions, typed text in and the API's values out (pure, no database):
"Skip these dates" (``exclude_dates``: local dates written YYYY-MM-DD, separated by commas or
spaces) and "Skip public holidays" (``holidays``: a country code the ``holidays`` calendar knows,
and optionally one of its subdivisions).

Only a cron schedule has local dates: for the other kinds the body sends none, so exclusions typed
before switching kind (or stored while the task was cron) are cleared rather than refused unseen.
What the service says is wrong is named by its field (``exclude_dates``, ``holidays.country``,
``holidays.subdivision``) and shown under the input it belongs to.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import holidays as holiday_tables
from holidays.registry import COUNTRIES  # the package's own table of country names

from app.core.errors import InvalidInput
from app.schedules import exclusions

LABELS = {"exclude_dates": "Skip these dates", "holidays": "Skip public holidays",
          "holidays.country": "Holiday country", "holidays.subdivision": "Holiday region"}
INPUTS = {"exclude_dates": "exclude_dates", "holidays": "holidays_country", "holidays.country": "holidays_country",
          "holidays.subdivision": "holidays_subdivision"}
FIELDS = ("exclude_dates", "holidays_country", "holidays_subdivision")
LIMITS = {"exclude_dates": 12 * exclusions.MAX_DATES, "holidays_country": 8, "holidays_subdivision": 24}
DATES_HINT = "YYYY-MM-DD, separated by commas or spaces; read in the schedule's time zone"
HOLIDAYS_HINT = "A country code such as US or DE, and optionally a region such as CA or BY"
_SEPARATORS = re.compile(r"[\s,;]+")
_CAPITALS = re.compile(r"(?<=[a-z])(?=[A-Z])")


def dates_of(text: str) -> list[str]:
    """The typed dates, sorted and without repeats (as the service stores them); each is checked by
    the service, which names the one that is not a date."""
    return sorted({item for item in _SEPARATORS.split(text.strip()) if item})


def dates_text(dates: list[str]) -> str:
    """Stored dates as the field shows them: ``2026-12-24, 2026-12-31``."""
    return ", ".join(dates)


def holidays_of(country: str, subdivision: str) -> dict[str, str | None] | None:
    """The ``holidays`` value: None without a country; a region without a country is refused."""
    code, region = country.strip().upper(), subdivision.strip()
    if not code:
        if region:
            raise InvalidInput("holidays.country", f"pick the country whose region {region[:24]!r} is, such as DE "
                                                   "for BY")
        return None
    return {"country": code, "subdivision": region or None}


def body(kind: str, exclude_dates: str, country: str, subdivision: str) -> dict[str, Any]:
    """``{"exclude_dates": [...], "holidays": {...} | None}``: empty unless the schedule is cron."""
    if kind != "cron":
        return {"exclude_dates": [], "holidays": None}
    return {"exclude_dates": dates_of(exclude_dates), "holidays": holidays_of(country, subdivision)}


def readable(kind: str, exclude_dates: str, country: str, subdivision: str) -> dict[str, Any]:
    """The exclusions as far as they can be read, for the preview: a part the service would refuse
    is left out (its own error says why)."""
    if kind != "cron":
        return body(kind, "", "", "")
    dates = [day for day in dates_of(exclude_dates) if _is_date(day)][:exclusions.MAX_DATES]
    try:
        calendar = holidays_of(country, subdivision)
        exclusions.check(None, calendar)
    except InvalidInput:
        calendar = None
    return {"exclude_dates": dates, "holidays": calendar}


def _is_date(text: str) -> bool:
    try:
        exclusions.check([text], None)
    except InvalidInput:
        return False
    return True


def inputs_of(exclude_dates: list[str], holidays: dict[str, Any] | None) -> dict[str, str]:
    """The three inputs filled from the API's values (a stored task, or a phrase's read-back)."""
    return {"exclude_dates": dates_text(exclude_dates),
            "holidays_country": (holidays or {}).get("country") or "",
            "holidays_subdivision": (holidays or {}).get("subdivision") or ""}


def stored_columns(body: dict[str, Any]) -> dict[str, str | None]:
    """A body's exclusions as a task row's two columns (``exclude_dates``, ``holidays``), to build a
    task from it; what cannot be read is left out."""
    try:
        found = exclusions.check(body.get("exclude_dates"), body.get("holidays"))
    except InvalidInput:
        found = exclusions.NONE
    return {"exclude_dates": found.dates_json(), "holidays": found.holidays_json()}


def stored_inputs(task: Any) -> dict[str, str]:
    """A stored task's exclusions as the dialog's inputs."""
    shown = exclusions.of_task(task).as_json()
    return inputs_of(shown["exclude_dates"], shown["holidays"])


@functools.cache
def countries() -> tuple[tuple[str, str], ...]:
    """(code, name) of every country the holiday calendar knows by a two-letter code, by name."""
    supported = holiday_tables.list_supported_countries()
    names = {entry[1]: _CAPITALS.sub(" ", entry[0]) for entry in COUNTRIES.values() if len(entry) > 1}
    return tuple(sorted(((code, names.get(code, code)) for code in supported if len(code) == 2),
                        key=lambda item: item[1]))


def subdivisions(country: str) -> list[str]:
    """The subdivision codes of ``country`` (typed in any case), [] for an unknown one."""
    return list(holiday_tables.list_supported_countries().get(country.strip().upper(), ()))
