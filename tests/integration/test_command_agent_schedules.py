"""A real agent CLI (the `command` provider) schedules through `remote-schedule` inside its turn."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator

import pytest
from sqlmodel import select

from app.core import chats, projects
from app.core.chats import SCHEDULED_TASKS
from app.core.config import Settings
from app.core.context import Core
from app.core.models import RunStatus
from app.schedules.model import CreatedBy, ScheduledTask, TaskStatus
from tests.conftest import agent_script, make_core, with_settings
from tests.integration.apiclient import add_user
from tests.integration.apiserver import ApiServer
from tests.isolation import free_port

pytestmark = pytest.mark.slow  # agent processes against a live API: left out of `make check`

# The "agent": reads its prompt on stdin, asks for a schedule with the workspace's CLI, reports.
AGENT = textwrap.dedent("""
    import os, subprocess, sys
    prompt = sys.stdin.read()
    print("agent got:", prompt.strip(), flush=True)
    done = subprocess.run([sys.executable, "scripts/remote-schedule", "create", "--name", "nightly report",
                           "--cron", "0 2 * * *", "--tz", "Europe/Berlin", "--prompt", "write the nightly report"],
                          capture_output=True, text=True)
    print(done.stdout.strip() or done.stderr.strip(), flush=True)
    print("cli exit", done.returncode, flush=True)
""")


@pytest.fixture
def agent_core(settings: Settings) -> Iterator[tuple[Core, ApiServer]]:
    """The agent runs in the sandbox (the default): the CLI reaches the API over loopback from there."""
    settings, line = agent_script(settings, AGENT)
    port = free_port()
    core = make_core(with_settings(settings, api_url=f"http://127.0.0.1:{port}", provider="command",
                                   provider_command=line))
    server = ApiServer(core, port)
    try:
        yield core, server
    finally:
        server.close()
        core.prompts.shutdown(2.0)
        core.db.dispose()


def _chat(core: Core, skill: bool) -> int:
    user = add_user(core, "cli@example.com")
    project = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, "Ops", user)
    chat = chats.create_chat(core.db, core.clock, user, project.id, "Nightly")
    if skill:
        chats.update_chat(core.db, core.clock, user, chat.id, skills=[SCHEDULED_TASKS])
    return chat.id


def _tasks(core: Core) -> list[ScheduledTask]:
    with core.db.read() as s:
        return list(s.exec(select(ScheduledTask)))


def test_an_agent_cli_creates_a_draft_through_remote_schedule(agent_core) -> None:
    core, _ = agent_core
    chat_id = _chat(core, skill=True)
    result = core.prompts.start(chat_id, "please schedule the nightly report").wait(60)
    assert result is not None and result.status == RunStatus.SUCCEEDED, result
    assert "agent got: please schedule the nightly report" in result.output
    assert "cli exit 0" in result.output and '"nightly report" (draft' in result.output
    [task] = _tasks(core)
    assert (task.status, task.created_by, task.chat_id, task.next_run_at) == (
        TaskStatus.DRAFT.value, CreatedBy.AGENT.value, chat_id, None)


def test_without_the_skill_the_cli_has_no_credentials(agent_core) -> None:
    core, _ = agent_core
    chat_id = _chat(core, skill=False)
    result = core.prompts.start(chat_id, "please schedule the nightly report").wait(60)
    assert result is not None and result.status == RunStatus.SUCCEEDED, result
    assert "cli exit 3" in result.output and "SCHEDULE_API_URL" in result.output
    assert _tasks(core) == []
