"""Recording attention events (SPEC §13) inside the transaction of what they record.

An event is one row, whoever may read it later: the inbox of every user who can see its chat reads
it, and one deliverer fans it out to the channels of the user it concerns — by ``user_id``, fixed
when the event is written: a caller that knows only an email (a schedule's owner) has it looked up
in the same insert, so a user deleted later, or a new account under the same email, is never
mistaken for the one the event was about. Writing it is one insert on the caller's connection — the
only cost a fire pays for notifications.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import sqlalchemy as sa

from app.core.attention_tables import AttentionEvent, AttentionKind, Notify
from app.core.models import User

FIRST_LINE_MAX = 200
_EVENTS, _USERS = AttentionEvent.__table__, User.__table__
# The recipient's id as given, else that of the user registered under the email now.
_RECIPIENT = sa.func.coalesce(sa.bindparam("recipient_id", type_=sa.Integer()),
                              sa.select(_USERS.c.id).where(_USERS.c.email == sa.bindparam("recipient_email"))
                              .scalar_subquery())
_INSERT = _EVENTS.insert().values(user_id=_RECIPIENT)


def first_line(text: str | None, limit: int = FIRST_LINE_MAX) -> str:
    """The first non-empty line of ``text``, cut to ``limit`` characters (with an ellipsis)."""
    for line in (text or "").splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
    return ""


def pushes(notify: str | None, kind: AttentionKind) -> bool:
    """Whether a task's ``notify`` setting sends an event of ``kind`` to its owner's channels.

    ``always``: every event; ``failures`` (the default): all but a successful fire; ``never``: none
    of the task's own events (its drafts and approvals still reach the channels: a person must act).
    """
    if kind in (AttentionKind.DRAFT_CREATED, AttentionKind.APPROVAL_REQUESTED):
        return True
    setting = notify or Notify.FAILURES.value
    if setting == Notify.NEVER.value:
        return False
    return setting == Notify.ALWAYS.value or kind != AttentionKind.FIRE_FINISHED


def row(now: dt.datetime, kind: AttentionKind, *, user_email: str, chat_id: int, project_id: int | None,
        payload: dict[str, Any], notify: bool = True, task_id: int | None = None, run_id: int | None = None,
        task_run_id: int | None = None, approval_id: int | None = None, user_id: int | None = None) -> dict[str, Any]:
    """The column values of one attention event, for :func:`record`; ``user_id`` None: the user
    registered under ``user_email`` when it is recorded. One that no channel may take (``notify``
    False) is born fanned out: deliverers never look at it (most fires' successes: a burst of fires
    adds no work, and no write, to the outbox)."""
    return {"kind": kind.value, "recipient_id": user_id, "recipient_email": user_email,
            "user_email": user_email, "chat_id": chat_id, "project_id": project_id,
            "task_id": task_id, "run_id": run_id, "task_run_id": task_run_id, "approval_id": approval_id,
            "notify": notify, "payload": json.dumps(payload, sort_keys=True, default=str), "created_at": now,
            "fanned_out_at": None if notify else now}


def record(conn: sa.Connection, rows: list[dict[str, Any]]) -> None:
    """Insert attention events (built by :func:`row`) on the caller's connection, in its transaction."""
    if rows:
        conn.execute(_INSERT, rows)


def task_payload(task: Any) -> dict[str, Any]:
    """What an event says about its task (any object or row with the task's columns)."""
    return {"id": task.id, "name": task.name, "status": task.status, "owner": task.owner,
            "chat_id": task.chat_id, "project_id": task.project_id,
            "last_error": getattr(task, "last_error", None)}
