"""Budgets (SPEC §15) through both HTTP APIs, /metrics and the admin CLI, on SQLite and PostgreSQL:
per-fire caps on a task, its spend today and in total, and bad input (400 naming the field, or
exit 2, with nothing written)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from app.core.clock import FakeClock
from app.core.context import Core
from app.core.db import Database
from app.core.grants import Scope
from app.core.models import Project
from app.core.ports import Usage
from app.core.spend import add_spend_in
from tests.integration.apiclient import bearer, client_for, table_contents
from tests.integration.managecli import Cli
from tests.integration.test_schedules_api import World, body, build_world, error_of
from tests.store import issue_grant


@pytest.fixture
def world(clocked_core: Core, fake_clock: FakeClock) -> Iterator[World]:
    with client_for(clocked_core) as client:
        yield build_world(clocked_core, fake_clock, client)


def agent_headers(w: World) -> dict[str, str]:
    token, _ = issue_grant(w.core.db, w.clock, 3600, Scope.MANAGE, w.alice.id, w.chat, w.project)
    return bearer(token)


BAD: list[tuple[str, str, str]] = [  # (the field's raw JSON value, field, words of the message)
    ("-5", "max_tokens_per_fire", "from 1"),
    ("0", "max_tokens_per_fire", "from 1"),
    ("1.5", "max_tokens_per_fire", "whole number"),
    ('"1000"', "max_tokens_per_fire", "whole number"),
    ("true", "max_tokens_per_fire", "whole number"),
    ("10000000000000", "max_tokens_per_fire", "1,000,000,000,000"),
    ("-0.5", "max_cost_per_fire_usd", "above 0"),
    ("0", "max_cost_per_fire_usd", "above 0"),
    ("NaN", "max_cost_per_fire_usd", "above 0"),
    ("Infinity", "max_cost_per_fire_usd", "above 0"),
    ("1e400", "max_cost_per_fire_usd", "above 0"),
    ("5000000", "max_cost_per_fire_usd", "at most 1,000,000"),
    ('"0.5"', "max_cost_per_fire_usd", "US dollars"),
    ("1" + "0" * 400, "max_cost_per_fire_usd", "at most 1,000,000"),
    ("1" + "0" * 400, "max_tokens_per_fire", "1,000,000,000,000"),
]


def raw_body(field: str, value: str) -> str:
    """A create body with ``field`` set to a raw JSON token (NaN and Infinity are not JSON, but
    Python's parser, and so the API's, reads them)."""
    text = json.dumps(body())
    return text[:-1] + f', "{field}": {value}}}'


@pytest.mark.parametrize(("value", "field", "words"), BAD)
def test_bad_caps_are_a_400_naming_the_field_and_change_nothing(world: World, value: str, field: str,
                                                                words: str) -> None:
    task_id = world.created()["id"]
    for method, path, headers in (("post", f"/api/chats/{world.chat}/schedules", world.h()),
                                  ("post", "/agent-api/schedules", agent_headers(world)),
                                  ("patch", f"/api/schedules/{task_id}", world.h())):
        snapshot = table_contents(world.core)
        content = raw_body(field, value) if method == "post" else f'{{"{field}": {value}}}'
        response = world.client.request(method.upper(), path, content=content,
                                        headers={**headers, "Content-Type": "application/json"})
        assert response.status_code == 400, response.text
        error = error_of(response)
        assert error["message"].startswith(f"{field}:") and words in error["message"], error
        assert table_contents(world.core) == snapshot


def test_caps_are_kept_shown_and_cleared_and_spend_is_on_every_task_object(world: World) -> None:
    created = world.created(max_tokens_per_fire=20_000, max_cost_per_fire_usd=0.75)
    task_id = created["id"]
    assert (created["max_tokens_per_fire"], created["max_cost_per_fire_usd"]) == (20_000, 0.75)
    assert created["usage_today"] == {"tokens": 0, "cost_usd": 0} == created["usage_total"]
    with world.core.db.write() as s:
        add_spend_in(s, world.clock.now(), world.project, task_id, Usage(input_tokens=900, output_tokens=100,
                                                                            cost_usd=0.25))
        add_spend_in(s, world.clock.now().replace(day=1), world.project, task_id, Usage(output_tokens=5))
        add_spend_in(s, world.clock.now(), world.project, 0, Usage(input_tokens=7))  # a person's turn
    got = world.client.get(f"/api/schedules/{task_id}", headers=world.h()).json()
    assert got["usage_today"] == {"tokens": 1_000, "cost_usd": 0.25}
    assert got["usage_total"] == {"tokens": 1_005, "cost_usd": 0.25}
    listed = world.client.get(f"/api/chats/{world.chat}/schedules", headers=world.h()).json()["schedules"]
    everything = world.client.get("/api/schedules", headers=world.h()).json()["schedules"]
    mine = world.client.get(f"/agent-api/schedules/{task_id}", headers=agent_headers(world)).json()
    for shown in (listed[0], everything[0], mine):
        assert shown["usage_today"]["tokens"] == 1_000 and shown["usage_total"]["tokens"] == 1_005
    patched = world.client.patch(f"/api/schedules/{task_id}", json={"max_tokens_per_fire": None},
                                 headers=world.h()).json()
    assert (patched["max_tokens_per_fire"], patched["max_cost_per_fire_usd"]) == (None, 0.75)
    refused = world.client.patch(f"/agent-api/schedules/{task_id}", json={"max_cost_per_fire_usd": 100},
                                 headers=agent_headers(world))
    assert refused.status_code == 403  # an agent may only rename: it never lifts its own cap

    with world.core.db.write() as s:
        s.get(Project, world.project).daily_token_budget = 50_000
    metrics = world.client.get("/metrics").text
    assert f'chatcron_project_tokens_today{{project="{world.project}"}} 1007.0' in metrics
    assert f'chatcron_task_tokens_total{{task="{task_id}"}} 1005.0' in metrics
    assert f'chatcron_project_daily_token_budget{{project="{world.project}"}} 50000.0' in metrics


def test_set_budget_sets_shows_and_clears_and_refuses_bad_values_with_exit_2(cli: Cli, store: Database) -> None:
    from app.core import auth, projects
    from app.core.clock import SystemClock

    assert cli.run("migrate").code == 0
    owner = auth.create_user(store, SystemClock(), "owner@example.com", "password-owner")
    project = projects.create_project(store, SystemClock(), cli.data_dir / "workspaces", "Ops", owner).id
    pid = str(project)
    shown = cli.run("set-budget", "--project", pid, "--daily-tokens", "50000", "--daily-cost-usd", "2.5")
    assert shown.code == 0, shown
    assert shown.out.strip() == (f"project {project}: daily budget 50,000 tokens and $2.50; spent today (UTC) "
                                 "0 tokens, $0.00")
    for flag, value, words in (("--daily-tokens", "-1", "from 1"), ("--daily-tokens", "1e30", "a number"),
                               ("--daily-tokens", "10000000000000", "1,000,000,000,000"),
                               ("--daily-cost-usd", "nan", "above 0"), ("--daily-cost-usd", "inf", "above 0"),
                               ("--daily-cost-usd", "-3", "above 0"), ("--daily-cost-usd", "lots", "a number")):
        refused = cli.run("set-budget", "--project", pid, flag, value)
        assert refused.code == 2 and f"argument {flag}:" in refused.err and words in refused.err, refused
        assert refused.out == ""
    with store.read() as s:
        row = s.get(Project, project)
        assert (row.daily_token_budget, row.daily_cost_budget_usd) == (50_000, 2.5)
    cleared = cli.run("set-budget", "--project", pid, "--daily-tokens", "none")
    assert cleared.code == 0 and "daily budget $2.50;" in cleared.out, cleared
    unknown = cli.run("set-budget", "--project", "987654", "--daily-tokens", "5")
    assert unknown.code == 1 and unknown.err.strip() == "error: no project with id 987654", unknown
