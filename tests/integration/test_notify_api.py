"""The notification API (SPEC §13) and the per-task ``notify`` setting, in-process over HTTP, on
SQLite and PostgreSQL: each user only sees and uses their own channels; bad input is a 400 naming
the field (or a 404 for an id), never a 500, and changes nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.attention.notify import outbox
from app.core import auth, chats, projects
from app.core.context import Core
from app.core.grants import Scope
from tests.conftest import database_core, with_settings
from tests.integration.apiclient import add_user, bearer, client_for, table_contents
from tests.store import issue_grant

EVERY_5_MIN = {"kind": "interval", "every_seconds": 300}
HOOK = "https://hooks.example.com/chatcron"


@dataclasses.dataclass
class World:
    core: Core
    client: TestClient
    alice: dict[str, str]
    bob: dict[str, str]
    chat: int
    project: int
    alice_id: int


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with database_core(request, tmp_path_factory, "notify-api") as core:
        alice, bob = add_user(core, "alice@example.com"), add_user(core, "bob@example.com")
        project = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, "Ops", alice)
        chat = chats.create_chat(core.db, core.clock, alice, project.id, "Watch")
        yield World(core, client_for(core, raise_server_exceptions=False),
                    bearer(auth.create_api_token(core.db, core.clock, alice.id)),
                    bearer(auth.create_api_token(core.db, core.clock, bob.id)), chat.id, project.id, alice.id)


def post(w: World, body: Any, who: str = "alice") -> Any:
    return w.client.post("/api/notification-channels", json=body, headers=getattr(w, who))


def test_a_webhook_shows_its_secret_once(world: World) -> None:
    created = post(world, {"kind": "webhook", "url": HOOK, "events": ["fire.failed", "task.error"]})
    assert created.status_code == 201, created.text
    channel = created.json()
    assert len(channel["secret"]) == 64 and channel["url"] == HOOK
    assert channel["events"] == ["fire.failed", "task.error"] and channel["kind"] == "webhook"
    listed = world.client.get("/api/notification-channels", headers=world.alice).json()["channels"]
    mine = [c for c in listed if c["id"] == channel["id"]]
    assert mine and "secret" not in mine[0]
    others = world.client.get("/api/notification-channels", headers=world.bob).json()["channels"]
    assert channel["id"] not in [c["id"] for c in others]


def test_test_deliveries_are_queued_and_logged_newest_first(world: World) -> None:
    cid = post(world, {"kind": "webhook", "url": HOOK}).json()["id"]
    first = world.client.post(f"/api/notification-channels/{cid}/test", headers=world.alice)
    second = world.client.post(f"/api/notification-channels/{cid}/test", headers=world.alice)
    assert (first.status_code, second.status_code) == (202, 202)
    log = world.client.get(f"/api/notification-channels/{cid}/deliveries", headers=world.alice).json()["deliveries"]
    assert [d["id"] for d in log] == [second.json()["delivery_id"], first.json()["delivery_id"]]
    assert {(d["kind"], d["state"], d["attempts"]) for d in log} == {("test", "pending", 0)}
    assert set(log[0]) >= {"kind", "state", "attempts", "last_status", "last_error", "created_at", "delivered_at"}


def test_a_deleted_channel_is_gone_for_its_owner(world: World) -> None:
    cid = post(world, {"kind": "webhook", "url": HOOK}).json()["id"]
    assert world.client.delete(f"/api/notification-channels/{cid}", headers=world.alice).status_code == 204
    assert world.client.delete(f"/api/notification-channels/{cid}", headers=world.alice).status_code == 404
    listed = world.client.get("/api/notification-channels", headers=world.alice).json()["channels"]
    assert cid not in [c["id"] for c in listed]


@pytest.mark.parametrize(("body", "field"), [
    ({"kind": "webhook", "url": "ftp://example.com/x"}, "url"),
    ({"kind": "webhook", "url": "file:///etc/passwd"}, "url"),
    ({"kind": "webhook", "url": "javascript:alert(1)"}, "url"),
    ({"kind": "webhook", "url": "http://"}, "url"),
    ({"kind": "webhook", "url": "http://example.com:99999/"}, "url"),
    ({"kind": "webhook", "url": "https://example.com/" + "a" * 3000}, "url"),
    ({"kind": "webhook"}, "url"),
    ({"kind": "webhook", "url": 5}, "url"),
    ({"kind": "webhook", "url": HOOK, "events": ["fire.exploded"]}, "events"),
    ({"kind": "webhook", "url": HOOK, "events": "fire.failed"}, "events"),
    ({"kind": "webhook", "url": HOOK, "events": [1]}, "events"),
    ({"kind": "webhook", "url": HOOK, "address": "a@example.com"}, "address"),
    ({"kind": "webhook", "url": HOOK, "secret": "mine"}, "secret"),
    ({"kind": "pager", "url": HOOK}, "kind"),
    ({"url": HOOK}, "kind"),
    ({"kind": ["webhook"]}, "kind"),
    ({"kind": "email", "address": "alice@example.com"}, "kind"),  # no SMTP configured on this server
    ({"kind": "email", "address": "not-an-address"}, "address"),
    ({"kind": "email"}, "address"),
    ([], "body"),
    ("webhook", "body"),
], ids=["ftp", "file", "javascript", "no-host", "bad-port", "too-long", "missing-url", "url-number",
        "unknown-event", "events-string", "events-number", "address-on-webhook", "secret-given", "unknown-kind",
        "no-kind", "kind-list", "email-unconfigured", "bad-address", "missing-address", "body-list", "body-string"])
def test_bad_input_is_a_400_naming_the_field_and_changes_nothing(world: World, body: Any, field: str) -> None:
    before = table_contents(world.core)
    answer = post(world, body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["message"].startswith(f"{field}:"), answer.text
    assert table_contents(world.core) == before


def test_email_without_smtp_says_so(world: World) -> None:
    message = post(world, {"kind": "email", "address": "alice@example.com"}).json()["error"]["message"]
    assert "email is not configured" in message and "CHATCRON_SMTP_URL" in message


def test_an_email_channel_when_smtp_is_configured(world: World) -> None:
    configured = dataclasses.replace(world.core, settings=with_settings(world.core.settings,
                                                                         smtp_url="smtp://127.0.0.1:2525"))
    client = client_for(configured, raise_server_exceptions=False)
    answer = client.post("/api/notification-channels", json={"kind": "email", "address": "alice@example.com"},
                         headers=world.alice)
    assert answer.status_code == 201, answer.text
    assert answer.json()["address"] == "alice@example.com" and "secret" not in answer.json()


@pytest.mark.parametrize("path", ["", "/test", "/deliveries"])
def test_someone_elses_channel_is_not_found(world: World, path: str) -> None:
    cid = post(world, {"kind": "webhook", "url": HOOK}).json()["id"]
    method = {"": "delete", "/test": "post", "/deliveries": "get"}[path]
    before = table_contents(world.core)
    for target in (f"/api/notification-channels/{cid}{path}", f"/api/notification-channels/987654{path}",
                   f"/api/notification-channels/abc{path}", f"/api/notification-channels/99999999999{path}"):
        answer = getattr(world.client, method)(target, headers=world.bob)
        assert answer.status_code == 404, (target, answer.text)
    assert table_contents(world.core) == before


def test_no_token_is_a_401(world: World) -> None:
    assert world.client.get("/api/notification-channels").status_code == 401
    assert world.client.post("/api/notification-channels", json={"kind": "webhook", "url": HOOK}).status_code == 401


def test_a_task_notify_setting_is_taken_shown_and_changed(world: World) -> None:
    base = {"name": "Nightly", "prompt": "Check.", "schedule": EVERY_5_MIN}
    default = world.client.post(f"/api/chats/{world.chat}/schedules", json=base, headers=world.alice)
    assert default.status_code == 201 and default.json()["notify"] == "failures"
    always = world.client.post(f"/api/chats/{world.chat}/schedules", json={**base, "notify": "always"},
                               headers=world.alice).json()
    assert always["notify"] == "always"
    patched = world.client.patch(f"/api/schedules/{always['id']}", json={"notify": "never"}, headers=world.alice)
    assert patched.status_code == 200 and patched.json()["notify"] == "never"
    renamed = world.client.patch(f"/api/schedules/{always['id']}", json={"name": "Nightly 2"}, headers=world.alice)
    assert renamed.json()["notify"] == "never"  # a PATCH without it keeps it
    for bad in ("sometimes", None, 1, ["always"]):
        before = table_contents(world.core)
        for answer in (world.client.post(f"/api/chats/{world.chat}/schedules", json={**base, "notify": bad},
                                         headers=world.alice),
                       world.client.patch(f"/api/schedules/{always['id']}", json={"notify": bad},
                                          headers=world.alice)):
            assert answer.status_code == 400, answer.text
            assert answer.json()["error"]["message"].startswith("notify:"), answer.text
        assert table_contents(world.core) == before


def test_test_delivery_rows_are_real_outbox_rows(world: World) -> None:
    cid = post(world, {"kind": "webhook", "url": HOOK}).json()["id"]
    world.client.post(f"/api/notification-channels/{cid}/test", headers=world.alice)
    jobs = outbox.claim_due(world.core.db, world.core.clock.now(), "api-test", 0.0, 1000)
    assert cid in {j.channel_id for j in jobs}


def test_an_agent_may_set_notify_on_its_draft_but_never_change_it(world: World) -> None:
    token, _ = issue_grant(world.core.db, world.core.clock, 3600, Scope.MANAGE, world.alice_id, world.chat,
                           world.project)
    agent = bearer(token)
    body = {"name": "Agent's", "prompt": "Check.", "schedule": EVERY_5_MIN, "notify": "always"}
    draft = world.client.post("/agent-api/schedules", json=body, headers=agent)
    assert draft.status_code == 201 and draft.json()["notify"] == "always" and draft.json()["status"] == "draft"
    bad = world.client.post("/agent-api/schedules", json={**body, "notify": "loud"}, headers=agent)
    assert bad.status_code == 400 and bad.json()["error"]["message"].startswith("notify:")
    before = table_contents(world.core)
    patched = world.client.patch(f"/agent-api/schedules/{draft.json()['id']}", json={"notify": "never"}, headers=agent)
    assert patched.status_code == 403 and table_contents(world.core) == before
