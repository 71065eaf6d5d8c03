"""Trigger URLs from outside (SPEC §19): ``POST /hooks/tasks/<hook_id>``, authorized by the hook's
secret alone (a Bearer token or a Standard Webhooks signature), never by a session."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from app.api.deps import Id, core_of
from app.api.schedules import TasksDep, UserDep, tasks_of
from app.core.errors import NotFound
from app.schedules.hooks import HOOK_PATH, Call, HookService
from app.schedules.service import Actor

router = APIRouter()  # the public hook; the two /api routes below are for the task's people


def hooks_of(request: Request, tasks: Any) -> HookService:
    """The process's trigger URL service, built on first use over the task service's ``ask``."""
    service = getattr(request.app.state, "hooks", None)
    if service is None:
        core = core_of(request)
        service = HookService(core.db, core.clock, tasks.ask)
        request.app.state.hooks = service
    return service


def base_of(request: Request) -> str:
    """The address the caller reached this server at (behind trusted proxies: theirs)."""
    return str(request.base_url).rstrip("/")


def hook_url(request: Request, hook_id: str) -> str:
    return base_of(request) + HOOK_PATH + hook_id


@router.post(HOOK_PATH + "{hook_id}", status_code=202)
async def call_hook(hook_id: str, request: Request) -> JSONResponse:
    body = await request.body()
    call = Call(hook_id=hook_id[:64], headers={k.lower(): v for k, v in request.headers.items()}, body=body,
                overlap=request.query_params.get("overlap"))
    service = hooks_of(request, tasks_of(request))
    base = base_of(request)
    answer = await run_in_threadpool(service.call, call, lambda chat_id: f"{base}/chat/{chat_id}")
    return JSONResponse(answer, status_code=202)


@router.post("/api/schedules/{tid}/trigger")
def make_trigger(tid: Id, request: Request, tasks: TasksDep, user: UserDep) -> dict[str, Any]:
    """Create the task's trigger URL or rotate its secret (SPEC §19): the secret is shown this once."""
    task = tasks.get(Actor(user), tid)
    hook_id, secret = hooks_of(request, tasks).make(task.id, user.email)
    return {"url": hook_url(request, hook_id), "secret": secret}


@router.delete("/api/schedules/{tid}/trigger", status_code=204)
def revoke_trigger(tid: Id, request: Request, tasks: TasksDep, user: UserDep) -> Response:
    task = tasks.get(Actor(user), tid)
    if not hooks_of(request, tasks).revoke(task.id):
        raise NotFound("this schedule has no trigger URL")
    return Response(status_code=204)
