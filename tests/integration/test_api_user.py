"""The user API (SPEC §5) in-process over HTTP, on SQLite and PostgreSQL: endpoints and error model."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.agents.providers.demo import reply_for
from app.core import auth, chats, projects, runs
from app.core.context import Core
from app.core.models import ApiToken, RunSource, RunStatus, User
from tests import store
from tests.conftest import database_core, make_core, with_settings
from tests.integration.apiclient import add_user, bearer, client_for, row_counts, table_contents

MISSING = 987654  # an id no test creates


@dataclasses.dataclass
class World:
    """Alice owns a project with a chat, a loose chat and a finished run; Bob has his own project."""

    core: Core
    client: TestClient
    alice: User
    bob: User
    admin: User
    tokens: dict[str, str]
    project: int
    chat: int
    loose: int
    run: int
    bob_project: int

    def h(self, who: str) -> dict[str, str]:
        return bearer(self.tokens[who])

    def ids(self) -> dict[str, int]:
        return {"project": self.project, "chat": self.chat, "loose": self.loose, "run": self.run}


def build_world(core: Core, client: TestClient) -> World:
    db, clock = core.db, core.clock
    alice, bob = add_user(core, "alice@example.com"), add_user(core, "bob@example.com")
    admin = add_user(core, "root@example.com", is_admin=True)
    project = projects.create_project(db, clock, core.settings.workspaces_dir, "Alice's", alice)
    bob_project = projects.create_project(db, clock, core.settings.workspaces_dir, "Bob's", bob)
    chat = chats.create_chat(db, clock, alice, project.id, "Plans")
    loose = chats.create_chat(db, clock, alice, None, "Loose")
    run = store.begin_run(db, clock, chat.id, "earlier", source=RunSource.USER, lease_seconds=5, instance="test")
    runs.append_output(db, clock, run, "done")
    store.finish_run(db, clock, run, RunStatus.SUCCEEDED)
    tokens = {who: auth.create_api_token(db, clock, u.id) for who, u in
              (("alice", alice), ("bob", bob), ("admin", admin), ("revoked", alice))}
    with db.write() as s:
        s.exec(sa.update(ApiToken).where(ApiToken.token_hash == auth.digest(tokens["revoked"]))
               .values(revoked_at=clock.now()))
    return World(core, client, alice, bob, admin, tokens, project.id, chat.id, loose.id, run.id, bob_project.id)


@pytest.fixture
def world(core: Core) -> Iterator[World]:
    """A fresh world for a test that changes things."""
    with client_for(core) as client:
        yield build_world(core, client)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def shared(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """One world per database for the many tests that must change nothing (they check that they don't)."""
    with database_core(request, tmp_path_factory, "shared") as core, client_for(core) as client:
        yield build_world(core, client)


def error_of(response: Any) -> dict[str, str]:
    """The error object, after checking the body has exactly the documented shape."""
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    assert all(isinstance(v, str) and v for v in body["error"].values()), body
    return body["error"]


def wait_until_written(w: World, run_id: int, text: str, timeout: float = 15.0) -> None:
    """Poll the run (over HTTP) until its stored output contains ``text``."""
    deadline = time.monotonic() + timeout
    while text not in w.client.get(f"/api/runs/{run_id}", headers=w.h("alice")).json()["output"]:
        assert time.monotonic() < deadline, f"run {run_id} never wrote {text!r}"
        time.sleep(0.02)


def wait_for_run(w: World, run_id: int, timeout: float = 15.0) -> dict[str, Any]:
    """Block on the local handle of ``run_id`` (if still running), then read the run over HTTP."""
    for handle in w.core.prompts.running():
        if handle.run_id == run_id:
            assert handle.wait(timeout) is not None, f"run {run_id} did not finish in {timeout} s"
    # a handle leaves running() only after its final status is committed
    response = w.client.get(f"/api/runs/{run_id}", headers=w.h("alice"))
    assert response.status_code == 200
    assert response.json()["status"] != RunStatus.RUNNING.value
    return response.json()


# -- endpoints ---------------------------------------------------------------------------------


def test_health_needs_no_token_and_reports_the_store(shared: World) -> None:
    response = shared.client.get("/api/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok" and body["db"] == "ok"
    assert isinstance(body["scheduler"]["alive"], bool) and "last_beat" in body["scheduler"]


def test_openapi_is_served_and_lists_the_user_api(shared: World) -> None:
    response = shared.client.get("/openapi.json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    assert {"/api/health", "/api/projects", "/api/projects/{pid}/chats", "/api/chats/{cid}",
            "/api/chats/{cid}/events", "/api/chats/{cid}/prompts", "/api/runs/{rid}"} <= set(paths)
    assert set(paths["/api/projects"]) == {"get", "post"}
    assert set(paths["/api/chats/{cid}"]) == {"get", "patch"}


def test_projects_list_and_create(world: World) -> None:
    listed = world.client.get("/api/projects", headers=world.h("alice"))
    assert listed.status_code == 200
    assert [p["id"] for p in listed.json()["projects"]] == [world.project]

    created = world.client.post("/api/projects", json={"name": "  Second  "}, headers=world.h("alice"))
    assert created.status_code == 201
    project = created.json()
    assert project["name"] == "Second" and project["created_at"].endswith("Z")
    assert (world.core.settings.workspaces_dir / str(project["id"])).is_dir()
    listed = world.client.get("/api/projects", headers=world.h("alice")).json()["projects"]
    assert [p["id"] for p in listed] == [world.project, project["id"]]
    # the creator became a member: they can use it, Bob cannot
    assert world.client.get(f"/api/projects/{project['id']}/chats", headers=world.h("alice")).status_code == 200
    bobs = world.client.get("/api/projects", headers=world.h("bob")).json()["projects"]
    assert [p["id"] for p in bobs] == [world.bob_project]


def test_chats_list_and_create(world: World) -> None:
    path = f"/api/projects/{world.project}/chats"
    default = world.client.post(path, json={}, headers=world.h("alice"))
    named = world.client.post(path, json={"title": "Ideas"}, headers=world.h("alice"))
    assert (default.status_code, named.status_code) == (201, 201)
    assert default.json()["title"] == "New chat" and named.json()["title"] == "Ideas"
    assert named.json()["project_id"] == world.project and named.json()["skills"] == []
    listed = world.client.get(path, headers=world.h("alice"))
    assert listed.status_code == 200
    ids = [c["id"] for c in listed.json()["chats"]]
    assert ids == [world.chat, default.json()["id"], named.json()["id"]]  # the loose chat is in no project


def test_chat_get_and_patch(world: World) -> None:
    path = f"/api/chats/{world.chat}"
    got = world.client.get(path, headers=world.h("alice"))
    assert got.status_code == 200
    assert got.json() | {"created_at": None, "updated_at": None} == {
        "id": world.chat, "project_id": world.project, "title": "Plans", "skills": [], "busy": False, "unread": 1,
        "created_at": None, "updated_at": None}

    patched = world.client.patch(path, json={"title": " Renamed ", "skills": ["scheduled-tasks", "scheduled-tasks"]},
                                 headers=world.h("alice"))
    assert patched.status_code == 200
    assert (patched.json()["title"], patched.json()["skills"]) == ("Renamed", ["scheduled-tasks"])
    again = world.client.get(path, headers=world.h("alice")).json()
    assert (again["title"], again["skills"]) == ("Renamed", ["scheduled-tasks"])

    cleared = world.client.patch(path, json={"skills": []}, headers=world.h("alice")).json()
    assert (cleared["title"], cleared["skills"]) == ("Renamed", [])


def test_loose_chat_is_readable_by_its_owner(world: World) -> None:
    got = world.client.get(f"/api/chats/{world.loose}", headers=world.h("alice"))
    assert got.status_code == 200 and got.json()["project_id"] is None


def test_prompt_is_accepted_and_the_run_succeeds(world: World) -> None:
    response = world.client.post(f"/api/chats/{world.chat}/prompts", json={"text": "  hello there  "},
                                 headers=world.h("alice"))
    assert response.status_code == 202
    assert set(response.json()) == {"run_id"}
    run = wait_for_run(world, response.json()["run_id"])
    assert run["status"] == "succeeded" and run["error"] is None
    assert run["output"] == reply_for("hello there")
    assert run["chat_id"] == world.chat and run["source"] == "user"
    assert run["finished_at"] is not None and run["finished_at"].endswith("Z")
    assert world.client.get(f"/api/chats/{world.chat}", headers=world.h("alice")).json()["busy"] is False


def test_events_page_by_cursor(world: World) -> None:
    rid = world.client.post(f"/api/chats/{world.chat}/prompts", json={"text": "one two three"},
                            headers=world.h("alice")).json()["run_id"]
    wait_for_run(world, rid)
    path = f"/api/chats/{world.chat}/events"
    full = world.client.get(path, params={"limit": 1000}, headers=world.h("alice")).json()
    everything = full["events"]
    ids = [e["id"] for e in everything]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert full["next_after"] == ids[-1]
    this_run = [e for e in everything if e["run_id"] == rid]
    assert [e["type"] for e in this_run[:2]] == ["prompt", "run_started"] and this_run[-1]["type"] == "run_finished"
    assert "".join(e["text"] for e in this_run if e["type"] == "assistant_text") == reply_for("one two three")

    pages, after = [], 0
    for _ in range(len(everything) + 2):  # bounded: one page per two events, plus the empty end
        page = world.client.get(path, params={"after": after, "limit": 2}, headers=world.h("alice")).json()
        if not page["events"]:
            assert page["next_after"] == after
            break
        assert len(page["events"]) <= 2
        pages.append(page["events"])
        after = page["next_after"]
    assert [e for p in pages for e in p] == everything

    tail = world.client.get(path, params={"after": ids[0]}, headers=world.h("alice")).json()["events"]
    assert [e["id"] for e in tail] == ids[1:]


def test_busy_chat_refuses_a_second_prompt_and_changes_nothing(world: World) -> None:
    path = f"/api/chats/{world.chat}/prompts"
    first = world.client.post(path, json={"text": "/sleep 30"}, headers=world.h("alice"))
    assert first.status_code == 202
    try:
        assert world.client.get(f"/api/chats/{world.chat}", headers=world.h("alice")).json()["busy"] is True
        wait_until_written(world, first.json()["run_id"], "Working for 30 seconds")  # then it only sleeps
        before = row_counts(world.core)
        second = world.client.post(path, json={"text": "are you there?"}, headers=world.h("alice"))
        assert second.status_code == 409
        assert error_of(second)["code"] == "prompt_already_running"
        assert row_counts(world.core) == before
    finally:
        world.core.prompts.shutdown(5.0)
    assert wait_for_run(world, first.json()["run_id"])["status"] == "failed"


def test_admin_sees_everything(shared: World) -> None:
    h = shared.h("admin")
    listed = shared.client.get("/api/projects", headers=h).json()["projects"]
    assert {shared.project, shared.bob_project} <= {p["id"] for p in listed}
    for path in (f"/api/projects/{shared.project}/chats", f"/api/chats/{shared.chat}", f"/api/chats/{shared.loose}",
                 f"/api/chats/{shared.chat}/events", f"/api/runs/{shared.run}"):
        assert shared.client.get(path, headers=h).status_code == 200, path


# -- 400: invalid input names the field and changes nothing -----------------------------------

JSON = {"content-type": "application/json"}
BAD_INPUT = [
    # id, method, path, request kwargs, field the message must start with
    ("project-name-not-string", "POST", "/api/projects", {"json": {"name": 5}}, "name"),
    ("project-name-missing", "POST", "/api/projects", {"json": {}}, "name"),
    ("project-name-empty", "POST", "/api/projects", {"json": {"name": "   "}}, "name"),
    ("project-name-too-long", "POST", "/api/projects", {"json": {"name": "x" * 121}}, "name"),
    ("project-unknown-field", "POST", "/api/projects", {"json": {"name": "x", "owner": 1}}, "owner"),
    ("project-invalid-json", "POST", "/api/projects", {"content": b'{"name": ', "headers": JSON}, "body"),
    ("project-body-list", "POST", "/api/projects", {"json": ["x"]}, "body"),
    ("project-body-string", "POST", "/api/projects", {"json": "x"}, "body"),
    ("project-body-null", "POST", "/api/projects", {"content": b"null", "headers": JSON}, "body"),
    ("project-no-body", "POST", "/api/projects", {}, "body"),
    ("project-text-plain", "POST", "/api/projects",
     {"content": b'{"name": "x"}', "headers": {"content-type": "text/plain"}}, "body"),
    ("chat-title-not-string", "POST", "/api/projects/{project}/chats", {"json": {"title": ["x"]}}, "title"),
    ("chat-title-empty", "POST", "/api/projects/{project}/chats", {"json": {"title": ""}}, "title"),
    ("chat-title-too-long", "POST", "/api/projects/{project}/chats", {"json": {"title": "t" * 201}}, "title"),
    ("chat-unknown-field", "POST", "/api/projects/{project}/chats", {"json": {"skills": []}}, "skills"),
    ("patch-title-null", "PATCH", "/api/chats/{chat}", {"json": {"title": None}}, "title"),
    ("patch-title-empty", "PATCH", "/api/chats/{chat}", {"json": {"title": " "}}, "title"),
    ("patch-title-number", "PATCH", "/api/chats/{chat}", {"json": {"title": 3}}, "title"),
    ("patch-skills-null", "PATCH", "/api/chats/{chat}", {"json": {"skills": None}}, "skills"),
    ("patch-skills-string", "PATCH", "/api/chats/{chat}", {"json": {"skills": "scheduled-tasks"}}, "skills"),
    ("patch-skills-number-item", "PATCH", "/api/chats/{chat}", {"json": {"skills": [1]}}, "skills.0"),
    ("patch-skills-unknown", "PATCH", "/api/chats/{chat}", {"json": {"skills": ["web-search"]}}, "skills"),
    ("patch-skill-and-bad-title", "PATCH", "/api/chats/{chat}",
     {"json": {"skills": ["scheduled-tasks"], "title": ""}}, "title"),
    ("patch-skill-on-loose-chat", "PATCH", "/api/chats/{loose}", {"json": {"skills": ["scheduled-tasks"]}}, "skills"),
    ("patch-unknown-field", "PATCH", "/api/chats/{chat}", {"json": {"project_id": 2}}, "project_id"),
    ("patch-body-list", "PATCH", "/api/chats/{chat}", {"json": []}, "body"),
    ("prompt-text-missing", "POST", "/api/chats/{chat}/prompts", {"json": {}}, "text"),
    ("prompt-text-empty", "POST", "/api/chats/{chat}/prompts", {"json": {"text": ""}}, "text"),
    ("prompt-text-blank", "POST", "/api/chats/{chat}/prompts", {"json": {"text": " \n\t "}}, "text"),
    ("prompt-text-number", "POST", "/api/chats/{chat}/prompts", {"json": {"text": 42}}, "text"),
    ("prompt-unknown-field", "POST", "/api/chats/{chat}/prompts", {"json": {"text": "hi", "model": "x"}}, "model"),
    ("prompt-invalid-json", "POST", "/api/chats/{chat}/prompts", {"content": b"{text: hi}", "headers": JSON}, "body"),
    ("prompt-body-number", "POST", "/api/chats/{chat}/prompts", {"json": 7}, "body"),
    ("events-after-negative", "GET", "/api/chats/{chat}/events?after=-1", {}, "after"),
    ("events-after-text", "GET", "/api/chats/{chat}/events?after=last", {}, "after"),
    ("events-limit-zero", "GET", "/api/chats/{chat}/events?limit=0", {}, "limit"),
    ("events-limit-too-big", "GET", "/api/chats/{chat}/events?limit=1001", {}, "limit"),
]


@pytest.mark.parametrize(("method", "path", "kwargs", "field"), [c[1:] for c in BAD_INPUT],
                         ids=[c[0] for c in BAD_INPUT])
def test_invalid_input_is_400_naming_the_field_and_changes_nothing(
        shared: World, method: str, path: str, kwargs: dict[str, Any], field: str) -> None:
    before = table_contents(shared.core)
    workspaces = sorted(shared.core.settings.workspaces_dir.iterdir())
    kwargs = {**kwargs, "headers": {**kwargs.get("headers", {}), **shared.h("alice")}}
    response = shared.client.request(method, path.format(**shared.ids()), **kwargs)
    assert response.status_code == 400, response.text
    error = error_of(response)
    assert error["code"] == "invalid"
    assert error["message"].startswith(f"{field}:"), error["message"]
    assert table_contents(shared.core) == before
    assert sorted(shared.core.settings.workspaces_dir.iterdir()) == workspaces


def test_prompt_limit_counts_utf8_bytes(core: Core, world: World) -> None:
    small = make_core(with_settings(core.settings, prompt_max_bytes=10))
    try:
        with client_for(small) as client:
            path = f"/api/chats/{world.chat}/prompts"
            before = table_contents(small)
            over = client.post(path, json={"text": "é" * 6}, headers=world.h("alice"))  # 12 bytes, 6 chars
            assert over.status_code == 400
            assert error_of(over)["message"].startswith("text:")
            assert table_contents(small) == before
            fits = client.post(path, json={"text": "é" * 5}, headers=world.h("alice"))  # exactly 10 bytes
            assert fits.status_code == 202
            for handle in small.prompts.running():  # gone from running() once its end is committed
                if handle.run_id == fits.json()["run_id"]:
                    assert handle.wait(15) is not None
            assert runs.get_run(small.db, fits.json()["run_id"]).status == RunStatus.SUCCEEDED.value
    finally:
        small.prompts.shutdown(2.0)
        small.db.dispose()


# -- 401: no token, bad token, revoked token ---------------------------------------------------

PROTECTED = [
    ("GET", "/api/projects", None),
    ("POST", "/api/projects", {"name": "x"}),
    ("GET", "/api/projects/{project}/chats", None),
    ("POST", "/api/projects/{project}/chats", {"title": "x"}),
    ("GET", "/api/chats/{chat}", None),
    ("PATCH", "/api/chats/{chat}", {"title": "x"}),
    ("GET", "/api/chats/{chat}/events", None),
    ("POST", "/api/chats/{chat}/prompts", {"text": "hi"}),
    ("GET", "/api/runs/{run}", None),
]
CREDENTIALS = ["none", "empty-bearer", "basic-scheme", "unknown-token", "revoked-token"]


def _authorization(world: World, kind: str) -> dict[str, str]:
    return {
        "none": {},
        "empty-bearer": {"Authorization": "Bearer "},
        "basic-scheme": {"Authorization": "Basic YWxpY2U6cGFzc3dvcmQ="},
        "unknown-token": bearer(world.tokens["alice"] + "x"),
        "revoked-token": world.h("revoked"),
    }[kind]


def test_revoked_token_stops_working(world: World) -> None:
    token = auth.create_api_token(world.core.db, world.core.clock, world.alice.id, "to revoke")
    assert world.client.get("/api/projects", headers=bearer(token)).status_code == 200
    with world.core.db.write() as s:
        s.exec(sa.update(ApiToken).where(ApiToken.token_hash == auth.digest(token))
               .values(revoked_at=world.core.clock.now()))
    response = world.client.get("/api/projects", headers=bearer(token))
    assert response.status_code == 401
    assert error_of(response)["code"] == "unauthorized"


@pytest.mark.parametrize("credentials", CREDENTIALS)
@pytest.mark.parametrize(("method", "path", "body"), PROTECTED, ids=[f"{m} {p}" for m, p, _ in PROTECTED])
def test_without_a_valid_token_the_answer_is_401_and_nothing_changes(
        shared: World, method: str, path: str, body: dict[str, str] | None, credentials: str) -> None:
    headers = _authorization(shared, credentials)
    before = table_contents(shared.core)
    response = shared.client.request(method, path.format(**shared.ids()), json=body, headers=headers)
    assert response.status_code == 401
    assert error_of(response)["code"] == "unauthorized"
    assert response.headers["www-authenticate"] == "Bearer"
    assert table_contents(shared.core) == before


# -- 404: what the caller may not see looks exactly like what does not exist --------------------

HIDDEN = [
    ("list-chats", "GET", "/api/projects/{id}/chats", None, "project"),
    ("create-chat", "POST", "/api/projects/{id}/chats", {"title": "mine"}, "project"),
    ("get-chat", "GET", "/api/chats/{id}", None, "chat"),
    ("get-loose-chat", "GET", "/api/chats/{id}", None, "loose"),
    ("patch-chat", "PATCH", "/api/chats/{id}", {"title": "mine now"}, "chat"),
    ("patch-chat-bad-skill", "PATCH", "/api/chats/{id}", {"skills": ["nope"]}, "chat"),
    ("events", "GET", "/api/chats/{id}/events", None, "chat"),
    ("prompt", "POST", "/api/chats/{id}/prompts", {"text": "hi"}, "chat"),
    ("prompt-empty-text", "POST", "/api/chats/{id}/prompts", {"text": ""}, "chat"),
    ("prompt-on-loose-chat", "POST", "/api/chats/{id}/prompts", {"text": "hi"}, "loose"),
    ("run", "GET", "/api/runs/{id}", None, "run"),
]


@pytest.mark.parametrize(("method", "path", "body", "what"), [c[1:] for c in HIDDEN], ids=[c[0] for c in HIDDEN])
def test_another_users_resource_is_404_like_a_missing_one(
        shared: World, method: str, path: str, body: dict[str, str] | None, what: str) -> None:
    hidden_id = shared.ids()[what]
    before = table_contents(shared.core)
    hidden = shared.client.request(method, path.format(id=hidden_id), json=body, headers=shared.h("bob"))
    missing = shared.client.request(method, path.format(id=MISSING), json=body, headers=shared.h("bob"))
    assert (hidden.status_code, missing.status_code) == (404, 404)
    assert error_of(hidden)["code"] == "not_found"
    assert hidden.json() == json.loads(json.dumps(missing.json()).replace(str(MISSING), str(hidden_id)))
    assert table_contents(shared.core) == before


@pytest.mark.parametrize("path", ["/api/chats/abc", "/api/runs/1.5", "/api/projects/x/chats"],
                         ids=["chat-id-text", "run-id-float", "project-id-text"])
def test_malformed_id_in_the_path_is_404(shared: World, path: str) -> None:
    response = shared.client.get(path, headers=shared.h("alice"))
    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"


OUT_OF_RANGE_IDS = [0, -1, 2**31, 2**63, 10**20]  # ids are 32-bit in both databases


@pytest.fixture
def crash_client(shared: World) -> Iterator[TestClient]:
    """Answers a crash with 500 like a real server, so a test can assert the status a caller would see."""
    with client_for(shared.core, raise_server_exceptions=False) as client:
        yield client


@pytest.mark.parametrize("big", OUT_OF_RANGE_IDS, ids=["0", "-1", "2^31", "2^63", "10^20"])
@pytest.mark.parametrize("path", ["/api/chats/{id}", "/api/runs/{id}", "/api/projects/{id}/chats",
                                  "/api/chats/{id}/events"], ids=["chat", "run", "project-chats", "events"])
def test_out_of_range_id_is_404_not_a_server_error(shared: World, crash_client: TestClient, path: str,
                                                   big: int) -> None:
    response = crash_client.get(path.format(id=big), headers=shared.h("alice"))
    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"


@pytest.mark.parametrize(("after", "status"), [(2**31 - 1, 200), (2**31, 400), (2**63, 400)],
                         ids=["largest-id", "2^31", "2^63"])
def test_events_cursor_beyond_any_id_is_not_a_server_error(shared: World, crash_client: TestClient,
                                                           after: int, status: int) -> None:
    response = crash_client.get(f"/api/chats/{shared.chat}/events", params={"after": after},
                                headers=shared.h("alice"))
    assert response.status_code == status
    if status == 200:
        assert response.json() == {"events": [], "next_after": after}
    else:
        assert error_of(response)["message"].startswith("after:")


# -- 413 and the error body shape of framework errors ------------------------------------------

LIMIT = 2048


def _padded_project(size: int) -> bytes:
    body = json.dumps({"name": "padded"}).encode()
    return body + b" " * (size - len(body))


@pytest.fixture
def small_client(world: World) -> Iterator[TestClient]:
    with client_for(world.core, LIMIT) as client:
        yield client


def test_body_over_the_limit_is_413_by_content_length(shared: World) -> None:
    before = row_counts(shared.core)
    with client_for(shared.core, LIMIT) as client:
        response = client.post("/api/projects", content=_padded_project(LIMIT + 1),
                               headers={**JSON, **shared.h("alice")})
    assert response.status_code == 413
    assert error_of(response) == {"code": "too_large", "message": f"body: larger than {LIMIT} bytes"}
    assert row_counts(shared.core) == before


def test_body_at_the_limit_is_accepted(world: World, small_client: TestClient) -> None:
    response = small_client.post("/api/projects", content=_padded_project(LIMIT),
                                 headers={**JSON, **world.h("alice")})
    assert response.status_code == 201


def _chunks(data: bytes, size: int = 500) -> Iterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i:i + size]


def test_streamed_body_under_the_limit_is_accepted(world: World, small_client: TestClient) -> None:
    response = small_client.post("/api/projects", content=_chunks(_padded_project(LIMIT - 100)),
                                 headers={**JSON, **world.h("alice")})
    assert response.status_code == 201


def test_streamed_body_over_the_limit_is_413(shared: World) -> None:
    before = row_counts(shared.core)
    with client_for(shared.core, LIMIT) as client:
        response = client.post("/api/projects", content=_chunks(_padded_project(LIMIT * 2)),
                               headers={**JSON, **shared.h("alice")})
    assert row_counts(shared.core) == before
    assert response.status_code == 413
    assert error_of(response)["code"] == "too_large"


@pytest.mark.parametrize(("method", "path", "status", "code"), [
    ("GET", "/api/no-such-endpoint", 404, "not_found"),
    ("DELETE", "/api/projects", 405, "method_not_allowed"),
], ids=["unknown-path", "wrong-method"])
def test_framework_errors_use_the_error_body(shared: World, method: str, path: str, status: int, code: str) -> None:
    response = shared.client.request(method, path, headers=shared.h("alice"))
    assert response.status_code == status
    assert error_of(response)["code"] == code
