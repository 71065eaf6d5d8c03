"""``POST /api/schedules/parse`` and its agent API twin (SPEC §20) over HTTP, on SQLite and PostgreSQL.

The core runs on a FakeClock (2026-01-05 09:00 UTC, a Monday: 10:00 in Berlin, 04:00 in New York).
A phrase is read back and nothing is stored; what the read-back says is what a task created from
it does.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import select

from app.core import auth, chats, projects
from app.core.clock import FakeClock
from app.core.context import Core
from app.core.grants import Scope
from app.schedules.model import ScheduledTask
from tests.conftest import database_core
from tests.integration.apiclient import add_user, bearer, client_for, table_contents
from tests.store import issue_grant

KEYS = {"schedule", "exclude_dates", "holidays", "canonical", "description", "next", "fires", "excluded"}


@dataclasses.dataclass
class World:
    core: Core
    client: TestClient
    token: str
    grant: str
    chat: int

    def parse(self, text: Any, timezone: Any = "Europe/Berlin", agent: bool = False, **extra: Any) -> Any:
        path, token = ("/agent-api/schedules/parse", self.grant) if agent else ("/api/schedules/parse", self.token)
        body = {"text": text, "timezone": timezone, **extra}
        return self.client.post(path, json={k: v for k, v in body.items() if v is not ...}, headers=bearer(token))

    def task_count(self) -> int:
        with self.core.db.read() as s:
            return len(list(s.exec(select(ScheduledTask))))


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with database_core(request, tmp_path_factory, "parse", FakeClock()) as core, client_for(core) as client:
        db, clock = core.db, core.clock
        alice = add_user(core, "alice@example.com")
        project = projects.create_project(db, clock, core.settings.workspaces_dir, "Alice's", alice)
        chat = chats.create_chat(db, clock, alice, project.id, "Plans")
        grant, _ = issue_grant(db, clock, core.settings.grant_ttl_seconds, Scope.MANAGE, alice.id, chat.id, project.id)
        yield World(core, client, auth.create_api_token(db, clock, alice.id), grant, chat.id)


def error_of(response: Any) -> dict[str, str]:
    payload = response.json()
    assert set(payload) == {"error"} and set(payload["error"]) == {"code", "message"}, payload
    return payload["error"]


def test_a_calendar_phrase_reads_back_its_cron_english_and_next_five(world: World) -> None:
    before = table_contents(world.core)
    response = world.parse("first Monday of every month at 9am")
    assert response.status_code == 200, response.text
    answer = response.json()
    assert set(answer) == KEYS
    assert answer["schedule"] == {"kind": "cron", "cron": "0 9 * * 1#1", "timezone": "Europe/Berlin"}
    assert (answer["exclude_dates"], answer["holidays"], answer["excluded"]) == ([], None, [])
    assert answer["canonical"] == "0 9 * * 1#1"
    assert "first Monday of the month" in answer["description"]
    # 09:00 on Monday 5 January has gone by (it is 10:00 in Berlin); summer time from 29 March
    assert answer["next"] == ["2026-02-02T08:00:00Z", "2026-03-02T08:00:00Z", "2026-04-06T07:00:00Z",
                              "2026-05-04T07:00:00Z", "2026-06-01T07:00:00Z"]
    assert [f["local"] for f in answer["fires"]][1:3] == ["2026-03-02T09:00:00+01:00", "2026-04-06T09:00:00+02:00"]
    assert table_contents(world.core) == before


def test_exclusions_are_returned_and_their_occurrences_listed(world: World) -> None:
    response = world.parse("every weekday at 9 excluding US holidays and 2026-01-07", "America/New_York")
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["schedule"] == {"kind": "cron", "cron": "0 9 * * 1-5", "timezone": "America/New_York"}
    assert (answer["exclude_dates"], answer["holidays"]) == (["2026-01-07"], {"country": "US", "subdivision": None})
    assert answer["next"] == ["2026-01-05T14:00:00Z", "2026-01-06T14:00:00Z", "2026-01-08T14:00:00Z",
                              "2026-01-09T14:00:00Z", "2026-01-12T14:00:00Z"]
    assert answer["excluded"] == [{"utc": "2026-01-07T14:00:00Z", "local": "2026-01-07T09:00:00-05:00",
                                   "reason": "excluded date", "day_count": 1}]


@pytest.mark.parametrize(("text", "schedule", "canonical", "first"), [
    ("every 90 minutes", {"kind": "interval", "every_seconds": 5400}, "every 5400 s", "2026-01-05T10:30:00Z"),
    ("on 2026-03-01 at 9", {"kind": "once", "at": "2026-03-01T08:00:00Z"}, "once at 2026-03-01T09:00:00+01:00",
     "2026-03-01T08:00:00Z"),
    ("in 2 hours", {"kind": "once", "at": "2026-01-05T11:00:00Z"}, "once at 2026-01-05T12:00:00+01:00",
     "2026-01-05T11:00:00Z"),
    ("the last day of the month", {"kind": "cron", "cron": "0 9 L * *", "timezone": "Europe/Berlin"}, "0 9 L * *",
     "2026-01-31T08:00:00Z"),
], ids=["interval", "on-date", "in-hours", "last-day"])
def test_other_kinds_read_back(world: World, text: str, schedule: dict[str, Any], canonical: str,
                               first: str) -> None:
    answer = world.parse(text).json()
    assert (answer["schedule"], answer["canonical"], answer["next"][0]) == (schedule, canonical, first)


@pytest.mark.parametrize(("body", "field", "needle"), [
    ({"text": "fortnightly"}, "text", '"fortnightly" is not understood'),
    ({"text": "every day at 25:00"}, "text", '"25:00" is not a time'),
    ({"text": "the sixth Monday of the month"}, "text", '"the sixth Monday": a month has at most five Mondays'),
    ({"text": "on 2025-12-24 at 9"}, "text", '"on 2025-12-24 at 9" is in the past'),
    ({"text": "on 2026-03-29 at 2:30"}, "text", "2026-03-29 02:30 does not exist in Europe/Berlin"),
    ({"text": "every 2 days excluding 2026-12-24"}, "text", '"excluding 2026-12-24" needs a schedule with local'),
    ({"text": "every day excluding XX holidays"}, "text", "XX is not a country"),
    ({"text": ""}, "text", "is empty"),
    ({"text": 42}, "text", "is empty"),
    ({"timezone": "UTC", "text": ...}, "text", "is empty"),
    ({"text": "every day", "timezone": "Mars/Olympus_Mons"}, "timezone", "Mars/Olympus_Mons"),
    ({"text": "every day", "timezone": ...}, "timezone", "IANA zone name"),
], ids=["not-understood", "bad-time", "sixth-monday", "past", "dst-gap", "exclusions-on-interval", "bad-country",
        "empty", "not-text", "no-text", "bad-zone", "no-zone"])
def test_a_bad_phrase_is_400_naming_the_part_and_nothing_is_created(world: World, body: dict[str, Any], field: str,
                                                                     needle: str) -> None:
    before = table_contents(world.core)
    for agent in (False, True):
        response = world.parse(**{"timezone": "Europe/Berlin", **body}, agent=agent)
        assert response.status_code == 400, response.text
        error = error_of(response)
        assert error["code"] == "invalid"
        assert error["message"].startswith(f"{field}: ") and needle in error["message"], error["message"]
    assert table_contents(world.core) == before and world.task_count() == 0


def test_an_unknown_field_is_400_and_a_missing_token_401(world: World) -> None:
    response = world.parse("every day", extra="x")
    assert response.status_code == 400 and "extra: unknown field" in error_of(response)["message"]
    response = world.client.post("/api/schedules/parse", json={"text": "every day", "timezone": "UTC"})
    assert response.status_code == 401


def test_the_agent_api_reads_the_same(world: World) -> None:
    user, agent = (world.parse("every Monday and Thursday at 18:00", agent=a) for a in (False, True))
    assert agent.status_code == 200, agent.text
    assert agent.json() == user.json()
    assert agent.json()["schedule"]["cron"] == "0 18 * * 1,4"


def test_a_task_created_from_the_read_back_fires_as_it_said(world: World) -> None:
    """The answer is what a create takes as it is; the task's next run is the read-back's first."""
    answer = world.parse("every weekday at 9 excluding 2026-01-05 and 2026-01-06").json()
    body = {"name": "Stand-up", "prompt": "Post the stand-up notes.", "schedule": answer["schedule"],
            "exclude_dates": answer["exclude_dates"], "holidays": answer["holidays"]}
    created = world.client.post(f"/api/chats/{world.chat}/schedules", json=body, headers=bearer(world.token))
    assert created.status_code == 201, created.text
    task = created.json()
    try:
        assert task["exclude_dates"] == ["2026-01-05", "2026-01-06"]
        next_run = dt.datetime.fromisoformat(task["next_run_at"].replace("Z", "+00:00"))
        assert next_run == dt.datetime.fromisoformat(answer["next"][0].replace("Z", "+00:00"))
        assert answer["next"][0] == "2026-01-07T08:00:00Z"
    finally:
        world.client.delete(f"/api/schedules/{task['id']}", headers=bearer(world.token))
