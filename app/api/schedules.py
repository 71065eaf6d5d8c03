"""User API for scheduled tasks (SPEC §5 schedule rows)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, ConfigDict

from app.api.deps import Digits, Id, core_of, current_user
from app.core.clock import rfc3339
from app.core.errors import InvalidInput
from app.core.models import User
from app.core.spend import Spend
from app.core.wake import DatabaseWaker
from app.schedules import exclusions, hooks, spec
from app.schedules import preview as previews
from app.schedules.model import TASK_DEFAULTS
from app.schedules.phrases_reply import read_back
from app.schedules.service import Actor, TaskService
from app.schedules.spec import ScheduleError

router = APIRouter(prefix="/api")
UserDep = Annotated[User, Depends(current_user)]


def tasks_of(request: Request) -> TaskService:
    """The process's task service, built on first use."""
    service = getattr(request.app.state, "tasks", None)
    if service is None:
        core = core_of(request)
        service = TaskService(core.db, core.clock, core.settings, DatabaseWaker(core.db))
        request.app.state.tasks = service
    return service


TasksDep = Annotated[TaskService, Depends(tasks_of)]


def task_json(t: Any, spend: tuple[Spend, Spend] | None = None) -> dict[str, Any]:
    """A ScheduledTask as the API shows it (``enabled`` is ``status == "active"``); with ``spend``
    (today, in total: ``TaskService.spend``) what its fires spent (SPEC §15)."""
    schedule = t.schedule_dict()
    shown = {
        "id": t.id, "chat_id": t.chat_id, "project_id": t.project_id, "owner": t.owner, "name": t.name,
        "prompt": t.prompt, "schedule": schedule, "description": describe_schedule(schedule),
        "overlap": t.overlap, "session": t.session, "notify": t.notify, "max_runs": t.max_runs,
        "run_count": t.run_count,
        "status": t.status, "enabled": t.status == "active", "next_run_at": rfc3339(t.next_run_at),
        "last_run_at": rfc3339(t.last_run_at), "last_run_status": t.last_run_status, "last_error": t.last_error,
        "pending_run": bool(t.pending_run), "retry_at": rfc3339(t.retry_at), "active_run_id": t.active_run_id,
        "created_by": t.created_by, "idempotency_key": t.idempotency_key,
        "created_at": rfc3339(t.created_at), "updated_at": rfc3339(t.updated_at),
        "next_occurrence_at": rfc3339(t.next_occurrence_at or t.next_run_at),
        "catchup_window_seconds": t.catchup_window_seconds, "jitter_seconds": t.jitter_seconds,
        "starts_at": rfc3339(t.starts_at), "ends_at": rfc3339(t.ends_at),
        "pause_note": t.pause_note, "paused_until": rfc3339(t.paused_until), "paused_by": t.paused_by,
        "max_tokens_per_fire": t.max_tokens_per_fire, "max_cost_per_fire_usd": t.max_cost_per_fire_usd,
        "notify_on": t.notify_on, "queue_cap": t.queue_cap, "pace_min_seconds": t.pace_min_seconds,
        "pace_max_seconds": t.pace_max_seconds, "next_paced": t.next_paced,
        **exclusions.of_task(t).as_json(),
    }
    if spend is not None:
        shown.update(usage_today=spend[0].as_json(), usage_total=spend[1].as_json())
    return shown


def shown(tasks: TaskService, t: Any) -> dict[str, Any]:
    """One task's JSON with its spend and its trigger URL's path (SPEC §19)."""
    return shown_all(tasks, [t])[0]


def shown_all(tasks: TaskService, items: list[Any]) -> list[dict[str, Any]]:
    """Tasks' JSON with their spend and trigger URLs (one read each for all)."""
    ids = [t.id for t in items]
    spend, triggers = tasks.spend(ids), hooks.trigger_views(tasks.db, ids)
    return [task_json(t, spend.get(t.id)) | {"trigger": triggers.get(t.id)} for t in items]


def task_run_json(r: Any) -> dict[str, Any]:
    return {
        "id": r.id, "task_id": r.task_id, "occurrence_at": rfc3339(r.occurrence_at),
        "planned_at": rfc3339(r.planned_at or r.occurrence_at), "missed_count": r.missed_count, "trigger": r.trigger,
        "status": r.status, "fire_number": r.fire_number, "attempts": r.attempts, "run_id": r.run_id,
        "claimed_at": rfc3339(r.claimed_at), "started_at": rfc3339(r.started_at),
        "finished_at": rfc3339(r.finished_at), "error": r.error,
        "outcome": r.outcome, "summary": r.summary, "quiet": bool(r.quiet), "superseded_by": r.superseded_by,
        "payload_bytes": len(r.payload.encode()) if r.payload is not None else None,
        "duration_ms": int((r.finished_at - r.started_at).total_seconds() * 1000)
        if r.finished_at and r.started_at else None,
    }


def describe_schedule(schedule: dict[str, Any]) -> str:
    """Plain English for any schedule kind (never raises on a stored schedule)."""
    try:
        return spec.describe_schedule(schedule)
    except Exception:  # a stored schedule is valid; this only guards display
        return schedule.get("kind", "")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TaskIn(Strict):
    name: Any = None
    prompt: Any = None
    schedule: Any = None
    overlap: Any = TASK_DEFAULTS["overlap"]
    max_runs: Any = None
    session: Any = TASK_DEFAULTS["session"]
    notify: Any = TASK_DEFAULTS["notify"]
    idempotency_key: Any = None
    catchup_window_seconds: Any = TASK_DEFAULTS["catchup_window_seconds"]
    jitter_seconds: Any = TASK_DEFAULTS["jitter_seconds"]
    starts_at: Any = None
    ends_at: Any = None
    max_tokens_per_fire: Any = None
    max_cost_per_fire_usd: Any = None
    notify_on: Any = TASK_DEFAULTS["notify_on"]
    queue_cap: Any = TASK_DEFAULTS["queue_cap"]
    pace_min_seconds: Any = None
    pace_max_seconds: Any = None
    exclude_dates: Any = None
    holidays: Any = None


