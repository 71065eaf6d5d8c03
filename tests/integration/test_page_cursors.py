"""Every paged list hands out a cursor while rows remain, at every limit up to (and, where the
caller is not the API, above) the maximum; on SQLite and PostgreSQL.

Each list is seeded with more rows than its largest page and walked to the end: every row comes
exactly once, in order, and only the last page says there is no more. The API refuses a
``limit`` over the maximum with a 400 naming ``limit`` and the maximum (docs/RELIABILITY.md).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.attention import approvals as approval_service
from app.attention import inbox
from app.attention.notify import channels
from app.core import auth, chats, projects, runs
from app.core.attention_tables import Approval, AttentionEvent, AttentionKind, Delivery, NotificationChannel
from app.core.clock import FakeClock
from app.core.context import Core
from app.core.models import Event, User
from app.schedules import overview
from app.schedules.model import ScheduledTask
from app.schedules.service import Actor, TaskService
from tests.integration.apiclient import add_user, bearer, client_for


@dataclasses.dataclass
class Place:
    core: Core
    client: TestClient
    user: User
    token: str
    project_id: int
    chat_ids: list[int]

    def get(self, path: str) -> Any:
        response = self.client.get(path, headers=bearer(self.token))
        assert response.status_code == 200, response.text
        return response.json()


def _insert(core: Core, table: sa.Table, rows: list[dict[str, Any]]) -> list[int]:
    with core.db.write() as s:
        s.connection().execute(sa.insert(table), rows)
    with core.db.read() as s:
        return sorted(s.connection().execute(sa.select(table.c.id)).scalars())


@pytest.fixture
def place(clocked_core: Core, fake_clock: FakeClock) -> Iterator[Place]:
    core = clocked_core
    user = add_user(core, "pager@example.com")
    project = projects.create_project(core.db, fake_clock, core.settings.workspaces_dir, "Many", user)
    chat_ids = [chats.create_chat(core.db, fake_clock, user, project.id, f"Chat {i}").id for i in range(3)]
    with client_for(core) as client:
        yield Place(core, client, user, auth.create_api_token(core.db, fake_clock, user.id), project.id, chat_ids)


def seed_tasks(p: Place, n: int) -> list[int]:
    """``n`` tasks spread over the place's chats: one made by the service, the rest cloned from it."""
    service = TaskService(p.core.db, p.core.clock, p.core.settings)
    template, _ = service.create(Actor(p.user), p.chat_ids[0], {
        "name": "t", "prompt": "Report.", "schedule": {"kind": "interval", "every_seconds": 3600}})
    fields = template.model_dump(exclude={"id", "chat_id", "name"})
    rows = [{**fields, "chat_id": p.chat_ids[i % len(p.chat_ids)], "name": f"t{i}"} for i in range(1, n)]
    return _insert(p.core, ScheduledTask.__table__, rows)


def walk(p: Place, path: str, key: str, cursor: str, param: str) -> tuple[list[int], list[int]]:
    """Every id a cursor walk of ``path`` yields, and the size of each page."""
    seen: list[int] = []
    sizes: list[int] = []
    position: int | None = None
    while True:
        sep = "&" if "?" in path else "?"
        page = p.get(path + (f"{sep}{param}={position}" if position is not None else ""))
        seen += [row["id"] for row in page[key]]
        sizes.append(len(page[key]))
        position = page[cursor]
        if position is None:
            return seen, sizes
        assert len(sizes) < 100, "the cursor never ends"


# -- GET /api/schedules (the case) -------------------------------------------------------


def test_all_schedules_walked_at_the_maximum_limit_yields_every_task_once(place: Place) -> None:
    ids = seed_tasks(place, overview.MAX_PAGE * 2 + 50)
    seen, sizes = walk(place, f"/api/schedules?limit={overview.MAX_PAGE}", "schedules", "next_after", "after")
    assert sorted(seen) == ids and len(seen) == len(set(seen))
    assert sizes == [overview.MAX_PAGE, overview.MAX_PAGE, 50]


def test_all_schedules_over_the_maximum_is_400_naming_limit_and_the_maximum(place: Place) -> None:
    response = place.client.get(f"/api/schedules?limit={overview.MAX_PAGE + 1}", headers=bearer(place.token))
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    assert message.startswith("limit:") and str(overview.MAX_PAGE) in message


