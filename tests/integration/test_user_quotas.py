"""Per-user limits (CHATCRON_MAX_PROJECTS_PER_USER, CHATCRON_MAX_TASKS_PER_USER), on SQLite and
PostgreSQL: over HTTP (user and agent API), from concurrent creators, and from the admin CLI.

A user's schedules are those in the projects they own, whoever created them; more projects give
no more schedules. Over a limit: 409 ``quota_exceeded`` naming the limit and its setting, and
nothing written.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlmodel import func, select

from app.core import auth, chats, grants, projects
from app.core.config import Settings
from app.core.context import Core
from app.core.db import Database
from app.core.errors import QuotaExceeded
from app.core.grants import Scope
from app.core.models import Project
from app.schedules.model import ScheduledTask
from app.schedules.service import Actor, TaskService
from tests.conftest import make_core, with_settings
from tests.integration.apiclient import add_user, bearer, client_for, row_counts
from tests.integration.managecli import Cli, ok, refused

HOURLY = {"kind": "interval", "every_seconds": 3600}


def task_body(name: str) -> dict[str, Any]:
    return {"name": name, "prompt": "Report.", "schedule": HOURLY}


@dataclasses.dataclass
class Place:
    core: Core
    client: TestClient
    tokens: dict[str, str]

    def new_project(self, who: str, name: str) -> Any:
        return self.client.post("/api/projects", json={"name": name}, headers=bearer(self.tokens[who]))

    def project(self, who: str, name: str) -> int:
        response = self.new_project(who, name)
        assert response.status_code == 201, response.text
        return response.json()["id"]

    def chat(self, who: str, project_id: int) -> int:
        response = self.client.post(f"/api/projects/{project_id}/chats", json={"title": "c"},
                                    headers=bearer(self.tokens[who]))
        assert response.status_code == 201, response.text
        return response.json()["id"]

    def new_task(self, who: str, chat_id: int, name: str) -> Any:
        return self.client.post(f"/api/chats/{chat_id}/schedules", json=task_body(name),
                                headers=bearer(self.tokens[who]))


@pytest.fixture
def place_with(settings: Settings) -> Iterator[Callable[..., Place]]:
    opened: list[tuple[Core, TestClient]] = []

    def build(**limits: int) -> Place:
        core = make_core(with_settings(settings, **limits))
        tokens = {who: auth.create_api_token(core.db, core.clock, add_user(core, f"{who}@example.com").id)
                  for who in ("alice", "bob")}
        client = client_for(core)
        opened.append((core, client))
        return Place(core, client, tokens)

    yield build
    for core, client in opened:
        client.close()
        core.prompts.shutdown(2.0)
        core.db.dispose()


def quota_error(response: Any, setting: str, limit: int) -> str:
    assert response.status_code == 409, response.text
    error = response.json()["error"]
    assert error["code"] == "quota_exceeded", error
    assert setting in error["message"] and f"limit {limit}" in error["message"], error
    return error["message"]


def count(core: Core, model: type) -> int:
    with core.db.read() as s:
        return s.exec(select(func.count()).select_from(model)).one()


# -- projects ------------------------------------------------------------------------------------


def test_the_project_over_the_users_limit_is_409_naming_the_setting_and_writes_nothing(
        place_with: Callable[..., Place]) -> None:
    p = place_with(max_projects_per_user=2)
    p.project("alice", "One")
    p.project("alice", "Two")
    before, folders = row_counts(p.core), set(p.core.settings.workspaces_dir.iterdir())
    message = quota_error(p.new_project("alice", "Three"), "CHATCRON_MAX_PROJECTS_PER_USER", 2)
    assert "already has 2 projects" in message
    assert row_counts(p.core) == before
    assert set(p.core.settings.workspaces_dir.iterdir()) == folders  # no workspace for a refused project
    assert p.new_project("bob", "Bob's").status_code == 201  # the limit is per user


def test_a_project_limit_of_zero_disables_it(place_with: Callable[..., Place]) -> None:
    p = place_with(max_projects_per_user=0)
    assert [p.new_project("alice", f"P{i}").status_code for i in range(4)] == [201] * 4


def test_concurrent_project_creations_stop_exactly_at_the_limit(place_with: Callable[..., Place]) -> None:
    p = place_with(max_projects_per_user=3)
    alice = auth.find_user(p.core.db, "alice@example.com")
    limit = p.core.settings.max_projects_per_user

    def create(i: int) -> str:
        try:
            projects.create_project(p.core.db, p.core.clock, p.core.settings.workspaces_dir, f"P{i}", alice,
                                    max_projects=limit)
        except QuotaExceeded:
            return "refused"
        return "created"

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(create, range(10)))
    assert sorted(outcomes).count("created") == 3
    assert count(p.core, Project) == 3


# -- schedules -----------------------------------------------------------------------------------


def test_schedules_are_counted_over_all_the_projects_the_user_owns(place_with: Callable[..., Place]) -> None:
    p = place_with(max_tasks_per_user=3)  # the per-project quota (50) is far away
    first, second = p.project("alice", "One"), p.project("alice", "Two")
    chat_one, chat_two = p.chat("alice", first), p.chat("alice", second)
    for chat_id, name in ((chat_one, "a"), (chat_one, "b"), (chat_two, "c")):
        assert p.new_task("alice", chat_id, name).status_code == 201
    before = row_counts(p.core)
    message = quota_error(p.new_task("alice", chat_two, "d"), "CHATCRON_MAX_TASKS_PER_USER", 3)
    assert "already has 3 schedules" in message
    third = p.project("alice", "Three")  # a new project gives no new schedules
    quota_error(p.new_task("alice", p.chat("alice", third), "e"), "CHATCRON_MAX_TASKS_PER_USER", 3)
    assert count(p.core, ScheduledTask) == before["scheduled_tasks"] == 3
    bobs = p.chat("bob", p.project("bob", "Bob's"))
    assert p.new_task("bob", bobs, "bob's").status_code == 201  # another owner has a share of his own


def test_a_members_and_an_agents_schedules_count_for_the_projects_owner(place_with: Callable[..., Place]) -> None:
    p = place_with(max_tasks_per_user=2)
    core = p.core
    project_id = p.project("alice", "Shared")
    bob = auth.find_user(core.db, "bob@example.com")
    projects.grant_access(core.db, core.clock, bob, project_id)
    chat_id = p.chat("alice", project_id)
    chats.update_chat(core.db, core.clock, auth.find_user(core.db, "alice@example.com"), chat_id,
                      skills=["scheduled-tasks"])
    assert p.new_task("bob", chat_id, "by a member").status_code == 201
    grant, _ = grants.issue_grant(core.db, core.clock, 3600, Scope.MANAGE,
                                  auth.find_user(core.db, "alice@example.com").id, chat_id, project_id)
    agent = p.client.post("/agent-api/schedules", json=task_body("by an agent"), headers=bearer(grant))
    assert agent.status_code == 201, agent.text  # a draft counts too
    before = row_counts(core)
    quota_error(p.client.post("/agent-api/schedules", json=task_body("one more"), headers=bearer(grant)),
                "CHATCRON_MAX_TASKS_PER_USER", 2)
    quota_error(p.new_task("bob", chat_id, "bob again"), "CHATCRON_MAX_TASKS_PER_USER", 2)
    quota_error(p.new_task("alice", chat_id, "alice"), "CHATCRON_MAX_TASKS_PER_USER", 2)
    assert row_counts(core) == before


def test_concurrent_schedule_creations_in_many_projects_stop_exactly_at_the_limit(
        place_with: Callable[..., Place]) -> None:
    p = place_with(max_tasks_per_user=4)
    alice = auth.find_user(p.core.db, "alice@example.com")
    chat_ids = [p.chat("alice", p.project("alice", f"P{i}")) for i in range(10)]
    service = TaskService(p.core.db, p.core.clock, p.core.settings)

    def create(chat_id: int) -> str:
        try:
            service.create(Actor(alice), chat_id, task_body(f"in {chat_id}"))
        except QuotaExceeded:
            return "refused"
        return "created"

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(create, chat_ids))
    assert outcomes.count("created") == 4
    assert count(p.core, ScheduledTask) == 4


def test_a_task_limit_of_zero_disables_it(place_with: Callable[..., Place]) -> None:
    p = place_with(max_tasks_per_user=0, max_tasks_per_project=0)
    chat_id = p.chat("alice", p.project("alice", "One"))
    assert [p.new_task("alice", chat_id, f"t{i}").status_code for i in range(5)] == [201] * 5


# -- the admin CLI -------------------------------------------------------------------------------


@pytest.mark.slow  # admin CLI processes
def test_cli_create_project_over_the_limit_exits_1_naming_the_setting(cli: Cli) -> None:
    limited = dataclasses.replace(cli, env={**cli.env, "CHATCRON_MAX_PROJECTS_PER_USER": "1"})
    ok(limited.run("migrate"))
    ok(limited.run("create-user", "--email", "carol@example.com", "--password", "password-carol"))
    first = limited.run("create-project", "--name", "One", "--owner", "carol@example.com")
    assert ok(first).isdigit()
    second = limited.run("create-project", "--name", "Two", "--owner", "carol@example.com")
    refused(second, "CHATCRON_MAX_PROJECTS_PER_USER", "limit 1")
    store = Database(limited.url)
    try:
        with store.engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM projects")).scalar_one() == 1
    finally:
        store.dispose()
