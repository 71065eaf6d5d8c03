"""Schedules export and import (SPEC §21): a project's task definitions as one JSON document, and
that document made into drafts in a chat of another (or the same) project.

The document is ``{"version": 1, "schedules": [definition, ...]}``; a definition holds only what a
user chose (name, prompt, schedule, overlap, session, notify, max_runs, timing, caps) — never ids,
status, history or spend. An import validates every definition as a create would, all before
writing anything: the first bad one is a 400 naming its index and field
(``schedules[3].schedule.cron``), and nothing is created. What is created waits as a ``draft``
for a user to arm it, as an agent's proposal does (SPEC §6), so nothing fires by surprise.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from sqlmodel import select

from app.core.clock import rfc3339
from app.core.errors import InvalidInput, NotFound
from app.core.models import Project, User
from app.core.projects import get_project
from app.schedules import exclusions, fire_rules
from app.schedules.model import CreatedBy, ScheduledTask, TaskStatus
from app.schedules.service import EDITABLE, Actor, TaskService

VERSION = 1
MAX_ID = 2_147_483_647  # ids are 32-bit integers in both databases
FINISHED = (TaskStatus.COMPLETED.value, TaskStatus.EXHAUSTED.value)
MAX_SCHEDULES = 1000  # definitions in one import


def definition(task: ScheduledTask) -> dict[str, Any]:
    """What a user chose for the task, as a create body takes it."""
    return {
        "name": task.name, "prompt": task.prompt, "schedule": task.schedule_dict(), "overlap": task.overlap,
        "session": task.session, "notify": task.notify, "max_runs": task.max_runs,
        "catchup_window_seconds": task.catchup_window_seconds, "jitter_seconds": task.jitter_seconds,
        "starts_at": rfc3339(task.starts_at), "ends_at": rfc3339(task.ends_at),
        "max_tokens_per_fire": task.max_tokens_per_fire, "max_cost_per_fire_usd": task.max_cost_per_fire_usd,
        **fire_rules.current(task), **exclusions.of_task(task).as_json(),
    }


def export_project(tasks: TaskService, user: User | None, project_id: int) -> dict[str, Any]:
    """Every task of the project, oldest first, as definitions. ``user`` must see the project;
    None is the admin CLI, which sees every project."""
    if user is not None:
        get_project(tasks.db, user, project_id)
    with tasks.db.read() as s:
        rows = list(s.exec(select(ScheduledTask).where(ScheduledTask.project_id == project_id)
                           .order_by(ScheduledTask.id)))
        if user is None and s.get(Project, project_id) is None:
            raise NotFound(f"no project with id {project_id}")
    now = tasks.clock.now()
    return {"version": VERSION, "schedules": [definition(t) for t in rows if not finished(t, now)]}


def finished(task: ScheduledTask, now: Any) -> bool:
    """A task with nothing left to fire — completed, exhausted, a once task whose instant passed, a
    window that ended — is history, not a definition to copy: an export leaves it out (an import
    would refuse its past instant)."""
    schedule = task.schedule_dict()
    if task.status in FINISHED or (task.ends_at is not None and task.ends_at <= now):
        return True
    if schedule.get("kind") == "once":
        try:
            return dt.datetime.fromisoformat(str(schedule.get("at")).replace("Z", "+00:00")) <= now
        except ValueError:
            return False
    return False


@dataclasses.dataclass(frozen=True)
class Imported:
    chat_id: int
    tasks: tuple[ScheduledTask, ...]  # the drafts, as written

    @property
    def task_ids(self) -> tuple[int, ...]:
        return tuple(task.id for task in self.tasks)


def _checked_document(body: object) -> list[dict[str, Any]]:
    if not isinstance(body, dict):
        raise InvalidInput("body", "must be an object {\"version\": 1, \"schedules\": [...], \"chat_id\": N}")
    if type(body.get("version")) is not int or body.get("version") != VERSION:
        raise InvalidInput("version", f"must be {VERSION} (this server reads version {VERSION} documents)")
    items = body.get("schedules")
    if not isinstance(items, list):
        raise InvalidInput("schedules", "must be a list of schedule definitions")
    if len(items) > MAX_SCHEDULES:
        raise InvalidInput("schedules", f"holds {len(items)} definitions; at most {MAX_SCHEDULES} in one import")
    return items


def import_drafts(tasks: TaskService, user: User, project_id: int, body: object) -> Imported:
    """Create every definition of the document as a draft in ``body["chat_id"]`` (a chat of the
    project the user can see), all or nothing; InvalidInput naming ``schedules[i].field``."""
    items = _checked_document(body)
    chat_id = body.get("chat_id")  # type: ignore[union-attr]
    if type(chat_id) is not int or not 1 <= chat_id <= MAX_ID:
        raise InvalidInput("chat_id", "must be the id of a chat of this project")
    get_project(tasks.db, user, project_id)
    chat = tasks._chat_for(Actor(user), chat_id)
    if chat.project_id != project_id:
        raise InvalidInput("chat_id", f"chat {chat_id} is not a chat of project {project_id}")
    specs = []
    for index, item in enumerate(items):
        where = f"schedules[{index}]"
        if not isinstance(item, dict):
            raise InvalidInput(where, "must be an object (a schedule definition)")
        unknown = sorted(set(item) - set(EDITABLE))
        if unknown:
            raise InvalidInput(f"{where}.{unknown[0]}", "unknown field")
        try:
            specs.append(tasks.validate(item))
        except InvalidInput as exc:
            raise InvalidInput(f"{where}.{exc.field}", str(exc).removeprefix(f"{exc.field}: ")) from None
    now = tasks.clock.now()
    rows = [ScheduledTask(
        chat_id=chat_id, project_id=project_id, owner=user.email, name=spec.name, prompt=spec.prompt,
        schedule=spec.schedule_json, overlap=spec.overlap.value, session=spec.session.value, max_runs=spec.max_runs,
        notify=spec.notify.value, status=TaskStatus.DRAFT.value, max_tokens_per_fire=spec.max_tokens_per_fire,
        max_cost_per_fire_usd=spec.max_cost_per_fire_usd, created_by=CreatedBy.USER.value, armed_at=None,
        created_at=now, updated_at=now, **dataclasses.asdict(spec.timing), **dataclasses.asdict(spec.rules))
        for spec in specs]
    with tasks.db.write() as s:
        if rows:
            tasks._check_quotas(s, project_id, adding=len(rows))
        s.add_all(rows)
        s.flush()
    return Imported(chat_id, tuple(rows))
