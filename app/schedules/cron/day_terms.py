"""The calendar items of SPEC §20: days a month's own shape decides, beyond classic cron.

Day-of-month: ``L`` (the last day), ``L-n`` (n days before it), ``LW`` (the last weekday) and
``nW`` (the weekday nearest day n, never leaving the month). Day-of-week: ``dL`` (the last d of
the month) and ``d#n`` (the n-th d). Each item resolves, for one month — its length and the
weekday of its 1st, which is all a month's calendar is — to at most one day. The meanings are
Quartz's, the scheduler that made them common; docs/CRON.md has the table and the edges.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

# weekday numbers as in cron: 0 = Sunday … 6 = Saturday
_SATURDAY, _SUNDAY = 6, 0
MAX_BEFORE_LAST = 30
MAX_NTH = 5
_DOM_ITEM = re.compile(r"(?i)(?P<last>L)(?:-(?P<before>[0-9]{1,4}))?(?P<w>W)?|(?P<day>[0-9]{1,4})W")
_DOW_ITEM = re.compile(r"(?i)(?P<day>[0-9]{1,4}|[a-z]{3})(?:(?P<last>L)|#(?P<nth>[0-9]{1,4}))")
_DOM_MARK = re.compile(r"(?i)[LW]")
_ANY_CALENDAR = re.compile(r"(?i)L(-[0-9]+)?W?|[0-9]+W|[0-9a-z]+L|[0-9a-z]+#[0-9]+")


class DayKind(enum.StrEnum):
    LAST = "L"  # value: days before the last day (0 for ``L``)
    LAST_WEEKDAY = "LW"
    NEAREST_WEEKDAY = "W"  # value: the day of the month
    LAST_OF_WEEK = "dL"  # value: the weekday
    NTH_OF_WEEK = "d#n"  # value: the weekday, nth: which one


@dataclass(frozen=True)
class DayTerm:
    """One calendar item; ``day(ndays, first_dow)`` is the day it names in such a month, or None."""

    kind: DayKind
    value: int = 0
    nth: int = 0

    def day(self, ndays: int, first_dow: int) -> int | None:
        if self.kind is DayKind.LAST:
            day = ndays - self.value
            return day if day >= 1 else None
        if self.kind is DayKind.LAST_WEEKDAY:
            return _weekday_at_or_before(ndays, first_dow)
        if self.kind is DayKind.NEAREST_WEEKDAY:
            return _nearest_weekday(self.value, ndays, first_dow) if self.value <= ndays else None
        if self.kind is DayKind.LAST_OF_WEEK:
            last_dow = (first_dow + ndays - 1) % 7
            return ndays - (last_dow - self.value) % 7
        day = 1 + (self.value - first_dow) % 7 + 7 * (self.nth - 1)
        return day if day <= ndays else None

    def possible_in(self, longest: int) -> bool:
        """Whether a month of at most ``longest`` days can have this day (day-of-month items)."""
        if self.kind is DayKind.LAST:
            return longest - self.value >= 1
        if self.kind is DayKind.NEAREST_WEEKDAY:
            return self.value <= longest
        return True


def _dow(day: int, first_dow: int) -> int:
    return (first_dow + day - 1) % 7


def _weekday_at_or_before(day: int, first_dow: int) -> int:
    dow = _dow(day, first_dow)
    return day - 1 if dow == _SATURDAY else day - 2 if dow == _SUNDAY else day


def _nearest_weekday(day: int, ndays: int, first_dow: int) -> int:
    """Quartz's ``nW``: a Saturday moves to the Friday before, a Sunday to the Monday after — unless
    that would leave the month (Saturday the 1st → Monday the 3rd, Sunday the last → Friday)."""
    dow = _dow(day, first_dow)
    if dow == _SATURDAY:
        return day - 1 if day > 1 else day + 2
    if dow == _SUNDAY:
        return day + 1 if day < ndays else day - 2
    return day


def is_dom_item(item: str) -> bool:
    """Whether a day-of-month item is a calendar item (day-of-month has no names, so any L or W)."""
    return bool(_DOM_MARK.search(item))


def is_dow_item(item: str) -> bool:
    """Whether a day-of-week item is a calendar item: ``#`` or ``L`` anywhere (no weekday name holds an L)."""
    return "#" in item or "l" in item.lower()


def looks_like_calendar_item(item: str) -> bool:
    """Whether an item a classic field refused was meant as a calendar item (for a better message)."""
    return bool(_ANY_CALENDAR.fullmatch(item))


def parse_dom_item(item: str) -> tuple[DayTerm | None, str | None]:
    """A day-of-month calendar item → (term, None), or (None, why it is refused)."""
    match = _DOM_ITEM.fullmatch(item)
    if match is None:
        return None, f"{item!r} is not a calendar item (L, L-n, LW or nW)"
    if match["day"] is not None:
        day = int(match["day"])
        if not 1 <= day <= 31:
            return None, f"{item!r}: the day before W must be 1-31, not {day}"
        return DayTerm(DayKind.NEAREST_WEEKDAY, day), None
    if match["w"]:
        if match["before"] is not None:
            return None, f"{item!r}: W goes with L or a day (LW, 15W), not with L-n"
        return DayTerm(DayKind.LAST_WEEKDAY), None
    before = int(match["before"]) if match["before"] is not None else 0
    if before > MAX_BEFORE_LAST:
        return None, f"{item!r}: L-n takes n from 0 to {MAX_BEFORE_LAST}, not {before}"
    return DayTerm(DayKind.LAST, before), None


def parse_dow_item(item: str, names: tuple[str, ...]) -> tuple[DayTerm | None, str | None]:
    """A day-of-week calendar item (``5L``, ``friL``, ``1#2``, ``mon#2``) → (term, None) or (None, why)."""
    if item.upper() == "L":
        return None, "'L' alone is not a day of the week; write 5L for the last Friday of the month"
    match = _DOW_ITEM.fullmatch(item)
    if match is None:
        return None, f"{item!r} is not a calendar item (dL for the last d of the month, d#n for the n-th)"
    token = match["day"]
    if token.isdigit():
        dow = int(token)
        if dow > 7:
            return None, f"{item!r}: {dow} is out of range 0-7"
    elif token.lower() in names:
        dow = names.index(token.lower())
    else:
        return None, f"{item!r}: {token!r} is not a day of the week"
    dow %= 7
    if match["last"]:
        return DayTerm(DayKind.LAST_OF_WEEK, dow), None
    nth = int(match["nth"])
    if not 1 <= nth <= MAX_NTH:
        return None, f"{item!r}: a month has at most {MAX_NTH} of a weekday, so n in d#n is 1-{MAX_NTH}, not {nth}"
    return DayTerm(DayKind.NTH_OF_WEEK, dow, nth), None


def days_of(terms: tuple[DayTerm, ...], ndays: int, first_dow: int) -> set[int]:
    """The days the items name in a month of ``ndays`` days whose 1st is weekday ``first_dow``."""
    found = (term.day(ndays, first_dow) for term in terms)
    return {day for day in found if day is not None}
