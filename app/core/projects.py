"""Projects, memberships and the access rule: members (and admins) see a project."""

from __future__ import annotations

import json
from pathlib import Path

from sqlmodel import Session, select

from app.core import ports, quotas
from app.core.clock import Clock
from app.core.db import Database
from app.core.errors import NotFound
from app.core.models import Membership, Project, Role, User
from app.core.text import clean_name


def create_project(db: Database, clock: Clock, workspaces: Path, name: str, owner: User, *,
                   max_projects: int = 0) -> Project:
    """Create a project owned by ``owner`` (its first owner, SPEC §18), its workspace and the agent assets in it.

    Raises QuotaExceeded when ``owner`` already owns ``max_projects`` projects (0: no limit; every
    caller that acts for a user passes ``Settings.max_projects_per_user``)."""
    title = clean_name(name)
    now = clock.now()
    with db.write() as s:
        quotas.lock_owner(s, db, owner.id)
        quotas.check_projects(s, owner.id, max_projects)
        project = Project(name=title, owner_id=owner.id, created_at=now)
        s.add(project)
        s.flush()
        s.add(Membership(user_id=owner.id, project_id=project.id, created_at=now, role=Role.OWNER.value))
    ports.agents().new_project(workspaces, project.id)
    return project


def grant_access(db: Database, clock: Clock, user: User, project_id: int) -> None:
    """Make ``user`` a member of the project (idempotent); raises NotFound for an unknown project.
    Roles change only through :mod:`app.projects.members`, which keeps the last-owner rule."""
    with db.write() as s:
        if s.get(Project, project_id) is None:
            raise NotFound(f"no project with id {project_id}")
        if s.get(Membership, (user.id, project_id)) is None:
            s.add(Membership(user_id=user.id, project_id=project_id, created_at=clock.now()))


def has_access(s: Session, user: User, project_id: int) -> bool:
    """Admins see every project; others only those they are members of."""
    if user.is_admin:
        return s.get(Project, project_id) is not None
    return s.get(Membership, (user.id, project_id)) is not None


def role_in(s: Session, user: User, project_id: int) -> Role | None:
    """The user's role in the project; a server admin acts as an owner anywhere (SPEC §18), a
    member of it or not."""
    if user.is_admin:
        return Role.OWNER if s.get(Project, project_id) is not None else None
    membership = s.get(Membership, (user.id, project_id))
    return Role(membership.role) if membership is not None else None


def list_projects(db: Database, user: User) -> list[Project]:
    with db.read() as s:
        query = select(Project).order_by(Project.id)
        if not user.is_admin:
            query = query.join(Membership, Membership.project_id == Project.id).where(
                Membership.user_id == user.id
            )
        return list(s.exec(query))


def get_project(db: Database, user: User, project_id: int) -> Project:
    """The project if ``user`` may see it; raises NotFound otherwise (no existence leak)."""
    with db.read() as s:
        project = s.get(Project, project_id)
        if project is None or not has_access(s, user, project_id):
            raise NotFound(f"no project with id {project_id}")
        return project


def set_provider(db: Database, project_id: int, provider: str, settings: dict[str, object]) -> Project:
    """Set a project's provider and its settings (stored as a JSON object); NotFound for a bad id."""
    with db.write() as s:
        project = s.get(Project, project_id)
        if project is None:
            raise NotFound(f"no project with id {project_id}")
        project.provider, project.provider_settings = provider, json.dumps(settings, sort_keys=True)
        s.add(project)
        s.flush()
        return project
