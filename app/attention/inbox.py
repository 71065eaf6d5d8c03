"""The inbox (SPEC §13): what needs a user's attention, across every chat they can see.

Four sections — pending approvals, agent drafts waiting to be armed, tasks in ``error``, and the
feed of attention events (fires finished or failed, tasks that went wrong, drafts, approvals
asked; agents that could not start, shown to the project's owner and admins only) — newest
first, the feed paged by id (``before``) and each item flagged unread by the user's read mark
(:mod:`app.attention.reads`). Blocking; the UI calls it off the event loop.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from typing import Any

import sqlalchemy as sa

from app.attention import approvals, reads
from app.core.attention_tables import Approval, ApprovalState, AttentionEvent
from app.core.clock import rfc3339
from app.core.db import Database
from app.core.errors import InvalidInput
from app.core.models import Chat, Run, User
from app.schedules.model import ScheduledTask, TaskStatus

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
SECTION_LIMIT = 100  # approvals, drafts and errors shown at most (the oldest beyond are rare)
MAX_ID = 2**63 - 1

_ATT, _CHATS, _RUNS, _TASKS = AttentionEvent.__table__, Chat.__table__, Run.__table__, ScheduledTask.__table__
_APPROVALS = Approval.__table__
PROMPT_SHOWN = 500  # characters of a draft's prompt in its inbox card


@dataclasses.dataclass(frozen=True)
class Page:
    """Which slice of the feed: items with ``id < before`` (None: the newest), at most ``limit``."""

    before: int | None = None
    limit: int = DEFAULT_LIMIT

    def __post_init__(self) -> None:
        if self.before is not None and (type(self.before) is not int or not 1 <= self.before <= MAX_ID):
            raise InvalidInput("before", "must be a positive whole number (an attention event id)")
        if type(self.limit) is not int or not 1 <= self.limit <= MAX_LIMIT:
            raise InvalidInput("limit", f"must be a whole number from 1 to {MAX_LIMIT}")


def _loads(raw: str | None) -> Any:
    try:
        return json.loads(raw) if raw else None
    except (ValueError, RecursionError):
        return None


def _usage(raw: str | None) -> dict[str, Any] | None:
    usage = _loads(raw)
    if not isinstance(usage, dict):
        return None
    keys = ("input_tokens", "output_tokens", "cached_tokens", "cost_usd")
    return {key: usage[key] for key in keys if key in usage}


def item_view(row: sa.Row, mark: int) -> dict[str, Any]:
    """One feed item as the API and the page show it."""
    payload = _loads(row.payload)
    payload = payload if isinstance(payload, dict) else {}
    task = payload.get("task") if isinstance(payload.get("task"), dict) else {}
    run = payload.get("run") if isinstance(payload.get("run"), dict) else {}
    approval = payload.get("approval") if isinstance(payload.get("approval"), dict) else {}
    return {"id": row.id, "kind": row.kind, "created_at": rfc3339(row.created_at), "unread": row.id > mark,
            "user_email": row.user_email, "user_id": row.user_id, "chat_id": row.chat_id, "chat_title": row.chat_title,
            "project_id": row.project_id,
            "task_id": row.task_id, "task_name": str(task.get("name") or ""), "run_id": row.run_id,
            "task_run_id": row.task_run_id, "approval_id": row.approval_id,
            "outcome": str(run.get("outcome") or ""), "first_line": str(run.get("first_line") or ""),
            "error": str(run.get("error") or payload.get("reason") or task.get("last_error") or ""),
            "title": str(approval.get("title") or ""), "notify": bool(row.notify),
            "usage": _usage(row.usage), "resolved": _resolved(row)}


def _resolved(row: sa.Row) -> str:
    """What became of what a draft or approval item asked for, now: "" while it still waits (and for
    every other kind); "armed" or "deleted" (a draft), or the approval's final state."""
    if row.kind == "draft.created":
        if row.task_status is None:
            return "deleted"
        return "" if row.task_status == TaskStatus.DRAFT.value else "armed"
    if row.kind == "approval.requested" and row.approval_state and row.approval_state != ApprovalState.PENDING.value:
        return str(row.approval_state)
    return ""


def _items_query() -> sa.Select:
    """Feed items with their chat's title, their run's usage, and what their task and approval are now."""
    return (sa.select(_ATT, _CHATS.c.title.label("chat_title"), _RUNS.c.usage,
                      _TASKS.c.status.label("task_status"), _APPROVALS.c.state.label("approval_state"))
            .select_from(_ATT.join(_CHATS, _CHATS.c.id == _ATT.c.chat_id)
                         .outerjoin(_RUNS, _RUNS.c.id == _ATT.c.run_id)
                         .outerjoin(_TASKS, _TASKS.c.id == _ATT.c.task_id)
                         .outerjoin(_APPROVALS, _APPROVALS.c.id == _ATT.c.approval_id)))


