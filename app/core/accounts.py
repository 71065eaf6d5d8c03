"""Taking access away (SPEC §17): delete a user, remove a membership, end a user's browser sessions.

Each change is one transaction, so a refused command changes nothing, and each leaves the
database so that the next check of an open tab fails: ``auth.user_for_session`` finds no session
(ended, or its user deleted) and ``chats.get_chat`` finds no access (membership removed).

What ``delete_user`` does with what the user leaves behind (docs/SECURITY.md, "Taking access away"):

- gone with the user: memberships, browser sessions and login tickets, personal API tokens,
  login attempts under their email, and the schedule grants issued for them;
- a project they own that has other members passes to the longest-standing other member; one
  nobody else is a member of is deleted with its chats, transcripts, schedules, their history
  and its workspace folder;
- their loose chats are deleted; their chats in a surviving project stay (the transcript is the
  project's) and pass to the project's owner;
- their schedules in a surviving project stay: the scheduler's fire-time check fails the next
  fire with "the owner … is no longer registered" and sets the task to ``error``;
- their notification channels, deliveries and read marks go; attention events in chats that stay
  are kept (the project's history) with no user to deliver them to. Ids are never given again
  (``models.NEVER_REUSED``), so a new account under the same email starts with nothing of theirs.

Deleting a chat while a turn runs in it would pull the rows from under that turn, so the
command is refused until the turn has ended.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import sqlalchemy as sa
from sqlmodel import Session, select

from app.core.agent_starts import AgentStartProblem
from app.core.attention_tables import Approval, AttentionEvent, ChatRead, Delivery, InboxRead, NotificationChannel
from app.core.auth import normalize_email
from app.core.clock import Clock
from app.core.db import Database
from app.core.errors import Conflict, LastOwner, NotFound
from app.core.models import (
    ApiToken,
    Chat,
    Event,
    Grant,
    LoginAttempt,
    Membership,
    Project,
    ProjectAudit,
    Role,
    Run,
    RunStatus,
    User,
    WebSession,
)

# Deletes what other packages keep about these chats (the schedule domain: its tasks and their
# history), inside the caller's transaction; raises Conflict to refuse the whole deletion.
ChatsGone = Callable[[Session, Sequence[int]], None]


@dataclasses.dataclass(frozen=True)
class Deletion:
    """What ``delete_user`` did, for the admin's one-line report."""

    email: str
    deleted_projects: tuple[int, ...]
    passed_projects: tuple[tuple[int, str], ...]  # (project id, the new owner's email)
    deleted_chats: int
    workspace_errors: tuple[str, ...] = ()  # folders that could not be removed (the rows are gone)

    def sentence(self) -> str:
        parts = [f"deleted user {self.email}"]
        if self.deleted_projects:
            parts.append("deleted project(s) nobody else used: " + ", ".join(map(str, self.deleted_projects)))
        if self.passed_projects:
            parts.append("passed on: " + ", ".join(f"project {pid} to {heir}" for pid, heir in self.passed_projects))
        parts.append(f"{self.deleted_chats} chat(s) deleted")
        text = "; ".join(parts)
        if self.workspace_errors:
            text += "; could not remove " + ", ".join(self.workspace_errors)
        return text


def _locked_user(s: Session, db: Database, email: str) -> User:
    """The user row, locked against concurrent writes that reference it (PostgreSQL; SQLite's
    write transaction already excludes them); raises NotFound."""
    query = select(User).where(User.email == normalize_email(email))
    user = s.exec(query if db.sqlite else query.with_for_update()).first()
    if user is None:
        raise NotFound(f"no user with email {normalize_email(email)}")
    return user


def _heirs(s: Session, user_id: int) -> dict[int, User | None]:
    """Each project the user owns → the longest-standing other member (None: nobody else)."""
    heirs: dict[int, User | None] = {}
    for project_id in s.exec(select(Project.id).where(Project.owner_id == user_id).order_by(Project.id)).all():
        heirs[project_id] = s.exec(
            select(User).join(Membership, Membership.user_id == User.id)
            .where(Membership.project_id == project_id, User.id != user_id)
            .order_by(Membership.role != Role.OWNER.value, Membership.created_at, User.id)  # an owner first
        ).first()
    return heirs


