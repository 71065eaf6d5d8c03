"""A project's members (SPEC §18): list, invite an existing user, change a role, remove.

Owners (and admins) invite, change roles and remove; a member may remove themself. The last owner
cannot leave, be removed or be demoted (409 ``last_owner``). A removal revokes the member's live
schedule grants in the project, as ``revoke-access`` does, and open tabs notice it through the
access mark (:mod:`app.core.access`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import sqlalchemy as sa
from sqlmodel import select

from app.core.accounts import check_not_last_owner
from app.core.auth import normalize_email
from app.core.clock import Clock
from app.core.db import Database
from app.core.errors import AlreadyExists, Forbidden, InvalidInput, NotFound
from app.core.models import Grant, Membership, Project, Role, User
from app.projects import audit
from app.projects.roles import require_member, require_owner


@dataclasses.dataclass(frozen=True)
class Member:
    user_id: int
    email: str
    role: str

    def as_json(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "email": self.email, "role": self.role}


def role_value(value: object, field: str = "role") -> Role:
    """``owner`` or ``member``; InvalidInput naming the field otherwise."""
    if isinstance(value, str) and value in {r.value for r in Role}:
        return Role(value)
    raise InvalidInput(field, "must be owner or member")


def list_members(db: Database, user: User, project_id: int) -> list[Member]:
    """Every member, owners first, then by email (any member may read them)."""
    with db.read() as s:
        require_member(s, user, project_id)
        rows = s.exec(select(User.id, User.email, Membership.role).join(Membership, Membership.user_id == User.id)
                      .where(Membership.project_id == project_id))
        members = [Member(uid, email, role) for uid, email, role in rows]
    return sorted(members, key=lambda m: (m.role != Role.OWNER.value, m.email))


def invite(db: Database, clock: Clock, user: User, project_id: int, email: object,
           role: object = Role.MEMBER.value) -> Member:
    """Make an existing user a member (owners). NotFound naming the email for no such user;
    AlreadyExists when they are a member already (change the role with :func:`set_role`)."""
    if not isinstance(email, str) or not email.strip():
        raise InvalidInput("email", "must be the email of an existing user")
    wanted = role_value(role)
    address = normalize_email(email)
    with db.write() as s:
        require_owner(s, user, project_id)
        invitee = s.exec(select(User).where(User.email == address)).first()
        if invitee is None:
            raise NotFound(f"no user with email {address}: they register first (or an admin creates them)")
        if s.get(Membership, (invitee.id, project_id)) is not None:
            raise AlreadyExists(f"{address} is already a member of project {project_id}")
        s.add(Membership(user_id=invitee.id, project_id=project_id, created_at=clock.now(), role=wanted.value))
        audit.record(s, clock.now(), project_id, user.email, audit.MEMBER_ADD, {"email": address, "role": wanted.value})
        return Member(invitee.id, invitee.email, wanted.value)


def set_role(db: Database, clock: Clock, user: User, project_id: int, user_id: int, role: object) -> Member:
    """Make a member an owner or a member (owners); LastOwner for the project's only owner."""
    wanted = role_value(role)
    with db.write() as s:
        require_owner(s, user, project_id)
        membership, target = _membership(s, project_id, user_id)
        if membership.role != wanted.value:
            if wanted == Role.MEMBER:
                check_not_last_owner(s, db, membership, "be demoted")
            membership.role = wanted.value
            s.add(membership)
            audit.record(s, clock.now(), project_id, user.email, audit.MEMBER_ROLE,
                         {"email": target.email, "role": wanted.value})
        return Member(target.id, target.email, wanted.value)


def remove(db: Database, clock: Clock, user: User, project_id: int, user_id: int) -> Member:
    """Remove a member (owners; anyone may remove themself); LastOwner for the only owner. The
    member's live schedule grants in the project are revoked with it."""
    with db.write() as s:
        role = require_member(s, user, project_id)
        if user_id != user.id and role != Role.OWNER:
            raise Forbidden(f"only an owner of project {project_id} can remove another member")
        membership, target = _membership(s, project_id, user_id)
        check_not_last_owner(s, db, membership, "be removed" if user_id != user.id else "leave")
        s.delete(membership)
        now = clock.now()
        project = s.get(Project, project_id)
        if project is not None and project.owner_id == user_id:  # the project's quota and notices pass on
            heir = s.exec(select(Membership.user_id).where(Membership.project_id == project_id,
                                                           Membership.user_id != user_id)
                          .order_by(Membership.role != Role.OWNER.value, Membership.created_at)).first()
            if heir is not None:
                project.owner_id = heir
                s.add(project)
        s.exec(sa.update(Grant).where(Grant.owner_id == user_id, Grant.project_id == project_id,
                                      Grant.revoked_at.is_(None)).values(revoked_at=now))
        audit.record(s, now, project_id, user.email, audit.MEMBER_REMOVE, {"email": target.email})
        return Member(target.id, target.email, membership.role)


def grant(db: Database, clock: Clock, actor: str, email: str, project_id: int, role: Role | None) -> str:
    """The admin CLI's ``grant-access [--role]``: make the user a member, or change their role when
    ``role`` is given; the last owner is never demoted. Returns the sentence to print."""
    with db.write() as s:
        target = s.exec(select(User).where(User.email == normalize_email(email))).first()
        if target is None:
            raise NotFound(f"no user with email {normalize_email(email)}")
        if s.get(Project, project_id) is None:
            raise NotFound(f"no project with id {project_id}")
        membership = s.get(Membership, (target.id, project_id))
        now = clock.now()
        if membership is None:
            wanted = role or Role.MEMBER
            s.add(Membership(user_id=target.id, project_id=project_id, created_at=now, role=wanted.value))
            audit.record(s, now, project_id, actor, audit.MEMBER_ADD, {"email": target.email, "role": wanted.value})
            return f"{target.email} can now use project {project_id} (as {wanted.value})"
        if role is None or membership.role == role.value:
            return f"{target.email} can use project {project_id} (as {membership.role}; unchanged)"
        if role == Role.MEMBER:
            check_not_last_owner(s, db, membership, "be demoted")
        membership.role = role.value
        s.add(membership)
        audit.record(s, now, project_id, actor, audit.MEMBER_ROLE, {"email": target.email, "role": role.value})
        return f"{target.email} is now {'an owner' if role == Role.OWNER else 'a member'} of project {project_id}"


def _membership(s: Any, project_id: int, user_id: int) -> tuple[Membership, User]:
    membership = s.get(Membership, (user_id, project_id))
    target = s.get(User, user_id) if membership is not None else None
    if membership is None or target is None:
        raise NotFound(f"user {user_id} is not a member of project {project_id}")
    return membership, target
