"""Claude Code as a chat's agent through the ``acp`` provider (SPEC §11), for real and offline.

The installed ``claude`` preset (the ACP adapter over Claude Code's native binary) talks to the
scripted Anthropic Messages server (tests/agents/anthropic_server.py), which plays the model's
side of the conversation and records what Claude Code sends it. ``remote-schedule`` reaches the
agent API over a real socket with the turn's grant, read from SCHEDULE_API_TOKEN_FILE. The
scheduler loop is built by the composition root and ticked in-process, as in the demo
conversation test. On SQLite and PostgreSQL where the store matters.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from sqlmodel import select

from app.core.config import Settings
from app.core.models import Run, RunSource, RunStatus
from app.core.turns import RunHandle, RunResult
from app.schedules.model import CreatedBy, ScheduledTask, TaskRun, TaskStatus
from app.schedules.service import Actor, TaskService
from scheduler.__main__ import build_loop
from tests.agents.anthropic_server import USAGE_CACHED, USAGE_IN, USAGE_OUT, AnthropicServer, bash, text, user_texts
from tests.agents.rig import AgentRig, build_rig, reopen
from tests.integration.test_scheduler_loop import settle

WAIT = 180.0  # a cold Claude Code on a loaded 2-core machine takes seconds; a hung turn fails well before
ASK = "Please post the standup summary every hour until it is done."
CREATE = ("scripts/remote-schedule create --name standup --every 3600 "
          "--prompt 'Post the standup summary in this chat, then complete the task.'")
REPLY = "I created the schedule **standup** as a draft.\n\n- it fires every hour\n- arm it in the Schedules drawer"


@pytest.fixture
def model() -> Iterator[AnthropicServer]:
    server = AnthropicServer()
    yield server
    server.close()


@pytest.fixture
def rig(settings: Settings, model: AnthropicServer) -> Iterator[AgentRig]:
    r = build_rig(settings, model)
    yield r
    r.close()


def finished(handle: RunHandle) -> RunResult:
    result = handle.wait(WAIT)
    assert result is not None, f"turn {handle.run_id} did not finish in {WAIT} s"
    return result


def tool_states(rig: AgentRig, run_id: int) -> dict[str, list[dict]]:
    """Each tool call's successive states in the run's events, by id."""
    calls: dict[str, list[dict]] = {}
    for event in rig.events(run_id):
        if event.type == "tool":
            state = json.loads(event.text)
            calls.setdefault(state["id"], []).append(state)
    return calls


def tasks(rig: AgentRig) -> list[ScheduledTask]:
    with rig.core.db.read() as s:
        return list(s.exec(select(ScheduledTask).order_by(ScheduledTask.id)))


def test_claude_schedules_a_draft_and_the_fire_completes_it_in_the_same_session(rig: AgentRig,
                                                                                model: AnthropicServer) -> None:
    core = rig.core
    # 1. The user asks; the model answers with a Bash call of remote-schedule, then Markdown.
    model.play(bash(CREATE, "I'll create that schedule."), text(REPLY))
    asked = finished(core.prompts.start(rig.chat, ASK))
    assert asked.status == RunStatus.SUCCEEDED, asked
    [task] = tasks(rig)
    assert (task.name, task.status, task.created_by, task.chat_id) == (
        "standup", TaskStatus.DRAFT.value, CreatedBy.AGENT.value, rig.chat)

    [states] = tool_states(rig, asked.run_id).values()
    last = states[-1]
    assert (last["kind"], last["status"], last["input"]) == ("execute", "completed", CREATE)
    assert f'created schedule {task.id} "standup" (draft' in last["output"]
    assert last["decision"]["outcome"] == "allowed" and last["decision"]["by"] == "capability"
    assert asked.output == "I'll create that schedule.\n\n" + REPLY  # the Markdown as the model wrote it
    kinds = [e.type for e in rig.events(asked.run_id)]
    assert kinds.index("tool") > kinds.index("assistant_text")  # the card between the two paragraphs
    usage = asked.usage  # two model calls in the turn: before and after the tool
    assert usage["input_tokens"] == 2 * USAGE_IN and usage["output_tokens"] == 2 * USAGE_OUT
    assert usage["cached_tokens"] == 2 * USAGE_CACHED and usage["cost_usd"] > 0
    assert json.loads(rig.run_row(asked.run_id).usage) == usage
    session = rig.chat_row().provider_session_id
    assert session, "the chat keeps its agent session"
    token_file = core.settings.data_dir / "agent-tokens" / str(rig.chat) / "token"
    assert not token_file.exists(), "the grant's file lives only as long as the turn"

    # 2. The user arms it and runs it now; the fire continues the same session and completes the task.
    service = TaskService(core.db, core.clock, core.settings)
    service.arm(Actor(rig.user), task.id)
    service.run_now(Actor(rig.user), task.id)
    model.play(bash("scripts/remote-schedule complete-current --reason 'the standup is posted'"),
               text("The standup summary is posted. SCHEDULE_STATUS=COMPLETE"))
    build_loop(core, "sched:acp").tick()
    settle(core, WAIT)
    with core.db.read() as s:
        [fired] = list(s.exec(select(Run).where(Run.source == RunSource.SCHEDULE.value)))
    assert fired.status == RunStatus.SUCCEEDED.value, fired.error
    assert rig.chat_row().provider_session_id == session
    fire_request = model.main_requests()[-2]  # the fire's first model call
    said = user_texts(fire_request)
    assert ASK in said[0], "the model sees the earlier turn: the fire continued the chat's session"
    assert any(f'created schedule {task.id} "standup"' in x for x in said)
    assert said[-1].startswith('[scheduled task "standup", fire 1/∞]')
    [done] = tasks(rig)
    assert done.status == TaskStatus.COMPLETED.value
    with core.db.read() as s:
        [task_run] = list(s.exec(select(TaskRun).where(TaskRun.task_id == task.id)))
    assert task_run.run_id == fired.id and task_run.provider_session_id is None  # the chat's own session
    [fire_states] = tool_states(rig, fired.id).values()
    assert fire_states[-1]["status"] == "completed" and fire_states[-1]["decision"]["by"] == "capability"


def test_a_restart_of_both_processes_between_turns_loses_nothing(rig: AgentRig, model: AnthropicServer) -> None:
    model.play(text("Noted: the release is on **Friday**."))
    first = finished(rig.core.prompts.start(rig.chat, "Remember: the release is on Friday."))
    assert first.status == RunStatus.SUCCEEDED, first
    session = rig.chat_row().provider_session_id
    again = reopen(rig)  # new prompt service, provider factory and agents: nothing warm survives
    try:
        model.play(text("It is on Friday."))
        second = finished(again.core.prompts.start(again.chat, "When is the release?"))
        assert second.status == RunStatus.SUCCEEDED, second
        assert second.output == "It is on Friday." and second.session_id == session
        said = user_texts(model.main_requests()[-1])
        assert said[0] == "Remember: the release is on Friday." and said[-1] == "When is the release?"
        assert "status" not in [e.type for e in again.events(second.run_id)]
    finally:
        again.close()
        rig.api = again.api  # closed already; the fixture's close is then harmless
