"""Pure decisions of the claim / overlap / finish path (SPEC §3): (task, now, facts) → decision.

Nothing here touches a database or a clock; ``scheduler/claims.py`` applies the decisions in
one transaction each. Every rule of the SPEC's "The loop", "Completion" and failure back-off
paragraphs lives in one function below; the rules of time (§14: catch-up window, active window,
a timed pause's end) in ``scheduler/window.py``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

from app.core.envelope import has_marker
from app.core.spend import next_utc_day
from app.core.stops import was_stopped
from app.schedules.abandon import abandoned_changes
from app.schedules.model import Overlap, RunOutcome, TaskStatus, Trigger
from scheduler import window
from scheduler.changes import TaskChanges
from scheduler.changes import changes as changes_of
from scheduler.decision_types import (  # noqa: F401 (the decisions' vocabulary, imported from here too)
    FORCED,
    Action,
    Auth,
    Claim,
    Due,
    Facts,
    Limits,
    TaskView,
)
from scheduler.occurrences import NextFn, Occurrences, next_fields, occurrences

# a person's run now, and a trigger call (its hook has its own limit, SPEC §19), skip the min-interval floor
UNFLOORED = (Trigger.RUN_NOW_USER, Trigger.HOOK)


def what_is_due(task: TaskView, now: dt.datetime) -> Due | None:
    """The occurrence the task wants to fire at ``now``: a pending follow-up first, else its deadline."""
    pending_ready = task.pending_run and (task.retry_at is None or task.retry_at <= now)
    if pending_ready and task.pending_forced is not None:
        return Due(task.pending_occurrence_at or now, task.pending_forced)
    if task.status != TaskStatus.ACTIVE:
        return None
    if pending_ready:
        return Due(task.pending_occurrence_at or now, Trigger.FOLLOW_UP)
    if task.next_run_at is not None and task.next_run_at <= now:
        nominal = task.next_nominal
        planned = task.next_run_at if task.next_run_at != nominal else None
        if task.pending_run:
            return Due(nominal, Trigger.FOLLOW_UP, coalesce_only=True, planned_at=planned)
        return Due(nominal, Trigger.SCHEDULE, planned_at=planned)
    return None


def _consume(task: TaskView, due: Due, now: dt.datetime, next_after: NextFn | Occurrences) -> dict[str, object]:
    """Fields that advance past a regular deadline consumed at ``now`` (from now, never replayed).

    A run-now never moves a future deadline, but one that has already passed is coalesced into it.
    """
    if task.status != TaskStatus.ACTIVE:
        return {}
    if task.next_run_at is not None and task.next_run_at <= now:
        return next_fields(occurrences(next_after), now) if task.kind != "once" else {"next_run_at": None}
    return {}


def decide_claim(task: TaskView, now: dt.datetime, facts: Facts, limits: Limits,
                 next_after: NextFn | Occurrences) -> Claim:
    """Decide what a due task does now (SPEC §3 "Claim", §14, guardrails, fire-time authorization)."""
    plan = occurrences(next_after)
    if task.status == TaskStatus.PAUSED and task.paused_until is not None and task.paused_until <= now:
        return window.resume(task, now, plan)
    if window.window_over(task, now):
        return window.end(task)
    due = what_is_due(task, now)
    if due is None:
        return Claim(Action.NOTHING)
    forced = due.trigger in FORCED
    if due.coalesce_only:  # one follow-up stands for every deadline missed meanwhile
        if task.overlap == Overlap.QUEUE_ALL:  # ... but under queue_all every deadline waits in line
            return _in_line(task, now, plan, facts.in_line)
        return Claim(Action.QUEUE, due, _consume(task, due, now, plan))
    if not forced and task.max_runs is not None and task.run_count >= task.max_runs:
        return Claim(Action.EXHAUST, due, {"status": TaskStatus.EXHAUSTED, "pending_run": False,
                                           "pending_forced": None, "retry_at": None, "next_run_at": None})
    if not forced and task.catchup_window_seconds is not None and \
            (now - due.planned).total_seconds() > task.catchup_window_seconds:
        return window.miss(task, due, now, plan)
    if facts.auth == Auth.PERMANENT:
        changes: dict[str, object] = {"last_error": facts.auth_reason, "pending_run": False,
                                      "pending_forced": None, "retry_at": None}
        if task.status == TaskStatus.ACTIVE:
            changes["status"] = TaskStatus.ERROR
        else:  # a forced run of a paused or ended task fails without changing its status
            changes["last_run_status"] = RunOutcome.FAILED
        return Claim(Action.ERROR, due, changes)
    if facts.chat_busy:  # overlap first: a busy chat's occurrence is skipped or queued, budget or not
        return _overlap(task, due, now, next_after, facts.in_line)
    if due.trigger != Trigger.RUN_NOW_USER and facts.budget_spent:  # a person's run now is a person's turn
        claim = _defer(task, due, now, next_utc_day(now), next_after, facts.budget_spent)
        return Claim(Action.BUDGET, due, claim.changes.but(last_run_status=RunOutcome.DEFERRED),
                     note=facts.budget_spent)
    if due.trigger != Trigger.RUN_NOW_USER and facts.budget_wait:
        return Claim(Action.NOTHING, due)
    if facts.auth == Auth.TRANSIENT:
        return _defer(task, due, now, now + dt.timedelta(seconds=limits.busy_retry_seconds), next_after,
                      facts.auth_reason)
    if due.trigger not in UNFLOORED and limits.min_interval_seconds and task.last_fire_started_at:
        floor = task.last_fire_started_at + dt.timedelta(seconds=limits.min_interval_seconds)
        if now < floor:
            return _defer(task, due, now, floor, next_after, None)
    if limits.max_concurrent_runs and facts.in_flight >= limits.max_concurrent_runs:
        return Claim(Action.NOTHING, due)
    changes = _consume(task, due, now, next_after)
    if due.trigger != Trigger.SCHEDULE or task.pending_run:
        changes.update(pending_run=False, pending_forced=None, pending_occurrence_at=None)
    changes.update(retry_at=None, run_count=task.run_count + 1, last_run_status=RunOutcome.RUNNING)
    return Claim(Action.DISPATCH, due, changes)


def _overlap(task: TaskView, due: Due, now: dt.datetime, next_after: NextFn | Occurrences, in_line: int = 0) -> Claim:
    """The chat has a claim in flight: coalesce into one follow-up, wait in line, replace the task's
    own fire, or record a skip (SPEC §3, §19)."""
    if task.overlap == Overlap.QUEUE_ALL and _deadline_passed(task, now):  # the deadline waits in line
        return _in_line(task, now, next_after, in_line)
    changes = _consume(task, due, now, next_after)
    if due.trigger == Trigger.SCHEDULE and task.overlap == Overlap.REPLACE and task.active_run_id:
        return Claim(Action.REPLACE, due, changes)
    if due.trigger in FORCED or task.overlap != Overlap.SKIP or due.trigger == Trigger.FOLLOW_UP:
        if task.pending_run and due.trigger == Trigger.FOLLOW_UP and not changes:
            return Claim(Action.NOTHING, due)  # already queued; the finished run wakes the loop
        forced = due.trigger if due.trigger in FORCED else task.pending_forced
        changes.update(pending_run=True, pending_forced=forced, pending_occurrence_at=_pending_at(task, due),
                       retry_at=None)
        if not task.active_run_id:
            changes["last_run_status"] = RunOutcome.QUEUED
        return Claim(Action.QUEUE, due, changes)
    if task.kind == "once":
        changes.update(status=TaskStatus.ERROR, last_error=ONCE_SKIPPED)
    return Claim(Action.SKIP, due, changes)


def _deadline_passed(task: TaskView, now: dt.datetime) -> bool:
    return task.status == TaskStatus.ACTIVE and task.next_run_at is not None and task.next_run_at <= now


def _in_line(task: TaskView, now: dt.datetime, next_after: NextFn | Occurrences, in_line: int) -> Claim:
    """overlap=queue_all: the regular deadline that passed gets its own ``queued`` record in line
    (SPEC §19) — or, with queue_cap fires already waiting, a ``skipped`` one ("queue full")."""
    planned = task.next_run_at if task.next_run_at != task.next_nominal else None
    due = Due(task.next_nominal, Trigger.SCHEDULE, planned_at=planned)
    changes = _consume(task, due, now, next_after)
    if in_line >= task.queue_cap:
        return Claim(Action.SKIP, due, changes, note=QUEUE_FULL)
    return Claim(Action.ENQUEUE, due, changes)


QUEUE_FULL = "queue full"  # overlap=queue_all: the line already holds queue_cap fires
ONCE_SKIPPED = "its single occurrence was skipped: the chat was busy (overlap=skip)"


def _pending_at(task: TaskView, due: Due) -> dt.datetime:
    """The occurrence a follow-up stands for: the earliest one still pending (its queued row is reused)."""
    if task.pending_run and task.pending_occurrence_at is not None:
        return task.pending_occurrence_at
    return due.occurrence_at


def _defer(task: TaskView, due: Due, now: dt.datetime, until: dt.datetime, next_after: NextFn | Occurrences,
           reason: str | None) -> Claim:
    """Keep the occurrence as a pending follow-up that becomes ready at ``until``."""
    changes = _consume(task, due, now, next_after)
    forced = due.trigger if due.trigger in FORCED else task.pending_forced
    changes.update(pending_run=True, pending_forced=forced, pending_occurrence_at=_pending_at(task, due),
                   retry_at=until)
    if reason:
        changes["last_error"] = reason
    return Claim(Action.DEFER, due, changes)


def decide_busy(task: TaskView, due: Due, now: dt.datetime, limits: Limits) -> tuple[RunOutcome, TaskChanges]:
    """A user's turn held the chat when the fire started (PromptAlreadyRunning).

    queue_one (and any run-now) is re-queued durably for ``now + busy_retry``; skip records a
    failed TaskRun. The claim is undone: nothing ran, so run_count goes back.
    """
    base: dict[str, object] = {"active_run_id": None, "run_count": max(0, task.run_count - 1)}
    if due.trigger in FORCED or task.overlap != Overlap.SKIP or due.trigger == Trigger.FOLLOW_UP:
        forced = due.trigger if due.trigger in FORCED else None
        base.update(pending_run=True, pending_forced=forced, pending_occurrence_at=due.occurrence_at,
                    retry_at=now + dt.timedelta(seconds=limits.busy_retry_seconds),
                    last_run_status=RunOutcome.QUEUED)
        return RunOutcome.QUEUED, changes_of(base)
    base.update(last_run_status=RunOutcome.FAILED, last_error="the chat was busy with another turn")
    if task.kind == "once" and task.status == TaskStatus.ACTIVE:
        base.update(status=TaskStatus.ERROR, last_error="the single run failed: the chat was busy with another turn")
    return RunOutcome.FAILED, changes_of(base)


def backoff_seconds(failures: int, base: int, cap: int) -> int:
    """min(base · 2^(k-1), cap) for k ≥ 1 consecutive failures."""
    if failures <= 0 or base <= 0:
        return 0
    return min(base * 2 ** min(failures - 1, 40), cap) if cap else base * 2 ** min(failures - 1, 40)


@dataclasses.dataclass(frozen=True)
class Finish:
    outcome: RunOutcome
    changes: TaskChanges

    def __post_init__(self) -> None:
        object.__setattr__(self, "changes", changes_of(self.changes))


def decide_finish(task: TaskView, trigger: Trigger, succeeded: bool, output: str, error: str | None,
                  now: dt.datetime, limits: Limits) -> Finish:
    """Record a finished fire and apply completion, bounds and back-off (SPEC §3 "Completion").

    A fire a user stopped (SPEC §16) is a failed run that is not the agent's failure: it neither
    counts towards the consecutive failures that pause a task nor delays the next fire."""
    outcome = RunOutcome.SUCCEEDED if succeeded else RunOutcome.FAILED
    stopped = not succeeded and was_stopped(error)
    failures = 0 if succeeded else task.consecutive_failures + (0 if stopped else 1)
    changes: dict[str, object] = {"active_run_id": None, "last_run_status": outcome, "last_run_at": now,
                                  "last_error": None if succeeded else (error or "the turn failed"),
                                  "consecutive_failures": failures}
    if task.status != TaskStatus.ACTIVE:  # completed mid-run, or a forced run of a paused/ended task
        if task.last_error == window.WINDOW_ENDED and task.status == TaskStatus.COMPLETED:
            del changes["last_error"]  # the window's end stays the task's story; the run has its own
        return Finish(outcome, changes)
    status = _final_status(task, trigger, succeeded, output, error, failures, limits)
    if status is not None:
        changes.update(status=status[0], next_run_at=None, pending_run=False, pending_forced=None, retry_at=None)
        if status[1]:
            changes["last_error"] = status[1]
    elif not succeeded and not stopped:
        earliest = now + dt.timedelta(seconds=backoff_seconds(failures, limits.backoff_seconds,
                                                              limits.backoff_cap_seconds))
        if task.next_run_at is not None:  # pushed later, the instant is its own nominal; else both stay
            changes["next_run_at"] = max(task.next_run_at, earliest)
            if earliest <= task.next_run_at:
                changes["next_occurrence_at"] = task.next_occurrence_at
        if task.pending_run:
            changes["retry_at"] = max(task.retry_at or earliest, earliest)
    return Finish(outcome, changes)


def _final_status(task: TaskView, trigger: Trigger, succeeded: bool, output: str, error: str | None,
                  failures: int, limits: Limits) -> tuple[TaskStatus, str | None] | None:
    if succeeded and has_marker(output):
        return TaskStatus.COMPLETED, None
    # a once task's fire — or a run now that fired its only occurrence while it waited (nothing left)
    if task.kind == "once" and (trigger not in FORCED or (task.next_run_at is None and not task.pending_run)):
        if succeeded:
            return TaskStatus.COMPLETED, None
        return TaskStatus.ERROR, f"the single run failed: {error or 'unknown error'}"
    if task.max_runs is not None and task.run_count >= task.max_runs:
        return TaskStatus.EXHAUSTED, None
    if not succeeded and limits.max_consecutive_failures and failures >= limits.max_consecutive_failures:
        return TaskStatus.ERROR, f"paused after {failures} consecutive failures"
    return None


def decide_superseded(task: TaskView, now: dt.datetime) -> Finish:
    """A fire cancelled for a newer one (overlap=replace, SPEC §19): neither a failure nor a success
    of the task — its status, failures, back-off and next fire stay as they were."""
    return Finish(RunOutcome.SUPERSEDED, {"active_run_id": None, "last_run_status": RunOutcome.SUPERSEDED,
                                          "last_run_at": now})


ABANDONED_REASON = "scheduler stopped before the run reported completion"


def decide_abandoned(task: TaskView, trigger: Trigger) -> TaskChanges:
    """A claim whose scheduler died: never re-fired; the task goes back to active, error or exhausted
    (the rule: ``app.schedules.abandon``, which a restore applies too)."""
    return changes_of(abandoned_changes(task.status, task.kind == "once", trigger, task.max_runs, task.run_count,
                                        ABANDONED_REASON))


