"""Project settings and roles (SPEC §18) through the HTTP API and the admin CLI, on SQLite and
PostgreSQL: owners and members, the settings object with write-only secrets, partial changes,
bad input (400 naming the field, nothing written), the last owner, the audit record, the admin's
people API."""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from sqlmodel import select

from app.core import auth, chats, projects
from app.core.clock import FakeClock, SystemClock
from app.core.context import Core
from app.core.db import Database
from app.core.grants import Scope
from app.core.models import Event, EventType, Grant, Membership, Project, ProjectAudit
from tests.integration.apiclient import add_user, bearer, client_for, table_contents
from tests.integration.managecli import Cli
from tests.integration.test_schedules_api import World, build_world, error_of
from tests.store import issue_grant

SECRET_VALUE = "sk-test-0123456789-abcd"  # what no answer, audit record or log line may hold
TOKEN_VALUE = "tok-9876543210-wxyz"


@pytest.fixture
def world(clocked_core: Core, fake_clock: FakeClock) -> Iterator[World]:
    with client_for(clocked_core) as client:
        yield build_world(clocked_core, fake_clock, client)


def settings_url(w: World, pid: int | None = None) -> str:
    return f"/api/projects/{pid or w.project}/settings"


def members_url(w: World, pid: int | None = None) -> str:
    return f"/api/projects/{pid or w.project}/members"


def patch(w: World, body: Any, who: str = "alice") -> Any:
    return w.client.patch(settings_url(w), json=body, headers=w.h(who))


def join(w: World, who: str = "bob", role: str = "member") -> dict[str, Any]:
    response = w.client.post(members_url(w), json={"email": f"{who}@example.com", "role": role}, headers=w.h())
    assert response.status_code == 201, response.text
    return response.json()


def audit_rows(w: World) -> list[ProjectAudit]:
    with w.core.db.read() as s:
        return list(s.exec(select(ProjectAudit).where(ProjectAudit.project_id == w.project).order_by(ProjectAudit.id)))


# -- roles -------------------------------------------------------------------------------------------


def test_the_creator_is_an_owner_members_read_and_only_owners_change(world: World) -> None:
    w = world
    mine = w.client.get(settings_url(w), headers=w.h()).json()
    assert (mine["role"], mine["can_edit"]) == ("owner", True)
    assert set(mine) >= {"agent", "network", "budget", "role"}
    assert w.client.get(settings_url(w), headers=w.h("bob")).status_code == 404  # no existence leak
    join(w)
    theirs = w.client.get(settings_url(w), headers=w.h("bob")).json()
    assert (theirs["role"], theirs["can_edit"]) == ("member", False)
    before = table_contents(w.core)
    refused = patch(w, {"agent": {"model": "gpt-x"}}, who="bob")
    assert refused.status_code == 403 and error_of(refused)["code"] == "forbidden"
    assert w.client.get(f"/api/projects/{w.project}/audit", headers=w.h("bob")).status_code == 403
    assert table_contents(w.core) == before
    members = w.client.get(members_url(w), headers=w.h("bob")).json()
    assert [(m["email"], m["role"]) for m in members] == [("alice@example.com", "owner"), ("bob@example.com", "member")]


def test_a_server_admin_acts_as_an_owner_in_every_project(world: World) -> None:
    w = world
    root = add_user(w.core, "root@example.com", is_admin=True)
    headers = bearer(auth.create_api_token(w.core.db, w.clock, root.id))
    shown = w.client.get(settings_url(w), headers=headers).json()
    assert (shown["role"], shown["can_edit"]) == ("admin", True)
    changed = w.client.patch(settings_url(w), json={"agent": {"tool_policy": "ask"}}, headers=headers)
    assert changed.status_code == 200 and changed.json()["agent"]["tool_policy"] == "ask"
    assert [(a.actor_email, json.loads(a.detail)) for a in audit_rows(w)] == [
        ("root@example.com", {"keys": ["agent.tool_policy"]})]


