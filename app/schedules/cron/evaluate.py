"""Classic Vixie/ISC cron evaluated in an IANA zone — the entry points of SPEC §3.

The zone's wall clock is UTC plus an offset that changes at transitions, so it mostly runs
forward and sometimes jumps (spring forward) or steps back (fall back). Classic cron wakes every
minute and keeps a "virtual time" that never goes backwards; from that loop follow two rules,
which this module computes directly instead of simulating minute by minute:

* A **wildcard** job (minute or hour starts with ``*``) fires at every instant whose wall
  clock reads a matching minute: never for minutes a jump skips, twice for minutes fall-back
  repeats.
* A **fixed-time** job fires for a matching wall minute ``w`` at the first instant the wall
  clock reads ``w`` *or later*: minutes skipped by a jump fire once, together, at the instant of
  the jump; minutes repeated by fall-back fire only in their first pass.

docs/CRON.md has the derivation, the classic-cron corners where the SPEC wins, and the tests.
"""

from __future__ import annotations

from bisect import bisect_left
from datetime import date, datetime, timedelta

from app.schedules.cron.fields import CronError, CronSpec, FieldName, parse_cron
from app.schedules.cron.zone import DAY, EPOCH, EPOCH_ORDINAL, ZoneTimeline, load_zone

HORIZON_DAYS = 2922  # 8 years of 365.25 days: an expression silent that long is rejected
_LOOKBACK = 2 * DAY  # covers any offset change tzdata has ever had (the largest is 24 h)
_LAST_ORDINAL = date.max.toordinal() - 1
_MONTH_DAYS = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def next_fire_times(expr: str, tz: str, after: datetime, count: int = 1) -> list[datetime]:
    """The next ``count`` fire instants of ``expr`` in zone ``tz``, strictly after ``after``.

    ``after`` may carry any time zone (its ``fold`` is honoured) but must be aware. The result
    is ascending, aware UTC datetimes on whole local minutes. Each instant is searched for at
    most 8 years past the previous one; when none is found the list ends early, and if the
    very first one is missing, CronError is raised. Raises CronError naming the field for an
    invalid expression, an unknown time zone, a naive ``after`` or a negative ``count``.
    """
    spec = parse_cron(expr)
    timeline = load_zone(tz)
    start = epoch_seconds(after)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise CronError("count", f"must be a non-negative integer, not {count!r}")
    instants: list[datetime] = []
    t = start
    for _ in range(count):
        found = next_instant(spec, timeline, t)
        if found is None:
            break
        try:
            instants.append(EPOCH + timedelta(seconds=found))
        except OverflowError:
            break
        t = found
    if count and not instants:
        raise _never_fires(spec, after)
    return instants


def epoch_seconds(after: datetime) -> int:
    """Whole UTC seconds since the epoch, rounded down; raises CronError for a naive datetime."""
    if not isinstance(after, datetime):
        raise TypeError(f"after must be a datetime, not {type(after).__name__}")
    if after.utcoffset() is None:
        raise CronError("after", f"{after.isoformat()} has no time zone; pass an aware datetime")
    delta = after - EPOCH
    return delta.days * DAY + delta.seconds


def _never_fires(spec: CronSpec, after: datetime) -> CronError:
    days = f"{spec.day_of_month.text!r} / {spec.month.text!r} / {spec.day_of_week.text!r}"
    return CronError(
        FieldName.DAY_OF_MONTH,
        f"never fires within 8 years after {after.isoformat()} (day-of-month / month / day-of-week {days})",
    )


def next_instant(spec: CronSpec, timeline: ZoneTimeline, after: int) -> int | None:
    """The first fire instant (UTC second) strictly after UTC second ``after``, or None past 8 years.

    Walks the offset segments between transitions: in each, matching wall minutes map to
    ``wall - offset``. Wildcard jobs restart each segment at its own first wall minute, so a
    repeated hour is walked twice; fixed-time jobs continue from the clock's high-water mark,
    and a minute the jump skipped lands on the jump itself.
    """
    offset = timeline.offset_at(after)
    wall = after + offset
    limit_day = min(wall // DAY + HORIZON_DAYS, _LAST_ORDINAL - EPOCH_ORDINAL)
    fixed = spec.fixed_time
    low = wall + 1
    if fixed:
        low = max(low, _high_water(timeline, after))
    segment_start = after
    while True:
        found = first_wall(spec, low, limit_day)
        if found is None:
            return None
        instant = found - offset
        transition = timeline.next_transition(segment_start, max(instant, segment_start))
        if transition is None:
            return max(instant, segment_start) if fixed else instant
        low = max(low, transition.at + offset) if fixed else transition.at + transition.after
        offset, segment_start = transition.after, transition.at


def _high_water(timeline: ZoneTimeline, after: int) -> int:
    """Lowest wall second a fixed-time job has not yet reached at ``after`` (fall-back memory)."""
    recent = timeline.transitions_between(after - _LOOKBACK, after)
    return max((tr.at + tr.before for tr in recent), default=-(2**62))


def first_wall(spec: CronSpec, low: int, limit_day: int) -> int | None:
    """First matching wall minute (seconds since the naive epoch) at or after ``low``, by ``limit_day``."""
    low = -(-low // 60) * 60
    day, second = divmod(low, DAY)
    if day > limit_day:
        return None
    ordinal = max(day + EPOCH_ORDINAL, 1)
    if _day_matches(spec, ordinal):
        time = spec.first_time_from(second)
        if time is not None:
            return day * DAY + time
    found = next_matching_day(spec, ordinal + 1, limit_day + EPOCH_ORDINAL)
    if found is None:
        return None
    hours, minutes = spec.hour.values, spec.minute.values
    return (found - EPOCH_ORDINAL) * DAY + hours[0] * 3600 + minutes[0] * 60


def days_in_month(year: int, month: int) -> int:
    if month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0):
        return 29
    return _MONTH_DAYS[month]


def _day_matches(spec: CronSpec, ordinal: int) -> bool:
    d = date.fromordinal(ordinal)
    first = ordinal - d.day + 1
    return d.day in spec.matching_days(d.month, days_in_month(d.year, d.month), first % 7)


def next_matching_day(spec: CronSpec, ordinal: int, limit: int) -> int | None:
    """Ordinal of the first matching day at or after ``ordinal`` and not after ``limit``; None if none.

    Skips whole months through the per-month tables, so a yearly expression costs twelve steps.
    """
    limit = min(limit, _LAST_ORDINAL)
    if ordinal > limit:
        return None
    d = date.fromordinal(ordinal)
    year, month, day = d.year, d.month, d.day
    first = ordinal - day + 1
    months = spec.month.values
    while first <= limit:
        ndays = days_in_month(year, month)
        if month in months:
            days = spec.matching_days(month, ndays, first % 7)
            i = bisect_left(days, day)
            if i < len(days):
                found = first + days[i] - 1
                return found if found <= limit else None
        first += ndays
        day = 1
        month += 1
        if month == 13:
            month, year = 1, year + 1
    return None
