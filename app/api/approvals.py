"""User API for approvals (SPEC §13): list them, answer one with one of the agent's options."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, StrictStr

from app.api.deps import MAX_ID, Digits, Id, core_of, current_user
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
def list_approvals(core: CoreDep, user: UserDep, state: Annotated[str | None, Query()] = None,
                   before: Annotated[int | None, Digits, Query(ge=1, le=MAX_ID)] = None,
                   limit: Annotated[int, Digits, Query(ge=1, le=approvals.MAX_PAGE)] = approvals.DEFAULT_PAGE,
                   ) -> dict[str, Any]:
    """Approvals in the chats the caller can see, newest first, with ``id < before``; ``state``
    filters (400 when unknown); ``next_before`` pages on (null: no approval is left)."""
    rows = approvals.list_for(core.db, user, state, limit + 1, before)
    page = rows[:limit]
    return {"approvals": [approvals.view(a) for a in page], "next_before": page[-1].id if len(rows) > limit else None}


@router.post("/approvals/{aid}")
def answer_approval(aid: Id, body: AnswerIn, core: CoreDep, user: UserDep) -> dict[str, Any]:
    """The caller picks an option: 404 when they cannot see the chat, 400 when the option is not
    the agent's, 409 when it was already decided (the message says by whom) or has expired."""
    row = approvals.answer(core.db, core.clock.now(), user, aid, body.option_id)
    return approvals.view(row)
