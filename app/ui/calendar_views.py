"""SPEC §20's exclusions as the UI says them (pure): a task card's "Skips US public holidays and 2
dates", and why an occurrence is excluded (the dialog's preview and the drawer's timeline).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from app.schedules import exclusions

LISTED_DATES = 12  # a card's tooltip names this many dates, then "and N more"


def _day(day: dt.date) -> str:
    return f"{day:%a} {day.day} {day:%b %Y}"


def exclusion_words(task: Any) -> str:
    """``Skips US public holidays and 2 dates`` / ``Skips Thu 24 Dec 2026`` / "" when it skips nothing."""
    found = exclusions.of_task(task)
    if not found:
        return ""
    parts = []
    if found.holidays is not None:
        parts.append(f"{found.holidays.label()} public holidays")
    if len(found.dates) == 1:
        parts.append(_day(next(iter(found.dates))))
    elif found.dates:
        parts.append(f"{len(found.dates)} dates")
    return "Skips " + " and ".join(parts)


def exclusion_dates(task: Any) -> str:
    """The skipped dates by name, for the card's tooltip: ``Thu 24 Dec 2026, Thu 31 Dec 2026``."""
    days = sorted(exclusions.of_task(task).dates)
    named = ", ".join(_day(day) for day in days[:LISTED_DATES])
    more = len(days) - LISTED_DATES
    return f"{named} and {more} more" if more > 0 else named


def reason_words(reason: str) -> str:
    """An exclusion's reason as shown: the holiday's name, or "skipped date" for a listed date."""
    return "skipped date" if reason == exclusions.EXCLUDED_DATE else reason


def excluded_label(reason: str) -> str:
    """``excluded · Christmas Day`` / ``excluded · skipped date``."""
    return f"excluded · {reason_words(reason)}"
