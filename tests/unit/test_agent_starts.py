"""Agent start failures, pure parts: which exits are failures to start, and when two failures are one cause."""

from __future__ import annotations

import json

import pytest

from app.agents import sandbox
from app.core import agent_starts
from app.core.agent_starts import cause_of, one_line
from app.core.models import Project


@pytest.mark.parametrize(("code", "tail", "sandboxed", "started"), [
    (1, "bwrap: execvp no-such-cli: No such file or directory", True, False),
    (1, "bwrap: Can't find source path /srv/data: Permission denied", True, False),
    (1, "noise\nbwrap: Can't find source path /x: Permission denied\n", True, False),
    (1, "bwrap: execvp no-such-cli: No such file or directory", False, True),  # unfenced: the agent's own text
    (2, "bwrap: Can't find source path /x: Permission denied", True, True),  # bwrap fails with 1 only
    (1, "Traceback ...\nValueError: bwrap: is a word here", True, True),  # the agent's own last line
    (137, "", True, True),
], ids=["missing-program", "unreachable-bind", "after-noise", "unfenced", "other-status", "agent-error", "killed"])
def test_only_bwraps_own_failure_is_a_failure_to_start(code: int, tail: str, sandboxed: bool, started: bool) -> None:
    assert (sandbox.start_failure(code, tail, sandboxed=sandboxed) is None) == started


def test_one_cause_whatever_pids_ids_and_temporary_names_it_names() -> None:
    first = cause_of("acp", "the agent exited with 1: /data/egress/agent-k3x9q/sock: pid 4412 gone")
    assert first == cause_of("acp", "the agent exited with 1: /data/egress/agent-7pw2m/sock: pid 518 gone")
    assert first != cause_of("command", "the agent exited with 1: /data/egress/agent-k3x9q/sock: pid 4412 gone")
    assert first != cause_of("acp", "bubblewrap (bwrap) is not installed")


def test_a_stderr_tail_is_one_log_line() -> None:
    assert one_line("  first\n\n second line \nthird\n") == "first | second line | third"


def test_a_detail_never_holds_the_projects_secret_settings() -> None:
    """An agent's stderr may echo its key: the detail the owner's inbox, webhook and admin health get
    has the project's secret values masked."""
    project = Project(name="P", provider_settings=json.dumps({
        "agent": "claude", "env.ANTHROPIC_API_KEY": "plainvalue-1234", "env.REGION": "eu-west"}))
    detail = agent_starts.without_secrets("exit 1: using key plainvalue-1234 in eu-west", project)
    assert "plainvalue-1234" not in detail and "eu-west" in detail
    assert agent_starts.without_secrets("no settings", None) == "no settings"
