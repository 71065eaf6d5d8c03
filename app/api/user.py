"""User API (SPEC §5): projects, chats, events, prompts, runs — authorized by personal tokens."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import sqlalchemy as sa
from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field, StrictStr

from app.agents import doctor, sandbox
from app.api.deps import MAX_ID, Digits, Id, core_of, current_user
from app.api.metrics import scheduler_beat
from app.api.serialize import chat_json, event_json, project_json, run_json
from app.attention import reads
from app.core import auth, chats, projects, runs
from app.core.clock import rfc3339
from app.core.context import Core
from app.core.errors import InvalidInput, NotFound
from app.core.models import User
from app.core.text import clean_prompt

router = APIRouter(prefix="/api")
CoreDep = Annotated[Core, Depends(core_of)]
UserDep = Annotated[User, Depends(current_user)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProjectIn(Strict):
    name: StrictStr


class ChatIn(Strict):
    title: StrictStr = "New chat"


class ChatPatch(Strict):
    title: StrictStr | None = None
    skills: list[StrictStr] | None = None


class PromptIn(Strict):
    text: StrictStr


class StopIn(Strict):
    run_id: Annotated[int, Field(ge=1, le=MAX_ID)] | None = None  # default: the chat's running turn


def _admin_asks(request: Request, core: Core) -> bool:
    """Whether the caller sent an admin's personal token (health answers everyone; a bad token is
    no error there, it only gets the public answer)."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    user = auth.user_for_token(core.db, core.clock, token.strip()) if scheme.lower() == "bearer" else None
    return user is not None and user.is_admin


@router.get("/health")
def health(request: Request, core: CoreDep) -> dict[str, Any]:
    """The store, the scheduler and the agents (app/agents/doctor.py: a start problem's detail only
    for an admin's token)."""
    return health_report(core, lambda: _admin_asks(request, core))


def health_report(core: Core, admin: Callable[[], bool]) -> dict[str, Any]:
    """/api/health's answer (and the admin page's); ``admin()``, asked only while the store answers,
    adds an agent start problem's detail."""
    try:
        with core.db.read() as s:
            s.exec(sa.text("SELECT 1"))
        db = "ok"
    except Exception as exc:  # health must answer even when the store is down
        db = f"error: {type(exc).__name__}"
    alive, last = scheduler_beat(core) if db == "ok" else (False, None)
    return {"status": "ok" if db == "ok" else "degraded", "db": db,
            "scheduler": {"alive": alive, "last_beat": rfc3339(last)}, **sandbox.health(core.settings),
            **doctor.health(core.settings, core.db if db == "ok" else None, core.clock.now(),
                            admin=db == "ok" and admin())}


@router.get("/projects")
def list_projects(core: CoreDep, user: UserDep) -> dict[str, Any]:
    return {"projects": [project_json(p) for p in projects.list_projects(core.db, user)]}


@router.post("/projects", status_code=201)
def create_project(body: ProjectIn, core: CoreDep, user: UserDep) -> dict[str, Any]:
    project = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, body.name, user,
                                      max_projects=core.settings.max_projects_per_user)
    return project_json(project)


@router.get("/projects/{pid}/chats")
def list_chats(pid: Id, core: CoreDep, user: UserDep) -> dict[str, Any]:
    return {"chats": [chat_json(c) for c in chats.list_chats(core.db, user, pid)]}


@router.post("/projects/{pid}/chats", status_code=201)
def create_chat(pid: Id, body: ChatIn, core: CoreDep, user: UserDep) -> dict[str, Any]:
    return chat_json(chats.create_chat(core.db, core.clock, user, pid, body.title))


@router.get("/chats")
def list_loose_chats(core: CoreDep, user: UserDep) -> dict[str, Any]:
    """The caller's loose chats (outside any project)."""
    return {"chats": [chat_json(c) for c in chats.list_loose_chats(core.db, user)]}


@router.post("/chats", status_code=201)
def create_loose_chat(core: CoreDep, user: UserDep, body: ChatIn | None = None) -> dict[str, Any]:
    """A loose chat: no project, no workspace, no schedules (SPEC §14)."""
    return chat_json(chats.create_chat(core.db, core.clock, user, None, (body or ChatIn()).title))


@router.get("/chats/{cid}")
def get_chat(cid: Id, core: CoreDep, user: UserDep) -> dict[str, Any]:
    chat = chats.get_chat(core.db, user, cid)
    busy = runs.live_run(core.db, core.clock, cid, core.settings.run_lease_seconds) is not None
    unread = reads.chat_unread_counts(core.db, user, cid).get(cid, 0)  # finished turns since your last visit
    return {**chat_json(chat, busy=busy), "unread": unread}


@router.patch("/chats/{cid}")
def patch_chat(cid: Id, body: ChatPatch, core: CoreDep, user: UserDep) -> dict[str, Any]:
    sent = body.model_dump(exclude_unset=True)
    for field in ("title", "skills"):
        if field in sent and sent[field] is None:
            raise InvalidInput(field, "must not be null")
    chat = chats.update_chat(core.db, core.clock, user, cid, title=sent.get("title"), skills=sent.get("skills"))
    return chat_json(chat)


@router.get("/chats/{cid}/events")
def list_events(cid: Id, core: CoreDep, user: UserDep,
                after: Annotated[int, Digits, Query(ge=0, le=MAX_ID)] = 0,
                limit: Annotated[int, Digits, Query(ge=1, le=runs.MAX_PAGE)] = 200) -> dict[str, Any]:
    chats.get_chat(core.db, user, cid)
    events = runs.list_events(core.db, cid, after, limit)
    return {"events": [event_json(e) for e in events], "next_after": events[-1].id if events else after}


@router.post("/chats/{cid}/prompts", status_code=202)
def post_prompt(cid: Id, body: PromptIn, core: CoreDep, user: UserDep) -> dict[str, Any]:
    chats.get_chat(core.db, user, cid)
    text = clean_prompt(body.text, "text", core.settings.prompt_max_bytes)
    handle = core.prompts.start(cid, text)
    return {"run_id": handle.run_id}


@router.post("/chats/{cid}/stop", status_code=202)
def stop_turn(cid: Id, core: CoreDep, user: UserDep, body: StopIn | None = None) -> dict[str, Any]:
    """Stop the chat's running turn (or ``run_id``), in whichever process runs it (SPEC §16): it ends
    ``failed`` with "stopped by <email>" within a second; 409 when no turn is running, 404 when the
    chat (or the turn) is not visible."""
    run_id = core.prompts.stop(user, cid, body.run_id if body is not None else None)
    return {"run_id": run_id, "stopping": True}


@router.get("/runs/{rid}")
def get_run(rid: Id, core: CoreDep, user: UserDep) -> dict[str, Any]:
    run = runs.get_run(core.db, rid)
    try:
        chats.get_chat(core.db, user, run.chat_id)
    except NotFound:
        raise NotFound(f"no run with id {rid}") from None  # same answer as a missing run
    return run_json(run)
