"""The claim-and-fire path against the database: claim, start, busy, finish, recover.

Each step is one transaction that applies a pure decision of ``scheduler/decisions.py``. On
PostgreSQL the task row is locked with ``FOR UPDATE SKIP LOCKED`` (another scheduler working on
it is skipped) and the chat row with ``FOR UPDATE`` (claims in one chat are serialized); on
SQLite ``BEGIN IMMEDIATE`` serializes writers. ``(task_id, occurrence_at)`` is unique, so an
occurrence fires at most once whatever happens.
"""

from __future__ import annotations

import datetime as dt
import logging

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, func, select

from app.core import attention_events as attention
from app.core import envelope
from app.core.db import Database
from app.core.models import Chat, Run
from app.schedules import fire_queue, fire_rules
from app.schedules.model import Overlap, RunOutcome, ScheduledTask, SchedulerInstance, TaskRun, Trigger
from app.schedules.spec import ScheduleKind
from app.schedules.waiting import WAITING, settle_waiting
from scheduler import decisions as d
from scheduler import records as rec
from scheduler.budgets import ProjectBudgets
from scheduler.changes import POINTERS, TaskChanges
from scheduler.due import due_task_ids, heartbeat, next_deadline, stop_instance
from scheduler.protocols import Directory, Fire
from scheduler.snapshots import next_after_fn, task_view

__all__ = ["due_task_ids", "heartbeat", "next_deadline", "stop_instance"]  # the loop's view of the store
log = logging.getLogger("chatcron.scheduler")
PRUNE_EVERY = 8  # below the history limit, skipped records are pruned every 8th fire (a DELETE costs)



def claim(db: Database, now: dt.datetime, task_id: int, instance: str, directory: Directory,
          limits: d.Limits) -> Fire | None:
    """Claim one task in one transaction; returns the turn to start, or None."""
    firees = claim_many(db, now, [task_id], instance, directory, limits)
    return firees[0] if firees else None


def claim_many(db: Database, now: dt.datetime, task_ids: list[int], instance: str, directory: Directory,
               limits: d.Limits) -> list[Fire]:
    """Claim these tasks in one transaction; returns the turns to start.

    Each task is decided as if claimed alone, in order, with the facts (busy chats, turns in
    flight) updated as claims are made. Should an occurrence's record appear meanwhile (the
    unique key refuses the insert), the batch is rolled back and claimed again one by one, where
    the occurrence is then seen as already fired.
    """
    try:
        return _claim_batch(db, now, task_ids, instance, directory, limits)
    except IntegrityError:
        log.warning("action=claim_batch_conflict tasks=%s", len(task_ids))
        if len(task_ids) == 1:
            return _claim_batch(db, now, task_ids, instance, directory, limits)
        return [x for task_id in task_ids for x in claim_many(db, now, [task_id], instance, directory, limits)]


def _claim_batch(db: Database, now: dt.datetime, task_ids: list[int], instance: str, directory: Directory,
                 limits: d.Limits) -> list[Fire]:
    with db.write() as s, s.no_autoflush:
        query = select(ScheduledTask).where(ScheduledTask.id.in_(task_ids)).order_by(ScheduledTask.id)
        if not db.sqlite:  # another scheduler's tasks are skipped; claims in one chat are serialized
            query = query.with_for_update(skip_locked=True)
        order = {task_id: i for i, task_id in enumerate(task_ids)}
        tasks = sorted(s.exec(query), key=lambda task: order[task.id])
        if not tasks:
            return []
        chat_ids = sorted({task.chat_id for task in tasks})
        if not db.sqlite:  # NO KEY UPDATE: serializes claimers without blocking event inserts (KEY SHARE)
            s.exec(select(Chat.id).where(Chat.id.in_(chat_ids)).order_by(Chat.id).with_for_update(key_share=True))
        busy = set(s.exec(select(ScheduledTask.chat_id).where(ScheduledTask.chat_id.in_(chat_ids),
                                                              ScheduledTask.active_run_id.is_not(None))))
        in_flight = s.exec(select(func.count()).select_from(TaskRun).where(
            TaskRun.status == RunOutcome.RUNNING.value)).one()
        auth = directory.check_many([(task.chat_id, task.project_id, task.owner) for task in tasks])
        records = _records(s, tasks, now)
        in_line = _in_line(s, tasks)
        budgets = ProjectBudgets.read(s, db.sqlite, tasks, now)
        claimed: list[tuple[ScheduledTask, d.Claim, TaskRun]] = []
        for task in tasks:
            verdict, reason = auth[(task.chat_id, task.project_id, task.owner)]
            for _ in range(3):  # a miss, an end or a resume may leave an occurrence due at once
                facts = d.Facts(chat_busy=task.chat_id in busy, in_flight=in_flight, auth=verdict,
                                auth_reason=reason, budget_spent=budgets.spent(task),
                                budget_wait=budgets.must_wait(task), in_line=in_line.get(task.id, 0))
                decision = d.decide_claim(task_view(task), now, facts, limits, next_after_fn(task))
                row = _decided(s, task, decision, now, instance, records)
                if decision.action not in AGAIN:
                    break
                records.update(_records(s, [task], now))
            if row is not None:
                claimed.append((task, decision, row))
                busy.add(task.chat_id)
                in_flight += 1
                budgets.admit(task)
        s.flush()  # the new records get their ids
        return [_fire(s, task, decision, row, now) for task, decision, row in claimed]


