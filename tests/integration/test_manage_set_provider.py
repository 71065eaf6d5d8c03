"""``set-provider --set KEY=VALUE / --unset KEY`` (SPEC §18): change some settings of the project's
current provider and keep the rest, checked as a whole ``set-provider`` checks them; a refusal
changes nothing and names the key; no secret's value is ever printed."""

from __future__ import annotations

import json

import pytest

from app import manage
from app.core import auth, projects
from app.core.context import Core
from app.core.errors import InvalidInput, NotFound
from app.core.models import Project

SECRET = "sk-ant-do-not-leak-9f3e"
ACP = {"agent": "claude", "env.ANTHROPIC_API_KEY": SECRET, "tool_policy": "deny", "history_budget_chars": 5000}


def _project(core: Core, provider: str | None = "acp", settings: dict | None = None) -> int:
    user = auth.create_user(core.db, core.clock, "admin@example.com", "password-1", True)
    project = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, "P", user)
    if provider is not None:
        projects.set_provider(core.db, project.id, provider, dict(ACP if settings is None else settings))
    return project.id


def _stored(core: Core, project_id: int) -> tuple[str | None, dict]:
    with core.db.read() as s:
        row = s.get(Project, project_id)
    return row.provider, json.loads(row.provider_settings)


def _run(core: Core, project_id: int, *argv: str) -> None:
    assert manage.run(["set-provider", "--project", str(project_id), *argv], core) == 0


def test_set_changes_one_setting_and_keeps_the_secret(core: Core, capsys: pytest.CaptureFixture) -> None:
    project_id = _project(core)
    _run(core, project_id, "--set", "tool_policy=ask")
    assert _stored(core, project_id) == ("acp", {**ACP, "tool_policy": "ask"})
    out = capsys.readouterr().out
    assert out.strip() == (f"project {project_id} keeps the acp provider; set tool_policy=ask; "
                           "unchanged: agent, env.ANTHROPIC_API_KEY, history_budget_chars")
    _run(core, project_id, "--provider", "acp", "--set", "model=sonnet", "--set", "history_budget_chars=7000",
         "--set", "env.ANTHROPIC_API_KEY=sk-ant-the-new-one")  # --provider naming the current one: allowed
    assert _stored(core, project_id) == ("acp", {**ACP, "tool_policy": "ask", "model": "sonnet",
                                                 "history_budget_chars": 7000,
                                                 "env.ANTHROPIC_API_KEY": "sk-ant-the-new-one"})
    out = capsys.readouterr().out
    assert "sk-ant-the-new-one" not in out and SECRET not in out
    assert "env.ANTHROPIC_API_KEY=[secret, not shown]" in out and "model=sonnet" in out


def test_unset_removes_one_setting_and_keeps_the_rest(core: Core, capsys: pytest.CaptureFixture) -> None:
    project_id = _project(core)
    _run(core, project_id, "--unset", "tool_policy", "--unset", "history_budget_chars", "--set", "model=opus")
    assert _stored(core, project_id) == ("acp", {"agent": "claude", "env.ANTHROPIC_API_KEY": SECRET,
                                                 "model": "opus"})
    out = capsys.readouterr().out
    assert "unset tool_policy, history_budget_chars" in out and SECRET not in out


