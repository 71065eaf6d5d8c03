"""The run lock and the event log, as atomic writes in the database (SPEC §2, §4).

One running run per chat is a partial unique index (``uq_run_one_running_per_chat``); a run
whose heartbeat is older than the lease is dead and gets abandoned by whoever looks next.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from app.core.clock import Clock
from app.core.db import Database
from app.core.errors import NotFound, PromptAlreadyRunning
from app.core.models import Event, EventType, Run, RunSource, RunStatus

ABANDONED_REASON = "the process running this turn stopped before the turn finished"
MAX_PAGE = 1000


def _event(s: Session, chat_id: int, run_id: int | None, kind: EventType, text: str, now: dt.datetime) -> None:
    s.add(Event(chat_id=chat_id, run_id=run_id, type=kind.value, text=text, created_at=now))


def begin_run(db: Database, clock: Clock, chat_id: int, prompt: str, *, source: RunSource,
              lease_seconds: int, instance: str, shown_prompt: str | None = None,
              task_id: int | None = None, task_run_id: int | None = None) -> Run:
    """Take the chat's run lock and log the prompt; raises PromptAlreadyRunning if a live run holds it.

    ``shown_prompt`` is what the transcript shows (defaults to ``prompt``); a scheduled fire
    logs a ``scheduled_prompt`` event instead of ``prompt``.
    """
    now = clock.now()
    kind = EventType.SCHEDULED_PROMPT if source == RunSource.SCHEDULE else EventType.PROMPT
    try:
        with db.write() as s:
            _abandon_stale(s, now, lease_seconds, chat_id=chat_id)
            run = Run(chat_id=chat_id, source=source.value, status=RunStatus.RUNNING.value, prompt=prompt,
                      instance=instance, task_id=task_id, task_run_id=task_run_id,
                      started_at=now, heartbeat_at=now)
            s.add(run)
            s.flush()
            _event(s, chat_id, run.id, kind, shown_prompt if shown_prompt is not None else prompt, now)
            _event(s, chat_id, run.id, EventType.RUN_STARTED, source.value, now)
            return run
    except IntegrityError:
        raise PromptAlreadyRunning() from None


def append_output(db: Database, clock: Clock, run: Run, text: str) -> bool:
    """Log a chunk of assistant text and add it to ``Run.output``; False if the run is no longer running."""
    now = clock.now()
    with db.write() as s:
        result = s.exec(
            sa.update(Run)
            .where(Run.id == run.id, Run.status == RunStatus.RUNNING.value)
            .values(output=Run.output + text, heartbeat_at=now)
        )
        if result.rowcount != 1:
            return False
        _event(s, run.chat_id, run.id, EventType.ASSISTANT_TEXT, text, now)
        return True


def finish_run(db: Database, clock: Clock, run: Run, status: RunStatus, error: str | None = None) -> bool:
    """Release the lock with a final status; False if someone already ended the run (e.g. abandoned it)."""
    now = clock.now()
    with db.write() as s:
        result = s.exec(
            sa.update(Run)
            .where(Run.id == run.id, Run.status == RunStatus.RUNNING.value)
            .values(status=status.value, error=error, finished_at=now)
        )
        if result.rowcount != 1:
            return False
        if error:
            _event(s, run.chat_id, run.id, EventType.ERROR, error, now)
        _event(s, run.chat_id, run.id, EventType.RUN_FINISHED, status.value, now)
        return True


def renew_heartbeats(db: Database, clock: Clock, run_ids: Iterable[int]) -> set[int]:
    """Renew the heartbeat of these runs; returns the ids that are still running."""
    ids = list(run_ids)
    if not ids:
        return set()
    with db.write() as s:
        s.exec(
            sa.update(Run).where(Run.id.in_(ids), Run.status == RunStatus.RUNNING.value)
            .values(heartbeat_at=clock.now())
        )
        rows = s.exec(select(Run.id).where(Run.id.in_(ids), Run.status == RunStatus.RUNNING.value))
        return set(rows)


def abandon_stale_runs(db: Database, clock: Clock, lease_seconds: int) -> list[Run]:
    """Mark every running run with an expired heartbeat abandoned and free its chat."""
    with db.write() as s:
        return _abandon_stale(s, clock.now(), lease_seconds)


def _abandon_stale(s: Session, now: dt.datetime, lease_seconds: int, chat_id: int | None = None) -> list[Run]:
    cutoff = now - dt.timedelta(seconds=lease_seconds)
    query = select(Run).where(Run.status == RunStatus.RUNNING.value, Run.heartbeat_at < cutoff)
    if chat_id is not None:
        query = query.where(Run.chat_id == chat_id)
    abandoned = []
    for run in list(s.exec(query)):
        result = s.exec(
            sa.update(Run)
            .where(Run.id == run.id, Run.status == RunStatus.RUNNING.value, Run.heartbeat_at < cutoff)
            .values(status=RunStatus.ABANDONED.value, error=ABANDONED_REASON, finished_at=now)
        )
        if result.rowcount == 1:
            _event(s, run.chat_id, run.id, EventType.ERROR, ABANDONED_REASON, now)
            _event(s, run.chat_id, run.id, EventType.RUN_FINISHED, RunStatus.ABANDONED.value, now)
            abandoned.append(run)
    return abandoned


def live_run(db: Database, clock: Clock, chat_id: int, lease_seconds: int) -> Run | None:
    """The chat's running run whose heartbeat is within the lease, or None (read-only)."""
    cutoff = clock.now() - dt.timedelta(seconds=lease_seconds)
    with db.read() as s:
        return s.exec(
            select(Run).where(Run.chat_id == chat_id, Run.status == RunStatus.RUNNING.value,
                              Run.heartbeat_at >= cutoff)
        ).first()


def get_run(db: Database, run_id: int) -> Run:
    with db.read() as s:
        run = s.get(Run, run_id)
    if run is None:
        raise NotFound(f"no run with id {run_id}")
    return run


def list_events(db: Database, chat_id: int, after: int = 0, limit: int = 200) -> list[Event]:
    """Transcript page: events with id > ``after``, ascending, at most ``limit`` (≤ 1000)."""
    with db.read() as s:
        return list(s.exec(
            select(Event).where(Event.chat_id == chat_id, Event.id > after)
            .order_by(Event.id).limit(max(1, min(limit, MAX_PAGE)))
        ))
