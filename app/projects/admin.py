"""The server admin's page and API (SPEC §18): people — create, reset a password, revoke tokens,
end sessions, delete — and the installed agents. Every call is refused (Forbidden) for anyone who
is not a server admin; each does what the admin CLI's command of the same name does."""

from __future__ import annotations

import dataclasses
from typing import Any

import sqlalchemy as sa
from sqlmodel import select

from app.core import accounts, auth
from app.core.clock import rfc3339
from app.core.context import Core
from app.core.errors import Forbidden, InvalidInput, NotFound
from app.core.models import ApiToken, Membership, User, WebSession
from app.schedules.service import forget_chats


@dataclasses.dataclass(frozen=True)
class Person:
    id: int
    email: str
    is_admin: bool
    created_at: str | None
    projects: int
    tokens: int
    sessions: int

    def as_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def require_admin(user: User) -> None:
    if not user.is_admin:
        raise Forbidden("only a server admin can do that")


def people(core: Core, admin: User) -> list[Person]:
    """Every user with how many projects, live API tokens and browser sessions they have."""
    require_admin(admin)
    now = core.clock.now()

    def count(table: Any, *where: Any) -> sa.ScalarSelect:
        return sa.select(sa.func.count()).select_from(table).where(table.c.user_id == User.id, *where) \
            .scalar_subquery()

    members, tokens, sessions = Membership.__table__, ApiToken.__table__, WebSession.__table__
    query = sa.select(User.id, User.email, User.is_admin, User.created_at, count(members),
                      count(tokens, tokens.c.revoked_at.is_(None),
                            sa.or_(tokens.c.expires_at.is_(None), tokens.c.expires_at > now)),
                      count(sessions)).order_by(User.email)
    with core.db.read() as s:
        rows = s.connection().execute(query).all()
    return [Person(uid, email, bool(is_admin), rfc3339(created), n_projects, n_tokens, n_sessions)
            for uid, email, is_admin, created, n_projects, n_tokens, n_sessions in rows]


def _email_of(core: Core, user_id: int) -> str:
    with core.db.read() as s:
        email = s.exec(select(User.email).where(User.id == user_id)).first()
    if email is None:
        raise NotFound(f"no user with id {user_id}")
    return email


def create_person(core: Core, admin: User, email: object, password: object, is_admin: object = False) -> Person:
    require_admin(admin)
    if not isinstance(email, str):
        raise InvalidInput("email", "must be an email address")
    if not isinstance(password, str):
        raise InvalidInput("password", f"must be a string of at least {auth.MIN_PASSWORD} characters")
    if not isinstance(is_admin, bool):
        raise InvalidInput("admin", "must be true or false")
    user = auth.create_user(core.db, core.clock, email, password, is_admin)
    return Person(user.id, user.email, user.is_admin, rfc3339(user.created_at), 0, 0, 0)


def reset_password(core: Core, admin: User, user_id: int, password: object) -> str:
    """Set a new password and end the user's browser sessions (they log in with the new one)."""
    require_admin(admin)
    if not isinstance(password, str):
        raise InvalidInput("password", f"must be a string of at least {auth.MIN_PASSWORD} characters")
    email = _email_of(core, user_id)
    auth.set_password(core.db, email, password)
    _, ended = accounts.end_sessions(core.db, email)
    return f"new password set for {email}; {ended} browser session(s) ended"


def revoke_tokens(core: Core, admin: User, user_id: int) -> str:
    require_admin(admin)
    email = _email_of(core, user_id)
    return f"revoked {auth.revoke_tokens(core.db, core.clock, user_id)} token(s) of {email}"


def end_sessions(core: Core, admin: User, user_id: int) -> str:
    require_admin(admin)
    email, count = accounts.end_sessions(core.db, _email_of(core, user_id))
    return f"ended {count} browser session(s) of {email}"


def delete_person(core: Core, admin: User, user_id: int) -> str:
    require_admin(admin)
    if user_id == admin.id:
        raise InvalidInput("user", "an admin cannot delete themself here (another admin, or delete-user)")
    email = _email_of(core, user_id)
    return accounts.delete_user(core.db, email, core.settings.workspaces_dir, forget_chats).sentence()
