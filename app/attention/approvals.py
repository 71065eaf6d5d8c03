"""The life of an approval (SPEC §13): a turn asks, a person answers, or time runs out.

Every change is a compare-and-set on ``state = 'pending'`` in one transaction, so two people
answering at once (from two web workers), an answer racing the timeout, and a turn ending while
a card is open all settle on exactly one outcome. The turn that asked reads the row back (the
database carries the answer between processes; a wake hint only makes the reading prompt).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from typing import Any

import sqlalchemy as sa
from sqlmodel import select

from app.attention import hints
from app.core import attention_events as attention
from app.core.attention_tables import Approval, ApprovalState, AttentionKind
from app.core.chats import get_chat
from app.core.clock import rfc3339
from app.core.db import Database
from app.core.errors import Conflict, InvalidInput, NotFound
from app.core.models import Chat, Membership, User

ALLOW_KINDS = ("allow_once", "allow_always")
REJECT_KINDS = ("reject_once", "reject_always")
DEFAULT_PAGE = 100  # GET /api/approvals: approvals per page unless ``limit`` says otherwise
MAX_PAGE = 500


@dataclasses.dataclass(frozen=True)
class Request:
    """What a turn asks: the agent's tool call and its own options ([{option_id, name, kind}])."""

    chat_id: int
    project_id: int | None
    run_id: int
    task_id: int | None
    requested_for: str  # the turn's owner (email)
    tool_call_id: str
    title: str
    input: Any
    options: list[dict[str, str]]
    requested_for_id: int | None = None  # the turn's owner (user id): whose channels hear of it


def create(db: Database, now: dt.datetime, request: Request, timeout_seconds: float) -> Approval:
    """A pending approval and its ``approval.requested`` attention event, in one transaction."""
    row = Approval(project_id=request.project_id, chat_id=request.chat_id, run_id=request.run_id,
                   task_id=request.task_id, requested_for=request.requested_for,
                   tool_call_id=request.tool_call_id, title=request.title[:500],
                   input=json.dumps(request.input, default=str), options=json.dumps(request.options),
                   state=ApprovalState.PENDING.value, created_at=now,
                   expires_at=now + dt.timedelta(seconds=timeout_seconds))
    with db.write() as s:
        s.add(row)
        s.flush()
        payload = {"approval": view(row)}
        attention.record(s.connection(), [attention.row(
            now, AttentionKind.APPROVAL_REQUESTED, user_email=request.requested_for,
            user_id=request.requested_for_id, chat_id=request.chat_id,
            project_id=request.project_id, task_id=request.task_id, run_id=request.run_id, approval_id=row.id,
            payload=payload)])
    return row


def get(db: Database, approval_id: int) -> Approval | None:
    with db.read() as s:
        return s.get(Approval, approval_id)


def visible(db: Database, user: User, approval_id: int) -> Approval:
    """The approval if ``user`` can see its chat; NotFound otherwise."""
    row = get(db, approval_id)
    if row is None:
        raise NotFound(f"no approval with id {approval_id}")
    try:
        get_chat(db, user, row.chat_id)
    except NotFound:
        raise NotFound(f"no approval with id {approval_id}") from None
    return row


def answer(db: Database, now: dt.datetime, user: User, approval_id: int, option_id: object, *,
           hint: bool = True) -> Approval:
    """A person picks one of the agent's options. NotFound (not visible), InvalidInput (not one of
    the options), Conflict (already decided or expired — the message says how). After the commit a
    wake hint (``hints.notify``) makes the waiting turn, in whichever process, read the answer at
    once (a lost hint: within a second); ``hint=False`` leaves it to the caller."""
    row = visible(db, user, approval_id)
    options = json.loads(row.options)
    chosen = next((o for o in options if isinstance(option_id, str) and o.get("option_id") == option_id), None)
    if chosen is None:
        names = ", ".join(str(o.get("option_id")) for o in options)
        raise InvalidInput("option_id", f"must be one of the approval's options ({names})")
    state = ApprovalState.ALLOWED if chosen.get("kind") in ALLOW_KINDS else ApprovalState.REJECTED
    with db.write() as s:
        done = s.exec(sa.update(Approval).where(
            Approval.id == approval_id, Approval.state == ApprovalState.PENDING.value, Approval.expires_at > now,
        ).values(state=state.value, option_id=option_id, decided_by=user.email, decided_at=now)).rowcount
    if not done:
        current = get(db, approval_id)
        if current is not None and current.state == ApprovalState.PENDING.value:
            expire_due(db, now)
            current = get(db, approval_id)
        raise Conflict(_settled_message(approval_id, current))
    if hint:
        hints.notify(db)
    return get(db, approval_id)  # type: ignore[return-value]


