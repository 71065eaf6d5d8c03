"""The durable outbox (SPEC §13): attention events → ``deliveries`` → attempts, all in the database.

Exactly one deliverer fans out an event: the compare-and-set ``fanned_out_at IS NULL → now`` and
the event's deliveries are one transaction, so the deliveries exist once or not at all (and
``(event_id, channel_id)`` is unique besides). A due delivery is attempted by the deliverer that
took its lease (``lease_owner``/``lease_until`` by compare-and-set; on PostgreSQL a lock on the
channel's row, ``SKIP LOCKED``, keeps racing deliverers off each other's channels); a deliverer that dies mid-attempt
leaves a lease that expires, and another one retries: at least once.

An event goes to the channels of the user its ``user_id`` names, and only while that user can see
its chat. Leases are shared fairly: at most one attempt in flight per channel and ``PER_USER``
per user, across every deliverer (:func:`claim_due`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
from collections import Counter
from typing import Any

import sqlalchemy as sa

from app.attention.notify import policy
from app.attention.reads import visible_chats
from app.core.attention_tables import AttentionEvent, ChannelKind, Delivery, DeliveryState, NotificationChannel
from app.core.clock import rfc3339
from app.core.db import Database
from app.core.models import Chat, Run, User

log = logging.getLogger("chatcron.notify")
_EVENTS, _CHANNELS, _DELIVERIES = AttentionEvent.__table__, NotificationChannel.__table__, Delivery.__table__
_USERS, _RUNS, _CHATS = User.__table__, Run.__table__, Chat.__table__
KEEP_DAYS = 30.0  # a channel's delivery log keeps settled deliveries this long


@dataclasses.dataclass(frozen=True)
class Job:
    """A leased delivery: what one attempt needs."""

    id: int
    kind: str
    body: str
    attempts: int
    channel_id: int
    channel_kind: str
    target: str
    secret: str | None
    channel_deleted: bool


_WORK = sa.select(sa.or_(
    sa.exists().where(_EVENTS.c.fanned_out_at.is_(None)),
    sa.exists().where(_DELIVERIES.c.state == DeliveryState.PENDING.value,
                      _DELIVERIES.c.next_attempt_at <= sa.bindparam("now"),
                      sa.or_(_DELIVERIES.c.lease_until.is_(None), _DELIVERIES.c.lease_until < sa.bindparam("now")))))


def has_work(db: Database, now: dt.datetime) -> bool:
    """Whether an event waits for its fan-out or a delivery is due: an idle round's only query."""
    with db.engine.connect() as conn:
        return bool(conn.execute(_WORK, {"now": now}).scalar())


def fan_out(db: Database, now: dt.datetime, limit: int = 100) -> int:
    """Turn up to ``limit`` events nobody fanned out yet into deliveries; returns how many were ours."""
    with db.read() as s:
        ids = s.execute(sa.select(_EVENTS.c.id).where(_EVENTS.c.fanned_out_at.is_(None))
                        .order_by(_EVENTS.c.id).limit(limit)).scalars().all()
    if not ids:
        return 0
    ours = 0
    with db.write() as s:
        conn = s.connection()
        for event_id in ids:
            claimed = conn.execute(sa.update(_EVENTS).where(_EVENTS.c.id == event_id, _EVENTS.c.fanned_out_at.is_(None))
                                   .values(fanned_out_at=now))
            if claimed.rowcount != 1:
                continue  # another deliverer took it
            ours += 1
            rows = _deliveries_of(conn, event_id, now)
            if rows:
                conn.execute(sa.insert(_DELIVERIES), rows)
                log.info("action=fanned_out event_id=%s deliveries=%s", event_id, len(rows))
    return ours


def _recipient(conn: sa.Connection, event: sa.Row) -> sa.Row | None:
    """The user an event is for (by id, never by email), if they can still see its chat: someone who
    lost the project, or a new account under a deleted user's email, hears nothing of it."""
    if event.user_id is None:
        return None
    user = conn.execute(sa.select(_USERS.c.id, _USERS.c.is_admin).where(_USERS.c.id == event.user_id)).first()
    if user is None:
        return None
    sees = conn.execute(sa.select(_CHATS.c.id).where(_CHATS.c.id == event.chat_id, visible_chats(user))).first()
    return user if sees is not None else None


