"""The claim-and-fire path against the database: claim, start, busy, finish, recover.

Each step is one transaction that applies a pure decision of ``scheduler/decisions.py``. On
PostgreSQL the task row is locked with ``FOR UPDATE SKIP LOCKED`` (another scheduler working on
it is skipped) and the chat row with ``FOR UPDATE`` (claims in one chat are serialized); on
SQLite ``BEGIN IMMEDIATE`` serializes writers. ``(task_id, occurrence_at)`` is unique, so an
occurrence fires at most once whatever happens.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, func, select

from app.core.db import Database
from app.core.models import Chat, Run
from scheduler import decisions as d
from scheduler.model import RunOutcome, ScheduledTask, SchedulerInstance, TaskRun, TaskStatus, Trigger
from scheduler.protocols import Directory
from scheduler.views import next_after_fn, task_view

log = logging.getLogger("chatcron.scheduler")


@dataclasses.dataclass(frozen=True)
class Dispatch:
    """A claim made: the turn to start."""

    task_id: int
    task_run_id: int
    chat_id: int
    owner: str
    occurrence_at: dt.datetime
    trigger: Trigger
    fire_number: int
    name: str
    prompt: str
    max_runs: int | None
    fresh_session: bool
    previous_output: str | None = None  # seeds a fresh session: the last fire's reply


def _apply(task: ScheduledTask, changes: dict[str, object], now: dt.datetime) -> None:
    for key, value in changes.items():
        setattr(task, key, value.value if hasattr(value, "value") and not isinstance(value, dt.datetime) else value)
    task.updated_at = now


def _lock_task(s: Session, db: Database, task_id: int) -> ScheduledTask | None:
    query = select(ScheduledTask).where(ScheduledTask.id == task_id)
    if not db.sqlite:
        query = query.with_for_update(skip_locked=True)
    return s.exec(query).first()


def due_task_ids(db: Database, now: dt.datetime, limit: int = 500) -> list[int]:
    """Tasks that may want to fire now, oldest deadline first (the claim re-checks each)."""
    t = ScheduledTask
    pending_ready = sa.and_(t.pending_run, sa.or_(t.retry_at.is_(None), t.retry_at <= now))
    due = sa.or_(
        sa.and_(t.status == TaskStatus.ACTIVE.value, sa.or_(t.next_run_at <= now, pending_ready)),
        sa.and_(t.pending_forced.is_not(None), pending_ready),
    )
    with db.read() as s:
        rows = s.exec(select(t.id).where(due).order_by(sa.func.coalesce(t.retry_at, t.next_run_at)).limit(limit))
        return list(rows)


def claim(db: Database, now: dt.datetime, task_id: int, instance: str, directory: Directory,
          limits: d.Limits) -> Dispatch | None:
    """Claim one task in one transaction; returns the turn to start, or None."""
    with db.write() as s:
        task = _lock_task(s, db, task_id)
        if task is None:
            return None
        if not db.sqlite:
            s.exec(select(Chat.id).where(Chat.id == task.chat_id).with_for_update())
        view = task_view(task)
        facts = _facts(s, task, directory)
        decision = d.decide_claim(view, now, facts, limits, next_after_fn(task))
        if decision.action == d.Action.NOTHING:
            return None
        if decision.action == d.Action.DISPATCH:
            return _dispatch(s, task, decision, now, instance)
        if decision.action == d.Action.SKIP:
            _record(s, task, decision.due, RunOutcome.SKIPPED, now, instance, "the chat was busy (overlap=skip)")
            decision.changes["last_run_status"] = RunOutcome.SKIPPED
        _apply(task, decision.changes, now)
        s.add(task)
        log.info("action=claim_%s task_id=%s chat_id=%s", decision.action.value, task.id, task.chat_id)
        return None


def _facts(s: Session, task: ScheduledTask, directory: Directory) -> d.Facts:
    busy = s.exec(select(func.count()).select_from(ScheduledTask).where(
        ScheduledTask.chat_id == task.chat_id, ScheduledTask.active_run_id.is_not(None))).one()
    in_flight = s.exec(select(func.count()).select_from(TaskRun).where(
        TaskRun.status == RunOutcome.RUNNING.value)).one()
    auth, reason = directory.check(task.chat_id, task.project_id, task.owner)
    return d.Facts(chat_busy=busy > 0, in_flight=in_flight, auth=auth, auth_reason=reason)


def _record(s: Session, task: ScheduledTask, due: d.Due, status: RunOutcome, now: dt.datetime, instance: str,
            error: str | None) -> TaskRun | None:
    """Insert the TaskRun of an occurrence, or None if that occurrence already has one."""
    row = TaskRun(task_id=task.id, occurrence_at=due.occurrence_at, trigger=due.trigger.value, status=status.value,
                  fire_number=task.run_count + 1, instance=instance, claimed_at=now, error=error,
                  finished_at=None if status == RunOutcome.RUNNING else now)
    try:
        with s.begin_nested():
            s.add(row)
            s.flush()
    except IntegrityError:
        return None
    return row


def _dispatch(s: Session, task: ScheduledTask, decision: d.Claim, now: dt.datetime, instance: str) -> Dispatch | None:
    due = decision.due
    row = s.exec(select(TaskRun).where(TaskRun.task_id == task.id, TaskRun.occurrence_at == due.occurrence_at)).first()
    if row is not None and row.status == RunOutcome.QUEUED.value:
        row.status, row.attempts, row.error = RunOutcome.RUNNING.value, row.attempts + 1, None
        row.instance, row.claimed_at, row.finished_at = instance, now, None
        row.trigger, row.fire_number = due.trigger.value, task.run_count + 1
        s.add(row)
        s.flush()
    elif row is None:
        row = _record(s, task, due, RunOutcome.RUNNING, now, instance, None)
    else:
        row = None
    if row is None:  # this occurrence already fired: never twice; drop what pointed at it
        _apply(task, {k: v for k, v in decision.changes.items()
                      if k in ("next_run_at", "pending_run", "pending_forced", "pending_occurrence_at", "retry_at")},
               now)
        s.add(task)
        log.warning("action=occurrence_already_fired task_id=%s occurrence_at=%s", task.id, due.occurrence_at)
        return None
    _apply(task, {**decision.changes, "active_run_id": row.id}, now)
    s.add(task)
    log.info("action=claimed task_id=%s task_run_id=%s chat_id=%s trigger=%s", task.id, row.id, task.chat_id,
             due.trigger.value)
    return Dispatch(task_id=task.id, task_run_id=row.id, chat_id=task.chat_id, owner=task.owner,
                    occurrence_at=due.occurrence_at,
                    trigger=due.trigger, fire_number=row.fire_number, name=task.name, prompt=task.prompt,
                    max_runs=task.max_runs, fresh_session=task.session == "fresh",
                    previous_output=_previous_output(s, task) if task.session == "fresh" else None)


def _previous_output(s: Session, task: ScheduledTask) -> str | None:
    """The reply of the task's latest fire that reached the chat, for a fresh session's seed."""
    row = s.exec(select(Run.output).join(TaskRun, TaskRun.run_id == Run.id)
                 .where(TaskRun.task_id == task.id).order_by(TaskRun.id.desc()).limit(1)).first()
    return row or None


def mark_started(db: Database, now: dt.datetime, dispatch: Dispatch, run_id: int) -> None:
    """The turn started: link the chat run; the min-interval floor counts from this instant."""
    with db.write() as s:
        s.exec(sa.update(TaskRun).where(TaskRun.id == dispatch.task_run_id).values(run_id=run_id, started_at=now))
        s.exec(sa.update(ScheduledTask).where(ScheduledTask.id == dispatch.task_id)
               .values(last_fire_started_at=now))


def release_busy(db: Database, now: dt.datetime, dispatch: Dispatch, limits: d.Limits) -> None:
    """The turn could not start because the chat was busy: re-queue (queue_one) or fail (skip)."""
    with db.write() as s:
        task = s.get(ScheduledTask, dispatch.task_id)
        row = s.get(TaskRun, dispatch.task_run_id)
        if task is None or row is None or task.active_run_id != row.id:
            return
        due = d.Due(dispatch.occurrence_at, dispatch.trigger)
        outcome, changes = d.decide_busy(task_view(task), due, now, limits)
        row.status = outcome.value
        row.error = "the chat was busy with another turn"
        row.finished_at = now if outcome == RunOutcome.FAILED else None
        _apply(task, changes, now)
        s.add_all([task, row])
    log.info("action=fire_met_busy_chat task_id=%s outcome=%s", dispatch.task_id, outcome.value)


def finish(db: Database, now: dt.datetime, task_run_id: int, succeeded: bool, output: str, error: str | None,
           limits: d.Limits, history_limit: int) -> RunOutcome | None:
    """Record a finished turn on its TaskRun and task; None if the claim was already released."""
    with db.write() as s:
        row = s.get(TaskRun, task_run_id)
        if row is None or row.status != RunOutcome.RUNNING.value:
            return None
        task = _lock_for_finish(s, db, row.task_id)
        result = d.decide_finish(task_view(task), Trigger(row.trigger), succeeded, output, error, now, limits) \
            if task is not None else d.Finish(RunOutcome.SUCCEEDED if succeeded else RunOutcome.FAILED, {})
        row.status, row.finished_at, row.error = result.outcome.value, now, error
        s.add(row)
        if task is not None and task.active_run_id == row.id:
            _apply(task, result.changes, now)
            s.add(task)
            prune_history(s, task.id, history_limit)
    return result.outcome


def _lock_for_finish(s: Session, db: Database, task_id: int) -> ScheduledTask | None:
    query = select(ScheduledTask).where(ScheduledTask.id == task_id)
    return s.exec(query if db.sqlite else query.with_for_update()).first()


def prune_history(s: Session, task_id: int, limit: int) -> int:
    """Delete the task's oldest finished TaskRuns beyond ``limit``; returns how many."""
    keep = select(TaskRun.id).where(TaskRun.task_id == task_id).order_by(TaskRun.id.desc()).limit(limit)
    result = s.exec(sa.delete(TaskRun).where(
        TaskRun.task_id == task_id, TaskRun.id.not_in(keep.scalar_subquery()),
        TaskRun.status.not_in([RunOutcome.RUNNING.value, RunOutcome.QUEUED.value])))
    return result.rowcount or 0


