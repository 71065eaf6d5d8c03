"""Which tasks the loop looks at, and when it must look again: two read-only queries (SPEC §3
"The loop", §14's window ends and timed pauses), and the scheduler's heartbeat (its lease)."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlmodel import func, select

from app.core.db import Database
from app.schedules.model import ScheduledTask, SchedulerInstance, TaskStatus


def due_task_ids(db: Database, now: dt.datetime, limit: int = 500) -> list[int]:
    """Tasks that may want to fire now, oldest deadline first (the claim re-checks each)."""
    t = ScheduledTask
    pending_ready = sa.and_(t.pending_run, sa.or_(t.retry_at.is_(None), t.retry_at <= now))
    due = sa.or_(
        sa.and_(t.status == TaskStatus.ACTIVE.value, sa.or_(t.next_run_at <= now, pending_ready, t.ends_at <= now)),
        sa.and_(t.pending_forced.is_not(None), pending_ready),
        sa.and_(t.status == TaskStatus.PAUSED.value, t.paused_until <= now),  # a timed pause is over
    )
    oldest = sa.func.coalesce(t.retry_at, t.next_run_at, t.paused_until, t.ends_at)  # oldest first
    with db.read() as s:
        return list(s.exec(select(t.id).where(due).order_by(oldest).limit(limit)))


def next_deadline(db: Database, now: dt.datetime) -> dt.datetime | None:
    """The earliest future instant at which some task becomes due (None: nothing scheduled)."""
    t = ScheduledTask
    with db.read() as s:
        regular = s.exec(select(func.min(t.next_run_at)).where(
            t.status == TaskStatus.ACTIVE.value, t.next_run_at > now)).one()
        retry = s.exec(select(func.min(t.retry_at)).where(t.pending_run, t.retry_at > now)).one()
        ends = s.exec(select(func.min(t.ends_at)).where(t.status == TaskStatus.ACTIVE.value, t.ends_at > now)).one()
        resumes = s.exec(select(func.min(t.paused_until)).where(
            t.status == TaskStatus.PAUSED.value, t.paused_until > now)).one()
    found = [x for x in (regular, retry, ends, resumes) if x is not None]
    return min(found) if found else None


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