class TaskPatch(Strict):
    name: Any = None
    prompt: Any = None
    schedule: Any = None
    overlap: Any = None
    max_runs: Any = None
    session: Any = None
    notify: Any = None
    catchup_window_seconds: Any = None
    jitter_seconds: Any = None
    starts_at: Any = None
    ends_at: Any = None
    max_tokens_per_fire: Any = None
    max_cost_per_fire_usd: Any = None
    notify_on: Any = None
    queue_cap: Any = None
    pace_min_seconds: Any = None
    pace_max_seconds: Any = None
    exclude_dates: Any = None
    holidays: Any = None


class PauseIn(Strict):
    note: Any = None
    until: Any = None


class RunNowIn(Strict):
    overlap: Any = None  # this call's own overlap (SPEC §19)


class PreviewIn(Strict):
    schedule: Any = None
    exclude_dates: Any = None  # SPEC §20: the occurrences these exclude are listed under "excluded"
    holidays: Any = None


class ParseIn(Strict):
    text: Any = None  # a schedule phrase (SPEC §20), read in ``timezone``
    timezone: Any = None


def _sent(body: BaseModel) -> dict[str, Any]:
    return body.model_dump(exclude_unset=True)


@router.post("/schedules/preview")
def preview(body: PreviewIn, tasks: TasksDep, user: UserDep) -> dict[str, Any]:
    if not isinstance(body.schedule, dict):
        raise InvalidInput("schedule", "must be an object with a kind (once, cron or interval)")
    try:
        return previews.preview(body.schedule, tasks.clock.now(), exclude_dates=body.exclude_dates,
                                holidays=body.holidays)
    except ScheduleError as exc:
        raise InvalidInput(exc.field, str(exc).removeprefix(f"{exc.field}: ")) from None


@router.post("/schedules/parse")
def parse_phrase(body: ParseIn, tasks: TasksDep, user: UserDep) -> dict[str, Any]:
    """A schedule phrase read back: schedule, exclusions, canonical form, English, next fires; nothing is stored."""
    return read_back(body.text, body.timezone, tasks.clock.now())


@router.get("/chats/{cid}/schedules")
def list_schedules(cid: Id, tasks: TasksDep, user: UserDep) -> dict[str, Any]:
    return {"schedules": shown_all(tasks, tasks.list(Actor(user), cid))}


@router.post("/chats/{cid}/schedules", status_code=201)
def create_schedule(cid: Id, body: TaskIn, response: Response, tasks: TasksDep, user: UserDep) -> dict[str, Any]:
    data = {**TASK_DEFAULTS, **_sent(body)}
    task, created = tasks.create(Actor(user), cid, data)
    if not created:
        response.status_code = 200
    return shown(tasks, task)


@router.get("/schedules/{tid}")
def get_schedule(tid: Id, tasks: TasksDep, user: UserDep) -> dict[str, Any]:
    return shown(tasks, tasks.get(Actor(user), tid))


@router.patch("/schedules/{tid}")
def patch_schedule(tid: Id, body: TaskPatch, tasks: TasksDep, user: UserDep) -> dict[str, Any]:
    return shown(tasks, tasks.update(Actor(user), tid, _sent(body)))


@router.delete("/schedules/{tid}", status_code=204)
def delete_schedule(tid: Id, tasks: TasksDep, user: UserDep) -> Response:
    tasks.delete(Actor(user), tid)
    return Response(status_code=204)


@router.post("/schedules/{tid}/arm")
def arm(tid: Id, tasks: TasksDep, user: UserDep) -> dict[str, Any]:
    return shown(tasks, tasks.arm(Actor(user), tid))


@router.post("/schedules/{tid}/pause")
def pause(tid: Id, tasks: TasksDep, user: UserDep, body: PauseIn | None = None) -> dict[str, Any]:
    return shown(tasks, tasks.pause(Actor(user), tid, _sent(body) if body is not None else {}))


@router.post("/schedules/{tid}/skip-next")
def skip_next(tid: Id, tasks: TasksDep, user: UserDep) -> dict[str, Any]:
    return shown(tasks, tasks.skip_next(Actor(user), tid))


@router.post("/schedules/{tid}/resume")
def resume(tid: Id, tasks: TasksDep, user: UserDep) -> dict[str, Any]:
    return shown(tasks, tasks.resume(Actor(user), tid))


@router.post("/schedules/{tid}/run-now", status_code=202)
def run_now(tid: Id, tasks: TasksDep, user: UserDep, body: RunNowIn | None = None) -> dict[str, Any]:
    return shown(tasks, tasks.run_now(Actor(user), tid, body.overlap if body is not None else None))


@router.get("/schedules/{tid}/runs")
def task_runs(tid: Id, tasks: TasksDep, user: UserDep,
              limit: Annotated[int, Digits, Query(ge=1, le=500)] = 50) -> dict[str, Any]:
    return {"runs": [task_run_json(r) for r in tasks.runs(Actor(user), tid, limit)]}
