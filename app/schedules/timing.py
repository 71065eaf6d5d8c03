"""When schedules fire: the next occurrence of once / cron / interval schedules, and the
minimum-interval rule of SPEC §3 computed exactly from the cron field sets and the zone.

All instants in and out are aware datetimes; results are in UTC. Nothing here reads a clock.
"""

from __future__ import annotations

from bisect import bisect_right
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache

from app.schedules.cron.evaluate import HORIZON_DAYS, days_in_month, epoch_seconds, next_fire_times, next_instant
from app.schedules.cron.fields import CronError, CronSpec, parse_cron
from app.schedules.cron.gaps import Gap, min_gap
from app.schedules.cron.zone import DAY, EPOCH, EPOCH_ORDINAL, ZoneTimeline, load_zone
from app.schedules.spec import (
    CronSchedule,
    IntervalSchedule,
    OnceSchedule,
    Schedule,
    ScheduleError,
    format_instant,
    interval_floor_message,
    schedule_error_from,
)

# Without a start instant the minimum-interval analysis covers these wall dates: every
# transition a zone has had since 1970 and every one its current rules give until 2100.
_DEFAULT_FIRST_DAY = date(1970, 1, 1)
_DEFAULT_LAST_DAY = date(2099, 12, 31)


def next_occurrence(schedule: Schedule, after: datetime, armed_at: datetime | None = None) -> datetime | None:
    """The first occurrence strictly after ``after`` (aware UTC), or None when there is none.

    * once: ``at`` if ``after < at``, else None.
    * interval of N s: the grid ``armed_at + k·N`` for k ≥ 1 — the first point after ``after``
      — so fires do not drift by the time each run takes. Without ``armed_at``, ``after + N``
      (``after`` is taken as the arming instant).
    * cron: the first fire time of the expression in its zone (classic cron rules).

    Raises ScheduleError (field ``schedule.cron``) for a cron schedule with no occurrence
    within 8 years, TypeError for a naive ``after`` or ``armed_at``.
    """
    found = next_occurrences(schedule, after, 1, armed_at=armed_at)
    return found[0] if found else None