def test_the_openai_key_is_kept_and_never_printed(core: Core, capsys: pytest.CaptureFixture) -> None:
    project_id = _project(core, "openai", {"api_key": SECRET, "model": "gpt-4o"})
    _run(core, project_id, "--set", "model=gpt-5", "--set", "base_url=https://models.example/v1")
    assert _stored(core, project_id) == ("openai", {"api_key": SECRET, "model": "gpt-5",
                                                    "base_url": "https://models.example/v1"})
    assert SECRET not in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "field", "words"), [
    (["--set", "colour=blue"], "--set", ["unknown key 'colour'"]),
    (["--set", "tool_policy=maybe"], "--set", ["tool_policy", "'maybe' is not one of allow, deny, ask"]),
    (["--set", "history_budget_chars=lots"], "--set history_budget_chars", ["not a whole number"]),
    (["--set", "env.BAD-NAME=x"], "--set", ["env.BAD-NAME", "is not env.NAME"]),
    (["--set", "agent=gpt"], "--set", ["unknown preset 'gpt'"]),
    (["--set", "command=my-agent"], "--set", ["set exactly one of agent"]),  # agent and command
    (["--unset", "agent"], "--set", ["set exactly one of agent"]),  # neither
    (["--unset", "model"], "--unset model", ["has no such setting", "agent, env.ANTHROPIC_API_KEY"]),
    (["--set", "tool_policy"], "--set", ["'tool_policy' is not KEY=VALUE"]),
    (["--set", "env.OPENAI_API_KEY"], "--set", ["an item that names a secret is not KEY=VALUE"]),
    (["--unset", "env.ANTHROPIC_API_KEY=x"], "--unset", ["not KEY=VALUE"]),
    (["--set", "model=a", "--unset", "model"], "--set model", ["also given to --unset"]),
    (["--set", "agent=codex", "--set", "model=a\nb"], "model", ["must be a model name"]),
    (["--provider", "openai", "--set", "model=gpt-5"], "--provider", ["uses the acp provider, not openai",
                                                                       "--provider openai --setting"]),
    (["--set", "agent=codex", "--set", "env.OPENAI_BASE_URL=ftp://models"], "env.OPENAI_BASE_URL",
     ["must be an http"]),
], ids=["unknown-key", "bad-policy", "bad-number", "env-name", "preset", "agent-and-command", "no-agent",
        "unset-absent", "no-equals", "no-equals-secret", "unset-value", "set-and-unset", "model-newline",
        "other-provider", "preset-check"])
def test_a_bad_change_is_refused_naming_the_key_and_changes_nothing(core: Core, argv: list[str], field: str,
                                                                    words: list[str]) -> None:
    project_id = _project(core)
    with pytest.raises(InvalidInput) as refused:
        manage.run(["set-provider", "--project", str(project_id), *argv], core)
    assert refused.value.field == field, str(refused.value)
    for word in words:
        assert word in str(refused.value)
    assert SECRET not in str(refused.value)
    assert _stored(core, project_id) == ("acp", ACP)


def test_a_check_that_quotes_a_secret_shows_it_hidden(core: Core, monkeypatch: pytest.MonkeyPatch) -> None:
    """No check quotes a secret's value today; one that did (a preset's own check) is masked."""
    def quoting(provider: str, raw: dict[str, str]) -> dict[str, object]:
        raise InvalidInput("--setting", f"env.ANTHROPIC_API_KEY: {raw['env.ANTHROPIC_API_KEY']!r} is refused")

    project_id = _project(core)
    monkeypatch.setattr(manage, "checked_settings", quoting)
    with pytest.raises(InvalidInput) as refused:
        manage.run(["set-provider", "--project", str(project_id), "--set", "tool_policy=ask"], core)
    assert str(refused.value) == "--set: env.ANTHROPIC_API_KEY: '[secret, not shown]' is refused"
    assert _stored(core, project_id) == ("acp", ACP)


def test_set_needs_a_provider_of_the_projects_own(core: Core) -> None:
    project_id = _project(core, provider=None)
    with pytest.raises(InvalidInput, match="has no provider of its own"):
        manage.run(["set-provider", "--project", str(project_id), "--set", "model=x"], core)
    with pytest.raises(NotFound, match="no project with id 987654"):
        manage.run(["set-provider", "--project", "987654", "--set", "model=x"], core)
    assert _stored(core, project_id) == (None, {})


@pytest.mark.parametrize("argv", [
    ["--provider", "acp", "--setting", "agent=claude", "--set", "tool_policy=ask"],
    ["--setting", "agent=claude", "--unset", "model"],
    [],  # neither --provider nor --set/--unset
    ["--setting", "agent=claude"],
], ids=["setting-and-set", "setting-and-unset", "nothing", "setting-without-provider"])
def test_usage_errors_exit_2_and_change_nothing(core: Core, argv: list[str], capsys: pytest.CaptureFixture) -> None:
    project_id = _project(core)
    with pytest.raises(SystemExit) as exited:
        manage.run(["set-provider", "--project", str(project_id), *argv], core)
    assert exited.value.code == 2
    assert "usage:" in capsys.readouterr().err
    assert _stored(core, project_id) == ("acp", ACP)
