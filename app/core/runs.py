"""The run lock and the event log, as atomic writes in the database (SPEC §2, §4).

One running run per chat is a partial unique index (``uq_run_one_running_per_chat``); a run
whose heartbeat is older than the lease is dead and gets abandoned by whoever looks next.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

import sqlalchemy as sa
from sqlmodel import Session, select

from app.core.attention_tables import Approval, ApprovalState
from app.core.clock import Clock
from app.core.db import Database
from app.core.errors import NotFound
from app.core.models import Chat, Event, EventType, Run, RunSource, RunStatus
from app.core.turns import TurnSpec

ABANDONED_REASON = "the process running this turn stopped before the turn finished"
MAX_PAGE = 1000

# The statements of a turn's hot path, built once (building and cache-keying a statement costs
# more than SQLite takes to run it) and run on the session's connection.
_RUNS, _EVENTS = Run.__table__, Event.__table__
_RUNNING = sa.and_(_RUNS.c.id == sa.bindparam("b_run"), _RUNS.c.status == RunStatus.RUNNING.value)
_APPEND = _RUNS.update().where(_RUNNING).values(output=_RUNS.c.output + sa.bindparam("b_text", type_=sa.String),
                                                 heartbeat_at=sa.bindparam("b_now"))
_FINISH = _RUNS.update().where(_RUNNING).values(status=sa.bindparam("b_status"), error=sa.bindparam("b_error"),
                                                 finished_at=sa.bindparam("b_now"),
                                                 output=_RUNS.c.output + sa.bindparam("b_text", type_=sa.String))
_INSERT_EVENTS = _EVENTS.insert()
_TOUCH = _RUNS.update().where(_RUNNING).values(heartbeat_at=sa.bindparam("b_now"))
_USAGE = _RUNS.update().where(_RUNS.c.id == sa.bindparam("b_run")).values(usage=sa.bindparam("b_usage"))
_CHATS = Chat.__table__
_CHAT_SESSION = _CHATS.update().where(_CHATS.c.id == sa.bindparam("b_chat")).values(
    provider_session_id=sa.bindparam("b_session"))
_OUTCOME = sa.select(_RUNS.c.status, _RUNS.c.output, _RUNS.c.error).where(_RUNS.c.id == sa.bindparam("b_run"))


def _event(s: Session, chat_id: int, run_id: int | None, kind: EventType, text: str, now: dt.datetime) -> None:
    s.connection().execute(_INSERT_EVENTS, [_event_row(chat_id, run_id, kind, text, now)])


def _event_row(chat_id: int, run_id: int | None, kind: EventType, text: str, now: dt.datetime) -> dict:
    return {"chat_id": chat_id, "run_id": run_id, "type": kind.value, "text": text, "created_at": now}


def begin_runs(s: Session, now: dt.datetime, starts: list[TurnSpec], *, lease_seconds: int,
               instance: str) -> list[Run | None]:
    """Inside a write transaction: take each chat's run lock and log its prompt and ``run_started``.

    Returns the new runs in order, None where the chat already has a live run (or an earlier
    start of the same list took it). A scheduled fire logs ``scheduled_prompt`` instead of
    ``prompt``. Raises IntegrityError if another process took a lock meanwhile (PostgreSQL).
    """
    chat_ids = sorted({start.chat_id for start in starts})
    _abandon_stale(s, now, lease_seconds, chat_ids=chat_ids)
    busy = set(s.exec(select(Run.chat_id).where(Run.chat_id.in_(chat_ids), Run.status == RunStatus.RUNNING.value)))
    runs: list[Run | None] = []
    for start in starts:
        if start.chat_id in busy:
            runs.append(None)
            continue
        busy.add(start.chat_id)
        runs.append(Run(chat_id=start.chat_id, source=start.source.value, status=RunStatus.RUNNING.value,
                        prompt=start.text, instance=instance, task_id=start.task_id,
                        task_run_id=start.task_run_id, started_at=now, heartbeat_at=now))
    s.add_all([run for run in runs if run is not None])
    s.flush()
    events = []
    for start, run in zip(starts, runs, strict=True):
        if run is None:
            continue
        kind = EventType.SCHEDULED_PROMPT if start.source == RunSource.SCHEDULE else EventType.PROMPT
        shown = start.shown_prompt if start.shown_prompt is not None else start.text
        events.append(_event_row(run.chat_id, run.id, kind, shown, now))
        events.append(_event_row(run.chat_id, run.id, EventType.RUN_STARTED, start.source.value, now))
    if events:
        s.connection().execute(_INSERT_EVENTS, events)
    return runs



def append_output_in(s: Session, now: dt.datetime, run_id: int, chat_id: int, text: str) -> bool:
    """Inside a write transaction: log a chunk and add it to ``Run.output``; False if the run ended."""
    result = s.connection().execute(_APPEND, {"b_run": run_id, "b_text": text, "b_now": now})
    if result.rowcount != 1:
        return False
    _event(s, chat_id, run_id, EventType.ASSISTANT_TEXT, text, now)
    return True


def append_output(db: Database, clock: Clock, run: Run, text: str) -> bool:
    """Log a chunk of assistant text (a group commit with other turns' chunks); False if the run ended."""
    now, run_id, chat_id = clock.now(), run.id, run.chat_id
    return db.combined(lambda s: append_output_in(s, now, run_id, chat_id, text))


def append_event_in(s: Session, now: dt.datetime, run_id: int, chat_id: int, kind: EventType, text: str) -> bool:
    """Inside a write transaction: log a thought, tool, plan or status event of a running run (not
    part of ``Run.output``); False if the run ended."""
    if s.connection().execute(_TOUCH, {"b_run": run_id, "b_now": now}).rowcount != 1:
        return False
    _event(s, chat_id, run_id, kind, text, now)
    return True


def append_event(db: Database, clock: Clock, run: Run, kind: EventType, text: str) -> bool:
    """Log one event of a running run (group-committed like text chunks); False if the run ended."""
    now, run_id, chat_id = clock.now(), run.id, run.chat_id
    return db.combined(lambda s: append_event_in(s, now, run_id, chat_id, kind, text))


def record_usage_in(s: Session, run_id: int, usage_json: str) -> None:
    """Inside the transaction that ends a run: what the turn cost (``runs.usage``, JSON)."""
    s.connection().execute(_USAGE, {"b_run": run_id, "b_usage": usage_json})


def record_chat_session_in(s: Session, chat_id: int, session_id: str) -> None:
    """Inside the transaction that ends a run: the agent session later turns of the chat continue."""
    s.connection().execute(_CHAT_SESSION, {"b_chat": chat_id, "b_session": session_id})


def finish_run_in(s: Session, now: dt.datetime, run_id: int, chat_id: int, status: RunStatus,
                  error: str | None = None, tail: str = "") -> bool:
    """Inside a write transaction: append ``tail`` (the rest of the reply) and release the lock with
    a final status; False if the run had already ended."""
    result = s.connection().execute(_FINISH, {"b_run": run_id, "b_status": status.value, "b_error": error,
                                              "b_now": now, "b_text": tail})
    if result.rowcount != 1:
        return False
    rows = [_event_row(chat_id, run_id, EventType.ASSISTANT_TEXT, tail, now)] if tail else []
    if error:
        rows.append(_event_row(chat_id, run_id, EventType.ERROR, error, now))
    rows.append(_event_row(chat_id, run_id, EventType.RUN_FINISHED, status.value, now))
    s.connection().execute(_INSERT_EVENTS, rows)
    return True


def run_outcome_in(s: Session, run_id: int) -> tuple[str, str, str | None] | None:
    """(status, output, error) of a run as the transaction sees it."""
    row = s.connection().execute(_OUTCOME, {"b_run": run_id}).first()
    return (row[0], row[1], row[2]) if row else None



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


def abandon_running_in(s: Session, now: dt.datetime, reason: str) -> list[Run]:
    """Inside a write transaction: every running run becomes abandoned with ``reason``, whatever its
    heartbeat — for a store no process is running turns on (a restored one, SPEC §21)."""
    return _abandon_stale(s, now, None, reason=reason)


def _abandon_stale(s: Session, now: dt.datetime, lease_seconds: int | None,
                   chat_ids: list[int] | None = None, reason: str = ABANDONED_REASON) -> list[Run]:
    """Abandon the running runs whose heartbeat is older than the lease (every running run when
    ``lease_seconds`` is None): the run, its transcript's error and end, its pending approvals."""
    stale = [Run.status == RunStatus.RUNNING.value]
    if lease_seconds is not None:
        stale.append(Run.heartbeat_at < now - dt.timedelta(seconds=lease_seconds))
    query = select(Run).where(*stale)
    if chat_ids is not None:
        query = query.where(Run.chat_id.in_(chat_ids))
    abandoned = []
    for run in list(s.exec(query)):
        result = s.exec(
            sa.update(Run)
            .where(Run.id == run.id, *stale)
            .values(status=RunStatus.ABANDONED.value, error=reason, finished_at=now)
        )
        if result.rowcount == 1:
            _event(s, run.chat_id, run.id, EventType.ERROR, reason, now)
            _event(s, run.chat_id, run.id, EventType.RUN_FINISHED, RunStatus.ABANDONED.value, now)
            s.exec(sa.update(Approval)  # its process died: nobody waits for an answer any more
                   .where(Approval.run_id == run.id, Approval.state == ApprovalState.PENDING.value)
                   .values(state=ApprovalState.CANCELLED.value, decided_at=now))
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


def newest_event_id(db: Database) -> int:
    """The newest transcript event id of the whole store (0: none); an index-only read."""
    with db.read() as s:
        return int(s.exec(select(sa.func.max(Event.id))).one() or 0)


def histories(db: Database, chat_ids: list[int], limit: int = 50) -> tuple[dict[int, tuple[tuple[str, str], ...]],
                                                              dict[int, int]]:
    """Each chat's earlier finished turns as (role, text), oldest first (providers trim to budget),
    and the id of its latest one."""
    if not chat_ids:
        return {}, {}
    rank = sa.func.row_number().over(partition_by=Run.chat_id, order_by=Run.id.desc()).label("rank")
    inner = (select(Run.chat_id, Run.id, Run.prompt, Run.output, rank)
             .where(Run.chat_id.in_(set(chat_ids)), Run.status != RunStatus.RUNNING.value).subquery())
    with db.read() as s:
        rows = list(s.exec(select(inner.c.chat_id, inner.c.id, inner.c.prompt, inner.c.output)
                           .where(inner.c.rank <= limit).order_by(inner.c.chat_id, inner.c.id)))
    turns: dict[int, list[tuple[str, str]]] = {}
    latest: dict[int, int] = {}
    for chat_id, run_id, prompt, output in rows:
        turns.setdefault(chat_id, []).append(("user", prompt))
        latest[chat_id] = run_id
        if output:
            turns[chat_id].append(("assistant", output))
    return {chat_id: tuple(items) for chat_id, items in turns.items()}, latest
