"""Claude Code as a chat's agent through the ``acp`` provider (SPEC §11), for real and offline.

The installed ``claude`` preset (the ACP adapter over Claude Code's native binary) talks to the
scripted Anthropic Messages server (tests/agents/anthropic_server.py), which plays the model's
side of the conversation and records what Claude Code sends it. ``remote-schedule`` reaches the
agent API over a real socket with the turn's grant, read from SCHEDULE_API_TOKEN_FILE. The
scheduler loop is built by the composition root and ticked in-process, as in the demo
conversation test. On SQLite and PostgreSQL where the store matters.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import select

from app.agents.providers.acp_turn import LOST_SESSION
from app.core.config import Settings
from app.core.models import Chat, Run, RunSource, RunStatus
from app.core.turns import RunHandle, RunResult
from app.schedules.model import CreatedBy, ScheduledTask, TaskRun, TaskStatus
from app.schedules.service import Actor, TaskService
from scheduler.__main__ import build_loop
from tests.agents.anthropic_server import (
    USAGE_CACHED,
    USAGE_IN,
    USAGE_OUT,
    AnthropicServer,
    bash,
    stall,
    text,
    user_texts,
    wait_for,
)
from tests.agents.rig import AgentRig, build_rig, reopen
from tests.integration.test_scheduler_loop import settle

pytestmark = pytest.mark.slow  # the real Claude Code: left out of `make check`

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
    # The card before the second paragraph, written after the tool ran. Where it falls against the
    # first paragraph is the adapter's: text and the tool call of one response are two content
    # blocks, and under load the adapter once delivered the call's start before the text's deltas.
    events = [(e.type, e.text) for e in rig.events(asked.run_id)]
    said = [i for i, (kind, _) in enumerate(events) if kind == "assistant_text"]
    second = next(i for i in said if "I created" in "".join(events[j][1] for j in said if j <= i))
    assert max(i for i, (kind, _) in enumerate(events) if kind == "tool") < second, events
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
    old_core = rig.core
    reopen(rig)  # new prompt service, provider factory and agents: nothing warm survives
    assert rig.core is not old_core and rig.pool.pids() == {}
    model.play(text("It is on Friday."))
    second = finished(rig.core.prompts.start(rig.chat, "When is the release?"))
    assert second.status == RunStatus.SUCCEEDED, second
    assert second.output == "It is on Friday." and second.session_id == session
    said = user_texts(model.main_requests()[-1])
    assert said[0] == "Remember: the release is on Friday." and said[-1] == "When is the release?"
    assert "status" not in [e.type for e in rig.events(second.run_id)]


# -- the agent misbehaves, the policy refuses, the session is gone (the store does not matter) ------

SQLITE = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


@pytest.fixture
def quick_rig(settings: Settings, model: AnthropicServer) -> Iterator[AgentRig]:
    """A rig whose agents get one second to stop after a cancel."""
    r = build_rig(settings, model, agent_cancel_grace_seconds=1.0)
    yield r
    r.close()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants (in the sandbox the pool's pid is bubblewrap, the agent below it)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return found


def warm_up(rig: AgentRig, model: AnthropicServer) -> int:
    """One quick turn, so the chat has a warm agent; returns its pid."""
    model.play(text("Ready."))
    assert finished(rig.core.prompts.start(rig.chat, "Are you there?")).status == RunStatus.SUCCEEDED
    return rig.pool.pids()[rig.chat]


@SQLITE
def test_deny_refuses_tools_but_remote_schedule_and_the_refusal_is_on_the_tools_event(
        rig: AgentRig, model: AnthropicServer) -> None:
    rig.configure(tool_policy="deny")
    model.play(bash("scripts/remote-schedule list"), bash("touch denied.txt"), text("I was not allowed to."))
    result = finished(rig.core.prompts.start(rig.chat, "List the schedules, then create denied.txt."))
    assert result.status == RunStatus.SUCCEEDED, result
    listed, touched = tool_states(rig, result.run_id).values()
    assert listed[-1]["status"] == "completed" and listed[-1]["decision"]["by"] == "capability"
    refused = touched[-1]
    assert (refused["input"], refused["status"]) == ("touch denied.txt", "failed")
    assert refused["decision"]["outcome"] == "rejected" and refused["decision"]["by"] == "policy:deny"
    assert refused["decision"]["option"] == "reject"
    workspace = rig.core.settings.workspaces_dir / str(rig.project)
    assert not (workspace / "denied.txt").exists()
    results = [b for m in model.main_requests()[-1]["messages"] if isinstance(m.get("content"), list)
               for b in m["content"] if b.get("type") == "tool_result"]
    assert results[-1]["is_error"] is True and "refused" in json.dumps(results[-1]).lower()


@SQLITE
def test_an_agent_that_dies_mid_turn_fails_the_turn_and_the_next_turn_recovers(
        rig: AgentRig, model: AnthropicServer) -> None:
    model.play(stall())
    handle = rig.core.prompts.start(rig.chat, "Take your time.")
    wait_for(model.stalling.is_set, WAIT, "the model call")
    pid = rig.pool.pids()[rig.chat]
    os.kill(pid, signal.SIGKILL)
    result = finished(handle)
    assert result.status == RunStatus.FAILED
    assert result.error.startswith("the agent was killed by SIGKILL during the turn"), result.error
    wait_for(lambda: not model.stalling.is_set(), 30, "the agent's leftover processes to be killed")
    model.play(text("Back again."))
    again = finished(rig.core.prompts.start(rig.chat, "Still there?"))
    assert again.status == RunStatus.SUCCEEDED and again.output == "Back again.", again
    assert rig.pool.pids()[rig.chat] != pid


@SQLITE
def test_a_hung_agent_is_cancelled_at_the_timeout_then_killed(quick_rig: AgentRig, model: AnthropicServer) -> None:
    rig = quick_rig
    pid = warm_up(rig, model)
    rig.core.prompts.settings = dataclasses.replace(rig.core.prompts.settings, run_timeout_seconds=2)
    model.play(stall())
    handle = rig.core.prompts.start(rig.chat, "Take your time.")
    wait_for(model.stalling.is_set, WAIT, "the model call")
    stopped = tree(pid)
    for each in stopped:  # the agent and everything it runs: deaf to session/cancel
        os.kill(each, signal.SIGSTOP)
    result = finished(handle)
    assert result.status == RunStatus.FAILED and result.error == "timed out after 2 s", result
    wait_for(lambda: not any(alive(each) for each in stopped), 10, "the hung agent to be killed")
    assert rig.chat not in rig.pool.pids()


@SQLITE
def test_after_a_cancelled_turn_the_warm_session_answers_the_next_prompt_in_step(
        quick_rig: AgentRig, model: AnthropicServer) -> None:
    rig = quick_rig
    pid = warm_up(rig, model)
    rig.core.prompts.settings = dataclasses.replace(rig.core.prompts.settings, run_timeout_seconds=2)
    model.play(stall())
    cancelled = finished(rig.core.prompts.start(rig.chat, "Take your time."))
    assert cancelled.status == RunStatus.FAILED and cancelled.error == "timed out after 2 s"
    model.play(text("A fresh answer."), text("And another."))
    rig.core.prompts.settings = dataclasses.replace(rig.core.prompts.settings, run_timeout_seconds=600)
    after = finished(rig.core.prompts.start(rig.chat, "Say something."))
    assert (after.status, after.output) == (RunStatus.SUCCEEDED, "A fresh answer."), after
    later = finished(rig.core.prompts.start(rig.chat, "Once more."))
    assert later.output == "And another."
    assert rig.pool.pids()[rig.chat] == pid, "the warm agent survived the cancel"


@SQLITE
def test_a_session_that_cannot_be_loaded_starts_anew_with_the_chats_history(
        rig: AgentRig, model: AnthropicServer) -> None:
    model.play(text("The answer is **42**."))
    first = finished(rig.core.prompts.start(rig.chat, "What is the answer?"))
    assert first.status == RunStatus.SUCCEEDED
    lost = str(uuid.uuid4())
    with rig.core.db.write() as s:
        chat = s.get(Chat, rig.chat)
        chat.provider_session_id = lost
        s.add(chat)
    model.play(text("Still 42."))
    second = finished(rig.core.prompts.start(rig.chat, "And now?"))
    assert second.status == RunStatus.SUCCEEDED, second
    notes = [e.text for e in rig.events(second.run_id) if e.type == "status"]
    assert notes == [LOST_SESSION]
    said = user_texts(model.main_requests()[-1])
    assert len(said) == 1 and "What is the answer?" in said[0] and "The answer is **42**." in said[0]
    assert said[0].endswith("And now?")
    assert rig.chat_row().provider_session_id not in (None, lost, first.session_id)


@SQLITE
def test_a_fresh_session_task_gets_a_new_session_per_fire_seeded_with_the_previous_output(
        rig: AgentRig, model: AnthropicServer) -> None:
    core = rig.core
    model.play(text("Hello from the chat's own session."))
    assert finished(core.prompts.start(rig.chat, "A private remark.")).status == RunStatus.SUCCEEDED
    chat_session = rig.chat_row().provider_session_id
    service = TaskService(core.db, core.clock, core.settings)
    task, _ = service.create(Actor(rig.user), rig.chat, {"name": "digest", "prompt": "Write the digest.",
                                                         "schedule": {"kind": "interval", "every_seconds": 3600},
                                                         "session": "fresh"})
    loop = build_loop(core, "sched:fresh")
    for reply in ("Digest number one.", "Digest number two."):
        model.play(text(reply))
        service.run_now(Actor(rig.user), task.id)
        loop.tick()
        settle(core, WAIT)
    with core.db.read() as s:
        runs = list(s.exec(select(TaskRun).where(TaskRun.task_id == task.id).order_by(TaskRun.id)))
    sessions = [r.provider_session_id for r in runs]
    assert len(sessions) == 2 and None not in sessions and len({*sessions, chat_session}) == 3, sessions
    assert rig.chat_row().provider_session_id == chat_session, "a fresh fire never takes over the chat's session"
    first, second = (user_texts(body) for body in model.main_requests()[-2:])
    assert len(first) == len(second) == 1, "each fire starts a session of its own, without the chat's turns"
    assert first[0].startswith('[scheduled task "digest", fire 1/∞]') and "A private remark." not in first[0]
    assert "Output of the previous fire:\nDigest number one." in second[0]