def heartbeat(db: Database, now: dt.datetime, instance: str, iterations: int = 0) -> None:
    """Renew this scheduler's lease (insert on first beat) and publish its loop count."""
    for attempt in range(2):  # two threads may insert the first beat at once: the loser updates
        try:
            with db.write() as s:
                row = s.get(SchedulerInstance, instance)
                if row is None:
                    row = SchedulerInstance(id=instance, started_at=now, heartbeat_at=now)
                row.heartbeat_at, row.iterations = now, iterations
                s.add(row)
            return
        except IntegrityError:
            if attempt:
                raise


def stop_instance(db: Database, now: dt.datetime, instance: str) -> None:
    with db.write() as s:
        s.exec(sa.update(SchedulerInstance).where(SchedulerInstance.id == instance).values(stopped_at=now))


def recover(db: Database, now: dt.datetime, lease_seconds: int, only_instance: str | None = None) -> list[int]:
    """Abandon claims held by dead schedulers (lease expired or stopped); returns the TaskRun ids."""
    cutoff = now - dt.timedelta(seconds=lease_seconds)
    alive = select(SchedulerInstance.id).where(SchedulerInstance.heartbeat_at >= cutoff,
                                               SchedulerInstance.stopped_at.is_(None))
    query = select(TaskRun.id).where(TaskRun.status == RunOutcome.RUNNING.value)
    query = query.where(TaskRun.instance == only_instance) if only_instance else query.where(
        TaskRun.instance.not_in(alive.scalar_subquery()))
    with db.read() as s:
        ids = list(s.exec(query))
    return [i for i in ids if abandon(db, now, i)]


def abandon(db: Database, now: dt.datetime, task_run_id: int) -> bool:
    with db.write() as s:
        row = s.get(TaskRun, task_run_id)
        if row is None or row.status != RunOutcome.RUNNING.value:
            return False
        row.status, row.finished_at, row.error = RunOutcome.ABANDONED.value, now, d.ABANDONED_REASON
        s.add(row)
        task = _lock_for_finish(s, db, row.task_id)
        if task is not None and task.active_run_id == row.id:
            _apply(task, d.decide_abandoned(task_view(task), Trigger(row.trigger)), now)
            s.add(task)
    log.warning("action=claim_abandoned task_run_id=%s", task_run_id)
    return True


def next_deadline(db: Database, now: dt.datetime) -> dt.datetime | None:
    """The earliest future instant at which some task becomes due (None: nothing scheduled)."""
    t = ScheduledTask
    with db.read() as s:
        regular = s.exec(select(func.min(t.next_run_at)).where(
            t.status == TaskStatus.ACTIVE.value, t.next_run_at > now)).one()
        retry = s.exec(select(func.min(t.retry_at)).where(t.pending_run, t.retry_at > now)).one()
    found = [x for x in (regular, retry) if x is not None]
    return min(found) if found else None