def _forget_attention(s: Session, user_id: int, doomed: Sequence[int]) -> None:
    """What SPEC §13 kept for the user and their doomed chats: channels, deliveries, read marks,
    approvals; the events of chats that stay are kept but no longer name the user."""
    channels = select(NotificationChannel.id).where(NotificationChannel.user_id == user_id).scalar_subquery()
    _bulk(s, sa.delete(Delivery).where(Delivery.channel_id.in_(channels)))
    _bulk(s, sa.delete(NotificationChannel).where(NotificationChannel.user_id == user_id))
    _bulk(s, sa.delete(InboxRead).where(InboxRead.user_id == user_id))
    _bulk(s, sa.delete(ChatRead).where(sa.or_(ChatRead.user_id == user_id, ChatRead.chat_id.in_(doomed))))
    _bulk(s, sa.delete(Approval).where(Approval.chat_id.in_(doomed)))
    _bulk(s, sa.delete(AttentionEvent).where(AttentionEvent.chat_id.in_(doomed)))
    # What happened in chats that stay is the project's history; it no longer concerns anyone, so
    # nothing of it is ever delivered (a new account under the same email gets a new id).
    _bulk(s, sa.update(AttentionEvent).where(AttentionEvent.user_id == user_id).values(user_id=None))


def _keep_an_owner(s: Session, project_ids: Sequence[int]) -> None:
    """Each of these projects that has members but no owner left: its longest-standing member
    becomes its owner (SPEC §18: a project always has an owner while anyone uses it)."""
    for project_id in project_ids:
        members = list(s.exec(select(Membership).where(Membership.project_id == project_id)
                              .order_by(Membership.created_at, Membership.user_id)))
        if members and not any(m.role == Role.OWNER.value for m in members):
            members[0].role = Role.OWNER.value
            s.add(members[0])


def delete_user(db: Database, email: str, workspaces: Path, chats_gone: ChatsGone) -> Deletion:
    """Delete a user and what only they used (see the module docstring); NotFound, Conflict."""
    with db.write() as s:
        user = _locked_user(s, db, email)
        heirs = _heirs(s, user.id)
        sole = [pid for pid, heir in heirs.items() if heir is None]
        doomed = _doomed_chats(s, user.id, sole)
        chats_gone(s, doomed)
        _bulk(s, sa.delete(Grant).where(sa.or_(Grant.chat_id.in_(doomed), Grant.owner_id == user.id)))
        _forget_attention(s, user.id, doomed)
        _bulk(s, sa.delete(Event).where(Event.chat_id.in_(doomed)))
        _bulk(s, sa.delete(Run).where(Run.chat_id.in_(doomed)))
        _bulk(s, sa.delete(Chat).where(Chat.id.in_(doomed)))
        owned = list(s.exec(select(Membership.project_id).where(Membership.user_id == user.id,
                                                               Membership.role == Role.OWNER.value)))
        _bulk(s, sa.delete(Membership).where(sa.or_(Membership.user_id == user.id, Membership.project_id.in_(sole))))
        _keep_an_owner(s, [pid for pid in owned if pid not in sole])
        _bulk(s, sa.delete(ProjectAudit).where(ProjectAudit.project_id.in_(sole)))
        _bulk(s, sa.delete(Project).where(Project.id.in_(sole)))
        _bulk(s, sa.delete(AgentStartProblem).where(AgentStartProblem.project_key.in_(sole)))
        for project_id, heir in heirs.items():
            if heir is not None:
                _bulk(s, sa.update(Project).where(Project.id == project_id).values(owner_id=heir.id))
        # What is left of their chats is in projects someone else now owns: the owner inherits them.
        new_owner = select(Project.owner_id).where(Project.id == Chat.project_id).scalar_subquery()
        _bulk(s, sa.update(Chat).where(Chat.owner_id == user.id).values(owner_id=new_owner))
        _bulk(s, sa.delete(ApiToken).where(ApiToken.user_id == user.id))
        _bulk(s, sa.delete(WebSession).where(WebSession.user_id == user.id))
        _bulk(s, sa.delete(LoginAttempt).where(LoginAttempt.email == user.email))
        _bulk(s, sa.delete(User).where(User.id == user.id))
    # After the commit (ids are never reused, so no later project would find them; the files go anyway).
    errors = [_remove(workspaces / str(pid)) for pid in sole]
    passed = tuple((pid, heir.email) for pid, heir in heirs.items() if heir is not None)
    return Deletion(user.email, tuple(sole), passed, len(doomed), tuple(e for e in errors if e))