AGAIN = (d.Action.MISS, d.Action.END, d.Action.RESUME)  # decided again at once, in the same transaction


def _records(s: Session, tasks: list[ScheduledTask], now: dt.datetime) -> dict[tuple[int, dt.datetime], TaskRun]:
    """The existing records of the occurrences these tasks want to fire now, by (task id, occurrence)."""
    wanted = {(task.id, due.occurrence_at) for task in tasks if (due := d.what_is_due(task_view(task), now))}
    if not wanted:
        return {}
    rows = s.exec(select(TaskRun).where(TaskRun.task_id.in_({w[0] for w in wanted}),
                                        TaskRun.occurrence_at.in_({w[1] for w in wanted})))
    return {key: row for row in rows if (key := (row.task_id, row.occurrence_at)) in wanted}


def _in_line(s: Session, tasks: list[ScheduledTask]) -> dict[int, int]:
    """How many fires wait in line (queued records) per task, for the tasks that may queue them."""
    ids = [task.id for task in tasks if task.overlap == Overlap.QUEUE_ALL.value]
    if not ids:
        return {}
    return dict(s.exec(select(TaskRun.task_id, func.count()).where(
        TaskRun.task_id.in_(ids), TaskRun.status == RunOutcome.QUEUED.value).group_by(TaskRun.task_id)).all())


def _decided(s: Session, task: ScheduledTask, decision: d.Claim, now: dt.datetime, instance: str,
             records: dict[tuple[int, dt.datetime], TaskRun]) -> TaskRun | None:
    """Apply a claim decision; returns the TaskRun to fire (its task's changes are applied later)."""
    if decision.action == d.Action.NOTHING:
        return None
    due = decision.due
    key = (task.id, due.occurrence_at) if due else None
    if decision.action == d.Action.DISPATCH:
        row = records.get(key)
        if row is None:
            row = records[key] = rec.new_record(task, due, RunOutcome.RUNNING, now, instance, None)
            s.add(row)
            return row
        if row.status in WAITING:
            row.status, row.attempts, row.error = RunOutcome.RUNNING.value, row.attempts + 1, None
            row.instance, row.claimed_at, row.finished_at = instance, now, None
            row.trigger, row.fire_number = due.trigger.value, task.run_count + 1
            row.planned_at = row.planned_at or due.planned
            row.requested_by = rec.requested_by(task, due)
            row.max_tokens, row.max_cost_usd = task.max_tokens_per_fire, task.max_cost_per_fire_usd
            s.add(row)
            return row
        # this occurrence already fired: never twice; drop what pointed at it
        rec.apply(s, task, decision.changes.only(POINTERS), now)
        log.warning("action=occurrence_already_fired task_id=%s occurrence_at=%s", task.id, due.occurrence_at)
        return None
    if decision.action == d.Action.MISS:
        rec.missed(s, task, decision, now, instance, records)
    elif decision.action in (d.Action.END, d.Action.RESUME):
        rec.apply(s, task, decision.changes, now)
        rec.tell_chat(s, task, now, f'scheduled task "{task.name}" {decision.note}')
    elif decision.action == d.Action.BUDGET:
        rec.wait_for_budget(s, task, decision, now, instance, records)
    elif decision.action == d.Action.SKIP:
        if key not in records:
            records[key] = rec.new_record(task, due, RunOutcome.SKIPPED, now, instance,
                                          decision.note or "the chat was busy (overlap=skip)")
            s.add(records[key])
        rec.apply(s, task, decision.changes.but(last_run_status=RunOutcome.SKIPPED), now)
    elif decision.action in (d.Action.ENQUEUE, d.Action.REPLACE):
        rec.wait_in_line(s, task, decision, now, instance, records)
    else:
        rec.apply(s, task, decision.changes, now)
    log.info("action=claim_%s task_id=%s chat_id=%s", decision.action.value, task.id, task.chat_id)
    return None


