"""The audit record of a project's changes (SPEC §18): who, when, what — never a secret's value.

Each change of settings or members appends one row in the transaction that makes the change, so
a change is never without its record. The project's owners (and admins) read them.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from sqlmodel import Session, select

from app.core.clock import Clock
from app.core.db import Database
from app.core.models import ProjectAudit, User
from app.projects.roles import require_owner

CLI = "admin CLI"  # the actor of a change made with python -m app.manage
SETTINGS, MEMBER_ADD, MEMBER_ROLE, MEMBER_REMOVE = "settings", "member.add", "member.role", "member.remove"
PAGE = 100  # records per read, newest first


def record(s: Session, now: dt.datetime, project_id: int, actor: str, action: str, detail: dict[str, Any]) -> None:
    """Inside the change's transaction: one audit row. ``detail`` names keys, never secret values."""
    s.add(ProjectAudit(project_id=project_id, actor_email=actor, at=now, action=action,
                       detail=json.dumps(detail, sort_keys=True)))


def record_apart(db: Database, clock: Clock, project_id: int, actor: str, action: str,
                 detail: dict[str, Any]) -> None:
    """One audit row in a transaction of its own (the admin CLI's changes, after they are made)."""
    with db.write() as s:
        record(s, clock.now(), project_id, actor, action, detail)


def as_json(row: ProjectAudit) -> dict[str, Any]:
    return {"id": row.id, "at": row.at.isoformat().replace("+00:00", "Z"), "actor": row.actor_email,
            "action": row.action, "detail": json.loads(row.detail or "{}")}


def read(db: Database, clock: Clock, user: User, project_id: int, before: int | None = None,
         limit: int = PAGE) -> list[dict[str, Any]]:
    """The project's audit records, newest first (owners and admins; a member gets Forbidden)."""
    with db.read() as s:
        require_owner(s, user, project_id)
        query = select(ProjectAudit).where(ProjectAudit.project_id == project_id)
        if before is not None:
            query = query.where(ProjectAudit.id < before)
        rows = list(s.exec(query.order_by(ProjectAudit.id.desc()).limit(max(1, min(limit, PAGE)))))
    return [as_json(row) for row in rows]
