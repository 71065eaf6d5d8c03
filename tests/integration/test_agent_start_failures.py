"""An agent that cannot start (app/core/agent_starts.py), on SQLite and PostgreSQL, through the user
API: every user sees one sentence, never the server's paths or the fix; the detail goes to one log
line with the project, to the inbox of the project's owner (once per cause until resolved) and to
/api/health for an admin's token — the public health says only that agents are not ok."""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import shlex
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.agents import doctor
from app.agents.sandbox import probe
from app.core import agent_starts, auth, chats, projects
from app.core.attention_tables import AttentionEvent
from app.core.config import Settings
from app.core.context import Core
from app.core.models import RunStatus, User
from tests.conftest import make_core, with_settings
from tests.integration.apiclient import add_user, bearer, client_for

MISSING = "/opt/chatcron-test-nowhere/bin/no-such-agent"  # an absolute path: the detail a user must not see
USER_MESSAGE = "The agent could not start — an administrator has been told."
KIND = "agent.start_failed"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Unfenced: a missing program fails at once, as the server's own spawn (no bubblewrap needed)."""
    return with_settings(settings, agent_sandbox="off")


@dataclasses.dataclass
class World:
    """Alice created the project (its owner), Bob is a member, Root is an admin."""

    core: Core
    client: TestClient
    alice: User
    bob: User
    root: User
    tokens: dict[str, str]
    project: int
    chat: int

    def h(self, who: str) -> dict[str, str]:
        return bearer(self.tokens[who])

    def turn(self, who: str = "bob", text: str = "hello") -> dict[str, Any]:
        """A prompt by ``who``, waited for; the finished run as the API shows it."""
        answer = self.client.post(f"/api/chats/{self.chat}/prompts", json={"text": text}, headers=self.h(who))
        assert answer.status_code == 202, answer.text
        run_id = answer.json()["run_id"]
        for handle in self.core.prompts.running():
            if handle.run_id == run_id:
                assert handle.wait(15) is not None
        run = self.client.get(f"/api/runs/{run_id}", headers=self.h(who)).json()
        assert run["status"] != RunStatus.RUNNING.value
        return run

    def inbox_items(self, who: str) -> list[dict[str, Any]]:
        answer = self.client.get("/api/inbox", headers=self.h(who))
        assert answer.status_code == 200
        return [item for item in answer.json()["items"] if item["kind"] == KIND]

    def health(self, who: str | None = None) -> dict[str, Any]:
        answer = self.client.get("/api/health", headers=self.h(who) if who else {})
        assert answer.status_code == 200
        return answer.json()


@pytest.fixture
def world(core: Core) -> Iterator[World]:
    db, clock = core.db, core.clock
    alice, bob = add_user(core, "alice@example.com"), add_user(core, "bob@example.com")
    root = add_user(core, "root@example.com", is_admin=True)
    project = projects.create_project(db, clock, core.settings.workspaces_dir, "Alice's", alice)
    projects.grant_access(db, clock, bob, project.id)
    chat = chats.create_chat(db, clock, bob, project.id, "Plans")
    users = (("alice", alice), ("bob", bob), ("root", root))
    tokens = {who: auth.create_api_token(db, clock, u.id) for who, u in users}
    with client_for(core) as client:
        yield World(core, client, alice, bob, root, tokens, project.id, chat.id)


def _broken(w: World, provider: str = "command", **options: object) -> None:
    projects.set_provider(w.core.db, w.project, provider, options or {"command": f"{MISSING} --print"})


def _failure_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "action=agent_start_failed" in r.getMessage()]


def test_a_missing_agent_program_shows_users_one_sentence_and_tells_the_owner(
        world: World, caplog: pytest.LogCaptureFixture) -> None:
    _broken(world)
    with caplog.at_level(logging.ERROR, logger="chatcron.agents"):
        run = world.turn("bob")

    assert (run["status"], run["error"]) == (RunStatus.FAILED.value, USER_MESSAGE)
    events = world.client.get(f"/api/chats/{world.chat}/events", headers=world.h("bob")).json()["events"]
    assert [e["text"] for e in events if e["type"] == "error"] == [USER_MESSAGE]
    assert not any("/opt/" in (e["text"] or "") for e in events), "a server path reached the transcript"

    [line] = _failure_lines(caplog)
    assert f"project_id={world.project}" in line and MISSING in line and "provider=command" in line

    [told] = world.inbox_items("alice")  # the project's creator: its owner
    assert MISSING in told["error"] and told["project_id"] == world.project and told["chat_id"] == world.chat
    assert world.inbox_items("bob") == [], "a member who is not the owner must not get the admin detail"
    assert [item["id"] for item in world.inbox_items("root")] == [told["id"]]  # admins see it too
    unread = world.client.get("/api/inbox", headers=world.h("bob")).json()["unread"]
    assert unread == 0, "the private item must not count in another member's unread badge"


def test_health_says_agents_are_not_ok_and_gives_the_detail_to_admins_only(world: World) -> None:
    assert world.health()["agents"] == {"ok": True, "count": 0}
    _broken(world)
    world.turn("bob")

    public = world.health()
    assert public["agents"] == {"ok": False, "count": 1} and "/opt/" not in str(public)
    assert world.health("alice")["agents"] == {"ok": False, "count": 1}, "a user's token is not an admin's"
    [problem] = world.health("root")["agents"]["problems"]
    assert problem["scope"] == "project" and problem["project_id"] == world.project
    assert problem["provider"] == "command" and MISSING in problem["detail"] and problem["failures"] == 1
    assert problem["at"].endswith("Z")
    bad_token = world.client.get("/api/health", headers=bearer("not-a-token"))
    assert bad_token.status_code == 200 and bad_token.json()["agents"] == {"ok": False, "count": 1}


