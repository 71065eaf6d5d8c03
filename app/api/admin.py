"""The server admin's API (SPEC §18): people, installed agents, the instance's health."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel, ConfigDict

from app.api.deps import Id, core_of, current_user
from app.api.user import health_report
from app.core.context import Core
from app.core.models import User
from app.projects import admin
from app.projects.settings import installed_presets

router = APIRouter(prefix="/api/admin")
CoreDep = Annotated[Core, Depends(core_of)]
UserDep = Annotated[User, Depends(current_user)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PersonIn(Strict):
    email: Any = None
    password: Any = None
    admin: Any = False


class PasswordIn(Strict):
    password: Any = None


@router.get("/users")
def get_users(core: CoreDep, user: UserDep) -> dict[str, Any]:
    return {"users": [p.as_json() for p in admin.people(core, user)]}


@router.post("/users", status_code=201)
def post_user(body: PersonIn, core: CoreDep, user: UserDep) -> dict[str, Any]:
    return admin.create_person(core, user, body.email, body.password, body.admin).as_json()


@router.post("/users/{uid}/password")
def post_password(uid: Id, body: PasswordIn, core: CoreDep, user: UserDep) -> dict[str, Any]:
    return {"message": admin.reset_password(core, user, uid, body.password)}


@router.post("/users/{uid}/revoke-tokens")
def post_revoke_tokens(uid: Id, core: CoreDep, user: UserDep) -> dict[str, Any]:
    return {"message": admin.revoke_tokens(core, user, uid)}


@router.post("/users/{uid}/end-sessions")
def post_end_sessions(uid: Id, core: CoreDep, user: UserDep) -> dict[str, Any]:
    return {"message": admin.end_sessions(core, user, uid)}


@router.delete("/users/{uid}")
def delete_user(uid: Id, core: CoreDep, user: UserDep) -> Response:
    admin.delete_person(core, user, uid)
    return Response(status_code=204)


@router.get("/agents")
def get_agents(core: CoreDep, user: UserDep) -> dict[str, Any]:
    admin.require_admin(user)
    return {"agents": installed_presets(core.settings), "health": health_report(core, lambda: True)}