def _interval_grid(schedule: IntervalSchedule, after: datetime,
                   armed_at: datetime | None) -> tuple[datetime, int, timedelta]:
    """(base, k, step): an interval's first occurrence strictly after ``after`` is ``base + k * step``
    — on the grid from ``armed_at`` when it is known, else ``step`` after ``after``."""
    step = timedelta(seconds=schedule.every_seconds)
    if armed_at is None:
        return after, 1, step
    _require_aware(armed_at, "armed_at")
    return armed_at, max((after - armed_at) // step + 1, 1), step


def next_occurrences(
    schedule: Schedule, after: datetime, count: int, armed_at: datetime | None = None
) -> list[datetime]:
    """Up to ``count`` occurrences strictly after ``after``, ascending, aware UTC (rules as next_occurrence)."""
    _require_aware(after, "after")
    if isinstance(schedule, OnceSchedule):
        return [schedule.at] if after < schedule.at and count > 0 else []
    if isinstance(schedule, IntervalSchedule):
        base, k, step = _interval_grid(schedule, after, armed_at)
        return [(base + (k + i) * step).astimezone(UTC) for i in range(count)]
    try:
        return next_fire_times(schedule.cron, schedule.timezone, after, count)
    except CronError as exc:
        raise schedule_error_from(exc) from None


def min_gap_seconds(expr: str, tz: str, *, start: datetime | None = None, years: int = 8) -> int | None:
    """Exact smallest distance in seconds between two consecutive fires of ``expr`` in zone ``tz``.

    Covers the fires whose local dates fall in the ``years`` years from ``start`` (the
    scheduler's 8-year horizon); without ``start``, every date from 1970 through 2099 — the
    conservative answer to "can they ever be closer". Daylight-saving compression is included:
    ``0,59 1,3 * * *`` in America/New_York is 61 minutes apart on ordinary days but 60 s apart
    when 01:59 EST is followed by the 02:00 jump to 03:00 EDT. None when fewer than two fires
    fall in the window. Raises CronError for an invalid expression or zone.
    """
    gap = min_gap_detail(expr, tz, start=start, years=years)
    return None if gap is None else gap.seconds


def min_gap_detail(expr: str, tz: str, *, start: datetime | None = None, years: int = 8) -> Gap | None:
    """As min_gap_seconds, with the UTC second of the later fire when a clock change causes the minimum."""
    parse_cron(expr)
    timeline = load_zone(tz)
    if start is None:
        first, last = _DEFAULT_FIRST_DAY.toordinal(), _DEFAULT_LAST_DAY.toordinal()
    else:
        _require_aware(start, "start")
        first = start.astimezone(timeline.zone).toordinal()
        last = first + round(years * HORIZON_DAYS / 8)
    return _min_gap_cached(expr, tz, first, min(last, date.max.toordinal() - 1))


@lru_cache(maxsize=256)
def _min_gap_cached(expr: str, tz: str, first: int, last: int) -> Gap | None:
    return min_gap(parse_cron(expr), load_zone(tz), first, last)


def validate_min_interval(schedule: Schedule, floor_seconds: int, *, now: datetime | None = None) -> None:
    """Reject a schedule whose occurrences can ever be closer than ``floor_seconds`` (0 disables).

    Interval schedules below the floor fail on ``schedule.every_seconds``; cron schedules fail
    on ``schedule`` with the smallest spacing and, when a clock change causes it, where. Cron
    spacing covers the 8 years from ``now`` when given, else 1970-2099 (see min_gap_seconds).
    """
    if floor_seconds <= 0:
        return
    if isinstance(schedule, IntervalSchedule):
        if schedule.every_seconds < floor_seconds:
            raise ScheduleError("schedule.every_seconds",
                                interval_floor_message(schedule.every_seconds, floor_seconds))
        return
    if not isinstance(schedule, CronSchedule):
        return
    try:
        gap = min_gap_detail(schedule.cron, schedule.timezone, start=now)
    except CronError as exc:
        raise schedule_error_from(exc) from None
    if gap is not None and gap.seconds < floor_seconds:
        where = ""
        if gap.at is not None:
            where = f" (at {format_instant(EPOCH + timedelta(seconds=gap.at))}, a clock change in {schedule.timezone})"
        raise ScheduleError(
            "schedule",
            f"{schedule.cron!r} can fire {gap.seconds} s apart{where}, below the minimum interval of {floor_seconds} s",
        )


def runs_left(max_runs: int | None, run_count: int) -> int | None:
    """How many more fires a task may make on schedule: ``max_runs - run_count``, never below 0;
    None when it has no limit. (A once task also fires at most once: its schedule says so.)"""
    return None if max_runs is None else max(0, max_runs - run_count)


def count_occurrences(schedule: Schedule, after: datetime, until: datetime, armed_at: datetime | None = None) -> int:
    """How many occurrences fall in ``(after, until]`` (rules as next_occurrence), counted
    without listing them: arithmetic on an interval's grid; for cron, the matching wall minutes
    of each stretch of constant UTC offset, and only the hours around a clock change walked fire
    by fire (classic DST rules). Cost grows with the days spanned, not with the fires.
    Raises TypeError for a naive instant.
    """
    _require_aware(after, "after")
    _require_aware(until, "until")
    if until <= after:
        return 0
    if isinstance(schedule, OnceSchedule):
        return int(after < schedule.at <= until)
    if isinstance(schedule, IntervalSchedule):
        base, first, step = _interval_grid(schedule, after, armed_at)
        return max(0, (until - base) // step - first + 1)
    try:
        spec, zone = parse_cron(schedule.cron), load_zone(schedule.timezone)
    except CronError as exc:
        raise schedule_error_from(exc) from None
    return _count_cron(spec, zone, epoch_seconds(after), epoch_seconds(until))


def nth_occurrence(schedule: Schedule, after: datetime, n: int, armed_at: datetime | None = None) -> datetime | None:
    """The ``n``-th (1-based) occurrence strictly after ``after``, or None when there are fewer;
    an interval's is computed, not walked to."""
    if n < 1:
        return None
    if isinstance(schedule, IntervalSchedule):
        _require_aware(after, "after")
        base, k, step = _interval_grid(schedule, after, armed_at)
        return (base + (k + n - 1) * step).astimezone(UTC)
    found = next_occurrences(schedule, after, n, armed_at=armed_at)
    return found[-1] if len(found) == n else None


# Around a clock change fires are walked one by one over this much more than the change itself:
# beyond it each instant's wall clock reads a minute of its own (1:1, no skipped or repeated hour).
_CHANGE_MARGIN = 3600
_MAX_CHANGE = 2 * DAY  # wider than any offset change tzdata has had (the largest is 24 h)


def _count_cron(spec: CronSpec, zone: ZoneTimeline, lo: int, hi: int) -> int:
    """Fire instants of ``spec`` in ``zone`` in UTC seconds ``(lo, hi]``."""
    count, t = 0, lo
    for change in zone.transitions_between(lo - _MAX_CHANGE, hi + _MAX_CHANGE):
        margin = abs(change.after - change.before) + _CHANGE_MARGIN
        start, end = max(t, change.at - margin), min(hi, change.at + margin)
        if end <= start:
            continue
        offset = zone.offset_at(start)
        count += _wall_minutes(spec, t + offset, start + offset) + _walk(spec, zone, start, end)
        t = end
    offset = zone.offset_at(hi)
    return count + _wall_minutes(spec, t + offset, hi + offset)


def _walk(spec: CronSpec, zone: ZoneTimeline, lo: int, hi: int) -> int:
    count, t = 0, lo
    while (found := next_instant(spec, zone, t)) is not None and found <= hi:
        count, t = count + 1, found
    return count


def _wall_minutes(spec: CronSpec, lo: int, hi: int) -> int:
    """Matching wall minutes in wall seconds ``(lo, hi]`` (seconds since the naive epoch)."""
    if hi <= lo:
        return 0
    minutes = spec.minute.values
    whole_day = len(spec.hour.values) * len(minutes)
    count = 0
    for day in range(lo // DAY, hi // DAY + 1):
        if not _day_matches(spec, day + EPOCH_ORDINAL):
            continue
        start, end = lo - day * DAY, hi - day * DAY  # the day's minutes m with start < m <= end
        if start < 0 and end >= DAY - 60:
            count += whole_day
            continue
        for hour in spec.hour.values:
            count += bisect_right(minutes, (end - hour * 3600) // 60) - \
                bisect_right(minutes, (start - hour * 3600) // 60)
    return count


def _day_matches(spec: CronSpec, ordinal: int) -> bool:
    day = date.fromordinal(ordinal)
    first = ordinal - day.day + 1
    return day.day in spec.matching_days(day.month, days_in_month(day.year, day.month), first % 7)


def _require_aware(value: datetime, name: str) -> None:
    if not isinstance(value, datetime):
        raise TypeError(f"{name} must be a datetime, not {type(value).__name__}")
    if value.utcoffset() is None:
        raise TypeError(f"{name} must be timezone-aware")
