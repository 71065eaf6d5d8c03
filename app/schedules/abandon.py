"""A fire that will never report its end: what its record and its task become (SPEC §3 "Crash
recovery", §21 restore).

Two callers: the scheduler, for the claims of a scheduler that died (``scheduler.claims.abandon``,
through ``scheduler.decisions.decide_abandoned``), and a restore, for the fires that were running
when the backup was taken (:func:`abandon_fires_in`). The rule is one: never re-fired; the task goes
back to ``active`` (recurring), ``error`` (a once task whose only fire this was) or ``exhausted``
(``max_runs`` reached).
"""

from __future__ import annotations

import datetime as dt
import enum

from sqlmodel import Session, select

from app.schedules.model import RunOutcome, ScheduledTask, TaskRun, TaskStatus, Trigger

# a run-now or a trigger call: asked for outright, never a once task's only fire
FORCED = (Trigger.RUN_NOW_USER, Trigger.RUN_NOW_AGENT, Trigger.HOOK)


def abandoned_changes(status: str, once: bool, trigger: str, max_runs: int | None, run_count: int,
                      reason: str) -> dict[str, object]:
    """The task columns to write when its claim in flight is abandoned for ``reason`` (pure).

    A task that is not ``active`` (paused, completed meanwhile) only drops the claim; an active once
    task whose regular fire it was goes to ``error``; one whose fires reached ``max_runs`` to
    ``exhausted``. Values are enums where the column holds one.
    """
    changes: dict[str, object] = {"active_run_id": None, "last_run_status": RunOutcome.ABANDONED,
                                  "last_error": reason}
    if status != TaskStatus.ACTIVE:
        return changes
    if once and trigger not in FORCED:
        changes.update(status=TaskStatus.ERROR, next_run_at=None)
    elif max_runs is not None and run_count >= max_runs:
        changes.update(status=TaskStatus.EXHAUSTED, next_run_at=None)
    return changes


def abandon_fires_in(s: Session, now: dt.datetime, reason: str) -> list[int]:
    """Inside a write transaction: every ``running`` TaskRun becomes ``abandoned`` with ``reason``, and
    the task holding it as its claim gets :func:`abandoned_changes`. For a store no scheduler holds
    (a restored one): nothing is asked of the claims' instances. Returns the TaskRun ids."""
    rows = list(s.exec(select(TaskRun).where(TaskRun.status == RunOutcome.RUNNING.value).order_by(TaskRun.id)))
    for row in rows:
        row.status, row.finished_at, row.error = RunOutcome.ABANDONED.value, now, reason
        s.add(row)
        task = s.get(ScheduledTask, row.task_id)
        if task is None or task.active_run_id != row.id:
            continue
        once = task.schedule_dict().get("kind") == "once"
        changes = abandoned_changes(task.status, once, row.trigger, task.max_runs, task.run_count, reason)
        if "next_run_at" in changes:  # a next fire written without a nominal instant is its own (TaskChanges)
            changes["next_occurrence_at"] = None
        for key, value in changes.items():
            setattr(task, key, value.value if isinstance(value, enum.Enum) else value)
        task.updated_at = now
        s.add(task)
    return [row.id for row in rows]