def _settled_message(approval_id: int, row: Approval | None) -> str:
    """Why an approval can no longer be answered, naming who decided it."""
    if row is None:
        return f"approval {approval_id} is gone"
    if row.state == ApprovalState.EXPIRED.value:
        return f"approval {approval_id} has expired: nobody answered in time, so the call was rejected"
    if row.state == ApprovalState.CANCELLED.value:
        return f"approval {approval_id} was cancelled: its turn ended before an answer"
    return f"approval {approval_id} was already {row.state} by {row.decided_by or 'someone else'}"


def expire_due(db: Database, now: dt.datetime) -> int:
    """Pending approvals past their expiry become ``expired`` (the call is rejected); how many."""
    with db.write() as s:
        return s.exec(sa.update(Approval).where(
            Approval.state == ApprovalState.PENDING.value, Approval.expires_at <= now,
        ).values(state=ApprovalState.EXPIRED.value, decided_at=now)).rowcount or 0


def settle(db: Database, now: dt.datetime, approval_id: int) -> Approval | None:
    """The approval as the waiting turn sees it: expired first if its time is up."""
    row = get(db, approval_id)
    if row is not None and row.state == ApprovalState.PENDING.value and row.expires_at <= now:
        with db.write() as s:
            s.exec(sa.update(Approval).where(Approval.id == approval_id,
                                             Approval.state == ApprovalState.PENDING.value)
                   .values(state=ApprovalState.EXPIRED.value, decided_at=now))
        row = get(db, approval_id)
    return row


def cancel_for_run(db: Database, now: dt.datetime, run_id: int) -> int:
    """The turn ended: its pending approvals are cancelled (a card can no longer be answered)."""
    with db.write() as s:
        return s.exec(sa.update(Approval).where(
            Approval.run_id == run_id, Approval.state == ApprovalState.PENDING.value,
        ).values(state=ApprovalState.CANCELLED.value, decided_at=now)).rowcount or 0


def list_for(db: Database, user: User, state: str | None = None, limit: int = DEFAULT_PAGE,
             before: int | None = None) -> list[Approval]:
    """Approvals in the chats ``user`` can see, newest first: at most ``limit`` (not clamped: a
    pager asks for one more than it shows), only ids below ``before`` when it is given."""
    query = select(Approval).join(Chat, Chat.id == Approval.chat_id)
    if not user.is_admin:
        member = select(Membership.project_id).where(Membership.user_id == user.id)
        query = query.where(sa.or_(Chat.project_id.in_(member),
                                   sa.and_(Chat.project_id.is_(None), Chat.owner_id == user.id)))
    if state is not None:
        if state not in {s.value for s in ApprovalState}:
            raise InvalidInput("state", f"must be one of {', '.join(s.value for s in ApprovalState)}")
        query = query.where(Approval.state == state)
    if before is not None:
        query = query.where(Approval.id < before)
    with db.read() as s:
        return list(s.exec(query.order_by(Approval.id.desc()).limit(limit)))


def view(row: Approval) -> dict[str, Any]:
    """The API's (and the card's) view of an approval."""
    return {"id": row.id, "state": row.state, "chat_id": row.chat_id, "project_id": row.project_id,
            "run_id": row.run_id, "task_id": row.task_id, "requested_for": row.requested_for,
            "tool_call_id": row.tool_call_id, "title": row.title, "input": json.loads(row.input),
            "options": json.loads(row.options), "option_id": row.option_id, "decided_by": row.decided_by,
            "decided_at": rfc3339(row.decided_at), "created_at": rfc3339(row.created_at),
            "expires_at": rfc3339(row.expires_at)}
