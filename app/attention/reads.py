"""Read state (SPEC §13): a user's inbox read mark and what they last saw of each chat.

- The inbox: attention events with ``id <= InboxRead.read_before`` are read. The mark only moves
  forward (two tabs marking at once, an old tab sending an old id: the higher mark stays).
- A chat: ``ChatRead.last_event_id`` is the newest transcript event the user had on screen. A
  chat's *unread count* is the number of finished turns (``run_finished`` transcript events)
  after it — user turns and fires alike, since either may have happened while the user was away.
  A chat without a row (created after migration 0009, never opened by this user) counts all of
  its finished turns. The mark only moves forward too.

Every function is blocking; the UI calls them through ``asyncio.to_thread``.
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from app.core.attention_tables import AttentionEvent, AttentionKind, ChatRead, InboxRead
from app.core.db import Database
from app.core.models import Chat, Event, EventType, Membership, Run, RunStatus, User

_CHATS, _EVENTS, _ATT = Chat.__table__, Event.__table__, AttentionEvent.__table__
_INBOX, _CHAT_READS = InboxRead.__table__, ChatRead.__table__


def visible_chats(user: User) -> sa.ColumnElement[bool]:
    """A condition on ``chats``: the chat is one ``user`` can see (admins: every chat; others: chats
    of projects they are members of, and their own loose chats)."""
    if user.is_admin:
        return sa.true()
    member = sa.select(Membership.__table__.c.project_id).where(Membership.__table__.c.user_id == user.id)
    return sa.or_(_CHATS.c.project_id.in_(member),
                  sa.and_(_CHATS.c.project_id.is_(None), _CHATS.c.owner_id == user.id))


# Events only their recipient (and admins) may read: an agent start failure holds admin detail.
PRIVATE_KINDS = (AttentionKind.AGENT_START_FAILED.value,)


def visible_events(user: User) -> sa.ColumnElement[bool]:
    """A condition on ``attention_events`` joined to ``chats``: an event of a chat ``user`` can see
    (:func:`visible_chats`), unless it is of a private kind and addressed to someone else."""
    if user.is_admin:
        return sa.true()
    return sa.and_(visible_chats(user), sa.or_(_ATT.c.kind.not_in(PRIVATE_KINDS), _ATT.c.user_id == user.id))


def _upsert(conn: sa.Connection, table: sa.Table, keys: dict[str, int], column: str, value: int,
            now: dt.datetime) -> None:
    """Insert the row, or raise ``column`` to ``value`` if it is lower (never lower it)."""
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    stmt = dialect.insert(table).values(**keys, **{column: value}, updated_at=now)
    stmt = stmt.on_conflict_do_update(index_elements=list(keys), set_={column: value, "updated_at": now},
                                      where=table.c[column] < value)
    conn.execute(stmt)


def read_before(db: Database, user: User) -> int:
    """The user's inbox read mark (0 when they never marked anything)."""
    with db.read() as s:
        mark = s.connection().execute(sa.select(_INBOX.c.read_before).where(_INBOX.c.user_id == user.id)).scalar()
    return int(mark or 0)


def mark_inbox_read(db: Database, now: dt.datetime, user: User, before: int) -> int:
    """Mark attention events with ``id <= before`` read for ``user``; the new mark (never lower)."""
    with db.write() as s:
        _upsert(s.connection(), _INBOX, {"user_id": user.id}, "read_before", before, now)
    return read_before(db, user)


UNREAD_CAP = 999  # counted up to here: a badge says "999", and a count never scans a year of events


def inbox_unread(db: Database, user: User, mark: int | None = None) -> int:
    """How many attention events in chats the user can see are newer than their read mark (at most
    UNREAD_CAP)."""
    mark = read_before(db, user) if mark is None else mark
    newer = (sa.select(_ATT.c.id).select_from(_ATT.join(_CHATS, _CHATS.c.id == _ATT.c.chat_id))
             .where(_ATT.c.id > mark, visible_events(user)).limit(UNREAD_CAP).subquery())
    query = sa.select(sa.func.count()).select_from(newer)
    with db.read() as s:
        return int(s.connection().execute(query).scalar() or 0)


def chat_seen(db: Database, user: User, chat_id: int) -> int | None:
    """The newest event id ``user`` had on screen in the chat; None when they never opened it."""
    query = sa.select(_CHAT_READS.c.last_event_id).where(_CHAT_READS.c.user_id == user.id,
                                                         _CHAT_READS.c.chat_id == chat_id)
    with db.read() as s:
        return s.connection().execute(query).scalar()


def mark_chat_seen(db: Database, now: dt.datetime, user: User, chat_id: int, event_id: int) -> None:
    """The user had the chat on screen up to ``event_id`` (the mark never moves back)."""
    with db.write() as s:
        _upsert(s.connection(), _CHAT_READS, {"user_id": user.id, "chat_id": chat_id}, "last_event_id",
                event_id, now)


def chat_unread_counts(db: Database, user: User, chat_id: int | None = None) -> dict[int, int]:
    """Chat id → finished turns after the user's last visit, for visible chats that have any (only
    ``chat_id``'s when given)."""
    reads = _CHAT_READS.alias("r")
    seen = sa.func.coalesce(reads.c.last_event_id, 0)
    query = (sa.select(_EVENTS.c.chat_id, sa.func.count())
             .select_from(_EVENTS.join(_CHATS, _CHATS.c.id == _EVENTS.c.chat_id)
                          .outerjoin(reads, sa.and_(reads.c.chat_id == _EVENTS.c.chat_id,
                                                    reads.c.user_id == user.id)))
             .where(_EVENTS.c.type == EventType.RUN_FINISHED.value, _EVENTS.c.id > seen, visible_chats(user))
             .group_by(_EVENTS.c.chat_id))
    if chat_id is not None:
        query = query.where(_EVENTS.c.chat_id == chat_id)
    with db.read() as s:
        return {int(chat): int(n) for chat, n in s.connection().execute(query)}


_RUNS = Run.__table__
_NEWEST_ATTENTION = sa.select(sa.func.max(_ATT.c.id))
_NEWEST_RUN = sa.select(sa.func.max(_RUNS.c.id))
_RUNNING = sa.select(sa.func.count()).select_from(_RUNS).where(_RUNS.c.status == RunStatus.RUNNING.value)


def change_mark(db: Database) -> tuple[int, int, int]:
    """(newest attention event id, newest run id, runs running) across the whole store.

    What an open page polls: three index-only reads, the same for every user. A turn's start moves
    the newest run, its end the running count (a start and an end at once move the newest run), an
    event the newest event; when none moved, no unread count of any user changed except by their
    own action."""
    with db.read() as s:
        conn = s.connection()
        return (int(conn.execute(_NEWEST_ATTENTION).scalar() or 0), int(conn.execute(_NEWEST_RUN).scalar() or 0),
                int(conn.execute(_RUNNING).scalar() or 0))