def _feed_query(user: User, page: Page) -> sa.Select:
    query = _items_query().where(reads.visible_events(user))
    if page.before is not None:
        query = query.where(_ATT.c.id < page.before)
    return query.order_by(_ATT.c.id.desc()).limit(page.limit + 1)


def feed(db: Database, user: User, page: Page, mark: int) -> tuple[list[dict[str, Any]], int | None]:
    """The page's items, newest first, and the ``before`` of the next (older) page (None: no more)."""
    with db.read() as s:
        rows = list(s.connection().execute(_feed_query(user, page)))
    more = len(rows) > page.limit
    rows = rows[: page.limit]
    return [item_view(r, mark) for r in rows], (rows[-1].id if more and rows else None)


def since(db: Database, user: User, after: int, limit: int = 20) -> list[dict[str, Any]]:
    """Feed items newer than ``after``, oldest first (what a live page notifies about)."""
    query = _items_query().where(reads.visible_events(user), _ATT.c.id > after).order_by(_ATT.c.id).limit(limit)
    with db.read() as s:
        return [item_view(r, 0) for r in s.connection().execute(query)]


def newest_id(db: Database, user: User) -> int:
    """The newest attention event id in the user's chats (0: none)."""
    query = (sa.select(sa.func.max(_ATT.c.id)).select_from(_ATT.join(_CHATS, _CHATS.c.id == _ATT.c.chat_id))
             .where(reads.visible_events(user)))
    with db.read() as s:
        return int(s.connection().execute(query).scalar() or 0)


def task_view(row: sa.Row) -> dict[str, Any]:
    return {"id": row.id, "name": row.name, "status": row.status, "chat_id": row.chat_id,
            "chat_title": row.chat_title, "project_id": row.project_id, "owner": row.owner,
            "created_by": row.created_by, "last_error": row.last_error or "",
            "updated_at": rfc3339(row.updated_at), "schedule": _loads(row.schedule) or {},
            "prompt": (row.prompt or "")[:PROMPT_SHOWN]}


def tasks_in(db: Database, user: User, status: TaskStatus) -> list[dict[str, Any]]:
    """Tasks of ``status`` in chats the user can see, newest change first."""
    query = (sa.select(_TASKS, _CHATS.c.title.label("chat_title"))
             .select_from(_TASKS.join(_CHATS, _CHATS.c.id == _TASKS.c.chat_id))
             .where(_TASKS.c.status == status.value, reads.visible_chats(user))
             .order_by(_TASKS.c.updated_at.desc(), _TASKS.c.id.desc()).limit(SECTION_LIMIT))
    with db.read() as s:
        return [task_view(r) for r in s.connection().execute(query)]


def pending_approvals(db: Database, user: User, now: dt.datetime | None = None) -> list[dict[str, Any]]:
    """Pending approvals in the user's chats; with ``now``, not those whose time ran out (they are
    about to be marked expired and can no longer be answered)."""
    rows = approvals.list_for(db, user, ApprovalState.PENDING.value, SECTION_LIMIT)
    rows = [row for row in rows if now is None or row.expires_at > now]
    titles = _chat_titles(db, {row.chat_id for row in rows})
    return [{**approvals.view(row), "chat_title": titles.get(row.chat_id, "")} for row in rows]


def _chat_titles(db: Database, chat_ids: set[int]) -> dict[int, str]:
    if not chat_ids:
        return {}
    with db.read() as s:
        rows = s.connection().execute(sa.select(_CHATS.c.id, _CHATS.c.title).where(_CHATS.c.id.in_(chat_ids)))
        return {int(cid): title for cid, title in rows}


def inbox(db: Database, user: User, page: Page | None = None, now: dt.datetime | None = None) -> dict[str, Any]:
    """Everything of ``GET /api/inbox`` for one user (see the module's docstring); ``now`` (aware
    UTC) leaves out approvals whose time ran out."""
    page = page or Page()
    mark = reads.read_before(db, user)
    items, next_before = feed(db, user, page, mark)
    return {"approvals": pending_approvals(db, user, now), "drafts": tasks_in(db, user, TaskStatus.DRAFT),
            "errors": tasks_in(db, user, TaskStatus.ERROR), "items": items,
            "unread": reads.inbox_unread(db, user, mark), "read_before": mark, "next_before": next_before}