def _fire(s: Session, task: ScheduledTask, decision: d.Claim, row: TaskRun, now: dt.datetime) -> Fire:
    due = decision.due
    rec.apply(s, task, decision.changes.but(active_run_id=row.id), now)
    log.debug("action=claimed task_id=%s task_run_id=%s chat_id=%s trigger=%s", task.id, row.id, task.chat_id,
             due.trigger.value)
    return Fire(task_id=task.id, task_run_id=row.id, chat_id=task.chat_id, owner=task.owner,
                    occurrence_at=due.occurrence_at,
                    trigger=due.trigger, fire_number=row.fire_number, name=task.name, prompt=task.prompt,
                    max_runs=_fire_bound(task, row.fire_number), fresh_session=task.session == "fresh",
                    previous_output=_previous_output(s, task) if task.session == "fresh" else None,
                    planned_at=due.planned, max_tokens=row.max_tokens,
                    max_cost_usd=row.max_cost_usd, payload=row.payload)


def _fire_bound(task: ScheduledTask, fire_number: int) -> int | None:
    once = task.schedule_dict().get("kind") == ScheduleKind.ONCE.value
    return envelope.fire_bound(task.max_runs, once, fire_number)


def _previous_output(s: Session, task: ScheduledTask) -> str | None:
    """The reply of the task's latest fire that reached the chat, for a fresh session's seed."""
    row = s.exec(select(Run.output).join(TaskRun, TaskRun.run_id == Run.id)
                 .where(TaskRun.task_id == task.id).order_by(TaskRun.id.desc()).limit(1)).first()
    return row or None


def mark_started_in(s: Session, now: dt.datetime, started: list[tuple[Fire, int]]) -> None:
    """The turns started: link each chat run; the min-interval floor counts from this instant.
    Inside the caller's transaction (the one that began the turns)."""
    if not started:
        return
    s.exec(sa.update(TaskRun), params=[{"id": fire.task_run_id, "run_id": run_id, "started_at": now}
                                       for fire, run_id in started])
    s.exec(sa.update(ScheduledTask), params=[{"id": fire.task_id, "last_fire_started_at": now}
                                             for fire, _ in started])
    # a replace asked while the claim had no turn yet (SPEC §19): its stop request goes on the turn now
    replaced = [run_id for run_id, in s.exec(select(TaskRun.run_id).where(
        TaskRun.id.in_([fire.task_run_id for fire, _ in started]), TaskRun.superseded_by.is_not(None)))]
    if replaced:
        s.exec(sa.update(Run).where(Run.id.in_(replaced), Run.stop_requested_by.is_(None))
               .values(stop_requested_by=fire_queue.SUPERSEDED_BY))


def release_busy(db: Database, now: dt.datetime, fire: Fire, limits: d.Limits) -> None:
    """The turn could not start because the chat was busy: re-queue (queue_one) or fail (skip)."""
    with db.write() as s:
        task = s.get(ScheduledTask, fire.task_id)
        row = s.get(TaskRun, fire.task_run_id)
        if task is None or row is None or task.active_run_id != row.id:
            return
        due = d.Due(fire.occurrence_at, fire.trigger)
        outcome, changes = d.decide_busy(task_view(task), due, now, limits)
        row.status = outcome.value
        row.error = "the chat was busy with another turn"
        row.finished_at = now if outcome == RunOutcome.FAILED else None
        rec.apply(s, task, changes, now)
        s.add_all([task, row])
        s.flush()
        fire_queue.advance(s.connection(), task.id, now)
    log.info("action=fire_met_busy_chat task_id=%s outcome=%s", fire.task_id, outcome.value)


def finish(db: Database, now: dt.datetime, task_run_id: int, succeeded: bool, output: str, error: str | None,
           limits: d.Limits, history_limit: int) -> RunOutcome | None:
    """Record a finished turn on its TaskRun and task; None if the claim was already released."""
    with db.write() as s:
        return finish_in(s, db, now, task_run_id, succeeded, output, error, limits, history_limit)


_RUNS_T, _TASKS_T = TaskRun.__table__, ScheduledTask.__table__
_RECORD = sa.select(_RUNS_T.c.id, _RUNS_T.c.task_id, _RUNS_T.c.status, _RUNS_T.c.trigger, _RUNS_T.c.run_id,
                    _RUNS_T.c.outcome, _RUNS_T.c.superseded_by).where(_RUNS_T.c.id == sa.bindparam("b_id"))
_TASK = sa.select(_TASKS_T).where(_TASKS_T.c.id == sa.bindparam("b_id"))
_TASK_LOCKED = _TASK.with_for_update()
_END_RECORD = _RUNS_T.update().where(_RUNS_T.c.id == sa.bindparam("b_id")).values(
    status=sa.bindparam("b_status"), finished_at=sa.bindparam("b_now"), error=sa.bindparam("b_error"),
    quiet=sa.bindparam("b_quiet"), superseded_by=sa.bindparam("b_superseded_by"))