# -- the agent's settings, secrets write-only ------------------------------------------------------------


def test_a_partial_change_keeps_the_rest_and_secrets_are_never_sent_back(world: World,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    w = world
    caplog.set_level(logging.DEBUG)
    first = patch(w, {"agent": {"provider": "openai", "base_url": "https://models.example.test/v1", "model": "m-1",
                                "api_key": SECRET_VALUE, "env": {"REGION": "eu"},
                                "secrets": {"SERVICE_TOKEN": TOKEN_VALUE}}})
    assert first.status_code == 200, first.text
    agent = first.json()["agent"]
    assert (agent["provider"], agent["base_url"], agent["model"], agent["env"]) == (
        "openai", "https://models.example.test/v1", "m-1", {"REGION": "eu"})
    assert agent["api_key"] == {"set": True, "hint": "…abcd"}
    assert agent["secrets"] == {"SERVICE_TOKEN": {"set": True, "hint": "…wxyz"}}
    second = patch(w, {"agent": {"model": "m-2", "limits": {"history_budget_chars": 5000}}})
    kept = second.json()["agent"]
    assert (kept["model"], kept["base_url"], kept["limits"], kept["api_key"]["set"]) == (
        "m-2", "https://models.example.test/v1", {"history_budget_chars": 5000}, True)
    removed = patch(w, {"agent": {"secrets": {"SERVICE_TOKEN": None}, "env": {"REGION": None}}}).json()["agent"]
    assert removed["secrets"] == {} and removed["env"] == {} and removed["api_key"]["set"] is True
    with w.core.db.read() as s:
        stored = json.loads(s.get(Project, w.project).provider_settings)
    assert stored == {"api_key": SECRET_VALUE, "base_url": "https://models.example.test/v1",
                      "history_budget_chars": 5000, "model": "m-2"}  # as set-provider writes them
    listed = w.client.get(f"/api/projects/{w.project}/audit", headers=w.h()).json()["records"]
    assert [r["detail"]["keys"] for r in listed] == [
        ["agent.env.REGION", "agent.secrets.SERVICE_TOKEN"], ["agent.model", "agent.limits.history_budget_chars"],
        ["agent.provider", "agent.base_url", "agent.model", "agent.env.REGION", "agent.secrets.SERVICE_TOKEN",
         "agent.api_key"]]
    assert {r["actor"] for r in listed} == {"alice@example.com"}
    everything = [first.text, second.text, json.dumps(listed), w.client.get(settings_url(w), headers=w.h()).text,
                  caplog.text]
    for text in everything:
        assert SECRET_VALUE not in text and TOKEN_VALUE not in text


BAD: list[tuple[dict[str, Any], str]] = [  # (a PATCH body, the field its 400 names)
    ({"agent": {"tool_policy": "sometimes"}}, "agent.tool_policy"),
    ({"agent": {"provider": "mystery"}}, "agent.provider"),
    ({"agent": {"env": {"API_TOKEN": "x"}}}, "agent.env.API_TOKEN"),
    ({"agent": {"secrets": {"REGION": "x"}}}, "agent.secrets.REGION"),
    ({"agent": {"env": {"1BAD": "x"}}}, "agent.env.1BAD"),
    ({"agent": {"model": 5}}, "agent.model"),
    ({"agent": {"limits": {"history_budget_chars": -1}}}, "agent.limits.history_budget_chars"),
    ({"agent": {"colour": "red"}}, "agent.colour"),
    ({"agent": {"provider": "acp", "preset": "claude"}}, "agent.preset"),  # not installed on this server
    ({"agent": {"provider": "acp", "preset": "nonesuch"}}, "agent.preset"),
    ({"network": {"allow_hosts": ["not a host!"]}}, "network.allow_hosts"),
    ({"network": {"mode": "host"}}, "network.mode"),
    ({"budget": {"daily_tokens": -5}}, "budget.daily_tokens"),
    ({"budget": {"daily_cost_usd": "lots"}}, "budget.daily_cost_usd"),
    ({"agent": []}, "agent"),
]


@pytest.mark.parametrize(("body", "field"), BAD, ids=[field for _, field in BAD])
def test_bad_values_are_400_naming_the_field_and_change_nothing(world: World, body: dict[str, Any],
                                                                field: str) -> None:
    w = world
    before = table_contents(w.core)
    response = patch(w, {**body, "agent": {**body.get("agent", {}), "api_key": SECRET_VALUE}}
                     if isinstance(body.get("agent", {}), dict) else body)
    assert response.status_code == 400, response.text
    error = error_of(response)
    assert error["code"] == "invalid" and error["message"].startswith(f"{field}:"), error
    assert SECRET_VALUE not in response.text
    assert table_contents(w.core) == before


def test_network_shows_the_mode_the_allowed_hosts_and_the_last_weeks_refusals(world: World) -> None:
    w = world
    changed = patch(w, {"network": {"allow_hosts": ["api.example.test", "*.corp.example", "93.184.216.34:8080"]}})
    assert changed.json()["network"]["allow_hosts"] == ["api.example.test", "*.corp.example", "93.184.216.34:8080"]
    now = w.clock.now()

    def card(host: str, port: int) -> str:
        return json.dumps({"id": "network-refused-1", "title": f"network: {host}:{port} refused", "kind": "network",
                           "status": "refused"})

    with w.core.db.write() as s:
        for host, port, days_ago in (("pypi.example", 443, 0), ("pypi.example", 443, 2), ("[::1]", 5432, 1),
                                     ("old.example", 443, 9)):
            s.add(Event(chat_id=w.chat, type=EventType.TOOL.value, text=card(host, port),
                        created_at=now - dt.timedelta(days=days_ago)))
        s.add(Event(chat_id=w.bob_chat, type=EventType.TOOL.value, text=card("bobs.example", 443), created_at=now))
    network = w.client.get(settings_url(w), headers=w.h()).json()["network"]
    assert network["mode"] in ("proxy", "host")
    assert [(r["host"], r["port"], r["count"]) for r in network["refused"]] == [("pypi.example", 443, 2),
                                                                                 ("::1", 5432, 1)]
    cleared = patch(w, {"network": {"allow_hosts": None}}).json()["network"]["allow_hosts"]
    assert cleared == []


def test_the_budget_is_set_and_shown_with_the_days_and_months_spend(world: World) -> None:
    w = world
    shown = patch(w, {"budget": {"daily_tokens": 50_000, "daily_cost_usd": 2.5}}).json()["budget"]
    assert (shown["daily_tokens"], shown["daily_cost_usd"], shown["today"]) == (50_000, 2.5,
                                                                                {"tokens": 0, "cost_usd": 0})
    with w.core.db.read() as s:
        project = s.get(Project, w.project)
    assert (project.daily_token_budget, project.daily_cost_budget_usd) == (50_000, 2.5)
    cleared = patch(w, {"budget": {"daily_cost_usd": None}}).json()["budget"]
    assert (cleared["daily_tokens"], cleared["daily_cost_usd"]) == (50_000, None)
    assert [json.loads(a.detail)["keys"] for a in audit_rows(w)] == [
        ["budget.daily_cost_usd", "budget.daily_tokens"], ["budget.daily_cost_usd"]]


# -- members ---------------------------------------------------------------------------------------------


def test_invite_promote_demote_and_the_last_owner_rule(world: World) -> None:
    w = world
    bob = join(w)
    assert (bob["email"], bob["role"]) == ("bob@example.com", "member")
    again = w.client.post(members_url(w), json={"email": "bob@example.com"}, headers=w.h())
    assert again.status_code == 409
    nobody = w.client.post(members_url(w), json={"email": "nobody@example.com"}, headers=w.h())
    assert nobody.status_code == 404 and "nobody@example.com" in error_of(nobody)["message"]
    bad_role = w.client.post(members_url(w), json={"email": "bob@example.com", "role": "boss"}, headers=w.h())
    assert bad_role.status_code == 400 and error_of(bad_role)["message"].startswith("role:")
    alice_id = w.alice.id
    last = w.client.patch(f"{members_url(w)}/{alice_id}", json={"role": "member"}, headers=w.h())
    assert last.status_code == 409 and error_of(last)["code"] == "last_owner"
    leave = w.client.delete(f"{members_url(w)}/{alice_id}", headers=w.h())
    assert leave.status_code == 409 and error_of(leave)["code"] == "last_owner"
    by_member = w.client.patch(f"{members_url(w)}/{alice_id}", json={"role": "member"}, headers=w.h("bob"))
    assert by_member.status_code == 403
    promoted = w.client.patch(f"{members_url(w)}/{bob['user_id']}", json={"role": "owner"}, headers=w.h())
    assert promoted.json()["role"] == "owner"
    demoted = w.client.patch(f"{members_url(w)}/{alice_id}", json={"role": "member"}, headers=w.h("bob"))
    assert demoted.status_code == 200 and demoted.json()["role"] == "member"
    assert patch(w, {"agent": {"model": "m"}}).status_code == 403  # alice is a member now
    actions = [(a.action, json.loads(a.detail)) for a in audit_rows(w)]
    assert actions == [("member.add", {"email": "bob@example.com", "role": "member"}),
                       ("member.role", {"email": "bob@example.com", "role": "owner"}),
                       ("member.role", {"email": "alice@example.com", "role": "member"})]


def test_removal_by_an_owner_or_oneself_revokes_the_members_grants(world: World) -> None:
    w = world
    carol = add_user(w.core, "carol@example.com")
    w.tokens["carol"] = auth.create_api_token(w.core.db, w.clock, carol.id)
    bob, _ = join(w), join(w, "carol")
    chat = chats.create_chat(w.core.db, w.clock, carol, w.project, "Carol's")
    issue_grant(w.core.db, w.clock, 3600, Scope.MANAGE, carol.id, chat.id, w.project)
    assert w.client.delete(f"{members_url(w)}/{carol.id}", headers=w.h("bob")).status_code == 403  # not an owner
    assert w.client.delete(f"{members_url(w)}/{bob['user_id']}", headers=w.h("bob")).status_code == 204  # leaves
    assert w.client.delete(f"{members_url(w)}/{carol.id}", headers=w.h()).status_code == 204
    with w.core.db.read() as s:
        assert s.exec(select(Membership.user_id).where(Membership.project_id == w.project)).all() == [w.alice.id]
        assert [g.revoked_at is not None for g in s.exec(select(Grant).where(Grant.owner_id == carol.id))] == [True]
    assert w.client.get(f"/api/chats/{chat.id}", headers=w.h("carol")).status_code == 404
    gone = w.client.delete(f"{members_url(w)}/{carol.id}", headers=w.h())
    assert gone.status_code == 404


# -- the admin's people API ---------------------------------------------------------------------------


def test_the_admin_api_is_for_admins_and_manages_people(world: World) -> None:
    w = world
    assert w.client.get("/api/admin/users", headers=w.h()).status_code == 403
    root = add_user(w.core, "root@example.com", is_admin=True)
    headers = bearer(auth.create_api_token(w.core.db, w.clock, root.id))
    made = w.client.post("/api/admin/users", json={"email": "dana@example.com", "password": "a-long-password"},
                         headers=headers)
    assert made.status_code == 201 and made.json()["email"] == "dana@example.com"
    short = w.client.post("/api/admin/users", json={"email": "erin@example.com", "password": "short"}, headers=headers)
    assert short.status_code == 400 and error_of(short)["message"].startswith("password:")
    listed = {u["email"]: u for u in w.client.get("/api/admin/users", headers=headers).json()["users"]}
    assert set(listed) == {"alice@example.com", "bob@example.com", "dana@example.com", "root@example.com"}
    assert (listed["alice@example.com"]["projects"], listed["alice@example.com"]["tokens"]) == (1, 1)
    dana = listed["dana@example.com"]["id"]
    reset = w.client.post(f"/api/admin/users/{dana}/password", json={"password": "another-password"}, headers=headers)
    assert reset.status_code == 200 and "dana@example.com" in reset.json()["message"]
    assert auth.authenticate(w.core.db, "dana@example.com", "another-password").email == "dana@example.com"
    revoked = w.client.post(f"/api/admin/users/{w.alice.id}/revoke-tokens", headers=headers)
    assert revoked.json()["message"] == "revoked 1 token(s) of alice@example.com"
    assert w.client.get("/api/projects", headers=w.h()).status_code == 401
    assert w.client.delete(f"/api/admin/users/{dana}", headers=headers).status_code == 204
    assert w.client.delete("/api/admin/users/987654", headers=headers).status_code == 404
    agents = w.client.get("/api/admin/agents", headers=headers).json()
    assert {a["name"] for a in agents["agents"]} >= {"claude", "codex"} and agents["health"]["db"] == "ok"


# -- the admin CLI ---------------------------------------------------------------------------------------


def test_grant_access_with_a_role_and_the_last_owner_through_the_cli(cli: Cli, store: Database) -> None:
    assert cli.run("migrate").code == 0
    clock = SystemClock()
    owner = auth.create_user(store, clock, "owner@example.com", "password-owner")
    auth.create_user(store, clock, "mate@example.com", "password-mate")
    pid = str(projects.create_project(store, clock, cli.data_dir / "workspaces", "Ops", owner).id)
    added, demote = cli.run_all(
        ("grant-access", "--email", "mate@example.com", "--project", pid),
        ("grant-access", "--email", "owner@example.com", "--project", pid, "--role", "member"))
    assert added.code == 0 and added.out.strip() == f"mate@example.com can now use project {pid} (as member)", added
    assert demote.code == 1 and "last owner" in demote.err, demote
    promoted = cli.run("grant-access", "--email", "mate@example.com", "--project", pid, "--role", "owner")
    assert promoted.out.strip() == f"mate@example.com is now an owner of project {pid}", promoted
    bad = cli.run("grant-access", "--email", "mate@example.com", "--project", pid, "--role", "boss")
    assert bad.code == 2 and "--role" in bad.err
    removed = cli.run("revoke-access", "--email", "owner@example.com", "--project", pid)
    assert removed.code == 0, removed
    last = cli.run("revoke-access", "--email", "mate@example.com", "--project", pid)
    assert last.code == 1 and "last owner" in last.err, last
    with store.read() as s:
        rows = [(a.actor_email, a.action, json.loads(a.detail)) for a in s.exec(select(ProjectAudit))]
    assert rows == [("admin CLI", "member.add", {"email": "mate@example.com", "role": "member"}),
                    ("admin CLI", "member.role", {"email": "mate@example.com", "role": "owner"}),
                    ("admin CLI", "member.remove", {"email": "owner@example.com"})]


def test_an_agents_grant_reaches_none_of_it(world: World) -> None:
    w = world
    token, _ = issue_grant(w.core.db, w.clock, 3600, Scope.MANAGE, w.alice.id, w.chat, w.project)
    for method, url in (("GET", settings_url(w)), ("PATCH", settings_url(w)), ("GET", members_url(w)),
                        ("GET", f"/api/projects/{w.project}/audit"), ("GET", "/api/admin/users")):
        response = w.client.request(method, url, json={"agent": {"tool_policy": "allow"}}, headers=bearer(token))
        assert response.status_code == 401, (method, url, response.text)


def test_deleting_the_last_owner_passes_the_project_to_a_member_who_becomes_an_owner(world: World) -> None:
    w = world
    join(w)
    root = add_user(w.core, "root@example.com", is_admin=True)
    headers = bearer(auth.create_api_token(w.core.db, w.clock, root.id))
    assert w.client.delete(f"/api/admin/users/{w.alice.id}", headers=headers).status_code == 204
    with w.core.db.read() as s:
        assert s.get(Project, w.project).owner_id == w.bob.id
        assert s.get(Membership, (w.bob.id, w.project)).role == "owner"
    assert w.client.get(settings_url(w), headers=w.h("bob")).json()["role"] == "owner"


def test_only_a_server_admin_opens_an_internal_address_and_a_settings_turn_would_refuse_is_refused(
        world: World) -> None:
    w = world
    for body, field in (({"network": {"allow_hosts": ["127.0.0.1:5432"]}}, "network.allow_hosts"),
                        ({"network": {"allow_hosts": ["169.254.169.254"]}}, "network.allow_hosts"),
                        ({"agent": {"provider": "openai", "base_url": "http://localhost:6379/v1", "model": "m"}},
                         "agent.base_url")):
        refused = patch(w, body)
        assert refused.status_code == 403 and error_of(refused)["message"].startswith(f"{field}:"), refused.text
    assert patch(w, {"network": {"allow_hosts": ["api.example.test:443"]}}).status_code == 200
    for body, field in (({"agent": {"provider": "command", "command": "agent 'unclosed"}}, "agent.command"),
                        ({"agent": {"provider": "openai", "base_url": "not a url", "model": "m"}}, "agent.base_url")):
        refused = patch(w, body)
        assert refused.status_code == 400 and error_of(refused)["message"].startswith(f"{field}:"), refused.text
    root = add_user(w.core, "root@example.com", is_admin=True)
    w.client.post(members_url(w), json={"email": "root@example.com", "role": "member"}, headers=w.h())
    headers = bearer(auth.create_api_token(w.core.db, w.clock, root.id))
    shown = w.client.get(settings_url(w), headers=headers).json()  # a member, and an admin: acts as an owner
    assert (shown["role"], shown["can_edit"]) == ("admin", True)
    opened = w.client.patch(settings_url(w), json={"network": {"allow_hosts": ["127.0.0.1:5432"]}}, headers=headers)
    assert opened.status_code == 200 and opened.json()["network"]["allow_hosts"] == ["127.0.0.1:5432"]


def test_a_preset_no_longer_installed_does_not_stop_a_switch_to_another_provider(world: World) -> None:
    w = world
    projects.set_provider(w.core.db, w.project, "acp", {"agent": "claude"})  # as an admin left it
    switched = patch(w, {"agent": {"provider": "command", "command": "my-agent --print", "preset": None}})
    assert switched.status_code == 200, switched.text
    kept = patch(w, {"agent": {"provider": "openai", "base_url": "https://models.example.test/v1", "model": "m"}})
    assert kept.status_code == 200 and kept.json()["agent"]["provider"] == "openai"


def test_deleting_a_user_deletes_the_audit_of_the_projects_only_they_used(world: World) -> None:
    w = world
    assert patch(w, {"agent": {"model": "m-1"}}, who="bob").status_code == 404  # not bob's project
    bobs = w.client.get("/api/projects", headers=w.h("bob")).json()["projects"][0]["id"]
    assert w.client.patch(f"/api/projects/{bobs}/settings", json={"agent": {"model": "m"}},
                          headers=w.h("bob")).status_code == 200
    root = add_user(w.core, "root@example.com", is_admin=True)
    headers = bearer(auth.create_api_token(w.core.db, w.clock, root.id))
    assert w.client.delete(f"/api/admin/users/{w.bob.id}", headers=headers).status_code == 204
    with w.core.db.read() as s:
        assert s.get(Project, bobs) is None
        assert s.exec(select(ProjectAudit).where(ProjectAudit.project_id == bobs)).all() == []
