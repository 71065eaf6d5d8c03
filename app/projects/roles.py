"""Who may do what in a project (SPEC §18): members see it, chat and schedule; owners also change
its settings and members; a server admin acts as an owner in every project."""

from __future__ import annotations

from sqlmodel import Session

from app.core.errors import Forbidden, NotFound
from app.core.models import Role, User
from app.core.projects import role_in


def require_member(s: Session, user: User, project_id: int) -> Role:
    """The caller's role; NotFound (no existence leak) when they may not see the project."""
    role = role_in(s, user, project_id)
    if role is None:
        raise NotFound(f"no project with id {project_id}")
    return role


def require_owner(s: Session, user: User, project_id: int) -> Role:
    """As :func:`require_member`, and Forbidden for a member who is not an owner."""
    role = require_member(s, user, project_id)
    if role != Role.OWNER:
        raise Forbidden(f"only an owner of project {project_id} can do that (you are a member)")
    return role


def shown_role(s: Session, user: User, project_id: int) -> str:
    """``owner`` | ``member``, or ``admin`` for a server admin (who acts as an owner, member or not)."""
    role = require_member(s, user, project_id)
    return "admin" if user.is_admin else role.value
