"""Codex as a chat's agent through the ``acp`` provider (SPEC §11), for real and offline.

The installed ``codex`` preset (codex-acp 0.16.0, which carries Codex's core) talks to the
scripted Responses server (tests/agents/responses_server.py), which plays the model's side and
records what Codex sends. Codex runs shell commands itself (its ``shell_command`` tool);
``remote-schedule`` reaches the agent API over a real socket with the turn's grant, read from
SCHEDULE_API_TOKEN_FILE. The scheduler loop is built by the composition root and ticked
in-process. Mirrors tests/integration/test_acp_claude.py; on SQLite and PostgreSQL where the
store matters. An agent "dies" or "hangs" because the scripted model has it run
``kill -KILL $PPID`` or ``kill -STOP $PPID`` (the shell's parent is codex-acp itself).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator

import pytest
from sqlmodel import select

from app.agents.providers.acp_turn import LOST_SESSION
from app.core.config import Settings
from app.core.models import Run, RunSource, RunStatus
from app.core.turns import RunHandle, RunResult
from app.schedules.model import CreatedBy, TaskRun, TaskStatus
from app.schedules.service import Actor, TaskService
from scheduler.__main__ import build_loop
from tests.agents.anthropic_server import wait_for
from tests.agents.codex_rig import API_KEY, MODEL, CodexRig, build_codex_rig, reopen
from tests.agents.responses_server import SHELL_TOOL, ResponsesServer, Text, Usage, hang, shell, step
from tests.integration.test_scheduler_loop import settle

pytestmark = pytest.mark.slow  # the real Codex: left out of `make check`

WAIT = 120.0  # codex-acp starts in well under a second; a loaded 2-core machine is slower
ASK = "Please post the standup summary every hour until it is done."
CREATE = ("scripts/remote-schedule create --name standup --every 3600 "
          "--prompt 'Post the standup summary in this chat, then complete the task.'")
REPLY = "I created the schedule **standup** as a draft.\n\n- it fires every hour\n- arm it in the Schedules drawer"
COMPLETE = "scripts/remote-schedule complete-current --reason 'the standup is posted'"
SQLITE = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


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


@pytest.fixture
def quick_rig(settings: Settings, model: ResponsesServer) -> Iterator[CodexRig]:
    """A rig whose agents get one second to stop after a cancel."""
    r = build_codex_rig(settings, model, agent_cancel_grace_seconds=1.0)
    yield r
    r.close()


def finished(handle: RunHandle) -> RunResult:
    result = handle.wait(WAIT)
    assert result is not None, f"turn {handle.run_id} did not finish in {WAIT} s"
    return result


def warm_up(rig: CodexRig, model: ResponsesServer) -> int:
    """One quick turn, so the chat has a warm agent; returns its pid."""
    model.add(step(Text("Ready.")))
    assert finished(rig.core.prompts.start(rig.chat, "Are you there?")).status == RunStatus.SUCCEEDED
    return rig.pool.pids()[rig.chat]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


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
    [fire_last] = rig.last_tool_states(fired.id)
    assert fire_last["status"] == "completed" and fire_last["decision"]["by"] == "capability"
    assert f'completed schedule {task.id} "standup"' in fire_last["output"]
    assert json.loads(fired.usage)["input_tokens"] == 2 * Usage().input_tokens, "the fire's own two calls"


def test_a_restart_of_both_processes_between_turns_loses_nothing(rig: CodexRig, model: ResponsesServer) -> None:
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
        assert second.usage == {"input_tokens": 77, "output_tokens": 7, "cached_tokens": 0}, "Codex kept its totals"
    finally:
        again.close()


@SQLITE
def test_deny_refuses_every_command_but_remote_schedule_and_the_refusal_is_on_the_tools_event(
        rig: CodexRig, model: ResponsesServer) -> None:
    rig.configure(tool_policy="deny")
    (rig.workspace / "notes.txt").write_text("secret\n")
    for command in ("touch denied.txt", "cat notes.txt"):  # cat: one Codex would otherwise run unasked
        before = len(model.requests)
        model.add(step(shell(command)))
        refused = finished(rig.core.prompts.start(rig.chat, f"please run {command}"))
        assert refused.status == RunStatus.SUCCEEDED, refused
        [last] = rig.last_tool_states(refused.run_id)
        assert (last["input"], last["status"]) == (command, "failed")
        assert last["decision"]["outcome"] == "rejected" and last["decision"]["by"] == "policy:deny"
        assert last["decision"]["option"] == "abort" and "secret" not in last.get("output", "")
        assert len(model.requests) == before + 1, "codex ends its turn on a refusal: no tool result is sent"
    assert not (rig.workspace / "denied.txt").exists()

    model.add(step(shell("scripts/remote-schedule list")), step(Text("There are no schedules.")))
    listed = finished(rig.core.prompts.start(rig.chat, "which schedules are there?"))
    assert listed.status == RunStatus.SUCCEEDED and listed.output == "There are no schedules."
    [last] = rig.last_tool_states(listed.run_id)
    assert (last["status"], last["decision"]["by"]) == ("completed", "capability")
    assert model.requests[-1].user_texts()[-2:] == ["please run cat notes.txt", "which schedules are there?"]


@SQLITE
def test_an_agent_that_dies_mid_turn_fails_the_turn_and_the_next_turn_recovers(
        rig: CodexRig, model: ResponsesServer) -> None:
    pid = warm_up(rig, model)
    model.add(step(shell("kill -KILL $PPID")))
    died = finished(rig.core.prompts.start(rig.chat, "stop yourself"))
    assert died.status == RunStatus.FAILED, died
    assert died.error.startswith("the agent was killed by SIGKILL during the turn"), died.error
    model.add(step(Text("Back again.")))
    again = finished(rig.core.prompts.start(rig.chat, "Still there?"))
    assert again.status == RunStatus.SUCCEEDED and again.output == "Back again.", again
    assert rig.pool.pids()[rig.chat] != pid
    assert model.requests[-1].user_texts()[:2] == ["Are you there?", "stop yourself"], "the session was loaded"


@SQLITE
def test_a_hung_agent_is_cancelled_at_the_timeout_then_killed(quick_rig: CodexRig, model: ResponsesServer) -> None:
    rig = quick_rig
    pid = warm_up(rig, model)
    rig.core.prompts.settings = dataclasses.replace(rig.core.prompts.settings, run_timeout_seconds=3)
    model.add(step(shell("kill -STOP $PPID")))  # deaf to session/cancel
    hung = finished(rig.core.prompts.start(rig.chat, "freeze"))
    assert hung.status == RunStatus.FAILED and hung.error == "timed out after 3 s", hung
    wait_for(lambda: not alive(pid), 10, "the hung agent to be killed")
    assert rig.chat not in rig.pool.pids()


@SQLITE
def test_after_a_cancelled_turn_the_warm_session_answers_the_next_prompt_in_step(
        quick_rig: CodexRig, model: ResponsesServer) -> None:
    rig = quick_rig
    pid = warm_up(rig, model)
    rig.core.prompts.settings = dataclasses.replace(rig.core.prompts.settings, run_timeout_seconds=2)
    model.add(hang())  # the model never answers; codex honours the cancel
    cancelled = finished(rig.core.prompts.start(rig.chat, "Take your time."))
    assert cancelled.status == RunStatus.FAILED and cancelled.error == "timed out after 2 s"
    model.release()
    rig.core.prompts.settings = dataclasses.replace(rig.core.prompts.settings, run_timeout_seconds=600)
    model.add(step(Text("A fresh answer.")), step(Text("And another.")))
    after = finished(rig.core.prompts.start(rig.chat, "Say something."))
    assert (after.status, after.output) == (RunStatus.SUCCEEDED, "A fresh answer."), after
    later = finished(rig.core.prompts.start(rig.chat, "Once more."))
    assert later.output == "And another."
    assert rig.pool.pids()[rig.chat] == pid, "the warm agent survived the cancel"


@SQLITE
def test_a_session_that_cannot_be_loaded_starts_anew_with_the_chats_history(
        rig: CodexRig, model: ResponsesServer) -> None:
    model.add(step(Text("Noted: the release is on Friday.")))
    first = finished(rig.core.prompts.start(rig.chat, "Remember: the release is on Friday."))
    assert first.status == RunStatus.SUCCEEDED, first
    lost = rig.chat_row().provider_session_id
    again = reopen(rig)
    try:
        for rollout in (rig.home / ".codex" / "sessions").rglob(f"*{lost}.jsonl"):
            rollout.unlink()  # Codex's record of the session: without it the session cannot come back
        model.add(step(Text("It is on Friday.")))
        second = finished(again.core.prompts.start(again.chat, "When is the release?"))
        assert second.status == RunStatus.SUCCEEDED, second
        assert second.session_id not in (None, lost)
        assert [e.text for e in again.events(second.run_id) if e.type == "status"] == [LOST_SESSION]
        [seeded] = model.requests[-1].user_texts()
        assert "Remember: the release is on Friday." in seeded and "Noted: the release is on Friday." in seeded
        assert seeded.endswith("When is the release?")
    finally:
        again.close()


@SQLITE
def test_a_fresh_session_task_gets_a_new_session_per_fire(rig: CodexRig, model: ResponsesServer) -> None:
    core = rig.core
    model.add(step(Text("Hello from the chat's own session.")))
    assert finished(core.prompts.start(rig.chat, "A private remark.")).status == RunStatus.SUCCEEDED
    chat_session = rig.chat_row().provider_session_id
    service = TaskService(core.db, core.clock, core.settings)
    task, _ = service.create(Actor(rig.user), rig.chat, {"name": "digest", "prompt": "Write the digest.",
                                                         "schedule": {"kind": "interval", "every_seconds": 3600},
                                                         "session": "fresh"})
    loop = build_loop(core, "sched:fresh")
    for reply in ("Digest number one.", "Digest number two."):
        model.add(step(Text(reply)))
        service.run_now(Actor(rig.user), task.id)
        loop.tick()
        settle(core, WAIT)
    with core.db.read() as s:
        runs = list(s.exec(select(TaskRun).where(TaskRun.task_id == task.id).order_by(TaskRun.id)))
    sessions = [r.provider_session_id for r in runs]
    assert len(sessions) == 2 and None not in sessions and len({*sessions, chat_session}) == 3, sessions
    assert rig.chat_row().provider_session_id == chat_session
    first, second = (r.user_texts() for r in model.requests[-2:])
    assert len(first) == len(second) == 1, "each fire starts a session of its own, without the chat's turns"
    assert first[0].startswith('[scheduled task "digest", fire 1/∞]') and "A private remark." not in first[0]
    assert "Output of the previous fire:\nDigest number one." in second[0]
