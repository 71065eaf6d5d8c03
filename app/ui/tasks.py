"""The UI's door to scheduled tasks: one TaskService per process, and calls shaped for the drawer.

Everything here is blocking (database, CPU-bound schedule checks): states call it through
``asyncio.to_thread``. Rules live in :mod:`app.schedules.service`; this module only adapts.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Collection
from typing import Any

from app.core.context import get_core
from app.core.errors import InvalidInput
from app.core.models import User
from app.core.wake import DatabaseWaker
from app.schedules import hooks, overview
from app.schedules.model import ScheduledTask
from app.schedules.service import Actor, TaskService
from app.ui import schedule_form, schedule_views, trigger_views, usage
from app.ui.marks import SharedMark
from app.ui.schedule_form import FormFields
from app.ui.timeline import Timeline, timeline

HISTORY_LIMIT = 20
TASKS_MARK_MAX_AGE = 1.0  # s: a worker reads the tasks mark at most this often, for all its tabs
TASKS = SharedMark(lambda: overview.tasks_mark(get_core().db), TASKS_MARK_MAX_AGE)
ACTIONS = ("arm", "pause", "resume", "run_now", "delete", "skip_next")

_service: TaskService | None = None
_service_lock = threading.Lock()


def task_service() -> TaskService:
    """The web process's task service (built on first use; it wakes the scheduler on every change)."""
    global _service
    with _service_lock:
        if _service is None:
            core = get_core()
            _service = TaskService(core.db, core.clock, core.settings, DatabaseWaker(core.db))
        return _service


@dataclasses.dataclass
class Snapshot:
    rows: list[schedule_views.TaskRow]
    timeline: Timeline
    live: int = 0  # tasks neither completed nor exhausted
    drafts: int = 0  # drafts waiting for a user to arm them


def snapshot(user: User, chat_id: int, viewer_zone: str, expanded: Collection[int], origin: str = "") -> Snapshot:
    """The drawer's rows (with history for ``expanded`` task ids, trigger URLs on ``origin``, the
    page's) and the 7-day timeline."""
    service = task_service()
    actor = Actor(user)
    tasks = service.list(actor, chat_id)
    now = service.clock.now()
    histories = {task.id: service.runs(actor, task.id, HISTORY_LIMIT) for task in tasks if task.id in expanded}
    lines = usage.usage_lines(service.db, [run.run_id for runs in histories.values() for run in runs if run.run_id])
    spent = service.spend([task.id for task in tasks if task.id])  # one indexed read (SPEC §15)
    rows = [schedule_views.task_row(task, now, viewer_zone, histories.get(task.id), index, lines,
                                    spent.get(task.id or 0)) for index, task in enumerate(tasks)]
    trigger_views.apply(rows, hooks.trigger_views(service.db, [task.id for task in tasks if task.id]), origin, now)
    return Snapshot(rows, timeline(tasks, now, viewer_zone), *schedule_views.live_and_drafts(tasks))


def count(user: User, chat_id: int) -> tuple[int, int]:
    """(tasks still in play, drafts to arm) of the chat, for the Schedules button."""
    return schedule_views.live_and_drafts(task_service().list(Actor(user), chat_id))


def act(user: User, action: str, task_id: int) -> None:
    """Arm, pause, resume, run now, delete or skip the next occurrence; raises the service's
    ChatcronError when refused."""
    if action not in ACTIONS:
        raise InvalidInput("action", f"unknown action {action!r}")
    getattr(task_service(), action)(Actor(user), task_id)


def pause(user: User, task_id: int, body: dict[str, Any]) -> ScheduledTask:
    """Pause with a note and an end (``{"note", "until"}``, SPEC §14), as the API's pause does;
    on a paused task it changes the note and the end."""
    return task_service().pause(Actor(user), task_id, body)


def load_task(user: User, task_id: int) -> ScheduledTask:
    return task_service().get(Actor(user), task_id)


def save_form(user: User, chat_id: int, task_id: int, fields: FormFields,
              original: dict[str, Any] | None) -> ScheduledTask:
    """Create (``task_id`` 0) or update the task; only changed fields are sent on edit."""
    service = task_service()
    if not task_id:
        task, _ = service.create(Actor(user), chat_id, schedule_form.body_of(fields))
        return task
    patch = schedule_form.patch_of(fields, original or {})
    return service.update(Actor(user), task_id, patch) if patch else service.get(Actor(user), task_id)
