"""A task's trigger URL (SPEC §19): made, rotated and revoked by the task's people; called from
outside with a Bearer secret or Standard Webhooks signature; every accepted call is a fire asked
for (:mod:`app.schedules.fire_queue`) with the call's body as its untrusted payload.

What a call is answered is decided in this order, so an unauthenticated caller learns nothing:
the signature (401), a repeated ``webhook-id`` / ``Idempotency-Key`` (the first answer again),
the body (413 / 400), the rate (429), the task's status (409), then the fire.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlmodel import func, select

from app.core.clock import Clock, rfc3339
from app.core.db import Database
from app.core.envelope import PAYLOAD_MAX_BYTES
from app.core.errors import ChatcronError, Conflict, InvalidInput, Unauthorized
from app.core.wake import NullWaker, Waker
from app.schedules.fire_ops import overlap_of
from app.schedules.fire_queue import Request
from app.schedules.model import HookCall, ScheduledTask, TaskHook, TaskStatus, Trigger

TOLERANCE_SECONDS = 300  # a signed call's timestamp may be this far from the server's clock
KEEP_CALLS = dt.timedelta(hours=24)  # how long a call's key answers its first result
STUCK = dt.timedelta(seconds=30)  # a call reserved this long ago without an answer was cut short
RATE_PER_MINUTE = 60
SECRET_PREFIX = "whsec_"
BAD_CALL = "the call is not signed with this trigger's secret (or its timestamp is not within 300 s)"


class TooManyCalls(ChatcronError):
    """More than 60 calls in a minute reached this trigger URL; try again later."""

    code = "rate_limited"

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"more than {RATE_PER_MINUTE} calls in a minute reached this trigger; "
                         f"try again in {retry_after} s")
        self.retry_after = retry_after


class PayloadTooLarge(ChatcronError):
    """The call's body is over 64 KiB."""

    code = "payload_too_large"


@dataclasses.dataclass(frozen=True)
class Call:
    """One call of a trigger URL as it arrived."""

    hook_id: str
    headers: Mapping[str, str]  # lower-case names
    body: bytes
    overlap: str | None = None  # ?overlap=... (a JSON body's top-level "overlap" counts too)


def new_secret() -> str:
    """A Standard Webhooks secret: ``whsec_`` + base64 of 32 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def signature(secret: str, msg_id: str, timestamp: str, body: bytes) -> str:
    """``v1,<base64 HMAC-SHA256 of "id.timestamp.body">`` keyed by the secret's decoded bytes."""
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    mac = hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def verify(secret: str, headers: Mapping[str, str], body: bytes, now: dt.datetime) -> str | None:
    """Check a call's credentials; returns its idempotency key (``webhook-id``, else the
    ``Idempotency-Key`` header, else None). Raises Unauthorized."""
    auth = headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        if not hmac.compare_digest(auth[7:].strip().encode(), secret.encode()):
            raise Unauthorized(BAD_CALL)
        return headers.get("idempotency-key") or headers.get("webhook-id") or None
    msg_id, stamp, signed = (headers.get(n, "") for n in ("webhook-id", "webhook-timestamp", "webhook-signature"))
    if not (msg_id and stamp and signed) or not re.fullmatch(r"[0-9]{1,12}", stamp):
        raise Unauthorized(BAD_CALL)
    if abs(now.timestamp() - int(stamp)) > TOLERANCE_SECONDS:
        raise Unauthorized(BAD_CALL)
    expected = signature(secret, msg_id, stamp, body).encode()
    if not any(hmac.compare_digest(given.encode(), expected) for given in signed.split()):
        raise Unauthorized(BAD_CALL)
    return msg_id


def payload_of(call: Call) -> tuple[str, object]:
    """The body as the prompt's payload text, and the call's overlap; raises naming the field."""
    if len(call.body) > PAYLOAD_MAX_BYTES:
        raise PayloadTooLarge(f"body: {len(call.body)} bytes is over the limit of {PAYLOAD_MAX_BYTES} (64 KiB)")
    try:
        text = call.body.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput("body", "must be UTF-8 text or JSON") from None
    overlap: object = call.overlap
    if overlap is None and text.lstrip().startswith("{"):
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("overlap"), str):  # a payload's own key of
            overlap = parsed["overlap"]  # another shape is the payload's business, not an overlap
    return text, overlap


