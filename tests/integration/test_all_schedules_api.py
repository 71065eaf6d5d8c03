"""All schedules (SPEC §13): ``GET /api/schedules`` across chats and ``POST /api/schedules/bulk``,
in-process over HTTP on SQLite and PostgreSQL.

The lead is a member of two projects (two chats in the first); the outsider owns a third project;
the admin is a member of none and sees all three.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.core import auth, chats, projects
from app.core.clock import FakeClock
from app.core.context import Core
from app.schedules.model import ScheduledTask, TaskStatus
from tests.integration.apiclient import add_user, bearer, client_for, table_contents

EVERY_HOUR = {"kind": "interval", "every_seconds": 3600}


@dataclasses.dataclass
class Place:
    client: TestClient
    core: Core
    tokens: dict[str, str]
    projects: dict[str, int]
    chats: dict[str, int]
    tasks: dict[str, int]

    def get(self, who: str, query: str = "") -> Any:
        return self.client.get(f"/api/schedules{query}", headers=bearer(self.tokens[who]))

    def listed(self, who: str, query: str = "") -> list[dict[str, Any]]:
        response = self.get(who, query)
        assert response.status_code == 200, response.text
        return response.json()["schedules"]

    def bulk(self, who: str, body: Any) -> Any:
        return self.client.post("/api/schedules/bulk", json=body, headers=bearer(self.tokens[who]))

    def status(self, task: str) -> str:
        with self.core.db.read() as s:
            return s.get(ScheduledTask, self.tasks[task]).status


def _task(client: TestClient, token: str, chat: int, name: str) -> int:
    response = client.post(f"/api/chats/{chat}/schedules", headers=bearer(token),
                           json={"name": name, "prompt": f"{name}: report", "schedule": EVERY_HOUR})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def _set_status(core: Core, task_id: int, status: TaskStatus) -> None:
    """A status only the scheduler or an agent reaches (draft, error, completed), set as they leave it."""
    with core.db.write() as s:
        row = s.get(ScheduledTask, task_id)
        row.status = status.value
        s.add(row)


@pytest.fixture
def place(clocked_core: Core, fake_clock: FakeClock) -> Iterator[Place]:
    core, db, folder = clocked_core, clocked_core.db, clocked_core.settings.workspaces_dir
    lead, outsider = add_user(core, "lead@example.com"), add_user(core, "outsider@example.com")
    admin = add_user(core, "admin@example.com", is_admin=True)
    ops = projects.create_project(db, fake_clock, folder, "Ops", lead)
    docs = projects.create_project(db, fake_clock, folder, "Docs", lead)
    private = projects.create_project(db, fake_clock, folder, "Private", outsider)
    chat_ids = {"builds": chats.create_chat(db, fake_clock, lead, ops.id, "Builds").id,
                "alerts": chats.create_chat(db, fake_clock, lead, ops.id, "Alerts").id,
                "guides": chats.create_chat(db, fake_clock, lead, docs.id, "Guides").id,
                "secret": chats.create_chat(db, fake_clock, outsider, private.id, "Secret plans").id}
    tokens = {who: auth.create_api_token(db, fake_clock, u.id)
              for who, u in (("lead", lead), ("outsider", outsider), ("admin", admin))}
    with client_for(core) as client:
        made = {name: _task(client, tokens["outsider" if chat == "secret" else "lead"], chat_ids[chat], name)
                for name, chat in (("nightly", "builds"), ("canary", "alerts"), ("digest", "builds"),
                                   ("proofread", "guides"), ("hidden", "secret"))}
        yield Place(client, core, tokens, {"ops": ops.id, "docs": docs.id, "private": private.id}, chat_ids, made)


def _names(rows: list[dict[str, Any]]) -> list[str]:
    return [r["name"] for r in rows]


def test_a_member_sees_every_task_of_their_projects_and_nothing_else(place: Place) -> None:
    rows = place.listed("lead")
    # by project, then chat, then creation: Ops (Builds: nightly, digest; Alerts: canary), Docs
    assert _names(rows) == ["nightly", "digest", "canary", "proofread"]
    first = rows[0]
    assert (first["chat_title"], first["project_name"]) == ("Builds", "Ops")
    assert (first["chat_id"], first["project_id"]) == (place.chats["builds"], place.projects["ops"])
    single = place.client.get(f"/api/schedules/{first['id']}", headers=bearer(place.tokens["lead"])).json()
    assert {k: v for k, v in first.items() if k not in ("chat_title", "project_name")} == single
    assert _names(place.listed("outsider")) == ["hidden"]
    assert sorted(_names(place.listed("admin"))) == ["canary", "digest", "hidden", "nightly", "proofread"]


def test_filters_by_status_and_project(place: Place) -> None:
    _set_status(place.core, place.tasks["canary"], TaskStatus.ERROR)
    assert _names(place.listed("lead", "?status=error")) == ["canary"]
    assert _names(place.listed("lead", "?status=active")) == ["nightly", "digest", "proofread"]
    assert _names(place.listed("lead", f"?project={place.projects['docs']}")) == ["proofread"]
    assert _names(place.listed("lead", f"?status=active&project={place.projects['ops']}")) == ["nightly", "digest"]
    assert place.listed("lead", "?status=draft") == []
    assert len(place.listed("lead", "?status=&project=")) == 4  # empty means every status, every project


def test_a_project_the_caller_cannot_see_is_404_like_the_per_project_endpoints(place: Place) -> None:
    for project in (place.projects["private"], 987654):
        response = place.get("lead", f"?project={project}")
        assert response.status_code == 404, response.text
        assert response.json()["error"]["code"] == "not_found"
    assert _names(place.listed("admin", f"?project={place.projects['private']}")) == ["hidden"]


@pytest.mark.parametrize(("query", "field"), [
    ("?status=paused,active", "status"), ("?status=ACTIVE", "status"), ("?status=%00", "status"),
    ("?project=abc", "project"), ("?project=1.0", "project"), ("?project=-1", "project"),
    ("?project=0", "project"), ("?project=99999999999999999999", "project"), ("?project=%D9%A3", "project"),
    ("?limit=0", "limit"), ("?limit=501", "limit"), ("?limit=x", "limit"), ("?after=abc", "after"),
    ("?after=0", "after"),
], ids=lambda v: v if isinstance(v, str) and v.startswith("?") else None)
def test_bad_filters_are_400_naming_the_field(place: Place, query: str, field: str) -> None:
    response = place.get("lead", query)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["message"].startswith(f"{field}: "), response.text


def test_pages_follow_next_after_to_the_end(place: Place) -> None:
    seen, after = [], ""
    for _ in range(5):
        response = place.get("lead", f"?limit=3{after}")
        assert response.status_code == 200, response.text
        page = response.json()
        seen += _names(page["schedules"])
        if page["next_after"] is None:
            break
        assert len(page["schedules"]) == 3
        after = f"&after={page['next_after']}"
    assert seen == ["nightly", "digest", "canary", "proofread"]
    # an after that is not in the caller's list (another user's task) is refused, naming it
    response = place.get("lead", f"?after={place.tasks['hidden']}")
    assert response.status_code == 400 and response.json()["error"]["message"].startswith("after: ")


def test_the_list_needs_a_token(place: Place) -> None:
    assert place.client.get("/api/schedules").status_code == 401
    assert place.client.post("/api/schedules/bulk", json={"action": "pause", "ids": [1]}).status_code == 401


def test_the_routes_beside_it_still_answer(place: Place) -> None:
    lead = bearer(place.tokens["lead"])
    preview = place.client.post("/api/schedules/preview", json={"schedule": EVERY_HOUR}, headers=lead)
    assert preview.status_code == 200 and len(preview.json()["fires"]) == 5
    assert place.client.get(f"/api/schedules/{place.tasks['nightly']}", headers=lead).json()["name"] == "nightly"
    assert place.client.get("/api/schedules/bulk", headers=lead).status_code == 404


def test_bulk_pause_and_resume_go_task_by_task(place: Place) -> None:
    t = place.tasks
    paused = place.bulk("lead", {"action": "pause", "ids": [t["nightly"], t["canary"], t["hidden"], 987654]})
    assert paused.status_code == 200, paused.text
    body = paused.json()
    assert (body["action"], body["ok"], body["failed"]) == ("pause", 2, 2)
    results = {r["id"]: r for r in body["results"]}
    assert [r["id"] for r in body["results"]] == [t["nightly"], t["canary"], t["hidden"], 987654]
    assert results[t["nightly"]]["ok"] and results[t["nightly"]]["schedule"]["status"] == "paused"
    for hidden in (t["hidden"], 987654):  # another user's task is as unknown as a missing one
        assert results[hidden]["ok"] is False and results[hidden]["status"] == 404
        assert results[hidden]["error"]["code"] == "not_found"
    assert (place.status("nightly"), place.status("canary"), place.status("hidden")) == ("paused", "paused", "active")
    assert _names(place.listed("lead", "?status=paused")) == ["nightly", "canary"]

    resumed = place.bulk("lead", {"action": "resume", "ids": [t["nightly"], t["digest"], t["nightly"]]}).json()
    assert [r["id"] for r in resumed["results"]] == [t["nightly"], t["digest"]]  # a repeated id acts once
    ok, refused = resumed["results"]
    assert ok["ok"] and ok["schedule"]["status"] == "active" and ok["schedule"]["next_run_at"]
    assert refused["ok"] is False and refused["status"] == 409  # an active task is not resumed
    assert "only a paused, error or exhausted schedule can be resumed" in refused["error"]["message"]


def test_bulk_keeps_the_single_endpoint_rules(place: Place) -> None:
    t = place.tasks
    _set_status(place.core, t["digest"], TaskStatus.DRAFT)
    _set_status(place.core, t["proofread"], TaskStatus.COMPLETED)
    resumed = place.bulk("lead", {"action": "resume", "ids": [t["digest"], t["proofread"]]}).json()
    assert [r["ok"] for r in resumed["results"]] == [False, False]
    assert "this one is draft" in resumed["results"][0]["error"]["message"]  # a draft is armed, not resumed
    paused = place.bulk("lead", {"action": "pause", "ids": [t["digest"], t["proofread"], t["canary"]]}).json()
    assert [r["ok"] for r in paused["results"]] == [False, False, True]
    assert "only an active schedule can be paused" in paused["results"][0]["error"]["message"]
    again = place.bulk("lead", {"action": "pause", "ids": [t["canary"]]}).json()
    assert again["results"][0]["ok"] is True  # pausing a paused task is idempotent, as the single endpoint
    assert (place.status("digest"), place.status("proofread"), place.status("canary")) == \
        ("draft", "completed", "paused")


BAD_BULK = [
    ({"action": "delete", "ids": [1]}, "action"),
    ({"action": "PAUSE", "ids": [1]}, "action"),
    ({"action": None, "ids": [1]}, "action"),
    ({"action": ["pause"], "ids": [1]}, "action"),
    ({"ids": [1]}, "action"),
    ({"action": "pause"}, "ids"),
    ({"action": "pause", "ids": []}, "ids"),
    ({"action": "pause", "ids": "1,2"}, "ids"),
    ({"action": "pause", "ids": [1, "2"]}, "ids"),
    ({"action": "pause", "ids": [True]}, "ids"),
    ({"action": "pause", "ids": [1.5]}, "ids"),
    ({"action": "pause", "ids": [0]}, "ids"),
    ({"action": "pause", "ids": [2**31]}, "ids"),
    ({"action": "pause", "ids": [None]}, "ids"),
    ({"action": "pause", "ids": list(range(1, 202))}, "ids"),
    ({"action": "pause", "ids": [1], "force": True}, "force"),
    ([1, 2], "body"),
]


@pytest.mark.parametrize(("payload", "field"), BAD_BULK, ids=[f"{i}-{f}" for i, (_, f) in enumerate(BAD_BULK)])
def test_bad_bulk_input_is_400_naming_the_field_and_changes_nothing(place: Place, payload: Any, field: str) -> None:
    before = table_contents(place.core)
    response = place.bulk("lead", payload)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["message"].startswith(f"{field}: "), response.text
    assert table_contents(place.core) == before


def test_bulk_body_that_is_not_json_is_400(place: Place) -> None:
    response = place.client.post("/api/schedules/bulk", content=b"{action", headers={
        **bearer(place.tokens["lead"]), "Content-Type": "application/json"})
    assert response.status_code == 400 and response.json()["error"]["message"].startswith("body: ")
