"""Schedule endpoints of the user API (SPEC §3, §5) in-process over HTTP, on SQLite and PostgreSQL.

The core runs on a FakeClock (2026-01-05 09:00 UTC, a Monday), so every computed instant is exact.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlmodel import func, select

from app.core import auth, chats, projects
from app.core.clock import UTC, FakeClock
from app.core.config import Settings
from app.core.context import Core
from app.core.models import User
from app.schedules.model import RunOutcome, ScheduledTask, TaskRun, TaskStatus, Trigger
from app.schedules.service import Actor, TaskService
from tests.conftest import database_core, make_core, with_settings
from tests.integration.apiclient import add_user, bearer, client_for, row_counts, table_contents

T0 = dt.datetime(2026, 1, 5, 9, 0, tzinfo=UTC)  # FakeClock's start
MISSING = 987654  # an id no test creates
EVERY_5_MIN = {"kind": "interval", "every_seconds": 300}


def z(instant: dt.datetime) -> str:
    """How the API writes an instant: RFC 3339, milliseconds, Z."""
    return instant.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def body(**changes: Any) -> dict[str, Any]:
    """A valid create body, with ``changes`` applied (a value of ... removes the key)."""
    base = {"name": "Build watch", "prompt": "Check the nightly build and report.", "schedule": EVERY_5_MIN}
    merged = {**base, **changes}
    return {k: v for k, v in merged.items() if v is not ...}


@dataclasses.dataclass
class World:
    """Alice owns a project with a chat and a loose chat; Bob owns another project with a chat."""

    core: Core
    clock: FakeClock
    client: TestClient
    alice: User
    bob: User
    tokens: dict[str, str]
    project: int
    chat: int
    other_chat: int
    loose: int
    bob_chat: int

    def h(self, who: str = "alice") -> dict[str, str]:
        return bearer(self.tokens[who])

    def create(self, chat: int | None = None, who: str = "alice", **changes: Any) -> Any:
        return self.client.post(f"/api/chats/{chat or self.chat}/schedules", json=body(**changes), headers=self.h(who))

    def created(self, **changes: Any) -> dict[str, Any]:
        response = self.create(**changes)
        assert response.status_code == 201, response.text
        return response.json()

    def task_rows(self) -> list[ScheduledTask]:
        with self.core.db.read() as s:
            return list(s.exec(select(ScheduledTask).order_by(ScheduledTask.id)))


def build_world(core: Core, clock: FakeClock, client: TestClient) -> World:
    db = core.db
    alice, bob = add_user(core, "alice@example.com"), add_user(core, "bob@example.com")
    project = projects.create_project(db, clock, core.settings.workspaces_dir, "Alice's", alice)
    bob_project = projects.create_project(db, clock, core.settings.workspaces_dir, "Bob's", bob)
    chat = chats.create_chat(db, clock, alice, project.id, "Plans")
    other = chats.create_chat(db, clock, alice, project.id, "Other")
    loose = chats.create_chat(db, clock, alice, None, "Loose")
    bob_chat = chats.create_chat(db, clock, bob, bob_project.id, "Bob's chat")
    tokens = {who: auth.create_api_token(db, clock, u.id) for who, u in (("alice", alice), ("bob", bob))}
    return World(core, clock, client, alice, bob, tokens, project.id, chat.id, other.id, loose.id, bob_chat.id)


@pytest.fixture
def world(clocked_core: Core, fake_clock: FakeClock) -> Iterator[World]:
    """A fresh world on a FakeClock, for a test that changes things."""
    with client_for(clocked_core) as client:
        yield build_world(clocked_core, fake_clock, client)


@pytest.fixture
def world_with(settings: Settings) -> Iterator[Callable[..., World]]:
    """Builds a fresh world whose core runs with changed settings."""
    with contextlib.ExitStack() as stack:

        def build(**changes: Any) -> World:
            clock = FakeClock()
            core = make_core(with_settings(settings, **changes), clock)
            stack.callback(core.db.dispose)
            stack.callback(core.prompts.shutdown, 2.0)
            return build_world(core, clock, stack.enter_context(client_for(core)))

        yield build


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def shared(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """One world per database for the many requests that must change nothing (they check that they don't).

    Its minimum interval is 120 s so that a once-a-minute cron expression is below the floor.
    """
    with database_core(request, tmp_path_factory, "schedules", FakeClock(), min_interval_seconds=120) as core, \
            client_for(core) as client:
        w = build_world(core, core.clock, client)
        w.created(name="Alice's task")
        yield w


def error_of(response: Any) -> dict[str, str]:
    """The error object, after checking the body has exactly the documented shape."""
    payload = response.json()
    assert set(payload) == {"error"} and set(payload["error"]) == {"code", "message"}, payload
    return payload["error"]


def alices_task(w: World) -> int:
    return w.task_rows()[0].id


# -- create ------------------------------------------------------------------------------------

CREATE_KINDS = [
    # id, schedule, expected next_run_at
    ("once-offset", {"kind": "once", "at": "2026-01-05T12:00:00+02:00"}, T0 + dt.timedelta(hours=1)),
    ("once-unix-ms", {"kind": "once", "at": int((T0 + dt.timedelta(hours=2)).timestamp() * 1000)},
     T0 + dt.timedelta(hours=2)),
    # 10:00 in Paris on a Monday: the next weekday 09:00 Paris is Tuesday 08:00 UTC
    ("cron", {"kind": "cron", "cron": "0 9 * * 1-5", "timezone": "Europe/Paris"},
     dt.datetime(2026, 1, 6, 8, 0, tzinfo=UTC)),
    ("interval", {"kind": "interval", "every_seconds": 300}, T0 + dt.timedelta(seconds=300)),
]


@pytest.mark.parametrize(("schedule", "expected_next"), [c[1:] for c in CREATE_KINDS],
                         ids=[c[0] for c in CREATE_KINDS])
def test_create_is_201_active_with_next_run_computed(world: World, schedule: dict[str, Any],
                                                     expected_next: dt.datetime) -> None:
    response = world.create(schedule=schedule)
    assert response.status_code == 201, response.text
    task = response.json()
    assert task["status"] == "active" and task["enabled"] is True
    assert task["next_run_at"] == z(expected_next)
    assert (task["chat_id"], task["project_id"], task["owner"]) == (world.chat, world.project, "alice@example.com")
    assert (task["name"], task["prompt"]) == ("Build watch", "Check the nightly build and report.")
    assert (task["overlap"], task["session"], task["max_runs"], task["run_count"]) == ("queue_one", "resume", None, 0)
    assert (task["created_by"], task["pending_run"], task["last_run_at"]) == ("user", False, None)
    assert task["schedule"]["kind"] == schedule["kind"] and task["description"]
    assert task["created_at"] == z(T0)
    assert world.client.get(f"/api/schedules/{task['id']}", headers=world.h()).json() == task
    assert [t.id for t in world.task_rows()] == [task["id"]]


def test_create_keeps_the_options_it_is_given(world: World) -> None:
    task = world.created(overlap="skip", session="fresh", max_runs=3, name="  Trimmed  ")
    assert (task["overlap"], task["session"], task["max_runs"], task["name"]) == ("skip", "fresh", 3, "Trimmed")


def test_repeated_idempotency_key_returns_the_existing_task_with_200(world: World) -> None:
    first = world.create(idempotency_key="nightly")
    assert first.status_code == 201
    before = row_counts(world.core)
    again = world.create(idempotency_key="nightly", name="A different name")
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"] and again.json()["name"] == "Build watch"
    assert row_counts(world.core) == before
    # the key is unique per chat: another chat, or another key, makes a new task
    elsewhere = world.create(chat=world.other_chat, idempotency_key="nightly")
    other_key = world.create(idempotency_key="weekly")
    assert (elsewhere.status_code, other_key.status_code) == (201, 201)
    assert len({first.json()["id"], elsewhere.json()["id"], other_key.json()["id"]}) == 3


# -- read --------------------------------------------------------------------------------------


def test_list_shows_the_chats_schedules_in_creation_order(world: World) -> None:
    a = world.created(name="A")
    world.create(chat=world.other_chat, name="Elsewhere")
    b = world.created(name="B")
    listed = world.client.get(f"/api/chats/{world.chat}/schedules", headers=world.h())
    assert listed.status_code == 200
    assert listed.json()["schedules"] == [a, b]
    empty = world.client.get(f"/api/chats/{world.bob_chat}/schedules", headers=world.h("bob"))
    assert empty.status_code == 200 and empty.json() == {"schedules": []}


def test_get_returns_the_task(world: World) -> None:
    task = world.created(max_runs=4)
    got = world.client.get(f"/api/schedules/{task['id']}", headers=world.h())
    assert got.status_code == 200 and got.json() == task


def test_runs_history_is_newest_first(world: World) -> None:
    task = world.created()
    outcomes = [RunOutcome.SUCCEEDED, RunOutcome.FAILED, RunOutcome.SKIPPED]
    with world.core.db.write() as s:
        for i, outcome in enumerate(outcomes):
            at = T0 + dt.timedelta(minutes=5 * (i + 1))
            s.add(TaskRun(task_id=task["id"], occurrence_at=at, trigger=Trigger.SCHEDULE.value, status=outcome.value,
                          fire_number=i + 1, claimed_at=at, started_at=at, finished_at=at + dt.timedelta(seconds=2)))
    response = world.client.get(f"/api/schedules/{task['id']}/runs", headers=world.h())
    assert response.status_code == 200
    runs = response.json()["runs"]
    assert [r["status"] for r in runs] == ["skipped", "failed", "succeeded"]
    assert [r["occurrence_at"] for r in runs] == [z(T0 + dt.timedelta(minutes=m)) for m in (15, 10, 5)]
    assert [r["id"] for r in runs] == sorted((r["id"] for r in runs), reverse=True)
    assert runs[0]["duration_ms"] == 2000 and runs[0]["task_id"] == task["id"]
    limited = world.client.get(f"/api/schedules/{task['id']}/runs?limit=1", headers=world.h()).json()["runs"]
    assert limited == runs[:1]


# -- edit and delete ---------------------------------------------------------------------------


def test_patch_name_and_prompt_keeps_the_deadline(world: World) -> None:
    task = world.created()
    world.clock.advance(100)
    response = world.client.patch(f"/api/schedules/{task['id']}", json={"name": "Renamed", "prompt": "New words."},
                                  headers=world.h())
    assert response.status_code == 200, response.text
    patched = response.json()
    assert (patched["name"], patched["prompt"]) == ("Renamed", "New words.")
    assert (patched["schedule"], patched["next_run_at"]) == (task["schedule"], task["next_run_at"])
    assert patched["updated_at"] == z(T0 + dt.timedelta(seconds=100))
    assert world.client.get(f"/api/schedules/{task['id']}", headers=world.h()).json() == patched


@pytest.mark.parametrize(("schedule", "expected_next"), [
    ({"kind": "interval", "every_seconds": 600}, T0 + dt.timedelta(seconds=100 + 600)),
    ({"kind": "cron", "cron": "30 9 * * *", "timezone": "UTC"}, T0 + dt.timedelta(minutes=30)),
    ({"kind": "once", "at": "2026-01-05T09:10:00Z"}, T0 + dt.timedelta(minutes=10)),
], ids=["interval", "cron", "once"])
def test_patch_schedule_recomputes_next_run_from_now(world: World, schedule: dict[str, Any],
                                                     expected_next: dt.datetime) -> None:
    task = world.created()
    world.clock.advance(100)
    response = world.client.patch(f"/api/schedules/{task['id']}", json={"schedule": schedule}, headers=world.h())
    assert response.status_code == 200, response.text
    assert response.json()["schedule"]["kind"] == schedule["kind"]
    assert response.json()["next_run_at"] == z(expected_next)
    assert response.json()["name"] == task["name"] and response.json()["status"] == "active"


def test_delete_is_204_then_the_task_is_gone(world: World) -> None:
    task = world.created()
    keep = world.created(name="Kept")
    path = f"/api/schedules/{task['id']}"
    deleted = world.client.delete(path, headers=world.h())
    assert deleted.status_code == 204 and deleted.content == b""
    for method, suffix in (("GET", ""), ("DELETE", ""), ("PATCH", ""), ("GET", "/runs"), ("POST", "/run-now")):
        response = world.client.request(method, path + suffix, json={"name": "x"} if method == "PATCH" else None,
                                        headers=world.h())
        assert response.status_code == 404, (method, suffix)
        assert error_of(response)["code"] == "not_found"
    assert [t.id for t in world.task_rows()] == [keep["id"]]


# -- state changes -----------------------------------------------------------------------------


def agent_draft(w: World) -> int:
    """A draft as an agent creates it inside a turn in Alice's chat."""
    tasks = TaskService(w.core.db, w.core.clock, w.core.settings)
    task, created = tasks.create(Actor(w.alice, agent_chat_id=w.chat), w.chat, body())
    assert created and task.status == TaskStatus.DRAFT.value and task.next_run_at is None
    return task.id


def test_arm_turns_a_draft_active_and_computes_next_run(world: World) -> None:
    draft = agent_draft(world)
    listed = world.client.get(f"/api/chats/{world.chat}/schedules", headers=world.h()).json()["schedules"]
    assert [(t["id"], t["status"], t["enabled"], t["created_by"]) for t in listed] == [
        (draft, "draft", False, "agent")]
    world.clock.advance(50)
    armed = world.client.post(f"/api/schedules/{draft}/arm", headers=world.h())
    assert armed.status_code == 200, armed.text
    assert armed.json()["status"] == "active" and armed.json()["enabled"] is True
    assert armed.json()["next_run_at"] == z(T0 + dt.timedelta(seconds=50 + 300))
    before = table_contents(world.core)
    again = world.client.post(f"/api/schedules/{draft}/arm", headers=world.h())
    assert again.status_code == 409 and error_of(again)["code"] == "conflict"
    assert table_contents(world.core) == before


def test_arm_of_a_user_created_active_task_is_409(world: World) -> None:
    task = world.created()
    response = world.client.post(f"/api/schedules/{task['id']}/arm", headers=world.h())
    assert response.status_code == 409
    assert world.client.get(f"/api/schedules/{task['id']}", headers=world.h()).json() == task


def test_pause_then_resume_computes_next_run_from_now(world: World) -> None:
    task = world.created()
    path = f"/api/schedules/{task['id']}"
    paused = world.client.post(f"{path}/pause", headers=world.h())
    assert paused.status_code == 200
    assert (paused.json()["status"], paused.json()["enabled"]) == ("paused", False)
    assert world.client.post(f"{path}/pause", headers=world.h()).json()["status"] == "paused"  # idempotent
    world.clock.advance(3650)  # an hour passes: its occurrences are not replayed, the grid restarts now
    resumed = world.client.post(f"{path}/resume", headers=world.h())
    assert resumed.status_code == 200
    assert (resumed.json()["status"], resumed.json()["enabled"]) == ("active", True)
    assert resumed.json()["next_run_at"] == z(T0 + dt.timedelta(seconds=3650 + 300))
    again = world.client.post(f"{path}/resume", headers=world.h())
    assert again.status_code == 409


def test_resume_of_a_completed_task_is_409_and_changes_nothing(world: World) -> None:
    task = world.created()
    with world.core.db.write() as s:
        s.exec(sa.update(ScheduledTask).where(ScheduledTask.id == task["id"])
               .values(status=TaskStatus.COMPLETED.value, next_run_at=None))
    before = table_contents(world.core)
    response = world.client.post(f"/api/schedules/{task['id']}/resume", headers=world.h())
    assert response.status_code == 409
    assert error_of(response)["code"] == "conflict"
    assert table_contents(world.core) == before


def test_run_now_is_202_and_keeps_status_and_deadline(world: World) -> None:
    task = world.created()
    path = f"/api/schedules/{task['id']}"
    world.clock.advance(10)
    response = world.client.post(f"{path}/run-now", headers=world.h())
    assert response.status_code == 202
    accepted = response.json()
    assert accepted["pending_run"] is True
    assert (accepted["status"], accepted["next_run_at"]) == ("active", task["next_run_at"])
    world.client.post(f"{path}/pause", headers=world.h())
    paused = world.client.post(f"{path}/run-now", headers=world.h())
    assert paused.status_code == 202
    assert (paused.json()["status"], paused.json()["pending_run"]) == ("paused", True)


def test_run_now_of_a_draft_is_409(world: World) -> None:
    draft = agent_draft(world)
    before = table_contents(world.core)
    response = world.client.post(f"/api/schedules/{draft}/run-now", headers=world.h())
    assert response.status_code == 409
    assert table_contents(world.core) == before


# -- preview -----------------------------------------------------------------------------------


def test_preview_lists_five_fires_and_a_description(shared: World) -> None:
    before = table_contents(shared.core)
    response = shared.client.post("/api/schedules/preview", headers=shared.h(),
                                  json={"schedule": {"kind": "cron", "cron": "0 9 * * 1-5",
                                                     "timezone": "America/New_York"}})
    assert response.status_code == 200, response.text
    preview = response.json()
    # Monday 04:00 in New York: the next five weekday 09:00s are Monday through Friday, 14:00 UTC
    assert [f["utc"] for f in preview["fires"]] == [f"2026-01-0{d}T14:00:00Z" for d in range(5, 10)]
    assert preview["fires"][0]["local"] == "2026-01-05T09:00:00-05:00"
    assert "09:00" in preview["description"] and "Monday through Friday" in preview["description"]
    interval = shared.client.post("/api/schedules/preview", headers=shared.h(),
                                  json={"schedule": {"kind": "interval", "every_seconds": 3600}}).json()
    assert [f["utc"] for f in interval["fires"]] == [f"2026-01-05T{h}:00:00Z" for h in range(10, 15)]
    assert interval["description"] == "Every hour"
    assert table_contents(shared.core) == before


@pytest.mark.parametrize(("schedule", "field"), [
    ({"kind": "cron", "cron": "0 25 * * *", "timezone": "UTC"}, "schedule.cron"),
    ({"kind": "cron", "cron": "0 9 * *", "timezone": "UTC"}, "schedule.cron"),
    ({"kind": "cron", "cron": "0 0 31 2 *", "timezone": "UTC"}, "schedule.cron"),
    ({"kind": "cron", "cron": "0 9 * * *", "timezone": "Mars/Olympus_Mons"}, "schedule.timezone"),
    ({"kind": "cron", "cron": "0 9 * * *"}, "schedule.timezone"),
    ({"kind": "once", "at": "2026-01-05T08:00:00Z"}, "schedule.at"),
    ({"kind": "weekly"}, "schedule.kind"),
    ("daily", "schedule"),
], ids=["cron-hour-25", "cron-four-fields", "cron-never-fires", "unknown-zone", "zone-missing", "once-past",
        "unknown-kind", "not-an-object"])
def test_preview_of_a_bad_schedule_is_400_naming_the_field(shared: World, schedule: Any, field: str) -> None:
    response = shared.client.post("/api/schedules/preview", json={"schedule": schedule}, headers=shared.h())
    assert response.status_code == 400, response.text
    error = error_of(response)
    assert error["code"] == "invalid"
    assert error["message"].startswith(f"{field}:"), error["message"]


# -- 400: invalid input names the field and changes nothing -----------------------------------

BAD_CREATE = [
    # id, body, field the message must start with
    ("name-missing", body(name=...), "name"),
    ("name-empty", body(name=""), "name"),
    ("name-blank", body(name="   "), "name"),
    ("name-too-long", body(name="n" * 121), "name"),
    ("name-number", body(name=7), "name"),
    ("prompt-missing", body(prompt=...), "prompt"),
    ("prompt-empty", body(prompt=""), "prompt"),
    ("prompt-over-32-KiB", body(prompt="p" * 32769), "prompt"),
    ("prompt-over-32-KiB-of-utf8", body(prompt="é" * 16385), "prompt"),  # 16385 characters, 32770 bytes
    ("schedule-missing", body(schedule=...), "schedule"),
    ("schedule-null", body(schedule=None), "schedule"),
    ("schedule-string", body(schedule="every 5 minutes"), "schedule"),
    ("schedule-list", body(schedule=[EVERY_5_MIN]), "schedule"),
    ("schedule-no-kind", body(schedule={"every_seconds": 300}), "schedule.kind"),
    ("schedule-unknown-kind", body(schedule={"kind": "weekly"}), "schedule.kind"),
    ("schedule-extra-key", body(schedule={**EVERY_5_MIN, "jitter": 5}), "schedule.jitter"),
    ("once-in-the-past", body(schedule={"kind": "once", "at": "2026-01-05T08:59:59Z"}), "schedule.at"),
    ("once-now", body(schedule={"kind": "once", "at": "2026-01-05T09:00:00Z"}), "schedule.at"),
    ("once-without-offset", body(schedule={"kind": "once", "at": "2026-01-06T09:00:00"}), "schedule.at"),
    ("once-not-a-date", body(schedule={"kind": "once", "at": "tomorrow"}), "schedule.at"),
    ("cron-never-fires", body(schedule={"kind": "cron", "cron": "0 0 31 2 *", "timezone": "UTC"}), "schedule.cron"),
    ("cron-bad-field", body(schedule={"kind": "cron", "cron": "61 * * * *", "timezone": "UTC"}), "schedule.cron"),
    ("cron-below-min-interval", body(schedule={"kind": "cron", "cron": "* * * * *", "timezone": "UTC"}), "schedule"),
    ("cron-zone-missing", body(schedule={"kind": "cron", "cron": "0 9 * * *"}), "schedule.timezone"),
    ("cron-zone-unknown", body(schedule={"kind": "cron", "cron": "0 9 * * *", "timezone": "Nowhere/Town"}),
     "schedule.timezone"),
    ("interval-below-floor", body(schedule={"kind": "interval", "every_seconds": 119}), "schedule.every_seconds"),
    ("interval-zero", body(schedule={"kind": "interval", "every_seconds": 0}), "schedule.every_seconds"),
    ("interval-string", body(schedule={"kind": "interval", "every_seconds": "300"}), "schedule.every_seconds"),
    ("interval-float", body(schedule={"kind": "interval", "every_seconds": 300.5}), "schedule.every_seconds"),
    ("overlap-unknown", body(overlap="parallel"), "overlap"),
    ("overlap-null", body(overlap=None), "overlap"),
    ("overlap-list", body(overlap=["skip"]), "overlap"),
    ("session-unknown", body(session="new"), "session"),
    ("session-number", body(session=1), "session"),
    ("max-runs-zero", body(max_runs=0), "max_runs"),
    ("max-runs-negative", body(max_runs=-1), "max_runs"),
    ("max-runs-string", body(max_runs="3"), "max_runs"),
    ("max-runs-true", body(max_runs=True), "max_runs"),
    ("max-runs-float", body(max_runs=2.5), "max_runs"),
    ("idempotency-key-empty", body(idempotency_key=""), "idempotency_key"),
    ("idempotency-key-number", body(idempotency_key=5), "idempotency_key"),
    ("status-field", body(status="paused"), "status"),
    ("unknown-field", body(priority="high"), "priority"),
    ("body-list", [body()], "body"),
]


@pytest.mark.parametrize(("payload", "field"), [c[1:] for c in BAD_CREATE], ids=[c[0] for c in BAD_CREATE])
def test_invalid_create_is_400_naming_the_field_and_changes_nothing(shared: World, payload: Any, field: str) -> None:
    before = table_contents(shared.core)
    response = shared.client.post(f"/api/chats/{shared.chat}/schedules", json=payload, headers=shared.h())
    assert response.status_code == 400, response.text
    error = error_of(response)
    assert error["code"] == "invalid"
    assert error["message"].startswith(f"{field}:"), error["message"]
    assert table_contents(shared.core) == before


def test_prompt_limit_follows_the_setting_in_utf8_bytes(world_with: Callable[..., World]) -> None:
    w = world_with(prompt_max_bytes=10)
    before = row_counts(w.core)
    over = w.create(prompt="é" * 6)  # 6 characters, 12 bytes
    assert over.status_code == 400
    assert error_of(over)["message"].startswith("prompt:")
    assert row_counts(w.core) == before
    assert w.create(prompt="é" * 5).status_code == 201  # exactly 10 bytes


BAD_PATCH = [
    ("unknown-field", {"colour": "red"}, "colour"),
    ("status-field", {"status": "paused"}, "status"),
    ("id-field", {"id": 5}, "id"),
    ("name-empty", {"name": ""}, "name"),
    ("name-null", {"name": None}, "name"),
    ("name-too-long", {"name": "n" * 121}, "name"),
    ("prompt-empty", {"prompt": " "}, "prompt"),
    ("schedule-null", {"schedule": None}, "schedule"),
    ("schedule-unknown-kind", {"schedule": {"kind": "hourly"}}, "schedule.kind"),
    ("schedule-once-past", {"schedule": {"kind": "once", "at": "2025-12-31T23:00:00Z"}}, "schedule.at"),
    ("schedule-below-floor", {"schedule": {"kind": "interval", "every_seconds": 60}}, "schedule.every_seconds"),
    ("overlap-unknown", {"overlap": "both"}, "overlap"),
    ("max-runs-zero", {"max_runs": 0}, "max_runs"),
    ("valid-name-bad-schedule", {"name": "Fine", "schedule": {"kind": "interval", "every_seconds": -5}},
     "schedule.every_seconds"),
    ("body-list", [{"name": "x"}], "body"),
]


@pytest.mark.parametrize(("payload", "field"), [c[1:] for c in BAD_PATCH], ids=[c[0] for c in BAD_PATCH])
def test_invalid_patch_is_400_naming_the_field_and_changes_nothing(shared: World, payload: Any, field: str) -> None:
    before = table_contents(shared.core)
    response = shared.client.patch(f"/api/schedules/{alices_task(shared)}", json=payload, headers=shared.h())
    assert response.status_code == 400, response.text
    error = error_of(response)
    assert error["code"] == "invalid"
    assert error["message"].startswith(f"{field}:"), error["message"]
    assert table_contents(shared.core) == before


UNSTORABLE_TEXT = [
    # id, method, path, raw JSON body, field; a NUL or a lone surrogate cannot be stored as text
    ("create-name-nul", "POST", "/api/chats/{chat}/schedules",
     '{"name": "a\\u0000b", "prompt": "p", "schedule": {"kind": "interval", "every_seconds": 300}}', "name"),
    ("create-prompt-nul", "POST", "/api/chats/{chat}/schedules",
     '{"name": "n", "prompt": "a\\u0000b", "schedule": {"kind": "interval", "every_seconds": 300}}', "prompt"),
    ("create-key-nul", "POST", "/api/chats/{chat}/schedules",
     '{"name": "n", "prompt": "p", "schedule": {"kind": "interval", "every_seconds": 300}, '
     '"idempotency_key": "k\\u0000"}', "idempotency_key"),
    ("create-name-lone-surrogate", "POST", "/api/chats/{chat}/schedules",
     '{"name": "a\\ud800b", "prompt": "p", "schedule": {"kind": "interval", "every_seconds": 300}}', "name"),
    ("create-prompt-lone-surrogate", "POST", "/api/chats/{chat}/schedules",
     '{"name": "n", "prompt": "\\udfff", "schedule": {"kind": "interval", "every_seconds": 300}}', "prompt"),
    ("patch-name-nul", "PATCH", "/api/schedules/{task}", '{"name": "a\\u0000b"}', "name"),
]


@pytest.mark.parametrize(("method", "path", "raw", "field"), [c[1:] for c in UNSTORABLE_TEXT],
                         ids=[c[0] for c in UNSTORABLE_TEXT])
def test_text_that_cannot_be_stored_is_400_naming_the_field(shared: World, method: str, path: str, raw: str,
                                                            field: str) -> None:
    before = table_contents(shared.core)
    rows = shared.task_rows()
    try:
        with client_for(shared.core, raise_server_exceptions=False) as client:
            response = client.request(method, path.format(chat=shared.chat, task=alices_task(shared)),
                                      content=raw.encode(), headers={**shared.h(), "content-type": "application/json"})
        assert response.status_code == 400, response.text
        assert error_of(response)["message"].startswith(f"{field}:")
        assert table_contents(shared.core) == before
    finally:  # the shared world must stay as it was for the other tests, whatever the app did
        with shared.core.db.write() as s:
            s.exec(sa.delete(ScheduledTask).where(ScheduledTask.id.not_in([t.id for t in rows])))
            for t in rows:
                s.exec(sa.update(ScheduledTask).where(ScheduledTask.id == t.id).values(name=t.name))


def test_loose_chat_cannot_have_schedules(world: World) -> None:
    before = row_counts(world.core)
    response = world.create(chat=world.loose)
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "invalid" and error["message"].startswith("chat_id:"), error
    assert row_counts(world.core) == before


# -- quota -------------------------------------------------------------------------------------


def test_quota_refuses_the_task_over_the_limit(world_with: Callable[..., World]) -> None:
    w = world_with(max_tasks_per_project=2)
    first = w.created(idempotency_key="first")
    w.created(chat=w.other_chat)  # the quota is per project: both chats count
    before = row_counts(w.core)
    third = w.create(name="Third")
    assert third.status_code == 409
    assert error_of(third)["code"] == "quota_exceeded"
    assert row_counts(w.core) == before
    # a repeat of an existing key is not a new task; another project has its own quota
    assert w.create(idempotency_key="first").json()["id"] == first["id"]
    assert w.create(chat=w.bob_chat, who="bob").status_code == 201


def test_quota_of_zero_disables_the_limit(world_with: Callable[..., World]) -> None:
    w = world_with(max_tasks_per_project=0)
    statuses = [w.create(name=f"Task {i}").status_code for i in range(4)]
    assert statuses == [201] * 4
    with w.core.db.read() as s:
        assert s.exec(select(func.count()).select_from(ScheduledTask)).one() == 4


# -- 404 and 401 -------------------------------------------------------------------------------

HIDDEN = [
    ("list", "GET", "/api/chats/{chat}/schedules", None),
    ("create", "POST", "/api/chats/{chat}/schedules", body()),
    ("create-invalid", "POST", "/api/chats/{chat}/schedules", body(name="")),
    ("get", "GET", "/api/schedules/{task}", None),
    ("patch", "PATCH", "/api/schedules/{task}", {"name": "Mine now"}),
    ("patch-invalid", "PATCH", "/api/schedules/{task}", {"name": ""}),
    ("delete", "DELETE", "/api/schedules/{task}", None),
    ("arm", "POST", "/api/schedules/{task}/arm", None),
    ("pause", "POST", "/api/schedules/{task}/pause", None),
    ("resume", "POST", "/api/schedules/{task}/resume", None),
    ("run-now", "POST", "/api/schedules/{task}/run-now", None),
    ("runs", "GET", "/api/schedules/{task}/runs", None),
]


@pytest.mark.parametrize(("method", "path", "payload"), [c[1:] for c in HIDDEN], ids=[c[0] for c in HIDDEN])
def test_another_users_chat_or_schedule_is_404_like_a_missing_one(shared: World, method: str, path: str,
                                                                  payload: Any) -> None:
    ids = {"chat": shared.chat, "task": alices_task(shared)}
    before = table_contents(shared.core)
    hidden = shared.client.request(method, path.format(**ids), json=payload, headers=shared.h("bob"))
    missing = shared.client.request(method, path.format(chat=MISSING, task=MISSING), json=payload,
                                    headers=shared.h("bob"))
    assert (hidden.status_code, missing.status_code) == (404, 404), hidden.text
    assert error_of(hidden)["code"] == "not_found"
    hidden_id = str(ids["chat" if "{chat}" in path else "task"])
    assert hidden.json() == json.loads(json.dumps(missing.json()).replace(str(MISSING), hidden_id))
    assert table_contents(shared.core) == before


@pytest.mark.parametrize(("method", "path", "payload"), [c[1:] for c in HIDDEN if "invalid" not in c[0]],
                         ids=[c[0] for c in HIDDEN if "invalid" not in c[0]])
def test_without_a_token_the_answer_is_401_and_nothing_changes(shared: World, method: str, path: str,
                                                               payload: Any) -> None:
    before = table_contents(shared.core)
    response = shared.client.request(method, path.format(chat=shared.chat, task=alices_task(shared)), json=payload)
    assert response.status_code == 401
    assert error_of(response)["code"] == "unauthorized"
    assert table_contents(shared.core) == before
