"""SPEC §20 exclusions through both HTTP APIs and the scheduler loop, in-process on a FakeClock
(2026-01-05 09:00 UTC, a Monday), on SQLite and PostgreSQL: an excluded day's occurrence is never
fired nor recorded, next_run_at and the preview skip it, bad input is a 400 naming the field with
nothing written."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest

from app.core.clock import FakeClock
from app.core.context import Core
from tests.integration.apiclient import client_for, table_contents
from tests.integration.test_schedule_semantics_api import agent_headers, runs_of, tick
from tests.integration.test_scheduler_loop import settle
from tests.integration.test_schedules_api import World, body, build_world, error_of, z

WEEKDAYS_9_BERLIN = {"kind": "cron", "cron": "0 9 * * 1-5", "timezone": "Europe/Berlin"}
MONDAYS_9_NEW_YORK = {"kind": "cron", "cron": "0 9 * * 1", "timezone": "America/New_York"}


@pytest.fixture
def world(clocked_core: Core, fake_clock: FakeClock) -> Iterator[World]:
    with client_for(clocked_core) as client:
        yield build_world(clocked_core, fake_clock, client)


def utc(*args: int) -> dt.datetime:
    return dt.datetime(*args, tzinfo=dt.UTC)


def test_a_holiday_and_a_date_are_skipped_by_the_loop_and_never_recorded(world: World) -> None:
    made = world.created(schedule=WEEKDAYS_9_BERLIN, holidays={"country": "DE", "subdivision": "BY"},
                         exclude_dates=["2026-01-08"])
    assert (made["exclude_dates"], made["holidays"]) == (["2026-01-08"], {"country": "DE", "subdivision": "BY"})
    # Tuesday 6 January is Epiphany in Bavaria, Thursday the 8th a date of the user's: Wednesday, then Friday
    assert made["next_run_at"] == z(utc(2026, 1, 7, 8))
    for day in (6, 7, 8, 9):
        world.clock.set(utc(2026, 1, day, 8, 0, 30))
        tick(world)
        settle(world.core)
    fired = [r.occurrence_at for r in runs_of(world, made["id"])]
    assert fired == [utc(2026, 1, 7, 8), utc(2026, 1, 9, 8)]  # no run, no missed or skipped record for 6th or 8th
    got = world.client.get(f"/api/schedules/{made['id']}", headers=world.h()).json()
    assert got["next_run_at"] == z(utc(2026, 1, 12, 8))


def test_the_preview_shows_what_is_excluded_and_why(world: World) -> None:
    world.clock.set(utc(2026, 1, 10))
    shown = world.client.post("/api/schedules/preview", headers=world.h(), json={
        "schedule": MONDAYS_9_NEW_YORK, "holidays": {"country": "US"}, "exclude_dates": ["2026-02-02"]})
    assert shown.status_code == 200, shown.text
    preview = shown.json()
    assert [f["local"] for f in preview["fires"]] == [
        "2026-01-12T09:00:00-05:00", "2026-01-26T09:00:00-05:00", "2026-02-09T09:00:00-05:00",
        "2026-02-23T09:00:00-05:00", "2026-03-02T09:00:00-05:00"]
    assert [(x["local"], x["reason"]) for x in preview["excluded"]] == [
        ("2026-01-19T09:00:00-05:00", "Martin Luther King Jr. Day"), ("2026-02-02T09:00:00-05:00", "excluded date"),
        ("2026-02-16T09:00:00-05:00", "Washington's Birthday")]
    plain = world.client.post("/api/schedules/preview", headers=world.h(), json={"schedule": MONDAYS_9_NEW_YORK})
    assert plain.json()["excluded"] == [] and len(plain.json()["fires"]) == 5


def test_changing_the_exclusions_moves_the_next_fire_both_ways(world: World) -> None:
    made = world.created(schedule=WEEKDAYS_9_BERLIN)
    assert made["next_run_at"] == z(utc(2026, 1, 6, 8))
    path = f"/api/schedules/{made['id']}"
    moved = world.client.patch(path, json={"holidays": "DE-BY"}, headers=world.h())
    assert moved.status_code == 200, moved.text
    assert (moved.json()["next_run_at"], moved.json()["holidays"]) == (z(utc(2026, 1, 7, 8)),
                                                                      {"country": "DE", "subdivision": "BY"})
    back = world.client.patch(path, json={"holidays": None, "exclude_dates": ["2026-01-06"]}, headers=world.h())
    assert back.json()["next_run_at"] == z(utc(2026, 1, 7, 8)) and back.json()["holidays"] is None
    cleared = world.client.patch(path, json={"exclude_dates": []}, headers=world.h())
    assert cleared.json()["next_run_at"] == z(utc(2026, 1, 6, 8)) and cleared.json()["exclude_dates"] == []


BAD = [
    ({"exclude_dates": ["2026-13-01"]}, "exclude_dates", "is not a date"),
    ({"exclude_dates": "2026-01-06"}, "exclude_dates", "must be a list"),
    ({"holidays": {"country": "Atlantis"}}, "holidays.country", "is not a country code"),
    ({"holidays": {"country": "DE", "subdivision": "XX"}}, "holidays.subdivision", "is not a subdivision of DE"),
    ({"schedule": {"kind": "interval", "every_seconds": 3600}, "exclude_dates": ["2026-01-06"]}, "exclude_dates",
     "only a cron schedule"),
    ({"schedule": {"kind": "once", "at": "2026-01-06T09:00:00Z"}, "holidays": "US"}, "holidays",
     "only a cron schedule"),
    # 6 January at 09:00 every year, and 6 January is a holiday in Bavaria: it would never fire
    ({"schedule": {"kind": "cron", "cron": "0 9 6 1 *", "timezone": "Europe/Berlin"}, "holidays": "DE-BY"},
     "holidays", "excludes every occurrence"),
    # the active window holds one weekday, and it is excluded
    ({"ends_at": "2026-01-07T00:00:00Z", "exclude_dates": ["2026-01-06"]}, "exclude_dates",
     "excludes every occurrence of the schedule before ends_at"),
]


@pytest.mark.parametrize(("changes", "field", "words"), BAD)
def test_bad_exclusions_are_a_400_naming_the_field_and_change_nothing(world: World, changes: dict[str, Any],
                                                                       field: str, words: str) -> None:
    changes = {"schedule": WEEKDAYS_9_BERLIN, **changes}
    for path, headers in ((f"/api/chats/{world.chat}/schedules", world.h()),
                          ("/agent-api/schedules", agent_headers(world))):
        snapshot = table_contents(world.core)
        response = world.client.post(path, json=body(**changes), headers=headers)
        assert response.status_code == 400, response.text
        assert error_of(response)["message"].startswith(f"{field}:") and words in error_of(response)["message"]
        assert table_contents(world.core) == snapshot
    made = world.created(schedule=WEEKDAYS_9_BERLIN)
    snapshot = table_contents(world.core)
    patched = world.client.patch(f"/api/schedules/{made['id']}", json=changes, headers=world.h())
    assert patched.status_code == 400 and error_of(patched)["message"].startswith(f"{field}:")
    assert table_contents(world.core) == snapshot


def test_an_agent_may_draft_a_task_with_exclusions(world: World) -> None:
    drafted = world.client.post("/agent-api/schedules", headers=agent_headers(world), json=body(
        schedule=WEEKDAYS_9_BERLIN, holidays={"country": "DE", "subdivision": None}))
    assert drafted.status_code == 201, drafted.text
    assert (drafted.json()["status"], drafted.json()["holidays"]) == ("draft", {"country": "DE", "subdivision": None})
