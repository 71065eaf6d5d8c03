"""What ``POST /api/schedules/preview`` answers: the next fires of a schedule and its description."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from app.schedules import exclusions
from app.schedules.cron.fields import CronError
from app.schedules.cron.zone import load_zone
from app.schedules.plan import Plan
from app.schedules.spec import (
    CronSchedule,
    IntervalSchedule,
    OnceSchedule,
    ScheduleError,
    describe_schedule,
    format_instant,
    parse_schedule,
)

MAX_PREVIEW = 50
EXCLUDED_PER_DAY = 3  # a frequent schedule skips many a day: the first few are listed, all are counted


def preview(schedule: Any, now: datetime, count: int = 5, display_timezone: str | None = None,
            min_every_seconds: int = 1, runs_left: int | None = None, until: datetime | None = None, *,
            starts_at: datetime | None = None, ends_at: datetime | None = None, jitter_seconds: int = 0,
            task_id: int = 0, armed_at: datetime | None = None, exclude_dates: Any = None,
            holidays: Any = None) -> dict[str, Any]:
    """Describe ``schedule`` (an API dict) and list its next ``count`` fires after ``now`` — only
    those that will happen: at most ``runs_left`` (a task's ``max_runs`` minus its runs so far,
    see timing.runs_left; None: no limit), none after ``until``, and only occurrences inside the
    active window ``[starts_at, ends_at)`` (app/schedules/plan.py, as the scheduler fires them).

    Returns ``{"kind", "description", "timezone", "fires": [{"utc": "…Z", "local": "…±hh:mm"}]}``.
    ``local`` is in the schedule's own zone for cron, else in ``display_timezone`` (default
    UTC). An interval is previewed as if armed at ``now`` (or at ``armed_at``). With a jitter,
    each fire also has ``nominal`` (its occurrence) and ``latest`` (the occurrence plus the
    jitter): ``utc`` is then the exact jittered instant when ``task_id`` is known (a saved task),
    else the occurrence itself (an unsaved task's offsets are not known yet). Raises
    ScheduleError naming the field for an invalid schedule (an interval below
    ``min_every_seconds`` included), a once ``at`` not in the future (told as wall time in the
    display zone), or a cron expression that never fires within 8 years.
    """
    parsed = parse_schedule(schedule, min_every_seconds=min_every_seconds)
    if not 1 <= count <= MAX_PREVIEW:
        raise ValueError(f"count must be between 1 and {MAX_PREVIEW}")
    zone = _display_zone(parsed, display_timezone)
    if isinstance(parsed, OnceSchedule) and parsed.at <= now:
        raise ScheduleError("schedule.at", past_message(parsed.at, zone))
    armed = armed_at or (now if isinstance(parsed, IntervalSchedule) else None)
    excluded = exclusions.check(exclude_dates, holidays, cron=isinstance(parsed, CronSchedule))
    plan = Plan(parsed, armed_at=armed, starts_at=starts_at, ends_at=ends_at, jitter_seconds=jitter_seconds,
                task_id=task_id, exclusions=excluded)
    shown = count if runs_left is None else max(0, min(count, runs_left))
    nominals = [n for n in (plan.upcoming(now, shown) if shown else []) if until is None or n <= until]
    return {
        "kind": parsed.kind.value,
        "description": describe_schedule(parsed),
        "timezone": getattr(zone, "key", "UTC"),
        "fires": [_fire(plan, nominal, zone) for nominal in nominals],
        "excluded": _excluded(plan, now, nominals, until, zone) if shown else [],
    }


def _excluded(plan: Plan, now: datetime, nominals: list[datetime], until: datetime | None,
              zone: tzinfo) -> list[dict[str, Any]]:
    """The excluded occurrences among the ones listed — up to the last fire shown, or for a year
    when none is: per excluded day its first few, each with ``day_count``, how many that day skips."""
    end = nominals[-1] if nominals else now + timedelta(days=366)
    return [{"utc": format_instant(at), "local": at.astimezone(zone).isoformat(), "reason": day.reason,
             "day_count": day.count}
            for day in plan.excluded_days(now, min(end, until) if until is not None else end, per_day=EXCLUDED_PER_DAY)
            for at in day.listed]


def _fire(plan: Plan, nominal: datetime, zone: tzinfo) -> dict[str, str]:
    at = plan.fire_at(nominal) if plan.task_id else nominal
    fire = {"utc": format_instant(at), "local": at.astimezone(zone).isoformat()}
    if plan.jitter_seconds:
        fire["nominal"] = format_instant(nominal)
        fire["latest"] = format_instant(nominal + timedelta(seconds=plan.jitter_seconds))
    return fire


def past_message(at: datetime, zone: tzinfo) -> str:
    """``2026-03-01 09:00 (Europe/Paris) is in the past`` — in the zone the time was given in."""
    local = at.astimezone(zone)
    clock = f"{local:%Y-%m-%d %H:%M:%S}" if local.second or local.microsecond else f"{local:%Y-%m-%d %H:%M}"
    return f"{clock} ({getattr(zone, 'key', 'UTC')}) is in the past"


def _display_zone(schedule: Any, display_timezone: str | None) -> tzinfo:
    name = schedule.timezone if isinstance(schedule, CronSchedule) else display_timezone
    if name is None:
        return UTC
    try:
        return load_zone(name).zone
    except CronError as exc:
        raise ScheduleError("display_timezone", exc.message) from None
