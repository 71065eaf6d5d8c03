"""Checking the fields of SPEC §14 — catch-up window, jitter, active window, a pause's note and end.

Pure: each function takes the raw value (from either API or the dialog) and the instant to judge
it by, and returns the stored value or raises InvalidInput naming the field.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from app.core.errors import InvalidInput
from app.core.text import clean_prompt
from app.schedules import exclusions, timing
from app.schedules.plan import Plan
from app.schedules.spec import (
    CronSchedule,
    IntervalSchedule,
    OnceSchedule,
    Schedule,
    ScheduleError,
    format_instant,
    parse_instant,
    span,
)

MAX_CATCHUP_SECONDS = 366 * 86400
MAX_JITTER_SECONDS = 86400
ONCE_MAX_JITTER_SECONDS = 600  # a once task has no gap to take a tenth of
MAX_NOTE_CHARS = 500
MAX_PAUSE = dt.timedelta(days=3660)
TIMING_FIELDS = ("catchup_window_seconds", "jitter_seconds", "starts_at", "ends_at", "exclude_dates", "holidays")
# an edit of these moves the next fire
MOVES_NEXT = frozenset({"schedule", "jitter_seconds", "starts_at", "ends_at", "exclude_dates", "holidays"})
REARMS = frozenset({"schedule", "starts_at"})  # ... and of these re-arms it (an interval's grid starts anew)


@dataclasses.dataclass(frozen=True)
class Timing:
    catchup_window_seconds: int | None
    jitter_seconds: int
    starts_at: dt.datetime | None
    ends_at: dt.datetime | None
    exclude_dates: str = "[]"  # SPEC §20, stored as JSON (app/schedules/exclusions.py)
    holidays: str | None = None


def catchup(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_CATCHUP_SECONDS:
        raise InvalidInput("catchup_window_seconds", f"must be a whole number of seconds from 1 to "
                           f"{MAX_CATCHUP_SECONDS} (null: fire however late)")
    return value


def jitter_bound(schedule: Schedule, now: dt.datetime) -> int:
    """The largest jitter a schedule takes: a tenth of its smallest gap (once tasks: 600 s)."""
    if isinstance(schedule, OnceSchedule):
        return ONCE_MAX_JITTER_SECONDS
    if isinstance(schedule, IntervalSchedule):
        return min(MAX_JITTER_SECONDS, schedule.every_seconds // 10)
    assert isinstance(schedule, CronSchedule)
    gap = timing.min_gap_seconds(schedule.cron, schedule.timezone, start=now)
    return MAX_JITTER_SECONDS if gap is None else min(MAX_JITTER_SECONDS, gap // 10)


def jitter(value: object, schedule: Schedule, now: dt.datetime) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput("jitter_seconds", "must be a whole number of seconds, 0 or more")
    bound = jitter_bound(schedule, now)
    if value > bound:
        why = "a once task's limit" if isinstance(schedule, OnceSchedule) else "a tenth of the schedule's smallest gap"
        raise InvalidInput("jitter_seconds", f"{value} s is more than {why} ({bound} s)")
    return value


MAX_AHEAD = dt.timedelta(days=100 * 366)  # starts_at, ends_at and until: within a century


def instant_or_none(value: object, field: str, now: dt.datetime | None = None) -> dt.datetime | None:
    if value is None:
        return None
    try:
        instant = parse_instant(value, field)
    except ScheduleError as exc:
        raise InvalidInput(field, str(exc).removeprefix(f"{field}: ")) from None
    if now is not None and instant - now > MAX_AHEAD:
        raise InvalidInput(field, "is more than 100 years away")
    return instant


def window(starts: object, ends: object, schedule: Schedule, now: dt.datetime, *, check_future: bool,
           armed_at: dt.datetime | None = None) -> tuple[dt.datetime | None, dt.datetime | None]:
    """The active window ``[starts_at, ends_at)``; it must leave the schedule an occurrence."""
    starts_at, ends_at = instant_or_none(starts, "starts_at", now), instant_or_none(ends, "ends_at", now)
    if isinstance(schedule, OnceSchedule):
        for field, value in (("starts_at", starts_at), ("ends_at", ends_at)):
            if value is not None:
                raise InvalidInput(field, "a once schedule fires at schedule.at; an active window is for cron "
                                   "and interval schedules")
        return None, None
    if starts_at is not None and ends_at is not None and ends_at <= starts_at:
        raise InvalidInput("ends_at", f"must be after starts_at ({format_instant(starts_at)})")
    if check_future and ends_at is not None:
        if ends_at <= now:
            raise InvalidInput("ends_at", "must be in the future")
        try:
            first = Plan(schedule, armed_at=armed_at or now, starts_at=starts_at, ends_at=ends_at).next_after(now)
        except ScheduleError:  # nothing within the horizon after starts_at
            first = None
        if first is None:
            raise InvalidInput("ends_at", "no occurrence of the schedule falls before it")
    elif check_future and starts_at is not None:
        try:
            Plan(schedule, armed_at=armed_at or now, starts_at=starts_at).next_after(now)
        except ScheduleError:
            raise InvalidInput("starts_at", "the schedule has no occurrence in the 8 years after it") from None
    return starts_at, ends_at


def pause_note(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput("note", "must be text")
    text = clean_prompt(value, "note", 4 * MAX_NOTE_CHARS, strip=True)
    if len(text) > MAX_NOTE_CHARS:
        raise InvalidInput("note", f"is {len(text)} characters; the limit is {MAX_NOTE_CHARS}")
    return text or None


def pause_until(value: object, now: dt.datetime) -> dt.datetime | None:
    until = instant_or_none(value, "until", now)
    if until is None:
        return None
    if until <= now:
        raise InvalidInput("until", "must be in the future")
    if until - now > MAX_PAUSE:
        raise InvalidInput("until", f"is more than {span(int(MAX_PAUSE.total_seconds()))} away")
    return until


def check(merged: dict[str, Any], schedule: Schedule, now: dt.datetime, *, changed: set[str],
          armed_at: dt.datetime | None = None) -> Timing:
    """The §14 fields of a create body (``changed`` = all) or of a PATCH merged onto the task
    (``changed`` = the keys sent, with "schedule" when the schedule changes): a field is judged
    against now only when it or the schedule changes."""
    timing_changed = bool(changed & MOVES_NEXT)
    jitter_value = merged.get("jitter_seconds")
    starts_at, ends_at = window(merged.get("starts_at"), merged.get("ends_at"), schedule, now,
                                check_future=bool(changed & {"schedule", "starts_at", "ends_at"}), armed_at=armed_at)
    excluded = exclusions.check(merged.get("exclude_dates"), merged.get("holidays"),
                                cron=isinstance(schedule, CronSchedule))
    if excluded and changed & {"schedule", "exclude_dates", "holidays", "starts_at", "ends_at"}:
        _check_some_left(schedule, excluded, now, starts_at, ends_at)
    return Timing(catchup_window_seconds=catchup(merged.get("catchup_window_seconds")),
                  jitter_seconds=jitter(jitter_value, schedule, now) if timing_changed else int(jitter_value or 0),
                  starts_at=starts_at, ends_at=ends_at, exclude_dates=excluded.dates_json(),
                  holidays=excluded.holidays_json())


def _check_some_left(schedule: Schedule, excluded: exclusions.Exclusions, now: dt.datetime,
                     starts_at: dt.datetime | None, ends_at: dt.datetime | None) -> None:
    """Exclusions must leave the schedule an occurrence in its window within 8 years (else it would never fire)."""
    try:
        first = Plan(schedule, starts_at=starts_at, ends_at=ends_at, exclusions=excluded).next_after(now)
    except ScheduleError:
        first = None
    if first is None:
        where = "before ends_at" if ends_at is not None else "in the next 8 years"
        raise InvalidInput("holidays" if excluded.holidays is not None else "exclude_dates",
                           f"excludes every occurrence of the schedule {where}")