def _deliveries_of(conn: sa.Connection, event_id: int, now: dt.datetime) -> list[dict[str, Any]]:
    event = conn.execute(sa.select(_EVENTS).where(_EVENTS.c.id == event_id)).one()
    user = _recipient(conn, event) if event.notify else None
    if user is None:
        return []
    channels = conn.execute(sa.select(_CHANNELS.c.id, _CHANNELS.c.events)
                            .where(_CHANNELS.c.user_id == user.id, _CHANNELS.c.deleted_at.is_(None))).all()
    wanted = [c.id for c in channels if policy.wants(policy.parse_events(c.events), event.kind)]
    if not wanted:
        return []
    body = policy.webhook_body(event.kind, _payload(event.payload), chat_id=event.chat_id,
                               at=rfc3339(event.created_at), usage=_usage(conn, event.run_id))
    return [{"event_id": event_id, "channel_id": cid, "kind": event.kind, "body": body,
             "state": DeliveryState.PENDING.value, "attempts": 0, "next_attempt_at": now, "created_at": now}
            for cid in wanted]


def _payload(raw: str | None) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _usage(conn: sa.Connection, run_id: int | None) -> dict[str, Any] | None:
    if run_id is None:
        return None
    raw = conn.execute(sa.select(_RUNS.c.usage).where(_RUNS.c.id == run_id)).scalar()
    try:
        value = json.loads(raw) if raw else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def queue_test(db: Database, channel_id: int, now: dt.datetime) -> int:
    """Queue a "send test" delivery to one channel through the same outbox; returns its id."""
    with db.write() as s:
        return s.connection().execute(sa.insert(_DELIVERIES).values(
            event_id=None, channel_id=channel_id, kind=policy.TEST_KIND,
            body=policy.test_body(channel_id, rfc3339(now)), state=DeliveryState.PENDING.value, attempts=0,
            next_attempt_at=now, created_at=now)
            .returning(_DELIVERIES.c.id)).scalar_one()


_PENDING = _DELIVERIES.c.state == DeliveryState.PENDING.value
_FREE = sa.or_(_DELIVERIES.c.lease_until.is_(None), _DELIVERIES.c.lease_until < sa.bindparam("now"))
_DUE = (sa.select(_DELIVERIES.c.id).where(_PENDING, _DELIVERIES.c.next_attempt_at <= sa.bindparam("now"), _FREE)
        .order_by(_DELIVERIES.c.next_attempt_at, _DELIVERIES.c.id))
# Attempts in flight anywhere: a live lease (a deliverer that died leaves one that runs out).
_IN_FLIGHT = (sa.select(_DELIVERIES.c.channel_id, _CHANNELS.c.user_id)
              .join(_CHANNELS, _CHANNELS.c.id == _DELIVERIES.c.channel_id)
              .where(_PENDING, _DELIVERIES.c.lease_until >= sa.bindparam("now")))
_RANKED = sa.select(_DELIVERIES.c.id, _DELIVERIES.c.channel_id, _DELIVERIES.c.next_attempt_at,
                    sa.func.row_number().over(partition_by=_DELIVERIES.c.channel_id,
                                              order_by=(_DELIVERIES.c.next_attempt_at, _DELIVERIES.c.id))
                    .label("place")).where(_PENDING, _DELIVERIES.c.next_attempt_at <= sa.bindparam("now"),
                                           _FREE).subquery()
# Each channel's oldest due delivery, oldest first: a channel with a thousand queued is one row here.
_HEADS = (sa.select(_RANKED.c.id, _RANKED.c.channel_id, _CHANNELS.c.user_id)
          .join(_CHANNELS, _CHANNELS.c.id == _RANKED.c.channel_id)
          .where(_RANKED.c.place == 1).order_by(_RANKED.c.next_attempt_at, _RANKED.c.id))
_OTHER = _DELIVERIES.alias("other")
_CHANNEL_BUSY = sa.exists().where(_OTHER.c.channel_id == _DELIVERIES.c.channel_id, _OTHER.c.id != _DELIVERIES.c.id,
                                  _OTHER.c.state == DeliveryState.PENDING.value,
                                  _OTHER.c.lease_until >= sa.bindparam("now"))
PER_USER = 2  # attempts in flight at once for one user's channels (one per channel), across every deliverer


def _fair_share(conn: sa.Connection, now: dt.datetime, limit: int) -> list[int]:
    """Up to ``limit`` due deliveries to lease, oldest first, skipping a channel with an attempt in
    flight and a user with ``PER_USER`` of them: a hung receiver holds one deliverer, not all."""
    busy_channels: set[int] = set()
    per_user: Counter[int] = Counter()
    for channel_id, user_id in conn.execute(_IN_FLIGHT, {"now": now}):
        busy_channels.add(channel_id)
        per_user[user_id] += 1
    picked: list[int] = []
    for row in conn.execute(_HEADS, {"now": now}):
        if row.channel_id in busy_channels or per_user[row.user_id] >= PER_USER:
            continue
        picked.append(row.id)
        busy_channels.add(row.channel_id)
        per_user[row.user_id] += 1
        if len(picked) == limit:
            break
    return picked


