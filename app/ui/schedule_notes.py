"""The drawer row's words for SPEC §14: a pause's note and when it resumes, the active window, a
jitter or catch-up window that is not the default, and an ended window told without alarm.

Pure functions of (task, now, zones); instants are shown in the row's zone (see schedule_views).
"""

from __future__ import annotations

import datetime as dt

from app.schedules.model import DEFAULT_CATCHUP_SECONDS, NotifyOn, Overlap, ScheduledTask, TaskStatus

WINDOW_ENDED = "active window ended"  # the scheduler's last_error when it completes a task at ends_at


def duration_words(seconds: float) -> str:
    """A span for people, two units at most: ``30 s``, ``10 min``, ``1 h``, ``2 h 5 min``, ``3 d 4 h``."""
    whole = max(0, round(seconds))
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "min"), (secs, "s")]
    shown = [f"{count} {unit}" for count, unit in parts if count]
    return " ".join(shown[:2]) if shown else "0 s"


def when(instant: dt.datetime, zone: dt.tzinfo, viewer: dt.tzinfo) -> str:
    """``Tue 31 Mar, 18:00`` in ``zone``, with the zone's abbreviation when it is not the viewer's."""
    local = instant.astimezone(zone)
    text = f"{local:%a} {local.day} {local:%b, %H:%M}"
    same = local.utcoffset() == instant.astimezone(viewer).utcoffset() and \
        getattr(zone, "key", "UTC") == getattr(viewer, "key", "UTC")
    return text if same else f"{text} {local.tzname()}"


def resumes(task: ScheduledTask, zone: dt.tzinfo, viewer: dt.tzinfo) -> str:
    """``resumes Tue 31 Mar, 09:00`` for a paused task with an end to its pause, else ""."""
    until = task.paused_until
    if task.status != TaskStatus.PAUSED.value or until is None:
        return ""
    return f"resumes {when(until, zone, viewer)}"


def pause_note(task: ScheduledTask) -> str:
    """The note a paused task carries (its pauser's words), "" when none or not paused."""
    return task.pause_note or "" if task.status == TaskStatus.PAUSED.value else ""


def until_input(task: ScheduledTask, viewer: dt.tzinfo) -> str:
    """A paused task's end as a datetime-local value in the viewer's zone (the pause form's), or ""."""
    if task.status != TaskStatus.PAUSED.value or task.paused_until is None:
        return ""
    local = task.paused_until.astimezone(viewer)
    return f"{local:%Y-%m-%dT%H:%M:%S}" if local.second else f"{local:%Y-%m-%dT%H:%M}"


def window(task: ScheduledTask, now: dt.datetime, zone: dt.tzinfo, viewer: dt.tzinfo) -> str:
    """``starts Mon 30 Mar, 09:00 · until Tue 31 Mar, 18:00``: a start still ahead and an end."""
    starts, ends = task.starts_at, task.ends_at
    parts = []
    if starts is not None and starts > now:
        parts.append(f"starts {when(starts, zone, viewer)}")
    if ends is not None:
        parts.append(f"{'ended' if ends <= now else 'until'} {when(ends, zone, viewer)}")
    return " · ".join(parts)


def timing(task: ScheduledTask) -> str:
    """``jitter up to 30 s · catch-up 10 min`` — only what differs from the defaults."""
    parts = []
    jitter = task.jitter_seconds or 0
    if jitter:
        parts.append(f"jitter up to {duration_words(jitter)}")
    catchup = task.catchup_window_seconds
    if catchup is None:
        parts.append("fires however late")
    elif catchup != DEFAULT_CATCHUP_SECONDS:
        parts.append(f"catch-up {duration_words(catchup)}")
    return " · ".join(parts)


def calm_error(task: ScheduledTask) -> bool:
    """True when the task's last_error is no failure: a task completed because its window ended."""
    return task.status == TaskStatus.COMPLETED.value and (task.last_error or "") == WINDOW_ENDED


def rules(task: ScheduledTask) -> str:
    """SPEC §19's rules that are not the defaults: ``tells you only of changes · queues up to 5
    fires · the agent may pace it within 30 min – 4 h``."""
    parts = []
    if task.notify_on == NotifyOn.CHANGES.value:
        parts.append("tells you only when something changed")
    elif task.notify_on == NotifyOn.FAILURES.value:
        parts.append("tells you only of failures")
    if task.overlap == Overlap.QUEUE_ALL.value:
        parts.append(f"queues up to {task.queue_cap} fire{'s' if task.queue_cap != 1 else ''}")
    elif task.overlap == Overlap.REPLACE.value:
        parts.append("a new fire replaces a running one")
    if task.pace_min_seconds is not None and task.pace_max_seconds is not None:
        parts.append(f"the agent may pace it within {duration_words(task.pace_min_seconds)} – "
                     f"{duration_words(task.pace_max_seconds)}")
    return " · ".join(parts)
