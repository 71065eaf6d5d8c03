"""A task's rules for its fires (SPEC §19): which fires tell people (``notify_on``), how many may
wait in line (``queue_cap``), and the bounds within which its agent may pace the next fire.

Pure: checks raise InvalidInput naming the field; :func:`is_quiet` decides a fire's silence.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from app.core.errors import Forbidden, InvalidInput
from app.schedules.model import NotifyOn, Outcome

MAX_QUEUE_CAP = 100
MAX_PACE_SECONDS = 366 * 86400
SUMMARY_MAX_CHARS = 2000
NOT_PACED = "this task does not let its agent pace it; a user may allow it (pace_min_seconds / pace_max_seconds)"


@dataclasses.dataclass(frozen=True)
class FireRules:
    notify_on: NotifyOn = NotifyOn.ALWAYS
    queue_cap: int = 3
    pace_min_seconds: int | None = None
    pace_max_seconds: int | None = None


RULE_FIELDS = tuple(f.name for f in dataclasses.fields(FireRules))
PACE_FIELDS = ("pace_min_seconds", "pace_max_seconds")


def current(task: Any) -> dict[str, Any]:
    """A stored task's rules as a request body would give them (for merging a PATCH)."""
    return {name: getattr(task, name) for name in RULE_FIELDS}


def check(merged: dict[str, Any], kind: str, min_interval_seconds: int) -> FireRules:
    """The rules of a create body or a merged PATCH; raises InvalidInput naming the field."""
    raw = merged.get("notify_on", "always")
    try:
        notify_on = NotifyOn(raw) if isinstance(raw, str) else None
    except ValueError:
        notify_on = None
    if notify_on is None:
        raise InvalidInput("notify_on", f"must be one of {', '.join(x.value for x in NotifyOn)}")
    cap = merged.get("queue_cap", 3)
    if isinstance(cap, bool) or not isinstance(cap, int) or not 1 <= cap <= MAX_QUEUE_CAP:
        raise InvalidInput("queue_cap", f"must be a whole number from 1 to {MAX_QUEUE_CAP}")
    low, high = (_pace(merged.get(name), name) for name in PACE_FIELDS)
    if (low is None) != (high is None):
        raise InvalidInput("pace_max_seconds" if high is None else "pace_min_seconds",
                           "give both pace bounds, or neither (null: the agent may not pace this task)")
    if low is not None:
        if kind == "once":
            raise InvalidInput("pace_min_seconds", "a once task fires once: pacing is for cron and interval tasks")
        if low < min_interval_seconds:
            raise InvalidInput("pace_min_seconds", f"must be at least {min_interval_seconds} (the server's "
                               "minimum interval between fires)")
        if high < low:
            raise InvalidInput("pace_max_seconds", "must not be less than pace_min_seconds")
    return FireRules(notify_on, cap, low, high)


def _pace(value: object, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PACE_SECONDS:
        raise InvalidInput(name, f"must be a whole number of seconds from 1 to {MAX_PACE_SECONDS}, or null")
    return value


def is_quiet(notify_on: str, succeeded: bool, output: str, reported: str | None) -> bool:
    """Whether a fire that ended tells nobody (no push, no inbox item). A fire that failed, ended
    without a reply or was reported ``failed`` always tells; no report counts as ``changed``."""
    if not succeeded or not (output or "").strip() or reported == Outcome.FAILED.value:
        return False
    if notify_on == NotifyOn.FAILURES.value:
        return True
    return notify_on == NotifyOn.CHANGES.value and reported == Outcome.NO_CHANGE.value


def paced_instant(now: dt.datetime, target: dt.datetime, low: int | None, high: int | None) -> dt.datetime:
    """Where the agent may move the next fire: ``target`` if it is within [now + low, now + high].

    Raises Forbidden when the task does not allow pacing, InvalidInput naming the bound it breaks."""
    if low is None or high is None:
        raise Forbidden(NOT_PACED)
    seconds = (target - now).total_seconds()
    if seconds < low:
        raise InvalidInput("pace_min_seconds", f"the next fire may be moved no sooner than {low} s from now")
    if seconds > high:
        raise InvalidInput("pace_max_seconds", f"the next fire may be moved no later than {high} s from now")
    return target


def report(outcome: object, summary: object) -> tuple[Outcome, str | None]:
    """A checked ``remote-schedule report``: (outcome, summary); raises InvalidInput naming the field."""
    try:
        checked = Outcome(outcome) if isinstance(outcome, str) else None
    except ValueError:
        checked = None
    if checked is None:
        raise InvalidInput("outcome", f"must be one of {', '.join(x.value for x in Outcome)}")
    if summary is not None and not isinstance(summary, str):
        raise InvalidInput("summary", "must be text")
    text = (summary or "").strip()
    if len(text) > SUMMARY_MAX_CHARS:
        raise InvalidInput("summary", f"is longer than {SUMMARY_MAX_CHARS} characters")
    return checked, text or None
