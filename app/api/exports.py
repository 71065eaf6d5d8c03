"""Exports and the schedules import (SPEC §21): a chat's transcript as Markdown or JSON, a
project's schedules as a definitions document, and that document made into drafts."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query, Response

from app.api.deps import Id, core_of, current_user
from app.api.schedules import task_json
from app.core.context import Core
from app.core.models import User
from app.core.wake import DatabaseWaker
from app.projects.exports import MEDIA, export_chat
from app.schedules import transfer
from app.schedules.service import TaskService

router = APIRouter(prefix="/api")
CoreDep = Annotated[Core, Depends(core_of)]
UserDep = Annotated[User, Depends(current_user)]


def _tasks(core: Core) -> TaskService:
    return TaskService(core.db, core.clock, core.settings, DatabaseWaker(core.db))


@router.get("/chats/{cid}/export")
def get_chat_export(cid: Id, core: CoreDep, user: UserDep, format: Annotated[str, Query()] = "md") -> Response:
    name, text = export_chat(core.db, core.clock, user, cid, format)
    return Response(text, media_type=MEDIA[format], headers={"Content-Disposition": f'attachment; filename="{name}"'})


@router.get("/projects/{pid}/schedules/export")
def get_schedules_export(pid: Id, core: CoreDep, user: UserDep) -> dict[str, Any]:
    return transfer.export_project(_tasks(core), user, pid)


@router.post("/projects/{pid}/schedules/import", status_code=201)
def post_schedules_import(pid: Id, core: CoreDep, user: UserDep, body: Annotated[Any, Body()] = None) -> dict[str, Any]:
    done = transfer.import_drafts(_tasks(core), user, pid, body)
    return {"chat_id": done.chat_id, "created": len(done.tasks), "schedules": [task_json(t) for t in done.tasks]}
