"""Every task a user can see, across all their chats, and pause / resume of many at once (SPEC §13).

A user sees the tasks of the projects they are a member of (an admin: every project), the rule
``app.core.projects.has_access`` states for one project. Bulk actions go through
:class:`~app.schedules.service.TaskService` one task at a time, so each task meets exactly the
rules of the single pause / resume (only users resume, a draft is armed rather than resumed, ...)
and one refusal does not stop the others.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence

import sqlalchemy as sa
from sqlmodel import select

from app.core.db import Database
from app.core.errors import ChatcronError, InvalidInput, NotFound
from app.core.models import Chat, Membership, Project, User
from app.schedules.model import ScheduledTask, TaskStatus
from app.schedules.service import Actor, TaskService

MAX_PAGE = 500
DEFAULT_PAGE = 200
MAX_BULK = 200


class BulkAction(enum.StrEnum):
    """What a bulk request does to each task it names."""

    PAUSE = "pause"
    RESUME = "resume"


@dataclasses.dataclass(frozen=True)
class Listed:
    """One visible task with the names a cross-chat list needs beside it."""

    task: ScheduledTask
    chat_title: str
    project_name: str


@dataclasses.dataclass(frozen=True)
class Page:
    """One page of :func:`visible_tasks` and where the next one starts."""

    rows: list[Listed]
    next_after: int | None  # the ``after`` of the next page; None only when no row is left after this page


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What a bulk action did to one task: the task after it, or the refusal."""

    task_id: int
    task: ScheduledTask | None = None
    error: ChatcronError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def parse_status(value: object) -> TaskStatus | None:
    """A status filter: None or "" for every status; raises InvalidInput naming ``status``."""
    if value is None or value == "":
        return None
    try:
        return TaskStatus(value)
    except ValueError:
        raise InvalidInput("status", f"must be one of {', '.join(s.value for s in TaskStatus)}") from None


def _visible_projects(user: User, project_id: int | None = None):
    """The ids of the projects ``user`` sees (admins: all of them), as a subquery; only
    ``project_id`` among them when it is given."""
    column = Project.id if user.is_admin else Membership.project_id
    query = select(column)
    if not user.is_admin:
        query = query.where(Membership.user_id == user.id)
    return query.where(column == project_id) if project_id is not None else query


def visible_tasks(db: Database, user: User, status: TaskStatus | None = None, project_id: int | None = None,
                  limit: int = DEFAULT_PAGE, after: int | None = None) -> Page:
    """A page of the tasks ``user`` may see, ordered by project, chat and creation (task id).

    ``limit`` is clamped to 1..MAX_PAGE; one row more than that is read, so ``next_after`` is set
    whenever a row remains — also at (and above) the maximum.

    ``project_id`` narrows to one project and raises NotFound when the user cannot see it (as the
    per-project endpoints do). ``after`` is the id of the last task of the previous page; the next
    page starts right after it in this order; an id that is not in the user's list (deleted
    meanwhile, or never visible) raises InvalidInput naming ``after``.
    """
    limit = max(1, min(limit, MAX_PAGE))
    visible = _visible_projects(user)
    with db.read() as s:
        if project_id is not None and s.exec(_visible_projects(user, project_id)).first() is None:
            raise NotFound(f"no project with id {project_id}")
        query = (select(ScheduledTask, Chat.title, Project.name)
                 .join(Chat, Chat.id == ScheduledTask.chat_id)
                 .join(Project, Project.id == Chat.project_id)
                 .where(Chat.project_id.in_(visible)))
        if status is not None:
            query = query.where(ScheduledTask.status == status.value)
        if project_id is not None:
            query = query.where(Chat.project_id == project_id)
        if after is not None:
            key = s.exec(select(Chat.project_id, ScheduledTask.chat_id)
                         .join(Chat, Chat.id == ScheduledTask.chat_id)
                         .where(ScheduledTask.id == after, Chat.project_id.in_(visible))).first()
            if key is None:
                raise InvalidInput("after", "is not a schedule of this list (it may have been deleted); "
                                            "start again without after")
            query = query.where(sa.tuple_(Chat.project_id, ScheduledTask.chat_id, ScheduledTask.id)
                                > sa.tuple_(sa.literal(key[0]), sa.literal(key[1]), sa.literal(after)))
        query = query.order_by(Chat.project_id, ScheduledTask.chat_id, ScheduledTask.id).limit(limit + 1)
        found = [Listed(task, title, name) for task, title, name in s.exec(query)]
    rows = found[:limit]
    return Page(rows, rows[-1].task.id if len(found) > limit else None)


def parse_ids(value: object) -> list[int]:
    """The ``ids`` of a bulk request: 1 to MAX_BULK ids, duplicates dropped (first place kept)."""
    if not isinstance(value, list) or not value:
        raise InvalidInput("ids", "must be a non-empty list of schedule ids")
    if len(value) > MAX_BULK:
        raise InvalidInput("ids", f"must name at most {MAX_BULK} schedules")
    for item in value:
        if type(item) is not int or not 1 <= item <= 2_147_483_647:
            raise InvalidInput("ids", "must hold positive whole numbers (schedule ids)")
    return list(dict.fromkeys(value))


def parse_action(value: object) -> BulkAction:
    try:
        return BulkAction(value)
    except (ValueError, TypeError):
        raise InvalidInput("action", f"must be one of {', '.join(a.value for a in BulkAction)}") from None


def bulk(service: TaskService, actor: Actor, action: BulkAction, ids: Sequence[int]) -> list[Outcome]:
    """Apply ``action`` to each task in turn through the service's own method; a refusal
    (NotFound, Conflict, Forbidden, ...) is that task's outcome and the others go on. A store
    outage (``StoreError``) is not a refusal: it propagates."""
    method = service.pause if action is BulkAction.PAUSE else service.resume
    outcomes = []
    for task_id in ids:
        try:
            outcomes.append(Outcome(task_id, task=method(actor, task_id)))
        except ChatcronError as exc:
            outcomes.append(Outcome(task_id, error=exc))
    return outcomes


def tasks_mark(db: Database) -> tuple[int, int, str]:
    """(tasks, newest id, newest change) of the whole store: moves whenever any task is created, changed
    or deleted — what an open page's Schedules counts wait on (app/ui/tasks.py)."""
    table = ScheduledTask.__table__
    query = sa.select(sa.func.count(), sa.func.coalesce(sa.func.max(table.c.id), 0), sa.func.max(table.c.updated_at))
    with db.read() as s:
        count, newest, changed = s.connection().execute(query).one()
    return int(count), int(newest), str(changed)