class HookService:
    """Trigger URLs: ``make`` / ``revoke`` for the task's people (the caller checks access), and
    ``call`` for the outside world. ``fire``: the TaskService's ``ask``."""

    def __init__(self, db: Database, clock: Clock, fire: Any, waker: Waker | None = None) -> None:
        self.db, self.clock, self.fire = db, clock, fire
        self.waker = waker or NullWaker()

    def make(self, task_id: int, by: str, rotate: bool = True) -> tuple[str, str]:
        """Create the task's trigger URL or rotate its secret (the old one stops at once); returns
        (hook id, secret). The secret is shown this once. ``rotate=False``: only create — Conflict
        when the task has one already (a drawer that had not seen it yet must not rotate it)."""
        try:
            return self._make(task_id, by, rotate)
        except IntegrityError:  # two people creating at once: the second finds the first's row
            return self._make(task_id, by, rotate)

    def _make(self, task_id: int, by: str, rotate: bool) -> tuple[str, str]:
        secret, now = new_secret(), self.clock.now()
        with self.db.write() as s:
            row = s.exec(select(TaskHook).where(TaskHook.task_id == task_id)).first()
            if row is not None and not rotate:
                raise Conflict("this schedule already has a trigger URL; rotate its secret to get a new one")
            if row is None:
                row = TaskHook(id=secrets.token_urlsafe(24), task_id=task_id, secret=secret, created_by=by,
                               created_at=now)
            row.secret, row.created_by, row.created_at = secret, by, now
            s.add(row)
            return row.id, secret

    def revoke(self, task_id: int) -> bool:
        """End the task's trigger URL (and forget its calls); returns whether there was one."""
        with self.db.write() as s:
            return forget_hooks(s, [task_id]) > 0

    def of_tasks(self, task_ids: list[int]) -> dict[int, TaskHook]:
        """The trigger URLs of these tasks (secrets included: callers show only the id and date)."""
        if not task_ids:
            return {}
        with self.db.read() as s:
            return {h.task_id: h for h in s.exec(select(TaskHook).where(TaskHook.task_id.in_(task_ids)))}

    def call(self, call: Call, chat_url: Any) -> dict[str, Any]:
        """Answer one call (SPEC §19); ``chat_url(chat_id)`` makes the answer's link. Raises
        Unauthorized, PayloadTooLarge, InvalidInput, Conflict, TooManyCalls."""
        now = self.clock.now()
        with self.db.read() as s:
            hook = s.get(TaskHook, call.hook_id)
        if hook is None:
            raise Unauthorized(BAD_CALL)  # an unknown URL and a wrong secret look the same
        key = verify(hook.secret, call.headers, call.body, now)
        if key is not None and len(key) > 200:
            raise InvalidInput("webhook-id", "is longer than 200 characters")
        earlier = self._answered(hook.id, key, now)
        if earlier is not None:
            return earlier
        text, overlap = payload_of(call)
        chosen = overlap_of(overlap)
        self._check_rate(hook.id, now)
        call_id = self._reserve(hook.id, key, now)
        if call_id is None:  # the same key is being answered, or was meanwhile
            earlier = self._answered(hook.id, key, now)
            if earlier is None:
                raise Conflict("a call with this webhook-id / Idempotency-Key was just refused; send it again")
            return earlier
        try:
            asked, row = self.fire(hook.task_id, Request(Trigger.HOOK, chosen, text, None),
                                   expect=(TaskStatus.ACTIVE,))
        except Exception:  # refused (409, a task deleted meanwhile): the key may be tried again
            with self.db.write() as s:
                s.exec(sa.delete(HookCall).where(HookCall.id == call_id))
            raise
        with self.db.read() as s:
            chat_id = s.exec(select(ScheduledTask.chat_id).where(ScheduledTask.id == hook.task_id)).first()
        answer = {"run_id": row.id, "chat_url": chat_url(chat_id), "status": asked.value}
        with self.db.write() as s:
            s.exec(sa.update(HookCall).where(HookCall.id == call_id).values(answer=json.dumps(answer)))
        return answer

    def _answered(self, hook_id: str, key: str | None, now: dt.datetime) -> dict[str, Any] | None:
        if key is None:
            return None
        with self.db.read() as s:
            row = s.exec(select(HookCall).where(HookCall.hook_id == hook_id, HookCall.call_key == key,
                                                HookCall.received_at > now - KEEP_CALLS)).first()
        if row is None:
            return None
        if not row.answer and row.received_at < now - STUCK:  # its answer was never written (a crash):
            with self.db.write() as s:  # the key may be tried again
                s.exec(sa.delete(HookCall).where(HookCall.id == row.id, HookCall.answer == ""))
            return None
        if not row.answer:
            raise Conflict("a call with this webhook-id / Idempotency-Key is being answered now; send it again "
                           "in a moment")
        return json.loads(row.answer)

    def _check_rate(self, hook_id: str, now: dt.datetime) -> None:
        since = now - dt.timedelta(seconds=60)
        with self.db.read() as s:
            count, oldest = s.exec(select(func.count(), func.min(HookCall.received_at)).where(
                HookCall.hook_id == hook_id, HookCall.received_at > since)).one()
        if count >= RATE_PER_MINUTE:
            raise TooManyCalls(max(1, int((oldest - since).total_seconds()) + 1))

    def _reserve(self, hook_id: str, key: str | None, now: dt.datetime) -> int | None:
        """Record the accepted call before its fire is asked for (the rate counts it; its key answers
        the same for 24 h, so two calls with one key never both fire); None: the key is taken."""
        try:
            with self.db.write() as s:
                s.exec(sa.delete(HookCall).where(HookCall.hook_id == hook_id,
                                                 HookCall.received_at <= now - KEEP_CALLS))
                row = HookCall(hook_id=hook_id, call_key=key, received_at=now, answer="")
                s.add(row)
                s.flush()
                return row.id
        except IntegrityError:
            return None




HOOK_PATH = "/hooks/tasks/"


def trigger_views(db: Database, task_ids: list[int]) -> dict[int, dict[str, Any]]:
    """What the API and the drawer show of the tasks' trigger URLs: the path and when it was made
    (never the secret)."""
    if not task_ids:
        return {}
    with db.read() as s:
        rows = s.exec(select(TaskHook.task_id, TaskHook.id, TaskHook.created_at, TaskHook.created_by)
                      .where(TaskHook.task_id.in_(task_ids))).all()
    return {task_id: {"path": HOOK_PATH + hook_id, "created_at": rfc3339(at), "created_by": by}
            for task_id, hook_id, at, by in rows}


def forget_hooks(s: Any, task_ids: Any) -> int:
    """Inside a write transaction: delete these tasks' trigger URLs and their calls (``task_ids``: a
    list or a select of ids); returns how many URLs."""
    hook_ids = select(TaskHook.id).where(TaskHook.task_id.in_(task_ids))
    s.exec(sa.delete(HookCall).where(HookCall.hook_id.in_(hook_ids)).execution_options(synchronize_session=False))
    return s.exec(sa.delete(TaskHook).where(TaskHook.task_id.in_(task_ids))
                  .execution_options(synchronize_session=False)).rowcount or 0
