"""Decisions of SPEC §14 that are about time rather than the chat: an occurrence found more than
the catch-up window late, the end of the active window, and the end of a timed pause. Pure, like
``scheduler/decisions.py``, which asks these first."""

from __future__ import annotations

import datetime as dt

from app.schedules.model import RunOutcome, TaskStatus, Trigger
from scheduler.decision_types import Action, Claim, Due, TaskView
from scheduler.occurrences import Occurrences, late_text, next_fields, utc_text

WINDOW_ENDED = "active window ended"


def window_over(task: TaskView, now: dt.datetime) -> bool:
    """The active window has ended and no occurrence inside it is still to fire."""
    if task.status != TaskStatus.ACTIVE or task.ends_at is None or task.ends_at > now:
        return False
    nominal = task.next_nominal
    return nominal is None or nominal >= task.ends_at


def end(task: TaskView) -> Claim:
    """Completed at the window's end; a regular follow-up is dropped, a queued run-now still fires."""
    changes: dict[str, object] = {"status": TaskStatus.COMPLETED, "last_error": WINDOW_ENDED, "next_run_at": None}
    if task.pending_forced is None:
        changes.update(pending_run=False, pending_occurrence_at=None, retry_at=None)
    return Claim(Action.END, None, changes, note=WINDOW_ENDED)


def resume(task: TaskView, now: dt.datetime, plan: Occurrences) -> Claim:
    """A pause's ``until`` arrived: active again from now (nothing replayed), the pause forgotten."""
    changes: dict[str, object] = {"status": TaskStatus.ACTIVE, "armed_at": now, "paused_until": None,
                                  "pause_note": None, "paused_by": None, "consecutive_failures": 0}
    if task.pending_forced is None:
        changes["retry_at"] = None
    changes.update(next_fields(plan.rearmed(now), now))
    note = f"resumed (paused until {utc_text(task.paused_until)})" if task.paused_until else "resumed"
    if changes["next_run_at"] is None:
        if task.ends_at is not None and task.ends_at <= now:
            changes.update(status=TaskStatus.COMPLETED, last_error=WINDOW_ENDED)
            note = f"{WINDOW_ENDED} while it was paused"
        elif task.kind == "once":
            changes.update(status=TaskStatus.ERROR, last_error=PASSED_WHILE_PAUSED)
            note = PASSED_WHILE_PAUSED
    return Claim(Action.RESUME, None, changes, note=note)


PASSED_WHILE_PAUSED = "its time passed while it was paused"


def miss(task: TaskView, due: Due, now: dt.datetime, plan: Occurrences) -> Claim:
    """More than the catch-up window late: not fired. One record stands for every occurrence missed;
    the task moves on to the first one still on time (which fires at once when it is already due)."""
    window = dt.timedelta(seconds=task.catchup_window_seconds or 0)
    cutoff = now - window
    late = f"by {late_text(now - due.planned)} (catch-up window {late_text(window)})"
    changes: dict[str, object] = {"last_run_status": RunOutcome.MISSED}
    missed, on_time = plan.first_on_time(due.occurrence_at, cutoff)
    if task.kind == "once":
        missed = 1
        changes.update(status=TaskStatus.ERROR, last_error=f"missed {late}", next_run_at=None, pending_run=False,
                       pending_forced=None, pending_occurrence_at=None, retry_at=None)
    elif due.trigger == Trigger.FOLLOW_UP:  # the regular deadline is untouched
        following = task.next_nominal
        if on_time is not None and (following is None or on_time < following):
            # deadlines folded into the follow-up are still on time: it stands for the first of them
            changes.update(pending_occurrence_at=on_time, retry_at=None)
        else:
            if following is not None and on_time is not None:  # every folded deadline is missed too
                missed = 1 + plan.count(due.occurrence_at, following - dt.timedelta(microseconds=1))
            changes.update(pending_run=False, pending_forced=None, pending_occurrence_at=None, retry_at=None)
    else:
        changes.update(next_fields(plan, on_time - dt.timedelta(microseconds=1))
                       if on_time is not None else {"next_run_at": None})
    note = f"missed {late}" if missed == 1 else f"{missed} occurrences missed, the first {late}"
    return Claim(Action.MISS, due, changes, missed_count=missed, note=note)
