"""What a claim writes besides the task's columns (SPEC §3, §14, §15): the task's changes with the
records they close, the records of occurrences that did not fire (missed, deferred), the chat's
status lines, and the attention events of a fire's end or a task gone into error."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlmodel import Session

from app.core import attention_events as attention
from app.core.attention_tables import AttentionKind
from app.core.models import Event, EventType
from app.schedules import fire_queue
from app.schedules.model import Outcome, RunOutcome, ScheduledTask, TaskRun, TaskStatus, Trigger
from app.schedules.waiting import WAITING, settle_waiting
from scheduler import decisions as d
from scheduler.budgets import notice_in
from scheduler.changes import TaskChanges


def apply(s: Session, task: ScheduledTask, changes: TaskChanges, now: dt.datetime) -> None:
    went_wrong = turns_error(task.status, changes)
    before = (bool(task.pending_run), task.pending_occurrence_at)
    for key, value in changes.columns().items():
        setattr(task, key, value)
    task.updated_at = now
    if before[0] and (not task.pending_run or task.pending_occurrence_at != before[1]):
        s.flush()  # a record this claim changed is written first: only one still waiting is closed
        settle_waiting(s.connection(), task.id, before, (bool(task.pending_run), task.pending_occurrence_at),
                       task.status, now)
        if not task.pending_run and task.active_run_id is None and \
                fire_queue.advance(s.connection(), task.id, now):  # the next fire in line takes the slot
            s.refresh(task, ["pending_run", "pending_forced", "pending_forced_by", "pending_occurrence_at",
                             "retry_at", "updated_at"])
    if went_wrong:
        attention.record(s.connection(), [error_event(task, now)])


def turns_error(status: str, changes: TaskChanges) -> bool:
    """Whether these changes put a task that was not in ``error`` into it."""
    return changes.get("status") == TaskStatus.ERROR and status != TaskStatus.ERROR.value


def error_event(task: ScheduledTask | sa.Row, now: dt.datetime, last_error: str | None = None) -> dict:
    payload = {"task": {**attention.task_payload(task), "status": TaskStatus.ERROR.value,
                        "last_error": last_error or task.last_error}}
    return attention.row(now, AttentionKind.TASK_ERROR, user_email=task.owner, chat_id=task.chat_id,
                         project_id=task.project_id, task_id=task.id, payload=payload,
                         notify=attention.pushes(task.notify, AttentionKind.TASK_ERROR))


def fire_events(task: sa.Row, changes: TaskChanges, outcome: RunOutcome, run_id: int | None, task_run_id: int,
                 output: str, error: str | None, now: dt.datetime, quiet: bool = False,
                 reported: str | None = None) -> list[dict]:
    """The attention events of a fire's end: finished or failed — none for a quiet fire (SPEC §19
    ``notify_on``) — and the task's error if it began. A fire its agent reported ``failed`` is told
    as a failure."""
    failed = outcome != RunOutcome.SUCCEEDED or reported == Outcome.FAILED.value
    kind = AttentionKind.FIRE_FAILED if failed else AttentionKind.FIRE_FINISHED
    status = changes.get("status", task.status)
    payload = {"task": {**attention.task_payload(task), "status": getattr(status, "value", status)},
               "run": {"id": run_id, "task_run_id": task_run_id, "outcome": outcome.value, "error": error,
                       "first_line": attention.first_line(output), "reported": reported}}
    rows = [] if quiet else [attention.row(now, kind, user_email=task.owner, chat_id=task.chat_id,
                                           project_id=task.project_id, task_id=task.id, run_id=run_id,
                                           task_run_id=task_run_id, payload=payload,
                                           notify=attention.pushes(task.notify, kind))]
    if turns_error(task.status, changes):
        rows.append(error_event(task, now, changes.get("last_error")))
    return rows


def missed(s: Session, task: ScheduledTask, decision: d.Claim, now: dt.datetime, instance: str,
            records: dict[tuple[int, dt.datetime], TaskRun]) -> None:
    """One ``missed`` record for the occurrences found too late (a queued follow-up's row is reused);
    the chat says so too, so nothing is missed silently."""
    due = decision.due
    key = (task.id, due.occurrence_at)
    row = records.get(key)
    if row is None:
        row = records[key] = new_record(task, due, RunOutcome.MISSED, now, instance, decision.note)
        row.fire_number = 0  # nothing fired
    elif row.status in WAITING:
        row.status, row.error, row.finished_at, row.instance = RunOutcome.MISSED.value, decision.note, now, instance
    else:  # this occurrence already has its record: only move the task on
        apply(s, task, decision.changes, now)
        return
    row.missed_count = decision.missed_count
    s.add(row)
    apply(s, task, decision.changes, now)
    tell_chat(s, task, now, f'scheduled task "{task.name}": {decision.note}')


def wait_for_budget(s: Session, task: ScheduledTask, decision: d.Claim, now: dt.datetime, instance: str,
                     records: dict[tuple[int, dt.datetime], TaskRun]) -> None:
    """The project's budget is spent: the occurrence's record says ``deferred`` (a queued one's row
    is reused) until its follow-up fires or is missed; the first deferral of the day tells people."""
    key = (task.id, decision.due.occurrence_at)
    row = records.get(key)
    if row is None:
        row = records[key] = new_record(task, decision.due, RunOutcome.DEFERRED, now, instance, decision.note)
        row.fire_number, row.finished_at = 0, None  # nothing fired yet; it still waits
    elif row.status in WAITING:
        row.status, row.error, row.instance = RunOutcome.DEFERRED.value, decision.note, instance
    s.add(row)
    apply(s, task, decision.changes, now)
    if notice_in(s, task, decision.note, now):
        tell_chat(s, task, now, f'scheduled task "{task.name}" waits: {decision.note}; fires resume at 00:00 UTC')


def tell_chat(s: Session, task: ScheduledTask, now: dt.datetime, text: str) -> None:
    """A status line in the task's chat (its window's end, its resume, a miss)."""
    s.add(Event(chat_id=task.chat_id, type=EventType.STATUS.value, created_at=now, text=text))


def new_record(task: ScheduledTask, due: d.Due, status: RunOutcome, now: dt.datetime, instance: str,
                error: str | None) -> TaskRun:
    return TaskRun(task_id=task.id, occurrence_at=due.occurrence_at, planned_at=due.planned, trigger=due.trigger.value,
                   status=status.value, fire_number=task.run_count + 1, instance=instance, claimed_at=now, error=error,
                   finished_at=None if status == RunOutcome.RUNNING else now, requested_by=requested_by(task, due),
                   max_tokens=task.max_tokens_per_fire, max_cost_usd=task.max_cost_per_fire_usd)


def requested_by(task: ScheduledTask, due: d.Due) -> str | None:
    """The user whose run-now this fire is (the last one who asked), None for any other fire."""
    return task.pending_forced_by if due.trigger == Trigger.RUN_NOW_USER else None


def wait_in_line(s: Session, task: ScheduledTask, decision: d.Claim, now: dt.datetime, instance: str,
                 records: dict[tuple[int, dt.datetime], TaskRun]) -> None:
    """overlap=queue_all or replace met a busy chat (SPEC §19): the occurrence waits with a ``queued``
    record; it takes the slot if the slot is free — or, for replace, from whatever waited there, and
    the task's fire in flight is asked to stop (it ends ``superseded``)."""
    due = decision.due
    key = (task.id, due.occurrence_at)
    row = records.get(key)
    if row is None:
        row = records[key] = new_record(task, due, RunOutcome.QUEUED, now, instance, None)
        row.finished_at, row.fire_number = None, 0
        s.add(row)
        s.flush()
    apply(s, task, decision.changes, now)
    if decision.action == d.Action.REPLACE:
        fire_queue.supersede(s, task, row, now)
    if decision.action == d.Action.REPLACE or not task.pending_run:
        fire_queue.into_slot(task, row)
        task.updated_at = now
        s.add(task)
