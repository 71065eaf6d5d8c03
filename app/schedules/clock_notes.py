"""Where a clock change moves a fire: the one-line notes the schedule dialog's preview shows.

A wall time can be missing (spring forward: 02:30 does not exist on that day in
America/New_York) or repeated (fall back: 01:30 happens twice). The time engine already
decides what happens then (docs/CRON.md): a fixed-time cron job whose minute is skipped fires
at the instant of the jump, one whose minute repeats fires only the first time; a once task
typed as a missing wall time is read with the offset before the jump (02:30 EST = 03:30 EDT).
These functions only say so, for one fire; they are pure (no clock, no database).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from app.schedules.cron.fields import parse_cron
from app.schedules.cron.zone import load_zone

FORWARD = "does not exist on this day (clocks go forward)"
BACK = "happens twice on this day (clocks go back)"
_MAX_LISTED = 3


def wall_exists(wall: datetime, zone: ZoneInfo) -> bool:
    """True when the naive wall time ``wall`` is shown by the zone's clock at some instant."""
    there = wall.replace(tzinfo=zone).astimezone(UTC).astimezone(zone)
    return there.replace(tzinfo=None) == wall


def wall_repeats(wall: datetime, zone: ZoneInfo) -> bool:
    """True when the naive wall time ``wall`` is shown twice (the repeated hour of a fall-back)."""
    first, second = wall.replace(tzinfo=zone, fold=0), wall.replace(tzinfo=zone, fold=1)
    return wall_exists(wall, zone) and first.utcoffset() != second.utcoffset()


def once_note(wall: datetime, zone_name: str) -> str:
    """The note for a once task typed as naive ``wall`` in ``zone_name`` ("" when nothing moves)."""
    zone = load_zone(zone_name).zone
    wall = wall.replace(tzinfo=None)
    if not wall_exists(wall, zone):
        actual = wall.replace(tzinfo=zone).astimezone(UTC).astimezone(zone)
        return f"{wall:%H:%M} {FORWARD}; it runs at {actual:%H:%M}"
    if wall_repeats(wall, zone):
        return f"{wall:%H:%M} {BACK}; it runs the first time"
    return ""


def cron_note(expr: str, zone_name: str, fire: datetime) -> str:
    """The note for one fire (aware) of cron ``expr`` in ``zone_name`` ("" when nothing moves)."""
    spec = parse_cron(expr)
    zone = load_zone(zone_name).zone
    local = fire.astimezone(zone)
    before = (fire - timedelta(seconds=1)).astimezone(zone)
    jump = local.utcoffset() - before.utcoffset()
    if jump > timedelta(0) and spec.fixed_time:
        skipped = _skipped(spec, local.replace(tzinfo=None), jump)
        if skipped:
            verb = FORWARD if len(skipped) == 1 else FORWARD.replace("does not exist", "do not exist")
            return f"{_listed(skipped)} {verb}; it runs at {local:%H:%M}"
    wall = local.replace(tzinfo=None)
    if wall_repeats(wall, zone):
        if spec.fixed_time:
            return f"{wall:%H:%M} {BACK}; it runs only the first time"
        return f"{wall:%H:%M} {BACK}; this is the {'second' if local.fold else 'first'}"
    return ""


def _skipped(spec, after_jump: datetime, jump: timedelta) -> list[datetime]:
    """The wall minutes the jump skipped that ``spec`` matches (their day already matched)."""
    minute, found = after_jump - jump, []
    while minute < after_jump:
        if minute.hour in spec.hour.values and minute.minute in spec.minute.values:
            found.append(minute)
        minute += timedelta(minutes=1)
    return found


def _listed(walls: list[datetime]) -> str:
    names = [f"{wall:%H:%M}" for wall in walls[:_MAX_LISTED]]
    if len(walls) > _MAX_LISTED:
        names[-1] = f"{len(walls) - _MAX_LISTED + 1} more"
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
