"""User API for the inbox (SPEC §13): ``GET /api/inbox``, ``POST /api/inbox/read``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field, StrictInt

from app.api.deps import MAX_ID, Digits, core_of, current_user
from app.attention import inbox, reads
from app.core.context import Core
from app.core.errors import InvalidInput
from app.core.models import User

router = APIRouter(prefix="/api")
CoreDep = Annotated[Core, Depends(core_of)]
UserDep = Annotated[User, Depends(current_user)]


class ReadIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    before: Annotated[StrictInt, Field(ge=1, le=MAX_ID)] | None = None


@router.get("/inbox")
def get_inbox(core: CoreDep, user: UserDep,
              before: Annotated[int | None, Digits, Query(ge=1, le=MAX_ID)] = None,
              limit: Annotated[int, Digits, Query(ge=1, le=inbox.MAX_LIMIT)] = inbox.DEFAULT_LIMIT,
              ) -> dict[str, Any]:
    """The user's inbox; ``items`` newest first with ``id < before``; ``next_before`` pages on (null: the end)."""
    return inbox.inbox(core.db, user, inbox.Page(before, limit), core.clock.now())


@router.post("/inbox/read")
def mark_read(core: CoreDep, user: UserDep, body: ReadIn | None = None) -> dict[str, Any]:
    """Attention events with ``id <= before`` are read for this user; the mark never moves back."""
    if body is None or body.before is None:
        raise InvalidInput("before", "is required (the newest attention event id to mark read)")
    mark = reads.mark_inbox_read(core.db, core.clock.now(), user, body.before)
    return {"read_before": mark, "unread": reads.inbox_unread(core.db, user, mark)}