def _lock_channels(conn: sa.Connection, ids: list[int]) -> list[int]:
    """PostgreSQL: keep the deliveries whose channel this transaction could lock at once; a racing
    deliverer that holds one is leasing for it (SQLite's single writer already excludes that)."""
    channel_of = dict(conn.execute(sa.select(_DELIVERIES.c.id, _DELIVERIES.c.channel_id)
                                   .where(_DELIVERIES.c.id.in_(ids))).all())
    locked = set(conn.execute(sa.select(_CHANNELS.c.id).where(_CHANNELS.c.id.in_(set(channel_of.values())))
                              .with_for_update(skip_locked=True, key_share=True)).scalars())
    return [i for i in ids if channel_of.get(i) in locked]


def claim_due(db: Database, now: dt.datetime, owner: str, lease_seconds: float, limit: int) -> list[Job]:
    """Lease up to ``limit`` due deliveries to ``owner`` until ``now + lease_seconds``; returns them.

    Fair share: at most one attempt in flight per channel and ``PER_USER`` per user, counting every
    deliverer's live leases (on PostgreSQL two deliverers leasing in the same instant may each give
    one user one more; never one channel two)."""
    if limit <= 0:
        return []
    until = now + dt.timedelta(seconds=lease_seconds)
    with db.read() as s:  # an idle round is one indexed read: no write lock taken (SQLite has one writer)
        if not s.connection().execute(_DUE.limit(1), {"now": now}).first():
            return []
    with db.write() as s:
        conn = s.connection()
        ids = _fair_share(conn, now, limit)
        if ids and not db.sqlite:
            ids = _lock_channels(conn, ids)
        taken = [i for i in ids if conn.execute(
            sa.update(_DELIVERIES).where(_DELIVERIES.c.id == i, _PENDING, _FREE, ~_CHANNEL_BUSY)
            .values(lease_owner=owner, lease_until=until), {"now": now}).rowcount == 1]
        if not taken:
            return []
        rows = conn.execute(
            sa.select(_DELIVERIES.c.id, _DELIVERIES.c.kind, _DELIVERIES.c.body, _DELIVERIES.c.attempts,
                      _DELIVERIES.c.channel_id, _CHANNELS.c.kind.label("channel_kind"), _CHANNELS.c.target,
                      _CHANNELS.c.secret, _CHANNELS.c.deleted_at)
            .join(_CHANNELS, _CHANNELS.c.id == _DELIVERIES.c.channel_id)
            .where(_DELIVERIES.c.id.in_(taken)).order_by(_DELIVERIES.c.id)).all()
    return [Job(id=r.id, kind=r.kind, body=r.body, attempts=r.attempts, channel_id=r.channel_id,
                channel_kind=r.channel_kind, target=r.target, secret=r.secret,
                channel_deleted=r.deleted_at is not None) for r in rows]


def record(db: Database, job: Job, owner: str, after: policy.Next) -> bool:
    """Write an attempt's result if ``owner`` still holds the lease; False when it was lost meanwhile."""
    with db.write() as s:
        done = s.connection().execute(
            sa.update(_DELIVERIES).where(_DELIVERIES.c.id == job.id, _DELIVERIES.c.lease_owner == owner,
                                         _DELIVERIES.c.state == DeliveryState.PENDING.value)
            .values(**after.columns())).rowcount == 1
    level = logging.INFO if after.state != DeliveryState.FAILED else logging.WARNING
    log.log(level, "action=delivery_%s delivery_id=%s channel_id=%s kind=%s attempts=%s status=%s error=%s",
            after.state.value, job.id, job.channel_id, job.kind, after.attempts, after.last_status,
            after.last_error if after.last_error is None else json.dumps(after.last_error))
    if not done:
        log.warning("action=delivery_lease_lost delivery_id=%s owner=%s", job.id, owner)
    return done


def prune(db: Database, now: dt.datetime, keep_days: float = KEEP_DAYS) -> int:
    """Forget settled deliveries (delivered or failed) older than ``keep_days``; returns how many."""
    cutoff = now - dt.timedelta(days=keep_days)
    with db.write() as s:
        gone = s.connection().execute(sa.delete(_DELIVERIES).where(
            _DELIVERIES.c.state != DeliveryState.PENDING.value, _DELIVERIES.c.created_at < cutoff)).rowcount
    if gone:
        log.info("action=deliveries_pruned count=%s", gone)
    return gone


def is_email(job: Job) -> bool:
    return job.channel_kind == ChannelKind.EMAIL.value
