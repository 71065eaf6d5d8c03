"""The admin CLI (``python -m app.manage``, SPEC §1) as real subprocesses, on SQLite and PostgreSQL.

Exit codes: 0 done, 1 refused (one sentence on stderr), 2 usage or configuration error.
Independent commands run concurrently to keep the suite fast; dependent ones run in rounds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlmodel import select

from app.core import auth, projects
from app.core.clock import SystemClock
from app.core.db import Database
from app.core.migrate import upgrade
from app.core.models import Chat, Project
from tests.integration.managecli import Cli, cli_env, ok, refused, run_concurrently

pytestmark = pytest.mark.slow  # one admin CLI process per command: left out of `make check`


def schema_version(store: Database) -> tuple[set[str], str]:
    with store.engine.connect() as conn:
        version = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar_one()
    return set(sa.inspect(store.engine).get_table_names()), version


def user_count(store: Database) -> int:
    with store.engine.connect() as conn:
        return conn.execute(sa.text("SELECT count(*) FROM users")).scalar_one()


def test_admin_workflow(cli: Cli, store: Database) -> None:
    assert ok(cli.run("migrate")) == "database is up to date"
    if store.sqlite:
        assert (cli.data_dir / "chatcron.db").is_file()  # the default store lives in the data dir
    schema = schema_version(store)
    assert {"users", "projects", "memberships", "chats", "runs", "events", "api_tokens"} <= schema[0]
    alice = auth.create_user(store, SystemClock(), "alice@example.com", "password-alice")
    bob = auth.create_user(store, SystemClock(), "bob@example.com", "password-bob")

    # round 1 (concurrent): migrate again on a live database, users, refusals, a project, a token, the demo
    (migrated_again, carol, root, duplicate, project, token, no_owner, no_project, seeded) = cli.run_all(
        ("migrate",),
        ("create-user", "--email", "Carol@Example.com", "--password", "password-carol"),
        ("create-user", "--email", "root@example.com", "--password", "password-root", "--admin"),
        ("create-user", "--email", "ALICE@example.com", "--password", "another-password"),
        ("create-project", "--name", "Ops", "--owner", "Alice@example.com"),
        ("create-token", "--email", "alice@example.com"),
        ("create-project", "--name", "Orphan", "--owner", "nobody@example.com"),
        ("grant-access", "--email", "bob@example.com", "--project", "987654"),
        ("seed-demo",),
    )
    assert ok(migrated_again) == "database is up to date"
    assert schema_version(store) == schema

    assert ok(carol) == "created user carol@example.com"
    assert ok(root) == "created user root@example.com (admin)"
    assert auth.find_user(store, "root@example.com").is_admin
    assert not auth.find_user(store, "carol@example.com").is_admin
    assert auth.authenticate(store, "carol@example.com", "password-carol").email == "carol@example.com"
    refused(duplicate, "alice@example.com", "already exists")
    assert auth.authenticate(store, "alice@example.com", "password-alice").id == alice.id  # unchanged

    pid = ok(project)
    assert pid.isdigit(), project
    assert (cli.data_dir / "workspaces" / pid).is_dir()
    assert projects.get_project(store, alice, int(pid)).name == "Ops"  # the owner is a member
    refused(no_owner, "nobody@example.com")
    refused(no_project, "987654")
    with store.read() as s:
        assert sorted(p.name for p in s.exec(select(Project))) == ["Demo project", "Ops"]

    plain = ok(token)
    assert plain.startswith(auth.TOKEN_PREFIX) and len(plain.splitlines()) == 1
    assert auth.user_for_token(store, SystemClock(), plain).id == alice.id

    assert ok(seeded) == "demo seeded; log in as demo@example.com / demo-password"
    with store.read() as s:
        demo = s.exec(select(Project).where(Project.name == "Demo project")).one()
        assert [c.title for c in s.exec(select(Chat).where(Chat.project_id == demo.id))] == ["Demo chat"]
    assert (cli.data_dir / "workspaces" / str(demo.id)).is_dir()
    assert auth.authenticate(store, "demo@example.com", "demo-password").id == demo.owner_id
    users = user_count(store)

    # round 2 (concurrent): membership by email in any case; the demo again
    granted, seeded_again = cli.run_all(
        ("grant-access", "--email", "BOB@example.com", "--project", pid),
        ("seed-demo",),
    )
    assert ok(granted) == f"bob@example.com can now use project {pid} (as member)"
    assert [p.id for p in projects.list_projects(store, bob)] == [int(pid)]
    assert ok(seeded_again) == "demo already seeded; log in as demo@example.com / demo-password"
    assert user_count(store) == users
    with store.read() as s:
        assert len(list(s.exec(select(Project).where(Project.name == "Demo project")))) == 1


def test_invalid_user_is_refused_and_nothing_is_written(data_root: Path) -> None:
    data = data_root / "data"
    bad_email, short_password = run_concurrently([
        (cli_env(data), ("create-user", "--email", "not-an-email", "--password", "password-1")),
        (cli_env(data), ("create-user", "--email", "carol@example.com", "--password", "short")),
    ])
    refused(bad_email, "email", "not-an-email")
    refused(short_password, "password")
    store = Database(f"sqlite:///{(data / 'chatcron.db').resolve()}")
    try:
        upgrade(store)  # whether or not the refused commands opened the file
        assert user_count(store) == 0
    finally:
        store.dispose()


USAGE = [
    ("no-command", ()),
    ("missing-option", ("create-user", "--email", "a@example.com")),
]


def test_usage_errors_exit_2(data_root: Path) -> None:
    results = run_concurrently([(cli_env(data_root / "data"), argv) for _, argv in USAGE])
    for (name, _), result in zip(USAGE, results, strict=True):
        assert result.code == 2, f"{name}: {result}"
        assert "usage:" in result.err, f"{name}: {result}"
        assert result.out == "", f"{name}: {result}"


BAD_CONFIG = [("CHATCRON_RUN_LEASE_SECONDS", "abc"), ("CHATCRON_PROVIDER", "gpt")]  # parse error, unknown name


def test_bad_configuration_exits_2_naming_the_variable(data_root: Path) -> None:
    results = run_concurrently([(cli_env(data_root / "data", **{name: value}), ("migrate",))
                                for name, value in BAD_CONFIG])
    for (name, _), result in zip(BAD_CONFIG, results, strict=True):
        assert result.code == 2, result
        assert name in result.err and "Traceback" not in result.err, result
    assert not (data_root / "data" / "chatcron.db").exists()


def test_the_sandbox_warning_only_from_the_commands_about_agents(data_root: Path) -> None:
    """CHATCRON_AGENT_SANDBOX=off is logged by every process that starts; of the CLI's commands only
    list-agents and install-agent repeat it: not --help, not a user's or a project's command."""
    env = cli_env(data_root / "data", CHATCRON_AGENT_SANDBOX="off")
    helped, set_help, migrated, listed = run_concurrently(
        [(env, ("--help",)), (env, ("set-provider", "--help")), (env, ("migrate",)), (env, ("list-agents",))])
    for result in (helped, set_help):
        assert result.code == 0 and result.err == "" and "usage:" in result.out, result
    assert "--set KEY=VALUE" in set_help.out and "--unset KEY" in set_help.out
    assert ok(migrated) == "database is up to date"
    assert listed.code == 0 and "action=agent_sandbox_off" in listed.err, listed
    assert "network: host (agents share the host's network: the sandbox is off)" in listed.out
    created, = run_concurrently([(env, ("create-user", "--email", "a@example.com", "--password", "password-1"))])
    assert ok(created) == "created user a@example.com"


def test_set_provider_changes_one_setting_and_keeps_the_rest(cli: Cli, store: Database) -> None:
    secret = "sk-ant-do-not-leak-9f3e"
    upgrade(store)
    owner = auth.create_user(store, SystemClock(), "alice@example.com", "password-alice")
    pid = projects.create_project(store, SystemClock(), cli.data_dir / "workspaces", "P", owner).id
    settings = {"agent": "claude", "env.ANTHROPIC_API_KEY": secret, "tool_policy": "deny"}
    projects.set_provider(store, pid, "acp", settings)

    def stored() -> tuple[str | None, dict]:
        with store.read() as s:
            project = s.get(Project, pid)
            return project.provider, json.loads(project.provider_settings)

    before = stored()
    bad_key, bad_value = cli.run_all(("set-provider", "--project", str(pid), "--set", "colour=blue"),
                                     ("set-provider", "--project", str(pid), "--set", "tool_policy=maybe"))
    refused(bad_key, "--set", "unknown key 'colour'")
    refused(bad_value, "tool_policy", "'maybe'")
    assert stored() == before == ("acp", settings)
    changed = ok(cli.run("set-provider", "--project", str(pid), "--set", "tool_policy=ask"))
    assert secret not in changed and "set tool_policy=ask" in changed
    assert stored() == ("acp", {**settings, "tool_policy": "ask"})  # the key is kept, not retyped
    removed = ok(cli.run("set-provider", "--project", str(pid), "--unset", "tool_policy"))
    assert secret not in removed and "unset tool_policy" in removed
    assert stored() == ("acp", {"agent": "claude", "env.ANTHROPIC_API_KEY": secret})
