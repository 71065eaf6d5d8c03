"""Capability grants (SPEC §6): short-lived bearer tokens handed to one agent turn.

A grant is bound to its owner, chat and project (and, for a fire, its task and claim); only its
SHA-256 is stored; it expires after CHATCRON_GRANT_TTL_SECONDS and is revoked when the turn ends.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import hmac

import sqlalchemy as sa
from sqlmodel import Session, select

from app.core.auth import digest, new_secret
from app.core.clock import Clock
from app.core.db import Database
from app.core.errors import Forbidden, Unauthorized
from app.core.models import Grant, User

PREFIX = "ccg_"


class Scope(enum.StrEnum):
    """What a grant allows."""

    MANAGE = "manage"  # interactive turn in a chat with the skill: list/create drafts/pause/run-now/delete
    COMPLETE_SELF = "complete-self"  # a scheduled fire: only complete its own task (and whoami)


@dataclasses.dataclass(frozen=True)
class GrantView:
    id: int
    scope: Scope
    owner: User
    chat_id: int
    project_id: int
    task_id: int | None
    task_run_id: int | None  # the fire's claim
    expires_at: dt.datetime

    def require(self, scope: Scope) -> None:
        """Raise Forbidden unless this grant has ``scope``."""
        if self.scope != scope:
            if self.scope == Scope.COMPLETE_SELF:
                raise Forbidden("a scheduled fire's token can only complete its own task (complete-current), "
                                "report on its fire (report) or pace its next fire (next)")
            raise Forbidden(f"this token's scope ({self.scope.value}) does not allow that")


def issue_grant_in(s: Session, now: dt.datetime, ttl_seconds: int, scope: Scope | str, owner_id: int, chat_id: int,
                   project_id: int, task_id: int | None = None, task_run_id: int | None = None) -> tuple[str, Grant]:
    """Inside a write transaction: mint a grant; returns (plain token, row; its id once flushed).
    The token is never stored."""
    token = new_secret(PREFIX)
    row = Grant(token_hash=digest(token), scope=Scope(scope).value, owner_id=owner_id, chat_id=chat_id,
                project_id=project_id, task_id=task_id, task_run_id=task_run_id, created_at=now,
                expires_at=now + dt.timedelta(seconds=ttl_seconds))
    s.add(row)
    return token, row


def issue_grant(db: Database, clock: Clock, ttl_seconds: int, scope: Scope | str, owner_id: int, chat_id: int,
                project_id: int, task_id: int | None = None, run_id: int | None = None) -> tuple[str, int]:
    """Mint a grant; returns (plain token, grant id). The token is never stored."""
    with db.write() as s:
        token, row = issue_grant_in(s, clock.now(), ttl_seconds, scope, owner_id, chat_id, project_id, task_id,
                                    run_id)
        s.flush()
        return token, row.id


def resolve_grant(db: Database, clock: Clock, token: str) -> GrantView:
    """The live grant behind a token; raises Unauthorized saying why (unknown, expired, revoked)."""
    if not token.startswith(PREFIX):
        raise Unauthorized("not a schedule token: expected the SCHEDULE_API_TOKEN of the current turn")
    wanted = digest(token)
    with db.read() as s:
        row = s.exec(select(Grant, User).join(User, User.id == Grant.owner_id)
                     .where(Grant.token_hash == wanted)).first()
    if row is None or not hmac.compare_digest(row[0].token_hash, wanted):
        raise Unauthorized("unknown schedule token")
    grant, owner = row
    if grant.revoked_at is not None:
        raise Unauthorized("this schedule token was revoked: the turn it belonged to has ended")
    if grant.expires_at <= clock.now():
        raise Unauthorized("this schedule token has expired")
    return GrantView(id=grant.id, scope=Scope(grant.scope), owner=owner, chat_id=grant.chat_id,
                     project_id=grant.project_id, task_id=grant.task_id, task_run_id=grant.task_run_id,
                     expires_at=grant.expires_at)


_GRANTS = Grant.__table__
_REVOKE = _GRANTS.update().where(_GRANTS.c.id == sa.bindparam("b_id"), _GRANTS.c.revoked_at.is_(None)).values(
    revoked_at=sa.bindparam("b_now"))


def revoke_grant_in(s: Session, now: dt.datetime, grant_id: int) -> None:
    s.connection().execute(_REVOKE, {"b_id": grant_id, "b_now": now})


def revoke_grant(db: Database, clock: Clock, grant_id: int) -> None:
    with db.write() as s:
        revoke_grant_in(s, clock.now(), grant_id)
