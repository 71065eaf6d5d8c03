"""Agent API (SPEC §5): what an agent may do from inside its turn, with the turn's grant.

Every call is authorized by the grant's scope and fenced to the grant's chat. Agents create
drafts; only a user can arm or resume a schedule.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, ConfigDict

from app.api.deps import Id, bearer, core_of
from app.api.schedules import ParseIn, PauseIn, TaskIn, TasksDep, _sent, shown, shown_all
from app.core.clock import rfc3339
from app.core.errors import Forbidden
from app.core.grants import GrantView, Scope, resolve_grant
from app.schedules.model import TASK_DEFAULTS
from app.schedules.phrases_reply import read_back
from app.schedules.service import Actor

router = APIRouter(prefix="/agent-api")
USER_ONLY = "only a user can arm or resume a schedule; ask the user to do it in the Schedules drawer"


def current_grant(request: Request) -> GrantView:
    core = core_of(request)
    return resolve_grant(core.db, core.clock, bearer(request))


GrantDep = Annotated[GrantView, Depends(current_grant)]


def manager(grant: GrantDep) -> Actor:
    """The acting user for a ``manage`` grant, fenced to its chat."""
    grant.require(Scope.MANAGE)
    return Actor(grant.owner, agent_chat_id=grant.chat_id)


ManagerDep = Annotated[Actor, Depends(manager)]


class NamePatch(BaseModel):
    model_config = ConfigDict(extra="allow")  # definition fields are refused with 403, not 400

    name: Any = None


class CompleteIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: Any = None


@router.get("/whoami")
def whoami(grant: GrantDep) -> dict[str, Any]:
    return {"scope": grant.scope.value, "owner": grant.owner.email, "chat_id": grant.chat_id,
            "project_id": grant.project_id, "task_id": grant.task_id, "run_id": grant.task_run_id,
            "expires_at": rfc3339(grant.expires_at)}


@router.post("/schedules/current/complete")
def complete_current(body: CompleteIn, grant: GrantDep, tasks: TasksDep) -> dict[str, Any]:
    grant.require(Scope.COMPLETE_SELF)
    if grant.task_id is None or grant.task_run_id is None:
        raise Forbidden("this token does not belong to a scheduled fire")
    reason = body.reason if isinstance(body.reason, str) else None
    return shown(tasks, tasks.complete(grant.task_id, grant.task_run_id, reason))


class ReportIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    outcome: Any = None
    summary: Any = None


class NextIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    in_seconds: Any = None
    at: Any = None


class RunNowIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    overlap: Any = None


def fire_of(grant: GrantView) -> tuple[int, int]:
    """(task id, task run id) of the fire this token belongs to; Forbidden outside a fire."""
    if grant.task_id is None or grant.task_run_id is None:
        raise Forbidden("this token does not belong to a scheduled fire; report and next work only inside one")
    return grant.task_id, grant.task_run_id


@router.post("/schedules/current/report")
def report_current(body: ReportIn, grant: GrantDep, tasks: TasksDep) -> dict[str, Any]:
    """The agent's word on its own fire (SPEC §19): changed, no_change or failed, and a summary."""
    row = tasks.report(*fire_of(grant), body.outcome, body.summary)
    return {"task_id": row.task_id, "run_id": row.id, "outcome": row.outcome, "summary": row.summary}


@router.post("/schedules/current/next")
def pace_current(body: NextIn, grant: GrantDep, tasks: TasksDep) -> dict[str, Any]:
    """Move the task's next fire once, within the bounds a user allowed (SPEC §19)."""
    return shown(tasks, tasks.pace_next(*fire_of(grant), body.in_seconds, body.at))


@router.get("/schedules")
def list_schedules(actor: ManagerDep, tasks: TasksDep) -> dict[str, Any]:
    return {"schedules": shown_all(tasks, tasks.list(actor, actor.agent_chat_id))}


@router.post("/schedules", status_code=201)
def create_schedule(body: TaskIn, response: Response, actor: ManagerDep, tasks: TasksDep) -> dict[str, Any]:
    data = {**TASK_DEFAULTS, **_sent(body)}
    task, created = tasks.create(actor, actor.agent_chat_id, data)
    if not created:
        response.status_code = 200
    return shown(tasks, task)


@router.post("/schedules/parse")
def parse_phrase(body: ParseIn, actor: ManagerDep, tasks: TasksDep) -> dict[str, Any]:
    """A schedule phrase read back, as the user API's (SPEC §20; ``remote-schedule create --when``); nothing
    is stored."""
    return read_back(body.text, body.timezone, tasks.clock.now())


@router.get("/schedules/{tid}")
def get_schedule(tid: Id, actor: ManagerDep, tasks: TasksDep) -> dict[str, Any]:
    return shown(tasks, tasks.get(actor, tid))


@router.patch("/schedules/{tid}")
def patch_schedule(tid: Id, body: NamePatch, actor: ManagerDep, tasks: TasksDep) -> dict[str, Any]:
    return shown(tasks, tasks.update(actor, tid, body.model_dump(exclude_unset=True)))


@router.delete("/schedules/{tid}", status_code=204)
def delete_schedule(tid: Id, actor: ManagerDep, tasks: TasksDep) -> Response:
    tasks.delete(actor, tid)
    return Response(status_code=204)


@router.post("/schedules/{tid}/pause")
def pause(tid: Id, actor: ManagerDep, tasks: TasksDep, body: PauseIn | None = None) -> dict[str, Any]:
    return shown(tasks, tasks.pause(actor, tid, _sent(body) if body is not None else {}))


@router.post("/schedules/{tid}/skip-next")
def skip_next(tid: Id, actor: ManagerDep, tasks: TasksDep) -> dict[str, Any]:
    return shown(tasks, tasks.skip_next(actor, tid))


@router.post("/schedules/{tid}/run-now", status_code=202)
def run_now(tid: Id, actor: ManagerDep, tasks: TasksDep, body: RunNowIn | None = None) -> dict[str, Any]:
    return shown(tasks, tasks.run_now(actor, tid, body.overlap if body is not None else None))


@router.post("/schedules/{tid}/arm")
def arm(tid: int, grant: GrantDep) -> dict[str, Any]:
    raise Forbidden(USER_ONLY)


@router.post("/schedules/{tid}/resume")
def resume(tid: int, grant: GrantDep) -> dict[str, Any]:
    raise Forbidden(USER_ONLY)
