"""Schedule records — once, cron, interval — validated from API-shaped dicts and back.

``parse_schedule`` is the one gate between untrusted JSON and the time engine: everything it
returns is valid (a known zone, a parseable cron expression that can fire in some year, an
aware UTC instant, a positive interval). Errors are ScheduleError with ``field`` set to the
dotted path the API reports (``schedule.cron``, ``schedule.timezone``, ...).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from app.schedules.cron.describe import describe
from app.schedules.cron.evaluate import HORIZON_DAYS
from app.schedules.cron.fields import CronError, parse_cron
from app.schedules.cron.zone import DAY, EPOCH, load_zone

MAX_EVERY_SECONDS = HORIZON_DAYS * DAY
_MAX_UNIX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z
_RFC3339 = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})[Tt ](?P<time>\d{2}:\d{2}:\d{2})(?P<frac>\.\d+)?(?P<offset>[Zz]|[+-]\d{2}:\d{2})?"
)


class ScheduleKind(enum.StrEnum):
    """How a task's occurrences are defined."""

    ONCE = "once"  # a single instant
    CRON = "cron"  # a five-field cron expression in an IANA zone
    INTERVAL = "interval"  # every N seconds from arming


class ScheduleError(ValueError):
    """The schedule is invalid; ``field`` is the dotted path of the culprit (``schedule.cron``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class OnceSchedule:
    """Fires once, at ``at`` (aware, UTC)."""

    at: datetime
    kind: ClassVar[ScheduleKind] = ScheduleKind.ONCE


@dataclass(frozen=True)
class CronSchedule:
    """Fires on ``cron`` evaluated in IANA zone ``timezone`` (classic cron semantics)."""

    cron: str
    timezone: str
    kind: ClassVar[ScheduleKind] = ScheduleKind.CRON


@dataclass(frozen=True)
class IntervalSchedule:
    """Fires ``every_seconds`` after arming, then every ``every_seconds``."""

    every_seconds: int
    kind: ClassVar[ScheduleKind] = ScheduleKind.INTERVAL


Schedule = OnceSchedule | CronSchedule | IntervalSchedule
_FIELDS = {
    ScheduleKind.ONCE: ("at",),
    ScheduleKind.CRON: ("cron", "timezone"),
    ScheduleKind.INTERVAL: ("every_seconds",),
}


def parse_schedule(raw: object, *, min_every_seconds: int = 1) -> Schedule:
    """Validate an API-shaped schedule dict; raises ScheduleError naming the bad field.

    ``min_every_seconds`` is the interval floor to report (the service passes the configured
    minimum interval, so an interval of 0 is told the real floor, not a bare 1).
    """
    if not isinstance(raw, Mapping):
        raise ScheduleError("schedule", "must be an object with a kind (once, cron or interval)")
    kind = _kind(raw.get("kind"))
    for key in raw:
        if key != "kind" and key not in _FIELDS[kind]:
            allowed = ", ".join(_FIELDS[kind])
            raise ScheduleError(f"schedule.{key}", f"is not a field of a {kind} schedule (it takes {allowed})")
    for key in _FIELDS[kind]:
        if key not in raw:
            raise ScheduleError(f"schedule.{key}", f"is required for a {kind} schedule")
    if kind is ScheduleKind.ONCE:
        return OnceSchedule(parse_instant(raw["at"], "schedule.at"))
    if kind is ScheduleKind.CRON:
        return _cron(raw["cron"], raw["timezone"])
    return IntervalSchedule(_every(raw["every_seconds"], max(min_every_seconds, 1)))


def _kind(value: Any) -> ScheduleKind:
    try:
        return ScheduleKind(value)
    except (ValueError, TypeError):
        raise ScheduleError("schedule.kind", f"must be once, cron or interval, not {value!r}") from None


def _cron(expr: Any, timezone: Any) -> CronSchedule:
    if not isinstance(expr, str):
        raise ScheduleError("schedule.cron", "must be a string of five fields, e.g. '0 9 * * 1-5'")
    if not isinstance(timezone, str):
        raise ScheduleError("schedule.timezone", "must be an IANA zone name string, e.g. 'Europe/Paris'")
    try:
        parse_cron(expr)
        load_zone(timezone)
    except CronError as exc:
        raise schedule_error_from(exc) from None
    return CronSchedule(expr.strip(), timezone)


def schedule_error_from(exc: CronError) -> ScheduleError:
    """The ScheduleError the API reports for a CronError (zone problems name ``schedule.timezone``).

    The message names the culprit once: a problem of the whole expression or of the zone is
    the field's own message (``schedule.cron: expected 5 fields …``); a problem of one cron
    field keeps that field's name (``schedule.cron: minute: 61 is out of range 0-59``).
    """
    field = "schedule.timezone" if exc.field == "timezone" else "schedule.cron"
    whole = exc.field in ("timezone", "expression")
    return ScheduleError(field, exc.message if whole else str(exc))


def _every(value: Any, floor: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScheduleError("schedule.every_seconds", f"must be a whole number of seconds, not {value!r}")
    if value < floor:
        raise ScheduleError("schedule.every_seconds", interval_floor_message(value, floor))
    if value > MAX_EVERY_SECONDS:
        raise ScheduleError("schedule.every_seconds",
                            f"must be at most 8 years ({MAX_EVERY_SECONDS} seconds), not {span(value)}")
    return value


def interval_floor_message(every_seconds: int, floor_seconds: int) -> str:
    """``must be at least 1 minute (30 seconds is too short)`` — the floor first, in words."""
    given = f" ({span(every_seconds)} is too short)" if every_seconds > 0 else ""
    return f"must be at least {span(floor_seconds)}{given}"


def parse_instant(value: Any, field: str) -> datetime:
    """An RFC 3339 string with an offset, or Unix milliseconds, as an aware UTC datetime."""
    if isinstance(value, bool):
        raise ScheduleError(field, "must be an RFC 3339 instant with an offset or Unix milliseconds")
    if isinstance(value, int):
        if not 0 <= value <= _MAX_UNIX_MS:
            raise ScheduleError(field, f"{value} is outside Unix milliseconds 0-{_MAX_UNIX_MS}")
        return EPOCH + timedelta(milliseconds=value)
    if not isinstance(value, str):
        raise ScheduleError(field, "must be an RFC 3339 instant with an offset or Unix milliseconds")
    match = _RFC3339.fullmatch(value.strip())
    if match is None:
        raise ScheduleError(field, f"{value!r} is not an RFC 3339 instant such as 2030-01-31T09:00:00Z")
    if match["offset"] is None:
        raise ScheduleError(field, f"{value!r} has no UTC offset; add Z or an offset such as +02:00")
    frac = (match["frac"] or "")[:7]  # Python keeps microseconds; finer digits are dropped
    offset = "+00:00" if match["offset"] in "Zz" else match["offset"]
    try:
        parsed = datetime.fromisoformat(f"{match['date']}T{match['time']}{frac}{offset}")
        return parsed.astimezone(UTC)
    except (ValueError, OverflowError):
        raise ScheduleError(field, f"{value!r} is not a valid date and time") from None


def format_instant(instant: datetime) -> str:
    """RFC 3339 in UTC with ``Z`` (microseconds only when present)."""
    return instant.astimezone(UTC).isoformat().replace("+00:00", "Z")


def schedule_to_dict(schedule: Schedule) -> dict[str, Any]:
    """The API/storage form of a schedule; ``parse_schedule`` reads it back unchanged."""
    if isinstance(schedule, OnceSchedule):
        return {"kind": schedule.kind.value, "at": format_instant(schedule.at)}
    if isinstance(schedule, CronSchedule):
        return {"kind": schedule.kind.value, "cron": schedule.cron, "timezone": schedule.timezone}
    return {"kind": schedule.kind.value, "every_seconds": schedule.every_seconds}


def describe_schedule(schedule: Schedule | Mapping[str, Any]) -> str:
    """Plain English for a schedule (a record or its dict form); raises ScheduleError if invalid."""
    if isinstance(schedule, Mapping):
        schedule = parse_schedule(schedule)
    if isinstance(schedule, OnceSchedule):
        return f"Once, at {schedule.at:%Y-%m-%d %H:%M:%S} UTC"
    if isinstance(schedule, CronSchedule):
        return f"{describe(schedule.cron)} ({schedule.timezone} time)"
    return describe_seconds(schedule.every_seconds)


def _span_parts(seconds: int) -> list[tuple[int, str]]:
    parts = []
    for unit, size in (("day", DAY), ("hour", 3600), ("minute", 60), ("second", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append((count, unit))
    return parts


def span(seconds: int) -> str:
    """A positive duration in words: 60 → "1 minute", 90 → "1 minute 30 seconds"."""
    parts = _span_parts(seconds) or [(0, "second")]
    return " ".join(f"{count} {unit}{'s' if count != 1 else ''}" for count, unit in parts)


def describe_seconds(seconds: int) -> str:
    """``Every 90 seconds`` → "Every 1 minute 30 seconds"; a single unit of one reads "Every hour"."""
    parts = _span_parts(seconds)
    if len(parts) == 1 and parts[0][0] == 1:
        return f"Every {parts[0][1]}"
    return f"Every {span(seconds)}"
