"""The acp provider's settings (SPEC §11): checked when the admin sets them, the agent's env.*
secrets stored server-side and returned by no API; install-agent and list-agents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app import manage
from app.agents.cli import presets
from app.api import create_api
from app.core import auth, chats, projects
from app.core.context import Core
from app.core.errors import InvalidInput
from app.core.models import Project
from tests.agents.rig import TEST_AGENTS_DIR
from tests.conftest import make_core, with_settings

SECRET = "sk-ant-do-not-leak-9f3e"


def _project(core: Core) -> tuple[int, str]:
    user = auth.create_user(core.db, core.clock, "admin@example.com", "password-1", True)
    project = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, "P", user)
    chats.create_chat(core.db, core.clock, user, project.id, "C")
    return project.id, auth.create_api_token(core.db, core.clock, user.id, "t")


def _stored(core: Core, project_id: int) -> tuple[str | None, dict]:
    with core.db.read() as s:
        row = s.get(Project, project_id)
    return row.provider, json.loads(row.provider_settings)


def test_set_provider_stores_the_settings_and_no_api_returns_the_secrets(core: Core,
                                                                          capsys: pytest.CaptureFixture) -> None:
    project_id, token = _project(core)
    assert manage.run(["set-provider", "--project", str(project_id), "--provider", "acp", "--setting", "agent=claude",
                       "--setting", f"env.ANTHROPIC_API_KEY={SECRET}", "--setting", "tool_policy=deny",
                       "--setting", "history_budget_chars=5000"], core) == 0
    assert _stored(core, project_id) == ("acp", {"agent": "claude", "env.ANTHROPIC_API_KEY": SECRET,
                                                 "tool_policy": "deny", "history_budget_chars": 5000})
    assert SECRET not in capsys.readouterr().out
    client = TestClient(create_api(lambda: core, core.settings.request_max_bytes))
    headers = {"Authorization": f"Bearer {token}"}
    for path in ("/api/projects", f"/api/projects/{project_id}/chats"):
        answer = client.get(path, headers=headers)
        assert answer.status_code == 200 and SECRET not in answer.text and "env." not in answer.text


@pytest.mark.parametrize(("given", "message"), [
    (["agent=claude", "tool_policy=maybe"], "tool_policy: 'maybe' is not one of allow, deny, ask"),
    (["agent=gpt"], "unknown preset 'gpt'"),
    (["tool_policy=deny"], "set exactly one of agent"),
    (["agent=claude", "env.BAD-NAME=x"], "is not env.NAME"),
    (["agent=claude", "history_budget_chars=lots"], "history_budget_chars: 'lots' is not a whole number"),
    (["agent=claude", "colour=blue"], "unknown key 'colour'"),
    (["agent=codex", "env.OPENAI_BASE_URL=ftp://models"], "env.OPENAI_BASE_URL: must be an http"),
    (["agent=codex", "model=a\nb"], "model: must be a model name"),
], ids=["policy", "preset", "no-agent", "env-name", "budget", "unknown", "codex-url", "codex-model"])
def test_bad_acp_settings_are_refused_and_change_nothing(core: Core, given: list[str], message: str) -> None:
    project_id, _ = _project(core)
    argv = ["set-provider", "--project", str(project_id), "--provider", "acp"]
    for item in given:
        argv += ["--setting", item]
    with pytest.raises(InvalidInput, match=message):
        manage.run(argv, core)
    assert _stored(core, project_id) == (None, {})


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_install_agent_is_a_no_op_once_installed_and_list_agents_shows_it(core: Core, tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture) -> None:
    presets.install(presets.PRESETS["claude"], TEST_AGENTS_DIR)  # the suite's copy (set-up installs it)
    installed = make_core(with_settings(core.settings, agents_dir_override=TEST_AGENTS_DIR))
    try:
        assert manage.run(["install-agent", "claude"], installed) == 0
        assert capsys.readouterr().out.startswith("already installed: claude (@zed-industries/claude-agent-acp@0.23.1")
        assert manage.run(["list-agents"], installed) == 0
        listed = capsys.readouterr().out.splitlines()  # the suite's folder holds the other presets too
        assert "claude 0.23.1 (@zed-industries/claude-agent-acp@0.23.1, @anthropic-ai/claude-code@2.1.328)" in listed
    finally:
        installed.db.dispose()
    empty = make_core(with_settings(core.settings, agents_dir_override=tmp_path / "none"))
    try:
        assert manage.run(["list-agents"], empty) == 0
        assert "no agent installed" in capsys.readouterr().out
    finally:
        empty.db.dispose()
