"""Fires asked for outright — a run now, a trigger call — and the line of fires that wait (SPEC §19).

A task has one *slot* (``pending_run`` / ``pending_forced`` / ``pending_occurrence_at``): the
follow-up the scheduler fires next. Every fire that waits also has its record (a ``queued``
TaskRun, with a trigger call's payload), so an ``overlap=queue_all`` task may have several in
line; when the slot empties (its fire started, ended or was dropped) the oldest record in line
moves into it (:func:`advance`). The decision for one call is pure (:func:`decide`); :func:`ask`
applies it in the caller's write transaction, the task's row locked.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum

import sqlalchemy as sa
from sqlmodel import Session, func, select

from app.core.db import Database
from app.core.models import Run, RunStatus
from app.schedules.abandon import FORCED
from app.schedules.model import Overlap, RunOutcome, ScheduledTask, TaskRun, TaskStatus, Trigger

SUPERSEDED_BY = "a newer fire of this task (overlap=replace)"  # who "stopped" a superseded turn
QUEUE_FULL = "queue full"
BUSY_SKIP = "the chat was busy (overlap=skip)"


class Asked(enum.StrEnum):
    """What became of a fire asked for (the trigger call's ``status``)."""

    STARTED = "started"  # it fires as soon as the scheduler claims it (the chat is free, or freed for it)
    QUEUED = "queued"  # it waits for the chat, in line
    COALESCED = "coalesced"  # folded into the fire that already waits (overlap=queue_one)
    SKIPPED = "skipped"  # not fired: the chat was busy (overlap=skip) or the line was full (queue_all)


@dataclasses.dataclass(frozen=True)
class Situation:
    """What one call is decided on."""

    overlap: Overlap
    chat_busy: bool  # a turn (a person's or a fire's) runs in the chat
    own_fire_running: bool  # the turn in flight is this task's own fire
    slot_taken: bool  # a follow-up already waits in the task's slot
    in_line: int  # fires of this task that wait (queued records)
    queue_cap: int


def decide(x: Situation) -> tuple[Asked, str | None]:
    """(what becomes of the call, the skip's reason). Pure."""
    if x.overlap == Overlap.REPLACE and (x.own_fire_running or not x.chat_busy):
        return Asked.STARTED, None
    if not x.chat_busy and not x.slot_taken:
        return Asked.STARTED, None
    if x.overlap == Overlap.SKIP and x.chat_busy:
        return Asked.SKIPPED, BUSY_SKIP
    if x.overlap == Overlap.QUEUE_ALL:
        if x.in_line >= x.queue_cap:
            return Asked.SKIPPED, QUEUE_FULL
        return Asked.QUEUED, None
    if x.slot_taken:  # queue_one (and replace behind a turn that is not its own): one follow-up
        return Asked.COALESCED, None
    return Asked.QUEUED, None


@dataclasses.dataclass(frozen=True)
class Request:
    trigger: Trigger
    overlap: Overlap | None = None  # this call's overlap (None: the task's)
    payload: str | None = None
    requested_by: str | None = None  # a person's run now: their email


def ask(s: Session, db: Database, task: ScheduledTask, req: Request, now: dt.datetime) -> tuple[Asked, TaskRun]:
    """Inside a write transaction, ``task`` read with its row locked: record the fire asked for and
    return what became of it and its record (the ``run_id`` a trigger call answers)."""
    overlap = req.overlap or Overlap(task.overlap)
    situation = _situation(s, task, overlap)
    asked, reason = decide(situation)
    if asked == Asked.COALESCED:
        row = _slot_record(s, task, now, req)
        if req.payload is not None:  # the waiting fire carries the newest payload ("the latest matters")
            row.payload = req.payload
        s.add(row)
        return asked, row
    row = _record(task, req, _free_instant(s, task.id, now),
                  RunOutcome.SKIPPED if asked == Asked.SKIPPED else RunOutcome.QUEUED, reason)
    s.add(row)
    s.flush()  # its id
    if asked == Asked.SKIPPED:
        return asked, row
    if overlap == Overlap.REPLACE:
        supersede(s, task, row, now)
    # the line waits for an active task only: a run now of a paused one takes the slot, as it always did
    if overlap == Overlap.REPLACE or task.status != TaskStatus.ACTIVE.value:
        into_slot(task, row)
    elif not task.pending_run:  # the slot takes the oldest in line (this one if the line was empty): in order
        into_slot(task, s.exec(select(TaskRun).where(TaskRun.task_id == task.id,
                                                      TaskRun.status == RunOutcome.QUEUED.value)
                                .order_by(TaskRun.occurrence_at).limit(1)).one())
    s.add(task)
    return asked, row


def _situation(s: Session, task: ScheduledTask, overlap: Overlap) -> Situation:
    busy_fire = s.exec(select(func.count()).select_from(ScheduledTask).where(
        ScheduledTask.chat_id == task.chat_id, ScheduledTask.active_run_id.is_not(None))).one()
    busy_turn = s.exec(select(func.count()).select_from(Run).where(
        Run.chat_id == task.chat_id, Run.status == RunStatus.RUNNING.value)).one()
    in_line = s.exec(select(func.count()).select_from(TaskRun).where(
        TaskRun.task_id == task.id, TaskRun.status == RunOutcome.QUEUED.value)).one()
    busy = bool(busy_fire or busy_turn)
    if task.pending_run and not busy and in_line:  # the slot's fire starts next: it is not waiting in line
        in_line -= 1
    return Situation(overlap=overlap, chat_busy=busy, own_fire_running=task.active_run_id is not None,
                     slot_taken=bool(task.pending_run), in_line=in_line, queue_cap=task.queue_cap)


def _free_instant(s: Session, task_id: int, now: dt.datetime) -> dt.datetime:
    """``now``, or the first microsecond after it no record of the task holds: (task, occurrence)
    is unique, and calls may come faster than the clock ticks."""
    taken = set(s.exec(select(TaskRun.occurrence_at).where(
        TaskRun.task_id == task_id, TaskRun.occurrence_at >= now,
        TaskRun.occurrence_at < now + dt.timedelta(seconds=1))))
    at = now
    while at in taken:
        at += dt.timedelta(microseconds=1)
    return at


def _record(task: ScheduledTask, req: Request, now: dt.datetime, status: RunOutcome, error: str | None) -> TaskRun:
    return TaskRun(task_id=task.id, occurrence_at=now, planned_at=now, trigger=req.trigger.value, status=status.value,
                   fire_number=0, claimed_at=now, finished_at=now if status == RunOutcome.SKIPPED else None,
                   error=error, payload=req.payload, requested_by=req.requested_by,
                   max_tokens=task.max_tokens_per_fire, max_cost_usd=task.max_cost_per_fire_usd)


def _slot_record(s: Session, task: ScheduledTask, now: dt.datetime, req: Request) -> TaskRun:
    """The record of the follow-up in the slot (made ``queued`` if it had none yet)."""
    at = task.pending_occurrence_at or now
    row = s.exec(select(TaskRun).where(TaskRun.task_id == task.id, TaskRun.occurrence_at == at)).first()
    if row is None:
        row = _record(task, dataclasses.replace(req, trigger=Trigger(task.pending_forced or Trigger.FOLLOW_UP)),
                      at, RunOutcome.QUEUED, None)
        s.add(row)
        s.flush()
    return row


def into_slot(task: ScheduledTask, row: TaskRun) -> None:
    """The task's slot holds ``row``'s fire, ready at once (a run now keeps who asked)."""
    trigger = Trigger(row.trigger)
    task.pending_run, task.pending_occurrence_at, task.retry_at = True, row.occurrence_at, None
    task.pending_forced = trigger.value if trigger in FORCED else None
    task.pending_forced_by = row.requested_by if trigger == Trigger.RUN_NOW_USER else None


def supersede(s: Session, task: ScheduledTask, newer: TaskRun, now: dt.datetime) -> None:
    """overlap=replace (a trigger call, a run now, or the scheduler's regular occurrence): the task's
    fire in flight is stopped (its record will end ``superseded``, linked to ``newer``) and whatever
    waited in line is dropped for the newer fire."""
    runs = TaskRun.__table__
    s.exec(sa.update(TaskRun).where(TaskRun.task_id == task.id, TaskRun.id != newer.id,
                                    TaskRun.status.in_([RunOutcome.QUEUED.value, RunOutcome.DEFERRED.value]))
           .values(status=RunOutcome.SKIPPED.value, finished_at=now, error=f"superseded by fire {newer.id}"))
    if task.active_run_id is None:
        return
    s.exec(runs.update().where(runs.c.id == task.active_run_id, runs.c.status == RunOutcome.RUNNING.value)
           .values(superseded_by=newer.id))
    chat_run = s.exec(select(TaskRun.run_id).where(TaskRun.id == task.active_run_id)).first()
    if chat_run is not None:
        s.exec(sa.update(Run).where(Run.id == chat_run, Run.status == RunStatus.RUNNING.value,
                                    Run.stop_requested_by.is_(None)).values(stop_requested_by=SUPERSEDED_BY))


def advance(conn: sa.Connection, task_id: int, now: dt.datetime, not_before: dt.datetime | None = None) -> bool:
    """The slot is empty: the oldest fire waiting in line (a ``queued`` record) moves into it, ready
    at ``not_before`` (a failure's back-off) or at once. Inside the caller's transaction, the task's
    row locked. Returns whether one did."""
    tasks, runs = ScheduledTask.__table__, TaskRun.__table__
    task = conn.execute(sa.select(tasks.c.pending_run, tasks.c.status).where(tasks.c.id == task_id)).first()
    if task is None or task.pending_run or task.status != TaskStatus.ACTIVE.value:
        return False
    head = conn.execute(sa.select(runs.c.occurrence_at, runs.c.trigger, runs.c.requested_by)
                        .where(runs.c.task_id == task_id, runs.c.status == RunOutcome.QUEUED.value)
                        .order_by(runs.c.occurrence_at).limit(1)).first()
    if head is None:
        return False
    trigger = Trigger(head.trigger)
    conn.execute(tasks.update().where(tasks.c.id == task_id).values(
        pending_run=True, pending_occurrence_at=head.occurrence_at, retry_at=not_before, updated_at=now,
        pending_forced=trigger.value if trigger in FORCED else None,
        pending_forced_by=head.requested_by if trigger == Trigger.RUN_NOW_USER else None))
    return True