@pytest.mark.parametrize("limit", [overview.MAX_PAGE, overview.MAX_PAGE + 1, 10**9], ids=["max", "max+1", "huge"])
def test_the_service_clamps_a_limit_and_still_pages_to_the_end(place: Place, limit: int) -> None:
    """The drawer-wide page (app/ui/all_tasks.py) and any other caller get the same cursor."""
    ids = seed_tasks(place, overview.MAX_PAGE + 7)
    seen: list[int] = []
    after = None
    pages = []
    while True:
        page = overview.visible_tasks(place.core.db, place.user, limit=limit, after=after)
        seen += [row.task.id for row in page.rows]
        pages.append(len(page.rows))
        if page.next_after is None:
            break
        after = page.next_after
    assert sorted(seen) == ids and len(seen) == len(set(seen))
    assert pages == [overview.MAX_PAGE, 7]


# -- the other paged lists -----------------------------------------------------------------------


def test_approvals_page_to_the_end_at_the_maximum_limit(place: Place) -> None:
    now = place.core.clock.now()
    ids = _insert(place.core, Approval.__table__, [
        {"project_id": place.project_id, "chat_id": place.chat_ids[i % 3], "run_id": 1, "requested_for":
         place.user.email, "title": f"a{i}", "state": "pending", "created_at": now, "expires_at": now}
        for i in range(approval_service.MAX_PAGE + 20)])
    for limit in (approval_service.MAX_PAGE, 7):
        seen, sizes = walk(place, f"/api/approvals?limit={limit}", "approvals", "next_before", "before")
        assert seen == sorted(ids, reverse=True), limit  # newest first, each once
        assert sizes[-1] <= limit and sizes[:-1] == [limit] * (len(sizes) - 1)
    assert len(place.get("/api/approvals")["approvals"]) == approval_service.DEFAULT_PAGE


def test_a_channels_deliveries_page_to_the_end_at_the_maximum_limit(place: Place) -> None:
    now = place.core.clock.now()
    [channel_id] = _insert(place.core, NotificationChannel.__table__, [
        {"user_id": place.user.id, "kind": "webhook", "target": "https://example.com/hook", "created_at": now}])
    ids = _insert(place.core, Delivery.__table__, [
        {"event_id": None, "channel_id": channel_id, "kind": "test", "body": "{}", "state": "delivered",
         "next_attempt_at": now, "created_at": now} for _ in range(channels.LOG_MAX + 3)])
    path = f"/api/notification-channels/{channel_id}/deliveries"
    for limit in (channels.LOG_MAX, 50):
        seen, _ = walk(place, f"{path}?limit={limit}", "deliveries", "next_before", "before")
        assert seen == sorted(ids, reverse=True), limit


def test_the_inbox_feed_pages_to_the_end_at_the_maximum_limit(place: Place) -> None:
    now = place.core.clock.now()
    ids = _insert(place.core, AttentionEvent.__table__, [
        {"kind": AttentionKind.FIRE_FINISHED.value, "user_email": place.user.email, "project_id": place.project_id,
         "chat_id": place.chat_ids[0], "payload": json.dumps({}), "created_at": now, "fanned_out_at": now}
        for _ in range(inbox.MAX_LIMIT * 2 + 1)])
    seen, sizes = walk(place, f"/api/inbox?limit={inbox.MAX_LIMIT}", "items", "next_before", "before")
    assert seen == sorted(ids, reverse=True)
    assert sizes == [inbox.MAX_LIMIT, inbox.MAX_LIMIT, 1]


def test_a_transcript_pages_to_the_end_at_the_maximum_limit(place: Place) -> None:
    now = place.core.clock.now()
    ids = _insert(place.core, Event.__table__, [
        {"chat_id": place.chat_ids[1], "type": "status", "text": f"e{i}", "created_at": now}
        for i in range(runs.MAX_PAGE + 5)])
    seen: list[int] = []
    after = 0
    while True:
        page = place.get(f"/api/chats/{place.chat_ids[1]}/events?after={after}&limit={runs.MAX_PAGE}")
        if not page["events"]:
            assert page["next_after"] == after  # the cursor stays put at the end: poll it for more
            break
        seen += [e["id"] for e in page["events"]]
        after = page["next_after"]
    assert seen == ids
