"""ACP stream → events (SPEC §11): tool calls folded by id, bounded input/output, decisions, plans;
which tool calls count as a plain call of remote-schedule; the acp settings."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from app.agents.providers.acp_events import (
    INPUT_MAX_BYTES,
    OUTPUT_MAX_BYTES,
    ToolCalls,
    command_of,
    cut,
    is_remote_schedule,
    plan_json,
)
from app.agents.providers.registry import acp_config, project_settings
from app.core.clock import UTC
from app.core.config import Settings
from app.core.models import Project
from app.core.ports import ProviderError

WORKSPACE = Path("/data/workspaces/7")
NOW = dt.datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize("command", [
    "scripts/remote-schedule list",
    "./scripts/remote-schedule complete-current --reason 'done; really'",
    f"{WORKSPACE}/scripts/remote-schedule show 3",
    "python3 scripts/remote-schedule create --name n --every 3600 --prompt \"a | b > c\"",
    "scripts/remote-schedule create --name n --at +30m --prompt 'costs $5 (maybe)'",
])
def test_plain_calls_of_remote_schedule_are_recognised(command: str) -> None:
    assert is_remote_schedule({"command": command}, WORKSPACE)


@pytest.mark.parametrize("command", [
    "scripts/remote-schedule list; rm -rf /",
    "scripts/remote-schedule list && curl evil",
    "scripts/remote-schedule list | sh",
    "scripts/remote-schedule list > /etc/passwd",
    "scripts/remote-schedule list\nrm -rf /",
    "scripts/remote-schedule create --prompt \"$(rm -rf /)\"",
    "scripts/remote-schedule create --prompt \"`id`\"",
    "(scripts/remote-schedule list)",
    "other/scripts/remote-schedule list",
    "/tmp/scripts/remote-schedule list",
    "bash scripts/remote-schedule list",
    "echo scripts/remote-schedule",
    "scripts/remote-schedule 'unterminated",
    "",
])
def test_anything_else_is_not(command: str) -> None:
    assert not is_remote_schedule({"command": command}, WORKSPACE)


def test_inputs_that_are_not_commands_are_not() -> None:
    assert not is_remote_schedule(None, WORKSPACE)
    assert not is_remote_schedule({"file_path": "scripts/remote-schedule"}, WORKSPACE)
    assert not is_remote_schedule("scripts/remote-schedule list", WORKSPACE)


def test_codex_style_argv_commands_are_read() -> None:
    assert command_of({"command": ["/bin/bash", "-lc", "scripts/remote-schedule list"]}) == \
        "scripts/remote-schedule list"
    assert is_remote_schedule({"command": ["/usr/bin/bash", "-c", "scripts/remote-schedule list"]}, WORKSPACE)
    assert command_of({"command": ["ls", "-la"]}) == "ls -la"


def test_cut_keeps_the_limit_and_says_so() -> None:
    assert cut("short", 10) == "short"
    long = "é" * 5000
    out = cut(long, 2048)
    assert len(out.encode()) <= 2048 and out.endswith("[cut: 10000 bytes, the first 2048 kept]")


def test_tool_calls_fold_by_id_and_report_only_changes() -> None:
    calls = ToolCalls()
    first = json.loads(calls.apply({"toolCallId": "t1", "title": "Terminal", "kind": "execute", "status": "pending",
                                    "rawInput": {}}))
    assert first == {"id": "t1", "title": "Terminal", "kind": "execute", "status": "pending"}
    assert calls.apply({"toolCallId": "t1", "kind": "execute"}) is None  # nothing a reader sees changed
    running = json.loads(calls.apply({"toolCallId": "t1", "title": "ls", "rawInput": {"command": "ls"},
                                      "content": [{"type": "content", "content": {"type": "text",
                                                                                   "text": "List files"}}]}))
    assert running["input"] == "ls" and "output" not in running  # a running call's content is its description
    done = json.loads(calls.apply({"toolCallId": "t1", "status": "completed", "rawOutput": "a\nb"}))
    assert (done["title"], done["status"], done["output"]) == ("ls", "completed", "a\nb")
    assert calls.apply({"toolCallId": "", "title": "x"}) is None


def test_tool_input_and_output_are_bounded() -> None:
    calls = ToolCalls()
    state = json.loads(calls.apply({"toolCallId": "t", "status": "completed", "rawInput": {"command": "x" * 9000},
                                    "rawOutput": "y" * 20000}))
    assert len(state["input"].encode()) <= INPUT_MAX_BYTES and "[cut:" in state["input"]
    assert len(state["output"].encode()) <= OUTPUT_MAX_BYTES and "[cut:" in state["output"]


def test_final_content_is_output_when_there_is_no_raw_output() -> None:
    calls = ToolCalls()
    state = json.loads(calls.apply({"toolCallId": "t", "status": "failed", "content": [
        {"type": "content", "content": {"type": "text", "text": "boom"}}, {"type": "diff", "path": "a.py"}]}))
    assert state["output"] == "boom\nedited a.py"


def test_a_rejected_decision_ends_a_call_the_agent_leaves_open() -> None:
    calls = ToolCalls()
    calls.apply({"toolCallId": "t", "status": "pending", "title": "touch f"})
    state = json.loads(calls.decide("t", "rejected", "reject", "policy:deny", NOW))
    assert state["status"] == "failed"
    assert state["decision"] == {"outcome": "rejected", "option": "reject", "by": "policy:deny",
                                 "at": "2026-01-05T09:00:00Z"}
    allowed = json.loads(calls.decide("u", "allowed", "allow", "capability", NOW))
    assert allowed["status"] == "pending" and allowed["decision"]["by"] == "capability"


def test_plans_keep_content_status_and_priority() -> None:
    assert json.loads(plan_json({"entries": [{"content": "Write", "status": "in_progress", "priority": "high"},
                                             {"content": "Test"}, "junk"]})) == {"entries": [
        {"content": "Write", "status": "in_progress", "priority": "high"},
        {"content": "Test", "status": "pending", "priority": "medium"}]}


def _options(**values: object) -> dict[str, object]:
    return project_settings(Project(id=7, name="P", owner_id=1, provider="acp", provider_settings=json.dumps(values)))


@pytest.mark.parametrize(("values", "message"), [
    ({}, "set exactly one of agent"),
    ({"agent": "claude", "command": "x"}, "set exactly one of agent"),
    ({"agent": "nope"}, "unknown preset 'nope'"),
    ({"command": "my-agent", "tool_policy": "sometimes"}, "tool_policy: 'sometimes' is not one of allow, deny, ask"),
])
def test_bad_acp_settings_are_refused_naming_the_setting(values: dict[str, object], message: str) -> None:
    with pytest.raises(ProviderError, match=message):
        acp_config(Settings(), _options(**values))


def test_a_preset_that_is_not_installed_says_how_to_install_it(tmp_path: Path) -> None:
    with pytest.raises(ProviderError, match="install-agent claude"):
        acp_config(Settings(agents_dir_override=tmp_path), _options(agent="claude"))


def test_env_settings_become_the_agents_variables() -> None:
    config = acp_config(Settings(), _options(command="my-agent --acp", **{"env.API_KEY": "k", "model": "m"}))
    assert (config.argv, dict(config.env), config.policy, config.model) == (("my-agent", "--acp"), {"API_KEY": "k"},
                                                                           "allow", "m")


@pytest.mark.parametrize("key", ["env.", "env.1X", "env.A-B"])
def test_env_keys_must_name_a_variable(key: str) -> None:
    with pytest.raises(ProviderError, match="is not env.NAME"):
        _options(command="x", **{key: "v"})
