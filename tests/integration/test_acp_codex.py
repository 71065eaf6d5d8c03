"""Codex as a chat's agent through the ``acp`` provider (SPEC §11), for real and offline.

The installed ``codex`` preset (codex-acp 0.16.0, which carries Codex's core) talks to the
scripted Responses server (tests/agents/responses_server.py), which plays the model's side and
records what Codex sends. Codex runs shell commands itself (its ``shell_command`` tool);
``remote-schedule`` reaches the agent API over a real socket with the turn's grant, read from
SCHEDULE_API_TOKEN_FILE. The scheduler loop is built by the composition root and ticked
in-process, as in the demo conversation test. Mirrors tests/integration/test_acp_claude.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from sqlmodel import select

from app.core.config import Settings
from app.core.models import Run, RunSource, RunStatus
from app.schedules.model import CreatedBy, TaskRun, TaskStatus
from app.schedules.service import Actor, TaskService
from scheduler.__main__ import build_loop
from tests.agents.codex_rig import API_KEY, MODEL, WAIT, CodexRig, build_codex_rig, finished, reopen
from tests.agents.responses_server import SHELL_TOOL, ResponsesServer, Text, Usage, shell, step
from tests.integration.test_scheduler_loop import settle

ASK = "Please post the standup summary every hour until it is done."
CREATE = ("scripts/remote-schedule create --name standup --every 3600 "
          "--prompt 'Post the standup summary in this chat, then complete the task.'")
REPLY = "I created the schedule **standup** as a draft.\n\n- it fires every hour\n- arm it in the Schedules drawer"
COMPLETE = "scripts/remote-schedule complete-current --reason 'the standup is posted'"


@pytest.fixture
def model() -> Iterator[ResponsesServer]:
    with ResponsesServer() as server:
        yield server
        assert server.problems == [], "the scripted model was asked something the test did not expect"


@pytest.fixture
def rig(settings: Settings, model: ResponsesServer) -> Iterator[CodexRig]:
    r = build_codex_rig(settings, model)
    yield r
    r.close()


def test_codex_schedules_a_draft_and_the_fire_completes_it_in_the_same_session(rig: CodexRig,
                                                                               model: ResponsesServer) -> None:
    core = rig.core
    # 1. The user asks; the model says a line and calls the shell tool, then answers in Markdown.
    model.add(step(Text("I'll create that schedule."), shell(CREATE), usage=Usage(100, 10, cached_tokens=40)),
              step(Text(REPLY), usage=Usage(200, 20, cached_tokens=50)))
    asked = finished(core.prompts.start(rig.chat, ASK))
    assert asked.status == RunStatus.SUCCEEDED, asked
    [task] = rig.tasks()
    assert (task.name, task.status, task.created_by, task.chat_id) == (
        "standup", TaskStatus.DRAFT.value, CreatedBy.AGENT.value, rig.chat)

    [(call_id, states)] = rig.tool_states(asked.run_id).items()
    last = states[-1]
    assert (last["kind"], last["status"], last["input"]) == ("execute", "completed", CREATE)
    assert f'created schedule {task.id} "standup" (draft' in last["output"]
    assert last["decision"]["outcome"] == "allowed" and last["decision"]["by"] == "capability"
    assert asked.output == "I'll create that schedule.\n\n" + REPLY, "no 'model metadata' warning in the text"
    kinds = [e.type for e in rig.events(asked.run_id)]
    assert kinds.index("tool") > kinds.index("assistant_text")
    # codex-acp reports no usage over ACP: the preset reads Codex's own totals around the turn.
    assert asked.usage == {"input_tokens": 300, "output_tokens": 30, "cached_tokens": 90}
    assert json.loads(rig.run_row(asked.run_id).usage) == asked.usage

    first, second = model.requests
    assert first.body["model"] == MODEL and first.headers["authorization"] == f"Bearer {API_KEY}"
    assert first.user_texts()[-1] == ASK and SHELL_TOOL in first.tool_names()
    assert not {"exec_command", "web_search", "multi_agent_v1"} & set(first.tool_names())
    assert f'created schedule {task.id} "standup" (draft' in second.function_outputs()[call_id]
    session = rig.chat_row().provider_session_id
    assert session and first.headers["session-id"] == session, "the chat keeps codex's session"
    token_file = core.settings.data_dir / "agent-tokens" / str(rig.chat) / "token"
    assert not token_file.exists(), "the grant's file lives only as long as the turn"

    # 2. The user arms it and runs it now; the fire continues the same session and completes the task.
    service = TaskService(core.db, core.clock, core.settings)
    service.arm(Actor(rig.user), task.id)
    service.run_now(Actor(rig.user), task.id)
    model.add(step(shell(COMPLETE)), step(Text("The standup summary is posted.")))
    build_loop(core, "sched:acp").tick()
    settle(core, WAIT)
    with core.db.read() as s:
        [fired] = list(s.exec(select(Run).where(Run.source == RunSource.SCHEDULE.value)))
    assert fired.status == RunStatus.SUCCEEDED.value, fired.error
    assert rig.chat_row().provider_session_id == session
    fire_request = model.requests[2]  # the fire's first model call carries the whole session
    said = fire_request.user_texts()
    assert said[0] == ASK, "the model sees the earlier turn: the fire continued the chat's session"
    assert said[-1].startswith('[scheduled task "standup", fire 1/∞]')
    assert call_id in fire_request.function_outputs(), "and the earlier turn's tool result"
    [done] = rig.tasks()
    assert done.status == TaskStatus.COMPLETED.value
    with core.db.read() as s:
        [task_run] = list(s.exec(select(TaskRun).where(TaskRun.task_id == task.id)))
    assert task_run.run_id == fired.id and task_run.provider_session_id is None  # the chat's own session
    [fire_states] = rig.tool_states(fired.id).values()
    assert fire_states[-1]["status"] == "completed" and fire_states[-1]["decision"]["by"] == "capability"
    assert f'completed schedule {task.id} "standup"' in fire_states[-1]["output"]
    assert json.loads(fired.usage)["input_tokens"] == 2 * Usage().input_tokens, "the fire's own two calls"


def test_a_restart_between_turns_continues_the_session(rig: CodexRig, model: ResponsesServer) -> None:
    model.add(step(Text("Noted: the release is on **Friday**.")))
    first = finished(rig.core.prompts.start(rig.chat, "Remember: the release is on Friday."))
    assert first.status == RunStatus.SUCCEEDED, first
    session = rig.chat_row().provider_session_id
    again = reopen(rig)  # new prompt service, provider factory and agents: nothing warm survives
    try:
        model.add(step(Text("It is on Friday."), usage=Usage(77, 7)))
        second = finished(again.core.prompts.start(again.chat, "When is the release?"))
        assert second.status == RunStatus.SUCCEEDED, second
        assert second.output == "It is on Friday." and second.session_id == session
        request = model.requests[-1]
        assert request.user_texts() == ["Remember: the release is on Friday.", "When is the release?"]
        assert request.messages("assistant") == ["Noted: the release is on **Friday**."]
        assert "status" not in [e.type for e in again.events(second.run_id)]
        assert second.usage == {"input_tokens": 77, "output_tokens": 7, "cached_tokens": 0}
    finally:
        again.close()