def finish_in(s: Session, db: Database, now: dt.datetime, task_run_id: int, succeeded: bool, output: str,
              error: str | None, limits: d.Limits, history_limit: int) -> RunOutcome | None:
    """``finish`` inside the caller's transaction (the one that records the turn's end).

    Plain statements on the session's connection: this runs once per fire, inside a group commit
    whose session other turns share, so it neither uses nor leaves ORM state.
    """
    conn = s.connection()
    row = conn.execute(_RECORD, {"b_id": task_run_id}).first()
    if row is None or row.status != RunOutcome.RUNNING.value:
        return None
    task = _locked_task(conn, db, row.task_id)
    superseded = bool(row.superseded_by) and not succeeded  # a replace's stop reached it (SPEC §19)
    if task is None:
        result = d.Finish(RunOutcome.SUCCEEDED if succeeded else RunOutcome.FAILED, {})
    elif superseded:
        result = d.decide_superseded(task_view(task), now)
    else:
        result = d.decide_finish(task_view(task), Trigger(row.trigger), succeeded, output, error, now, limits)
    outcome = result.outcome
    quiet = superseded or (  # a superseded fire is nobody's news: the newer one is
        task is not None and fire_rules.is_quiet(task.notify_on, succeeded, output, row.outcome))
    conn.execute(_END_RECORD, {"b_id": row.id, "b_status": outcome.value, "b_now": now, "b_error": error,
                               "b_quiet": quiet, "b_superseded_by": row.superseded_by if superseded else None})
    if task is not None and task.active_run_id == row.id:
        _write_task(conn, task.id, result.changes, now)
        settle_waiting(conn, task.id, (bool(task.pending_run), task.pending_occurrence_at),
                       (result.changes.get("pending_run", bool(task.pending_run)),
                        result.changes.get("pending_occurrence_at", task.pending_occurrence_at)),
                       str(getattr(status := result.changes.get("status", task.status), "value", status)), now)
        fire_queue.advance(conn, task.id, now, _not_before(task, result, now, limits))
        attention.record(conn, rec.fire_events(task, result.changes, outcome, row.run_id, row.id, output,
                                               error, now, quiet=quiet, reported=row.outcome))
        run_count = result.changes.get("run_count", task.run_count)
        if run_count > history_limit or run_count % PRUNE_EVERY == 0:
            prune_history(s, task.id, history_limit)
    return outcome


def _not_before(task: sa.Row, result: d.Finish, now: dt.datetime, limits: d.Limits) -> dt.datetime | None:
    """When the next fire waiting in line may start: after a failure that counts, its back-off."""
    failures = result.changes.get("consecutive_failures", task.consecutive_failures)
    if failures <= task.consecutive_failures or failures == 0:
        return None
    return now + dt.timedelta(seconds=d.backoff_seconds(failures, limits.backoff_seconds, limits.backoff_cap_seconds))


def _locked_task(conn: sa.Connection, db: Database, task_id: int) -> sa.Row | None:
    """The task's columns, its row locked for the rest of the transaction (on SQLite the write
    transaction already holds the database's one writer lock). The one way an ending fire
    (finished or abandoned) reads the task it updates."""
    return conn.execute(_TASK if db.sqlite else _TASK_LOCKED, {"b_id": task_id}).first()


def _write_task(conn: sa.Connection, task_id: int, changes: TaskChanges, now: dt.datetime) -> None:
    conn.execute(_TASKS_T.update().where(_TASKS_T.c.id == task_id).values(**changes.columns(), updated_at=now))


def prune_history(s: Session, task_id: int, limit: int) -> int:
    """Delete the task's oldest finished TaskRuns beyond ``limit``; returns how many."""
    keep = select(TaskRun.id).where(TaskRun.task_id == task_id).order_by(TaskRun.id.desc()).limit(limit)
    result = s.exec(sa.delete(TaskRun).where(
        TaskRun.task_id == task_id, TaskRun.id.not_in(keep.scalar_subquery()),
        TaskRun.status.not_in([RunOutcome.RUNNING.value, *WAITING])))
    return result.rowcount or 0


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
        s.flush()
        task = _locked_task(s.connection(), db, row.task_id)
        if task is not None and task.active_run_id == row.id:
            changes = d.decide_abandoned(task_view(task), Trigger(row.trigger))
            _write_task(s.connection(), task.id, changes, now)
            status = changes.get("status", task.status)
            settle_waiting(s.connection(), task.id, (bool(task.pending_run), task.pending_occurrence_at),
                           (bool(task.pending_run), task.pending_occurrence_at), str(getattr(status, "value", status)),
                           now)
            fire_queue.advance(s.connection(), task.id, now)
            attention.record(s.connection(), rec.fire_events(task, changes, RunOutcome.ABANDONED, row.run_id,
                                                             row.id, "", d.ABANDONED_REASON, now))
    log.warning("action=claim_abandoned task_run_id=%s", task_run_id)
    return True
