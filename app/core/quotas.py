"""How many projects and schedules a user may have: the limits of SPEC §9 and the README.

A user's share is counted by ownership: the projects they own (``projects.owner_id``), and the
schedules in those projects — whoever created them (the owner, a member, an agent), as the
per-project quota counts every schedule of the project. So all the schedules that exist are
bounded by users × ``CHATCRON_MAX_TASKS_PER_USER``, and making more projects gives no more.

Every check runs in the transaction that inserts, after :func:`lock_owner`: PostgreSQL serializes
the creations of one owner on their user row; SQLite's write transaction admits one writer at a
time. Concurrent creations therefore cannot all slip under a limit.
"""

from __future__ import annotations

from sqlmodel import Session, func, select

from app.core.db import Database
from app.core.errors import NotFound, QuotaExceeded
from app.core.models import Project, User

PROJECTS_SETTING = "CHATCRON_MAX_PROJECTS_PER_USER"
TASKS_SETTING = "CHATCRON_MAX_TASKS_PER_USER"
PROJECT_TASKS_SETTING = "CHATCRON_MAX_TASKS_PER_PROJECT"  # the schedule counts: app/schedules/service.py


def lock_owner(s: Session, db: Database, user_id: int) -> None:
    """Hold the user row until the transaction ends (PostgreSQL), so counts against it stay true
    until the insert commits; raises NotFound when the user is gone."""
    query = select(User.id).where(User.id == user_id)
    if s.exec(query if db.sqlite else query.with_for_update(key_share=True)).first() is None:
        raise NotFound(f"no user with id {user_id}")


def check_projects(s: Session, owner_id: int, limit: int) -> None:
    """Raise QuotaExceeded when the user already owns ``limit`` projects (0: no limit)."""
    if not limit:
        return
    count = s.exec(select(func.count()).select_from(Project).where(Project.owner_id == owner_id)).one()
    if count >= limit:
        raise QuotaExceeded(f"the owner already has {count} projects (limit {limit}, {PROJECTS_SETTING}); "
                            "an administrator can raise the limit")


def project_owner(s: Session, db: Database, project_id: int) -> int:
    """The id of the project's owner, whose row is then locked (:func:`lock_owner`)."""
    owner_id = s.exec(select(Project.owner_id).where(Project.id == project_id)).first()
    if owner_id is None:
        raise NotFound(f"no project with id {project_id}")
    lock_owner(s, db, owner_id)
    return owner_id