def test_one_inbox_item_per_cause_until_it_comes_back_after_a_fix(world: World,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    _broken(world)
    with caplog.at_level(logging.ERROR, logger="chatcron.agents"):
        for _ in range(3):
            assert world.turn("bob")["error"] == USER_MESSAGE
    assert len(_failure_lines(caplog)) == 3, "the server log has every failure"
    assert len(world.inbox_items("alice")) == 1, "the owner is told once per cause"
    assert world.health("root")["agents"]["problems"][0]["failures"] == 3

    projects.set_provider(world.core.db, world.project, "demo", {})  # fixed: a turn succeeds
    assert world.turn("bob")["status"] == RunStatus.SUCCEEDED.value
    assert world.health()["agents"] == {"ok": True, "count": 0}, "a success resolves the project's problem"

    _broken(world)  # the same cause comes back within the hour: logged and listed, not told again
    world.turn("bob")
    assert len(world.inbox_items("alice")) == 1, "a flaky start between good turns must not flood the owner"
    assert world.health()["agents"]["count"] == 1
    projects.set_provider(world.core.db, world.project, "demo", {})
    assert world.turn("bob")["status"] == RunStatus.SUCCEEDED.value
    problems = agent_starts.AgentStartProblem.__table__
    earlier = world.core.clock.now() - agent_starts.QUIET_AFTER_FIX - dt.timedelta(minutes=1)
    with world.core.db.write() as s:  # the owner was told over an hour ago
        s.execute(sa.update(problems).values(told_at=earlier))
    _broken(world)  # back after a fix, an hour on: told again
    world.turn("bob")
    assert len(world.inbox_items("alice")) == 2


@pytest.mark.parametrize(("provider", "options", "detail"), [
    ("command", {"comand": "typo"}, "unknown key 'comand'"),
    ("acp", {"agent": "no-such-preset"}, "unknown preset 'no-such-preset'"),
    ("gpt", {}, "unknown provider 'gpt'"),
], ids=["bad-setting", "unknown-preset", "unknown-provider"])
def test_bad_agent_settings_are_a_start_failure_too(world: World, provider: str, options: dict[str, object],
                                                    detail: str) -> None:
    _broken(world, provider, **options)
    run = world.turn("bob")
    assert run["error"] == USER_MESSAGE
    [told] = world.inbox_items("alice")
    assert detail in told["error"]


def test_an_acp_agent_that_dies_before_its_handshake_is_a_start_failure(world: World) -> None:
    script = "import sys; sys.stderr.write('fatal: cannot read /srv/agent-secrets/config.toml\\n'); sys.exit(3)"
    _broken(world, "acp", command=shlex.join([sys.executable, "-c", script]))
    run = world.turn("bob")
    assert run["error"] == USER_MESSAGE
    [told] = world.inbox_items("alice")
    assert "ACP handshake" in told["error"] and "/srv/agent-secrets/config.toml" in told["error"]


def test_a_workspace_that_cannot_be_prepared_is_refused_with_the_sentence(world: World) -> None:
    workspace = world.core.settings.workspaces_dir / str(world.project)
    shutil.rmtree(workspace)
    workspace.write_text("a file where the workspace should be")
    answer = world.client.post(f"/api/chats/{world.chat}/prompts", json={"text": "hi"}, headers=world.h("bob"))
    assert answer.status_code == 503
    assert answer.json() == {"error": {"code": "agent_unavailable", "message": USER_MESSAGE}}
    [told] = world.inbox_items("alice")
    assert "workspace, home or sandbox folders could not be set up" in told["error"] and str(workspace) in told["error"]


def test_a_loose_chats_failure_is_told_to_the_first_admin(settings: Settings) -> None:
    core = make_core(with_settings(settings, provider="command", provider_command=MISSING))
    carol = add_user(core, "carol@example.com")
    first, _ = add_user(core, "root@example.com", is_admin=True), add_user(core, "ops@example.com", is_admin=True)
    loose = chats.create_chat(core.db, core.clock, carol, None, "Loose")
    result = core.prompts.start(loose.id, "hi").wait(15)
    assert result is not None and result.error == USER_MESSAGE
    [problem] = agent_starts.open_problems(core.db, core.clock.now())
    assert (problem["project_id"], problem["provider"]) == (None, "command") and MISSING in problem["detail"]
    with core.db.read() as s:
        told = s.connection().execute(sa.select(AttentionEvent.user_id, AttentionEvent.chat_id)
                                      .where(AttentionEvent.kind == KIND)).all()
    assert [tuple(t) for t in told] == [(first.id, loose.id)]


def test_make_run_prints_the_causes_last_in_plain_words(world: World, monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    settings = world.core.settings
    assert doctor.report(settings, world.core.db, world.core.clock.now())[0] == "Agents: no start problem known."
    _broken(world)
    world.turn("bob")
    monkeypatch.setattr(probe, "HOST_PATH", str(tmp_path))  # and now bubblewrap is missing too
    monkeypatch.setattr(probe, "_known", {})
    fenced = with_settings(settings, agent_sandbox="bwrap")
    lines = doctor.report(fenced, world.core.db, world.core.clock.now())
    assert lines[0].startswith("AGENTS CANNOT START.") and USER_MESSAGE in lines[0]
    assert lines[1] == f"  - the agent sandbox: {probe.NOT_INSTALLED}"
    assert lines[2].startswith(f"  - project {world.project} (provider command; failed once, last at ")
    assert lines[2].endswith(f"command could not start: {MISSING}: No such file or directory")
