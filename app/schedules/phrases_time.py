"""Times of day, calendar dates and wall-clock instants of the schedule phrase grammar (SPEC §20).

Times: ``9``, ``9am``, ``9 pm``, ``9:30``, ``9:30pm``, ``21:00``, ``noon``, ``midnight``. Dates:
``2027-01-04``, ``January 4``, ``Jan 4 2027``, ``Jan 4th, 2027``, ``4 January``, ``the 4th of
January``, ``the first of March``, ``March first``. A date and a time become an instant by reading
them as wall time in the phrase's zone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from app.schedules.phrases_words import MONTHS, Cursor, Kind, Token, ordinal_of, refuse

DEFAULT_TIME = time(9, 0)  # a day-based phrase without a time fires at 09:00 (docs/CRON.md)
_CLOCK = re.compile(r"(?P<hour>\d+)(?::(?P<minute>\d+))?(?: ?(?P<half>am|pm))?")


@dataclass(frozen=True)
class Day:
    """A calendar date as typed: ``year`` is None when the phrase left it out."""

    year: int | None
    month: int
    day: int
    typed: str


def at_time(cursor: Cursor) -> time | None:
    """An optional ``at TIME`` (``at`` may be left out before 9am, 21:00, noon, midnight)."""
    if cursor.accept("at"):
        return clock(cursor)
    token = cursor.peek()
    if token is not None and (token.kind is Kind.CLOCK or cursor.is_word("noon", "midnight")):
        return clock(cursor)
    return None


def clock(cursor: Cursor) -> time:
    """A time of day; refuses a token that is not one, naming it."""
    token = cursor.peek()
    if token is None or token.kind not in (Kind.CLOCK, Kind.NUMBER, Kind.WORD):
        raise cursor.unexpected("a time such as 9, 9am, 9:30, 21:00, noon or midnight")
    if cursor.is_word("noon", "midday"):
        cursor.take()
        return time(12, 0)
    if cursor.is_word("midnight"):
        cursor.take()
        return time(0, 0)
    if token.kind is Kind.WORD:
        raise refuse(f'"{cursor.quote(token)}" is not a time; say 9, 9am, 9:30, 21:00, noon or midnight')
    cursor.take()
    return _clock_value(token, cursor.quote(token))


def _clock_value(token: Token, typed: str) -> time:
    match = _CLOCK.fullmatch(token.value)
    if match is None:
        raise refuse(f'"{typed}" is not a time')
    hour, minute, half = int(match["hour"]), int(match["minute"] or 0), match["half"]
    if match["minute"] is not None and len(match["minute"]) != 2:
        raise refuse(f'"{typed}" is not a time: minutes take two digits (9:05)')
    if half is not None:
        if not 1 <= hour <= 12:
            raise refuse(f'"{typed}" is not a time: with am or pm the hour goes from 1 to 12')
        hour = hour % 12 + (12 if half == "pm" else 0)
    if hour > 23 or minute > 59:
        raise refuse(f'"{typed}" is not a time: hours go from 0 to 23 and minutes from 0 to 59')
    return time(hour, minute)


def starts_date(cursor: Cursor) -> bool:
    """Whether the tokens at the cursor start a calendar date (2027-01-04, January 4, 4 January)."""
    first, second = cursor.peek(), cursor.peek(1)
    if first is None:
        return False
    if first.kind is Kind.DATE:
        return True
    if first.kind is Kind.WORD and first.value in MONTHS:
        return second is not None and (second.kind is Kind.NUMBER or ordinal_of(second) is not None)
    if first.kind is Kind.NUMBER or ordinal_of(first) is not None:
        if second is not None and second.kind is Kind.WORD and second.value == "of":
            second = cursor.peek(2)
        return second is not None and second.kind is Kind.WORD and second.value in MONTHS
    return False


def calendar_day(cursor: Cursor) -> Day:
    """A date (see :func:`starts_date`), checked to exist; the year only when typed."""
    start = cursor.at
    first = cursor.take()
    if first.kind is Kind.DATE:
        year, month, day = (int(part) for part in first.value.split("-"))
        return _checked(Day(year, month, day, cursor.quote(first)))
    if first.kind is Kind.WORD and first.value in MONTHS:  # January 4 [,] [2027]
        month, day = MONTHS[first.value], _day_number(cursor.take())
    else:  # 4 [of] January [2027]
        cursor.accept("of")
        month, day = MONTHS[cursor.take().value], _day_number(first)
    year = _year(cursor)
    return _checked(Day(year, month, day, cursor.since(start)))


def _day_number(token: Token) -> int:
    n = ordinal_of(token)
    return n if n is not None else int(token.value)


def _year(cursor: Cursor) -> int | None:
    comma = cursor.peek() is not None and cursor.peek().kind is Kind.COMMA
    year = cursor.peek(1 if comma else 0)
    if year is None or year.kind is not Kind.NUMBER or len(year.value) != 4:
        return None
    if comma:
        cursor.take()
    return int(cursor.take().value)


def _checked(day: Day) -> Day:
    try:
        date(day.year if day.year is not None else 2000, day.month, day.day)  # 2000: February 29 exists
    except ValueError:
        raise refuse(f'"{day.typed}" is not a date') from None
    return day


def local_instant(day: date, clock_time: time, zone: tzinfo, typed: str) -> datetime:
    """The instant (UTC) of wall time ``day clock_time`` in ``zone``: a time the clocks skip is
    refused naming it; a time they repeat is its first pass."""
    wall = datetime.combine(day, clock_time)
    try:
        instant = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
        back = instant.astimezone(zone).replace(tzinfo=None)
    except (OverflowError, ValueError):  # year 1 or 9999 past the edge of the calendar in UTC
        raise refuse(f'"{typed}" is outside the calendar this schedule can use') from None
    if back != wall:
        name = getattr(zone, "key", str(zone))
        raise refuse(f'"{typed}": {wall:%Y-%m-%d %H:%M} does not exist in {name} (the clocks skip it '
                     "when daylight saving time starts)")
    return instant


def next_date_instant(day: Day, clock_time: time, zone: tzinfo, now: datetime, typed: str) -> datetime:
    """The instant of ``day`` at ``clock_time``; a day typed without a year is its next one after
    ``now``; a day typed with one must be after ``now`` (else refused as in the past, quoting ``typed``)."""
    this_year = now.astimezone(zone).year
    years = [day.year] if day.year is not None else list(range(this_year, this_year + 9))  # 8 covers February 29
    for year in years:
        try:
            candidate = date(year, day.month, day.day)
        except ValueError:  # February 29 outside a leap year
            continue
        if day.year is None and datetime.combine(candidate, clock_time) <= now.astimezone(zone).replace(
                tzinfo=None):
            continue  # gone by this year: a clock change that year is no reason to refuse the next one
        instant = local_instant(candidate, clock_time, zone, typed)
        if instant > now:
            return instant
    local = datetime.combine(date(years[-1], day.month, day.day), clock_time)
    raise past(typed, local, zone)


def past(typed: str, local: datetime, zone: tzinfo) -> Exception:
    """The refusal of a moment that has gone by, in the zone's wall time."""
    return refuse(f'"{typed}" is in the past: {local:%Y-%m-%d %H:%M} ({getattr(zone, "key", zone)}) has gone by')


def relative_day(word: str, now: datetime, zone: tzinfo) -> date:
    """The local date of "today" or "tomorrow" in ``zone``."""
    today = now.astimezone(zone).date()
    return today + timedelta(days=1) if word == "tomorrow" else today