def _doomed_chats(s: Session, user_id: int, sole: list[int]) -> list[int]:
    """The chats that go with the user: their loose chats and every chat of ``sole`` projects;
    raises Conflict while a turn runs in one of them."""
    doomed = list(s.exec(select(Chat.id).where(
        sa.or_(Chat.project_id.in_(sole), sa.and_(Chat.project_id.is_(None), Chat.owner_id == user_id)))))
    running = s.exec(select(Run.chat_id).where(Run.chat_id.in_(doomed),
                                               Run.status == RunStatus.RUNNING.value)).first()
    if running is not None:
        raise Conflict(f"a turn is running in chat {running}, which would be deleted; try again when it has finished")
    return doomed


def _bulk(s: Session, statement: sa.Update | sa.Delete) -> sa.CursorResult:
    """Run a bulk statement without reconciling loaded objects (none of them is used afterwards)."""
    return s.exec(statement.execution_options(synchronize_session=False))


def _remove(folder: Path) -> str:
    """Remove a workspace folder; returns "" or what went wrong."""
    try:
        shutil.rmtree(folder)
    except FileNotFoundError:
        pass
    except OSError as exc:
        return f"{folder} ({exc.strerror or exc})"
    return ""


@dataclasses.dataclass(frozen=True)
class Revocation:
    email: str
    project_id: int
    is_admin: bool
    revoked_grants: int

    def sentence(self) -> str:
        text = f"{self.email} can no longer use project {self.project_id}"
        if self.is_admin:
            text += f" as a member ({self.email} is an admin and still sees every project)"
        return text


def revoke_access(db: Database, clock: Clock, email: str, project_id: int) -> Revocation:
    """Remove a membership, and revoke the user's live schedule grants in that project (an agent
    turn acting for them can no longer manage its schedules); NotFound for an unknown email,
    an unknown project or no membership."""
    with db.write() as s:
        user = _locked_user(s, db, email)
        if s.get(Project, project_id) is None:
            raise NotFound(f"no project with id {project_id}")
        membership = s.get(Membership, (user.id, project_id))
        if membership is None:
            raise NotFound(f"{user.email} is not a member of project {project_id}")
        check_not_last_owner(s, db, membership, "be removed")
        s.delete(membership)
        revoked = _bulk(s, sa.update(Grant).where(Grant.owner_id == user.id, Grant.project_id == project_id,
                                                Grant.revoked_at.is_(None)).values(revoked_at=clock.now()))
        return Revocation(user.email, project_id, user.is_admin, revoked.rowcount or 0)


def check_not_last_owner(s: Session, db: Database, membership: Membership, what: str) -> None:
    """Raises LastOwner when ``membership`` is its project's only owner (SPEC §18). The project's
    owner rows are locked first on PostgreSQL, so two owners demoting each other at once cannot
    both pass (SQLite's write transaction already serializes them)."""
    if membership.role != Role.OWNER.value:
        return
    query = select(Membership.user_id).where(Membership.project_id == membership.project_id,
                                             Membership.role == Role.OWNER.value).order_by(Membership.user_id)
    owners = list(s.exec(query if db.sqlite else query.with_for_update()))
    if owners == [membership.user_id]:
        raise LastOwner(f"the last owner of project {membership.project_id} cannot {what}: "
                        "make another member an owner first")


def end_sessions(db: Database, email: str) -> tuple[str, int]:
    """End every browser session of a user (and any login ticket not yet claimed); returns
    (email, how many). Personal API tokens are not touched: ``revoke-tokens`` ends those."""
    with db.write() as s:
        user = _locked_user(s, db, email)
        ended = _bulk(s, sa.delete(WebSession).where(WebSession.user_id == user.id))
        return user.email, ended.rowcount or 0
