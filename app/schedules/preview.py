"""What ``POST /api/schedules/preview`` answers: the next fires of a schedule and its description."""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from typing import Any

from app.schedules.cron.fields import CronError
from app.schedules.cron.zone import load_zone
from app.schedules.spec import (
    CronSchedule,
    IntervalSchedule,
    OnceSchedule,
    ScheduleError,
    describe_schedule,
    format_instant,
    parse_schedule,
)
from app.schedules.timing import next_occurrences

MAX_PREVIEW = 50


def preview(schedule: Any, now: datetime, count: int = 5, display_timezone: str | None = None) -> dict[str, Any]:
    """Describe ``schedule`` (an API dict) and list its next ``count`` fires after ``now``.

    Returns ``{"kind", "description", "timezone", "fires": [{"utc": "…Z", "local": "…±hh:mm"}]}``.
    ``local`` is in the schedule's own zone for cron, else in ``display_timezone`` (default
    UTC). An interval is previewed as if armed at ``now``. Raises ScheduleError naming the
    field for an invalid schedule, a once ``at`` not in the future, or a cron expression that
    never fires within 8 years.
    """
    parsed = parse_schedule(schedule)
    if not 1 <= count <= MAX_PREVIEW:
        raise ValueError(f"count must be between 1 and {MAX_PREVIEW}")
    if isinstance(parsed, OnceSchedule) and parsed.at <= now:
        raise ScheduleError("schedule.at", f"{format_instant(parsed.at)} is not in the future")
    armed_at = now if isinstance(parsed, IntervalSchedule) else None
    fires = next_occurrences(parsed, now, count, armed_at=armed_at)
    zone = _display_zone(parsed, display_timezone)
    return {
        "kind": parsed.kind.value,
        "description": describe_schedule(parsed),
        "timezone": getattr(zone, "key", "UTC"),
        "fires": [{"utc": format_instant(fire), "local": fire.astimezone(zone).isoformat()} for fire in fires],
    }


def _display_zone(schedule: Any, display_timezone: str | None) -> tzinfo:
    name = schedule.timezone if isinstance(schedule, CronSchedule) else display_timezone
    if name is None:
        return UTC
    try:
        return load_zone(name).zone
    except CronError as exc:
        raise ScheduleError("display_timezone", exc.message) from None
