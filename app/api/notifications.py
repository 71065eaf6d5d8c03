"""User API for notification channels (SPEC §13): a user's webhooks and email addresses."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response
from pydantic import BaseModel, ConfigDict

from app.api.deps import MAX_ID, Digits, Id, core_of, current_user
from app.attention.notify import channels
from app.core.context import Core
from app.core.models import User

router = APIRouter(prefix="/api/notification-channels")
CoreDep = Annotated[Core, Depends(core_of)]
UserDep = Annotated[User, Depends(current_user)]


class ChannelIn(BaseModel):
    # Values are checked by app.attention.notify.channels (400 naming the field, never a 500 or a 422)
    model_config = ConfigDict(extra="allow")

    kind: Any = None


@router.get("")
def list_channels(core: CoreDep, user: UserDep) -> dict[str, Any]:
    return {"channels": [channels.channel_view(c) for c in channels.list_channels(core.db, user)]}


@router.post("", status_code=201)
def create_channel(body: ChannelIn, core: CoreDep, user: UserDep) -> dict[str, Any]:
    channel = channels.create(core.db, core.clock, core.settings, user, body.model_dump(exclude_unset=True))
    return channels.channel_view(channel, with_secret=True)


@router.delete("/{channel_id}", status_code=204)
def delete_channel(channel_id: Id, core: CoreDep, user: UserDep) -> Response:
    channels.delete(core.db, core.clock, user, channel_id)
    return Response(status_code=204)


@router.post("/{channel_id}/test", status_code=202)
def test_channel(channel_id: Id, core: CoreDep, user: UserDep) -> dict[str, Any]:
    return {"delivery_id": channels.send_test(core.db, core.clock, user, channel_id), "state": "pending"}


@router.get("/{channel_id}/deliveries")
def channel_deliveries(channel_id: Id, core: CoreDep, user: UserDep,
                       before: Annotated[int | None, Digits, Query(ge=1, le=MAX_ID)] = None,
                       limit: Annotated[int, Digits, Query(ge=1, le=channels.LOG_MAX)] = channels.LOG_LIMIT,
                       ) -> dict[str, Any]:
    """The channel's delivery log, newest first, with ``id < before``; ``next_before`` pages on
    (null: no delivery is left)."""
    rows = channels.deliveries(core.db, user, channel_id, limit + 1, before)
    page = rows[:limit]
    return {"deliveries": [channels.delivery_view(d) for d in page],
            "next_before": page[-1].id if len(rows) > limit else None}
