"""The UI's door to scheduled tasks: one TaskService per process, and calls shaped for the drawer.

Everything here is blocking (database, CPU-bound schedule checks): states call it through
``asyncio.to_thread``. Rules live in :mod:`app.schedules.service`; this module only adapts.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Collection
from typing import Any

from app.core.context import get_core
from app.core.errors import InvalidInput
from app.core.models import User
from app.core.wake import DatabaseWaker
from app.schedules import clock_notes, overview, timing
from app.schedules import preview as previews
from app.schedules.model import ScheduledTask
from app.schedules.service import Actor, TaskService
from app.schedules.spec import ScheduleError, parse_instant
from app.ui import schedule_form, schedule_views, usage
from app.ui.marks import SharedMark
from app.ui.schedule_form import FormFields
from app.ui.timeline import Timeline, timeline

HISTORY_LIMIT = 20
TASKS_MARK_MAX_AGE = 1.0  # s: a worker reads the tasks mark at most this often, for all its tabs
TASKS = SharedMark(lambda: overview.tasks_mark(get_core().db), TASKS_MARK_MAX_AGE)
ACTIONS = ("arm", "pause", "resume", "run_now", "delete")

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


def snapshot(user: User, chat_id: int, viewer_zone: str, expanded: Collection[int]) -> Snapshot:
    """The drawer's rows (with history for ``expanded`` task ids) and the 7-day timeline."""
    service = task_service()
    actor = Actor(user)
    tasks = service.list(actor, chat_id)
    now = service.clock.now()
    histories = {task.id: service.runs(actor, task.id, HISTORY_LIMIT) for task in tasks if task.id in expanded}
    lines = usage.usage_lines(service.db, [run.run_id for runs in histories.values() for run in runs if run.run_id])
    rows = [schedule_views.task_row(task, now, viewer_zone, histories.get(task.id), index, lines)
            for index, task in enumerate(tasks)]
    return Snapshot(rows, timeline(tasks, now, viewer_zone), *schedule_views.live_and_drafts(tasks))


def count(user: User, chat_id: int) -> tuple[int, int]:
    """(tasks still in play, drafts to arm) of the chat, for the Schedules button."""
    return schedule_views.live_and_drafts(task_service().list(Actor(user), chat_id))


def act(user: User, action: str, task_id: int) -> None:
    """Arm, pause, resume, run now or delete; raises the service's ChatcronError when refused."""
    if action not in ACTIONS:
        raise InvalidInput("action", f"unknown action {action!r}")
    getattr(task_service(), action)(Actor(user), task_id)


def load_task(user: User, task_id: int) -> ScheduledTask:
    return task_service().get(Actor(user), task_id)


@dataclasses.dataclass
class FormCheck:
    """The dialog's verdict: the preview (when the schedule is valid) and the first error."""

    description: str = ""
    fires: list[dict[str, str]] = dataclasses.field(default_factory=list)
    error_field: str = ""
    error: str = ""


def check_form(fields: FormFields, original: dict[str, Any] | None, viewer_zone: str) -> FormCheck:
    """Validate like the service would on save, and preview the next 5 fires in the task's zone.

    No fire is listed while the schedule itself is in error (a 1-second interval shows its
    error, not five rows of "now"); an error in the name or prompt keeps the preview.
    """
    service = task_service()
    check = FormCheck()
    try:
        schedule = schedule_form.schedule_of(fields)
        try:
            _preview(check, schedule, service, fields, viewer_zone, _runs_left(fields, original))
        except InvalidInput:
            if original is None or original["schedule"] != schedule:
                raise  # an unchanged schedule whose time has passed may still be renamed
        if original is None:
            service.validate(schedule_form.body_of(fields))
        else:
            service.validate(schedule_form.patch_of(fields, original), partial_of=_as_task(original))
    except InvalidInput as exc:
        check.error_field, check.error = exc.field, schedule_form.explain(exc)
        if exc.field.startswith("schedule"):
            check.description, check.fires = "", []
    return check


def _runs_left(fields: FormFields, original: dict[str, Any] | None) -> int | None:
    """The fires the task has left: the form's max runs minus its runs so far (a once task has no
    max runs: saving clears a stored one; a max runs that is not a whole number from 1 bounds
    nothing here: its own error says why)."""
    stored = original or {}
    try:
        raw = fields.max_runs.strip()
        max_runs = None if fields.kind == "once" else int(raw) if raw else None
    except ValueError:
        return None
    if max_runs is None or max_runs < 1:
        return None
    return timing.runs_left(max_runs, int(stored.get("run_count") or 0))


def _preview(check: FormCheck, schedule: dict[str, Any], service: TaskService, fields: FormFields,
             viewer_zone: str, runs_left: int | None = None) -> None:
    now = service.clock.now()
    try:
        shown = previews.preview(schedule, now, 5, display_timezone=fields.timezone or viewer_zone,
                                 min_every_seconds=service.settings.min_interval_seconds, runs_left=runs_left)
    except ScheduleError as exc:
        raise InvalidInput(exc.field, exc.message) from None
    tz = schedule_views.zone_of(shown["timezone"])
    check.description = schedule_views.describe(schedule, tz)
    for fire in shown["fires"]:
        at = parse_instant(fire["utc"], "utc")
        check.fires.append({"local": f"{schedule_views.short_time(at, tz)} {at.astimezone(tz).tzname()}",
                            "relative": schedule_views.relative(at, now), "utc": fire["utc"],
                            "note": _clock_note(schedule, fields, at)})


def _clock_note(schedule: dict[str, Any], fields: FormFields, at: Any) -> str:
    """What a clock change does to this fire, in words ("" for most fires)."""
    if schedule["kind"] == "cron":
        return clock_notes.cron_note(schedule["cron"], schedule["timezone"], at)
    if schedule["kind"] == "once":
        return clock_notes.once_note(schedule_form.wall_of(fields), fields.timezone.strip())
    return ""


def _as_task(original: dict[str, Any]) -> ScheduledTask:
    return ScheduledTask(chat_id=0, project_id=0, owner="", name=original["name"], prompt=original["prompt"],
                         schedule=json.dumps(original["schedule"]), overlap=original["overlap"],
                         session=original["session"], max_runs=original["max_runs"])


def save_form(user: User, chat_id: int, task_id: int, fields: FormFields,
              original: dict[str, Any] | None) -> ScheduledTask:
    """Create (``task_id`` 0) or update the task; only changed fields are sent on edit."""
    service = task_service()
    if not task_id:
        task, _ = service.create(Actor(user), chat_id, schedule_form.body_of(fields))
        return task
    patch = schedule_form.patch_of(fields, original or {})
    return service.update(Actor(user), task_id, patch) if patch else service.get(Actor(user), task_id)
