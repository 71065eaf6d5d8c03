"""SPEC §14 through both HTTP APIs and the loop, in-process on a FakeClock (2026-01-05 09:00 UTC),
on SQLite and PostgreSQL: the new fields, bad input (400 naming the field, nothing written), pause
with a note and an end, skip-next, missed and ended tasks, loose chats."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from sqlmodel import select

from app.core.clock import FakeClock
from app.core.context import Core
from app.core.grants import Scope
from app.core.models import Event, EventType
from app.schedules.model import ScheduledTask, TaskRun
from app.schedules.plan import plan_of
from scheduler.__main__ import build_loop
from tests.integration.apiclient import bearer, client_for, table_contents
from tests.integration.test_scheduler_loop import settle
from tests.integration.test_schedules_api import T0, World, body, build_world, error_of, z
from tests.store import issue_grant

HOURLY_CRON = {"kind": "cron", "cron": "0 * * * *", "timezone": "UTC"}
DAILY_9 = {"kind": "cron", "cron": "0 9 * * *", "timezone": "Europe/Paris"}


@pytest.fixture
def world(clocked_core: Core, fake_clock: FakeClock) -> Iterator[World]:
    with client_for(clocked_core) as client:
        yield build_world(clocked_core, fake_clock, client)


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def agent_headers(w: World) -> dict[str, str]:
    token, _ = issue_grant(w.core.db, w.clock, 3600, Scope.MANAGE, w.alice.id, w.chat, w.project)
    return bearer(token)


def row(w: World, task_id: int) -> ScheduledTask:
    with w.core.db.read() as s:
        return s.get(ScheduledTask, task_id)


def runs_of(w: World, task_id: int) -> list[TaskRun]:
    with w.core.db.read() as s:
        return list(s.exec(select(TaskRun).where(TaskRun.task_id == task_id).order_by(TaskRun.id)))


def status_lines(w: World) -> list[str]:
    with w.core.db.read() as s:
        return list(s.exec(select(Event.text).where(Event.chat_id == w.chat, Event.type == EventType.STATUS.value)
                           .order_by(Event.id)))


def tick(w: World) -> None:
    loop = getattr(w, "_loop", None) or build_loop(w.core, "sched:test")
    w._loop = loop  # type: ignore[attr-defined]
    loop.tick()


# -- the fields --------------------------------------------------------------------------------------


def test_defaults_and_round_trip_of_the_new_fields(world: World) -> None:
    plain = world.created()
    assert (plain["catchup_window_seconds"], plain["jitter_seconds"], plain["starts_at"], plain["ends_at"]) == (
        3600, 0, None, None)
    assert plain["next_occurrence_at"] == plain["next_run_at"] == z(at(300))
    assert (plain["pause_note"], plain["paused_until"], plain["paused_by"]) == (None, None, None)
    made = world.created(schedule=HOURLY_CRON, catchup_window_seconds=None, jitter_seconds=300,
                         starts_at="2026-01-05T12:00:00+01:00", ends_at="2026-01-06T00:00:00Z")
    assert made["catchup_window_seconds"] is None and made["jitter_seconds"] == 300
    assert (made["starts_at"], made["ends_at"]) == (z(at(2 * 3600)), z(at(15 * 3600)))
    assert made["next_occurrence_at"] == z(at(2 * 3600))  # the window starts at 11:00 UTC
    task = row(world, made["id"])
    assert made["next_run_at"] == z(plan_of(task).fire_at(at(2 * 3600)))
    assert at(2 * 3600) <= task.next_run_at < at(2 * 3600 + 300)


def test_patch_changes_the_window_and_jitter_and_rearms(world: World) -> None:
    made = world.created(schedule=HOURLY_CRON)
    world.clock.set(at(600))
    response = world.client.patch(f"/api/schedules/{made['id']}", json={"starts_at": "2026-01-05T15:00:00Z"},
                                  headers=world.h())
    assert response.status_code == 200, response.text
    assert response.json()["next_run_at"] == z(at(6 * 3600))
    response = world.client.patch(f"/api/schedules/{made['id']}", json={"catchup_window_seconds": 60},
                                  headers=world.h())
    assert response.json()["catchup_window_seconds"] == 60 and response.json()["next_run_at"] == z(at(6 * 3600))


BAD = [
    ({"jitter_seconds": 31}, "jitter_seconds", "a tenth of the schedule's smallest gap (30 s)"),
    ({"schedule": DAILY_9, "jitter_seconds": 8281}, "jitter_seconds", "(8280 s)"),  # 23 h on the spring-forward day
    ({"jitter_seconds": -1}, "jitter_seconds", "0 or more"),
    ({"jitter_seconds": "5"}, "jitter_seconds", "whole number"),
    ({"catchup_window_seconds": 0}, "catchup_window_seconds", "from 1"),
    ({"starts_at": "2026-01-06T00:00:00Z", "ends_at": "2026-01-05T12:00:00Z"}, "ends_at", "after starts_at"),
    ({"ends_at": "2026-01-05T08:00:00Z"}, "ends_at", "in the future"),
    ({"ends_at": "2026-01-05T09:04:00Z"}, "ends_at", "no occurrence"),
    ({"starts_at": "tomorrow"}, "starts_at", "RFC 3339"),
    ({"schedule": {"kind": "once", "at": "2026-01-06T09:00:00Z"}, "ends_at": "2026-01-07T00:00:00Z"}, "ends_at",
     "once schedule"),
    ({"schedule": {"kind": "once", "at": "2026-01-06T09:00:00Z"}, "jitter_seconds": 601}, "jitter_seconds",
     "once task"),
]


@pytest.mark.parametrize(("changes", "field", "words"), BAD)
def test_bad_input_is_a_400_naming_the_field_and_changes_nothing(world: World, changes: dict[str, Any], field: str,
                                                                   words: str) -> None:
    before = table_contents(world.core)
    for path, headers in ((f"/api/chats/{world.chat}/schedules", world.h()),
                          ("/agent-api/schedules", agent_headers(world))):
        snapshot = table_contents(world.core)
        response = world.client.post(path, json=body(**changes), headers=headers)
        assert response.status_code == 400, response.text
        error = error_of(response)
        assert error["message"].startswith(f"{field}:") and words in error["message"], error
        assert table_contents(world.core) == snapshot
    assert len(table_contents(world.core)["grants"]) == len(before["grants"]) + 1  # only the grant we minted


# -- pause with a note and an end ----------------------------------------------------------------------


def test_pause_with_note_and_until_resumes_by_itself_once(world: World) -> None:
    made = world.created(schedule=HOURLY_CRON)
    response = world.client.post(f"/api/schedules/{made['id']}/pause",
                                 json={"note": "on holiday", "until": "2026-01-05T12:30:00Z"}, headers=world.h())
    assert response.status_code == 200, response.text
    paused = response.json()
    assert (paused["status"], paused["pause_note"], paused["paused_until"], paused["paused_by"]) == (
        "paused", "on holiday", z(at(3.5 * 3600)), "user")
    world.clock.set(at(3.5 * 3600 - 1))
    tick(world)
    assert row(world, made["id"]).status == "paused"
    world.clock.set(at(3.5 * 3600))
    tick(world)
    tick(world)
    task = row(world, made["id"])
    assert (task.status, task.pause_note, task.paused_until, task.paused_by) == ("active", None, None, None)
    assert task.next_run_at == at(4 * 3600)  # from then: 10:00, 11:00 and 12:00 are not replayed
    assert runs_of(world, made["id"]) == []
    assert status_lines(world) == ['scheduled task "Build watch" resumed (paused until 2026-01-05 12:30 UTC)']


@pytest.mark.parametrize(("sent", "field", "words"), [
    ({"until": "2026-01-05T08:00:00Z"}, "until", "in the future"),
    ({"until": "soon"}, "until", "RFC 3339"),
    ({"note": "x" * 501}, "note", "limit is 500"),
    ({"note": 5}, "note", "text"),
    ({"reason": "x"}, "reason", "extra"),
])
def test_bad_pause_is_a_400_and_changes_nothing(world: World, sent: dict[str, Any], field: str, words: str) -> None:
    made = world.created()
    before = table_contents(world.core)
    response = world.client.post(f"/api/schedules/{made['id']}/pause", json=sent, headers=world.h())
    assert response.status_code == 400, response.text
    assert field in error_of(response)["message"]
    assert table_contents(world.core) == before


def test_an_agent_cannot_change_a_users_pause_but_may_time_its_own(world: World) -> None:
    made = world.created()
    agent = agent_headers(world)
    world.client.post(f"/api/schedules/{made['id']}/pause", json={"note": "mine"}, headers=world.h())
    response = world.client.post(f"/agent-api/schedules/{made['id']}/pause", json={"until": "2026-01-05T10:00:00Z"},
                                 headers=agent)
    assert response.status_code == 403 and "a user paused this schedule" in error_of(response)["message"]
    assert row(world, made["id"]).paused_until is None
    world.client.post(f"/api/schedules/{made['id']}/resume", headers=world.h())
    response = world.client.post(f"/agent-api/schedules/{made['id']}/pause", json={"note": "waiting for CI"},
                                 headers=agent)
    assert response.json()["paused_by"] == "agent"
    response = world.client.post(f"/agent-api/schedules/{made['id']}/pause", json={"until": "2026-01-05T10:00:00Z"},
                                 headers=agent)
    assert response.status_code == 200 and response.json()["paused_until"] == z(at(3600))
    assert response.json()["pause_note"] == "waiting for CI"


# -- skip-next -------------------------------------------------------------------------------------------


def test_skip_next_records_a_skipped_occurrence_and_moves_on(world: World) -> None:
    made = world.created(schedule=HOURLY_CRON)
    response = world.client.post(f"/api/schedules/{made['id']}/skip-next", headers=world.h())
    assert response.status_code == 200 and response.json()["next_run_at"] == z(at(2 * 3600))
    response = world.client.post(f"/agent-api/schedules/{made['id']}/skip-next", headers=agent_headers(world))
    assert response.json()["next_run_at"] == z(at(3 * 3600))
    rows = runs_of(world, made["id"])
    assert [(r.occurrence_at, r.status, r.error) for r in rows] == [
        (at(3600), "skipped", "skipped by alice@example.com"), (at(2 * 3600), "skipped", "skipped by the agent")]
    world.clock.set(at(3600))
    tick(world)
    assert len(runs_of(world, made["id"])) == 2  # the skipped occurrence does not fire
    history = world.client.get(f"/api/schedules/{made['id']}/runs", headers=world.h()).json()["runs"]
    assert [r["status"] for r in history] == ["skipped", "skipped"]


def test_skip_next_of_a_once_or_paused_task_is_a_409(world: World) -> None:
    once = world.created(schedule={"kind": "once", "at": "2026-01-06T09:00:00Z"})
    response = world.client.post(f"/api/schedules/{once['id']}/skip-next", headers=world.h())
    assert response.status_code == 409 and "single occurrence" in error_of(response)["message"]
    other = world.created()
    world.client.post(f"/api/schedules/{other['id']}/pause", headers=world.h())
    response = world.client.post(f"/api/schedules/{other['id']}/skip-next", headers=world.h())
    assert response.status_code == 409 and "paused" in error_of(response)["message"]


# -- missed, ended ------------------------------------------------------------------------------------


def test_a_task_found_late_by_more_than_its_window_is_missed_through_the_api(world: World) -> None:
    made = world.created(schedule=HOURLY_CRON, catchup_window_seconds=600)
    world.clock.set(at(3 * 3600 + 300))  # down from 09:30 to 12:05: 10:00 and 11:00 are too late
    tick(world)
    runs = world.client.get(f"/api/schedules/{made['id']}/runs", headers=world.h()).json()["runs"]
    statuses = sorted((r["status"], r["missed_count"], r["occurrence_at"]) for r in runs)
    assert statuses[0] == ("missed", 2, z(at(3600)))
    assert [r["status"] for r in runs if r["status"] != "missed"] in (["running"], ["succeeded"])
    assert "2 occurrences missed, the first by 2 h 5 min (catch-up window 10 min)" in status_lines(world)[0]


def test_the_active_window_ends_and_the_task_is_completed(world: World) -> None:
    made = world.created(schedule=HOURLY_CRON, ends_at="2026-01-05T10:30:00Z")
    world.clock.set(at(3600))
    tick(world)
    settle(world.core)
    assert row(world, made["id"]).next_run_at is None and row(world, made["id"]).status == "active"
    world.clock.set(at(1.5 * 3600))
    tick(world)
    got = world.client.get(f"/api/schedules/{made['id']}", headers=world.h()).json()
    assert (got["status"], got["last_error"], got["next_run_at"]) == ("completed", "active window ended", None)
    assert status_lines(world)[-1] == 'scheduled task "Build watch" active window ended'


# -- loose chats ----------------------------------------------------------------------------------------


def test_loose_chats_are_created_and_listed_per_user(world: World) -> None:
    response = world.client.post("/api/chats", json={"title": "Scratch"}, headers=world.h())
    assert response.status_code == 201 and response.json()["project_id"] is None
    assert world.client.post("/api/chats", headers=world.h("bob")).status_code == 201
    mine = world.client.get("/api/chats", headers=world.h()).json()["chats"]
    assert [c["title"] for c in mine] == ["Scratch", "Loose"]
    bad = world.client.post("/api/chats", json={"title": 5}, headers=world.h())
    assert bad.status_code == 400 and "title" in error_of(bad)["message"]
    assert world.client.post("/api/chats", json={"title": ""}, headers=world.h()).status_code == 400


# -- found in review -----------------------------------------------------------------------------------


def test_changing_only_the_end_or_the_jitter_keeps_an_intervals_grid(world: World) -> None:
    made = world.created(schedule={"kind": "interval", "every_seconds": 86400})  # daily from 09:00
    world.clock.set(at(6 * 3600 + 37 * 60))  # 15:37
    response = world.client.patch(f"/api/schedules/{made['id']}", json={"ends_at": "2026-01-20T00:00:00Z"},
                                  headers=world.h())
    assert response.json()["next_run_at"] == z(at(86400))  # still 09:00 tomorrow, not 15:37
    response = world.client.patch(f"/api/schedules/{made['id']}", json={"jitter_seconds": 60}, headers=world.h())
    assert response.json()["next_occurrence_at"] == z(at(86400))


def test_an_agent_cannot_time_the_end_of_a_pause_of_a_task_in_error(world: World) -> None:
    made = world.created()
    with world.core.db.write() as s:
        s.get(ScheduledTask, made["id"]).status = "error"
    response = world.client.post(f"/agent-api/schedules/{made['id']}/pause", json={"until": "2026-01-05T10:00:00Z"},
                                 headers=agent_headers(world))
    assert response.status_code == 403 and "only a user can bring it back" in error_of(response)["message"]
    assert row(world, made["id"]).status == "error"


def test_a_user_amending_an_agents_pause_makes_it_the_users(world: World) -> None:
    made = world.created()
    agent = agent_headers(world)
    world.client.post(f"/agent-api/schedules/{made['id']}/pause", json={"note": "agent's"}, headers=agent)
    world.client.post(f"/api/schedules/{made['id']}/pause", json={"note": "mine now"}, headers=world.h())
    assert row(world, made["id"]).paused_by == "user"
    response = world.client.post(f"/agent-api/schedules/{made['id']}/pause", json={"until": "2026-01-05T10:00:00Z"},
                                 headers=agent)
    assert response.status_code == 403


def test_a_skipped_occurrence_is_never_shown_as_next_again(world: World) -> None:
    made = world.created(schedule=HOURLY_CRON)
    world.client.post(f"/api/schedules/{made['id']}/skip-next", headers=world.h())
    world.client.post(f"/api/schedules/{made['id']}/pause", headers=world.h())
    resumed = world.client.post(f"/api/schedules/{made['id']}/resume", headers=world.h()).json()
    assert resumed["next_run_at"] == z(at(2 * 3600))  # 10:00 was skipped: 11:00 is next
    patched = world.client.patch(f"/api/schedules/{made['id']}", json={"schedule": HOURLY_CRON}, headers=world.h())
    assert patched.json()["next_run_at"] == z(at(2 * 3600))
    again = world.client.post(f"/api/schedules/{made['id']}/skip-next", headers=world.h())
    assert again.status_code == 200 and again.json()["next_run_at"] == z(at(3 * 3600))


@pytest.mark.parametrize("field", ["starts_at", "ends_at"])
def test_instants_a_century_away_are_a_400(world: World, field: str) -> None:
    before = table_contents(world.core)
    response = world.create(schedule=HOURLY_CRON, **{field: "9999-12-31T23:30:00Z"})
    assert response.status_code == 400 and error_of(response)["message"].startswith(f"{field}: is more than 100")
    assert table_contents(world.core) == before
