"""User API for approvals (SPEC §13): list them, answer one with one of the agent's options."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, StrictStr

from app.api.deps import Id, core_of, current_user
from app.attention import approvals
from app.core.context import Core
from app.core.models import User

router = APIRouter(prefix="/api")
CoreDep = Annotated[Core, Depends(core_of)]
UserDep = Annotated[User, Depends(current_user)]


class AnswerIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    option_id: StrictStr


@router.get("/approvals")
def list_approvals(core: CoreDep, user: UserDep, state: Annotated[str | None, Query()] = None) -> dict[str, Any]:
    """Approvals in the chats the caller can see, newest first; ``state`` filters (400 when unknown)."""
    return {"approvals": [approvals.view(a) for a in approvals.list_for(core.db, user, state)]}


@router.post("/approvals/{aid}")
def answer_approval(aid: Id, body: AnswerIn, core: CoreDep, user: UserDep) -> dict[str, Any]:
    """The caller picks an option: 404 when they cannot see the chat, 400 when the option is not
    the agent's, 409 when it was already decided (the message says by whom) or has expired."""
    row = approvals.answer(core.db, core.clock.now(), user, aid, body.option_id)
    return approvals.view(row)
