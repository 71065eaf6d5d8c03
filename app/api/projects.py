"""Project settings, members and audit (SPEC §18) over HTTP: thin routes over :mod:`app.projects`."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response
from pydantic import BaseModel, ConfigDict

from app.api.deps import MAX_ID, Id, core_of, current_user
from app.core.context import Core
from app.core.models import User
from app.core.wake import DatabaseWaker
from app.projects import audit, members, settings
from app.projects.agent_test import test_agent

router = APIRouter(prefix="/api/projects")
CoreDep = Annotated[Core, Depends(core_of)]
UserDep = Annotated[User, Depends(current_user)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SettingsPatch(Strict):
    agent: Any = None
    network: Any = None
    budget: Any = None


class MemberIn(Strict):
    email: Any = None
    role: Any = "member"


class RoleIn(Strict):
    role: Any = None


@router.get("/{pid}/settings")
def get_settings(pid: Id, core: CoreDep, user: UserDep) -> dict[str, Any]:
    return settings.view(core.db, core.clock, core.settings, user, pid)


@router.patch("/{pid}/settings")
def patch_settings(pid: Id, body: SettingsPatch, core: CoreDep, user: UserDep) -> dict[str, Any]:
    return settings.change(core.db, core.clock, core.settings, DatabaseWaker(core.db), user, pid,
                           body.model_dump(exclude_unset=True))


@router.post("/{pid}/settings/test", status_code=202)
def post_agent_test(pid: Id, core: CoreDep, user: UserDep) -> dict[str, Any]:
    return test_agent(core, user, pid).as_json()


@router.get("/{pid}/audit")
def get_audit(pid: Id, core: CoreDep, user: UserDep,
              before: Annotated[int | None, Query(ge=1, le=MAX_ID)] = None) -> dict[str, Any]:
    return {"records": audit.read(core.db, core.clock, user, pid, before)}


@router.get("/{pid}/members")
def get_members(pid: Id, core: CoreDep, user: UserDep) -> list[dict[str, Any]]:
    """SPEC §18: a bare list, owners first."""
    return [m.as_json() for m in members.list_members(core.db, user, pid)]


@router.post("/{pid}/members", status_code=201)
def post_member(pid: Id, body: MemberIn, core: CoreDep, user: UserDep) -> dict[str, Any]:
    return members.invite(core.db, core.clock, user, pid, body.email, body.role).as_json()


@router.patch("/{pid}/members/{uid}")
def patch_member(pid: Id, uid: Id, body: RoleIn, core: CoreDep, user: UserDep) -> dict[str, Any]:
    return members.set_role(core.db, core.clock, user, pid, uid, body.role).as_json()


@router.delete("/{pid}/members/{uid}", status_code=204)
def delete_member(pid: Id, uid: Id, core: CoreDep, user: UserDep) -> Response:
    members.remove(core.db, core.clock, user, pid, uid)
    return Response(status_code=204)
