"""The dialog's SPEC §19 fields, typed text in and the API's values out (pure, no database): which
fires tell people (``notify_on``), how many fires may wait (``queue_cap``, for overlap
``queue_all``), and the bounds within which the agent may pace the task (``pace_min_seconds`` /
``pace_max_seconds``: both empty, the agent may not).

A pace bound is typed as a duration: ``90``, ``90s``, ``30m``, ``4h``, ``1d``, ``2h30m`` (the
``remote-schedule`` syntax; a plain number is seconds). What cannot be read raises InvalidInput
naming the API's field; the range rules are the service's (:mod:`app.schedules.fire_rules`).
"""

from __future__ import annotations

import re
from typing import Any

from app.core.errors import InvalidInput
from app.schedules.model import NotifyOn, Overlap, ScheduledTask
from app.ui.schedule_notes import duration_words

# (value, words) in the order the dialog offers them
OVERLAPS = ((Overlap.QUEUE_ONE.value, "Queue one follow-up"), (Overlap.SKIP.value, "Skip while busy"),
            (Overlap.REPLACE.value, "Replace the running fire"), (Overlap.QUEUE_ALL.value, "Queue every fire"))
NOTIFY_ON = ((NotifyOn.ALWAYS.value, "Tell me about every fire"),
             (NotifyOn.CHANGES.value, "Only when something changed"), (NotifyOn.FAILURES.value, "Only failures"))
LABELS = {"notify_on": "Which fires tell you", "queue_cap": "Queue up to",
          "pace_min_seconds": "Pace, soonest", "pace_max_seconds": "Pace, latest"}
INPUTS = {"notify_on": "notify_on", "queue_cap": "queue_cap", "pace_min_seconds": "pace_min",
          "pace_max_seconds": "pace_max"}
PACE_HELP = "30m, 4h, 1d or seconds; leave both empty and the agent may not move its fires"
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_PART = re.compile(r"(\d+)\s*(d|h|m|s)")
_SPAN = re.compile(r"(?:\d+\s*[dhms]\s*)+")
_FLOOR = re.compile(r"must be at least (\d+) \(")  # the service counts the floor in seconds
# the service's words for an API client → the dialog's
_WORDS = (("(null: the agent may not pace this task)", "(leave both empty: the agent may not pace this task)"),
          ("give both pace bounds, or neither", "fill in both, or neither"),
          ("must not be less than pace_min_seconds", "must not be sooner than the soonest"),
          ("pace_min_seconds / pace_max_seconds", "the pace fields"))


def span_of(text: str, field: str) -> int | None:
    """A typed duration in seconds (``""`` → None: no bound); raises InvalidInput naming ``field``.

    >>> span_of("2h30m", "pace_max_seconds")
    9000
    """
    value = text.strip().lower().replace("min", "m")
    if not value:
        return None
    if value.isdigit():
        seconds = int(value)
    elif _SPAN.fullmatch(value):
        seconds = sum(int(count) * _UNITS[unit] for count, unit in _PART.findall(value))
    else:
        raise InvalidInput(field, "must be a duration such as 30m, 4h, 1d, 2h30m or a number of seconds")
    if len(value) > 32 or seconds < 1:
        raise InvalidInput(field, "must be a duration of at least 1 second")
    return seconds


def span_input(seconds: int | None) -> str:
    """A stored bound as the dialog shows it: ``30m``, ``4h``, ``2h30m``, ``90s``; "" for None."""
    if seconds is None:
        return ""
    parts, rest = [], int(seconds)
    for unit, size in sorted(_UNITS.items(), key=lambda item: -item[1]):
        count, rest = divmod(rest, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"


def cap_of(text: str) -> int:
    """The typed queue cap; a text that is not a whole number is refused by name."""
    try:
        return int(text.strip())
    except ValueError:
        raise InvalidInput("queue_cap", "must be a whole number of fires (1 to 100)") from None


def rules_body(notify_on: str, overlap: str, queue_cap: str, pace_min: str, pace_max: str) -> dict[str, Any]:
    """The rules as the API takes them. The cap is sent only with ``queue_all`` (hidden otherwise,
    so a stale text there cannot block a save)."""
    body: dict[str, Any] = {"notify_on": notify_on,
                            "pace_min_seconds": span_of(pace_min, "pace_min_seconds"),
                            "pace_max_seconds": span_of(pace_max, "pace_max_seconds")}
    if overlap == Overlap.QUEUE_ALL.value:
        body["queue_cap"] = cap_of(queue_cap)
    return body


def rules_of(task: ScheduledTask) -> dict[str, Any]:
    """A stored task's rules as a body (to diff an edit against)."""
    body = {"notify_on": task.notify_on, "pace_min_seconds": task.pace_min_seconds,
            "pace_max_seconds": task.pace_max_seconds}
    if task.overlap == Overlap.QUEUE_ALL.value:
        body["queue_cap"] = task.queue_cap
    return body


def rules_fields(task: ScheduledTask) -> dict[str, str]:
    """The dialog's four inputs pre-filled from a stored task."""
    return {"notify_on": task.notify_on or NotifyOn.ALWAYS.value, "queue_cap": str(task.queue_cap or 3),
            "pace_min": span_input(task.pace_min_seconds), "pace_max": span_input(task.pace_max_seconds)}


def dialog_words(message: str) -> str:
    """A rules error as the dialog says it (empty fields, the fields' own names, spans in words)."""
    for api, dialog in _WORDS:
        message = message.replace(api, dialog)
    return _FLOOR.sub(lambda m: f"must be at least {duration_words(int(m.group(1)))} (", message)
