"""``tool_policy=ask`` with the real Claude Code (SPEC §13): a permission request waits for a person.

The installed ``claude`` preset runs against the scripted Anthropic server; Claude Code's default
permission mode asks before a Bash call, so the request reaches chatcron, becomes an approval and
a tool event ``awaiting_approval``, and the turn waits — a user's turn or a scheduled fire (whose
approval names its task and is asked of the task's owner). The answer comes from another process
(as from a web worker) through the database, with a wake hint; an unanswered approval expires
and the call is rejected; a stopped turn cancels its approval. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from app.attention import approvals, hints
from app.core.attention_tables import Approval
from app.core.config import Settings
from app.core.models import RunSource, RunStatus
from app.schedules.service import Actor, TaskService
from scheduler.__main__ import build_loop
from tests.agents.anthropic_server import AnthropicServer, bash, text, wait_for
from tests.agents.rig import ROOT, AgentRig, build_rig
from tests.conftest import run_async
from tests.integration.test_acp_claude import WAIT, finished, tool_states
from tests.integration.test_scheduler_loop import settle

pytestmark = pytest.mark.slow  # the real Claude Code waiting on approvals: left out of `make check`


@pytest.fixture
def model() -> Iterator[AnthropicServer]:
    server = AnthropicServer()
    yield server
    server.close()


@pytest.fixture
def rig(settings: Settings, model: AnthropicServer) -> Iterator[AgentRig]:
    r = build_rig(settings, model, approval_timeout_seconds=600, agent_cancel_grace_seconds=2.0)
    r.configure(tool_policy="ask")
    yield r
    r.close()


def pending_approval(rig: AgentRig) -> Approval:
    found: list[Approval] = []

    def ask() -> bool:
        found[:] = approvals.list_for(rig.core.db, rig.user, "pending")
        return bool(found)

    wait_for(ask, WAIT, "the agent's permission request to become an approval")
    return found[0]


def answer_elsewhere(rig: AgentRig, approval_id: int, option_id: str) -> dict:
    """The answer, written by another process (as a web worker would)."""
    done = subprocess.run([sys.executable, "-m", "tests.integration.answer_approval", rig.core.db.url,
                           str(approval_id), option_id, "alice@example.com"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout)


def card_of(rig: AgentRig, run_id: int, approval_id: int) -> dict:
    """The tool event that shows the approval card (the state the UI renders)."""
    for states in tool_states(rig, run_id).values():
        for state in states:
            if (state.get("approval") or {}).get("id") == approval_id and state["status"] == "awaiting_approval":
                return state
    raise AssertionError(f"no awaiting_approval tool event for approval {approval_id}")


def test_an_approval_answered_in_another_process_lets_the_tool_run(rig: AgentRig, model: AnthropicServer) -> None:
    model.play(bash("touch approved.txt", "I'll create it."), text("Done: approved.txt exists."))
    handle = rig.core.prompts.start(rig.chat, "Please create approved.txt.")
    approval = pending_approval(rig)
    assert approval.run_id == handle.run_id and approval.requested_for == "alice@example.com"
    assert json.loads(approval.input)["command"] == "touch approved.txt" and approval.title
    kinds = {o["kind"] for o in json.loads(approval.options)}
    assert {"allow_once", "reject_once"} <= kinds, approval.options
    allow = next(o["option_id"] for o in json.loads(approval.options) if o["kind"] == "allow_once")
    wait_for(lambda: bool([e for e in rig.events(handle.run_id) if '"awaiting_approval"' in e.text]), WAIT,
             "the card's tool event")
    card = card_of(rig, handle.run_id, approval.id)
    assert card["input"] == "touch approved.txt" and card["approval"]["state"] == "pending"
    assert [o["option_id"] for o in card["approval"]["options"]] == [o["option_id"] for o in
                                                                      json.loads(approval.options)]

    assert answer_elsewhere(rig, approval.id, allow)["state"] == "allowed"
    result = finished(handle)
    assert result.status == RunStatus.SUCCEEDED, result
    assert (rig.core.settings.workspaces_dir / str(rig.project) / "approved.txt").exists()
    last = list(tool_states(rig, handle.run_id).values())[-1][-1]
    assert last["status"] == "completed" and last["approval"]["state"] == "allowed"
    assert last["decision"]["outcome"] == "allowed" and last["decision"]["by"] == "user:alice@example.com"
    assert last["decision"]["option"] == allow
    assert result.output.endswith("Done: approved.txt exists.")


def test_an_unanswered_approval_expires_the_call_is_rejected_and_the_turn_finishes(
        settings: Settings, model: AnthropicServer) -> None:
    rig = build_rig(settings, model, approval_timeout_seconds=2)
    try:
        rig.configure(tool_policy="ask")
        model.play(bash("touch late.txt"), text("I was not allowed to create it."))
        result = finished(rig.core.prompts.start(rig.chat, "Please create late.txt."))
        assert result.status == RunStatus.SUCCEEDED, result
        [approval] = approvals.list_for(rig.core.db, rig.user)
        assert approval.state == "expired" and approval.decided_by is None
        last = list(tool_states(rig, result.run_id).values())[-1][-1]
        assert last["status"] == "failed" and last["approval"]["state"] == "expired"
        assert last["decision"]["outcome"] == "rejected" and last["decision"]["by"] == "timeout"
        assert not (rig.core.settings.workspaces_dir / str(rig.project) / "late.txt").exists()
        assert result.output.endswith("I was not allowed to create it.")
    finally:
        rig.close()


def test_a_stopped_turn_cancels_its_approval(rig: AgentRig, model: AnthropicServer) -> None:
    model.play(bash("touch stopped.txt"), text("unused"))
    handle = rig.core.prompts.start(rig.chat, "Please create stopped.txt.")
    approval = pending_approval(rig)
    rig.core.prompts.stop(rig.user, rig.chat)
    result = finished(handle)
    assert result.status == RunStatus.FAILED
    assert approvals.get(rig.core.db, approval.id).state == "cancelled"
    assert not (rig.core.settings.workspaces_dir / str(rig.project) / "stopped.txt").exists()
    last = list(tool_states(rig, handle.run_id).values())[-1][-1]  # the card no longer offers its buttons
    assert last["approval"]["state"] == "cancelled" and last["decision"]["outcome"] == "cancelled"


def test_a_fire_asks_its_owner_remote_schedule_is_not_asked_and_a_rejection_is_on_the_card(
        rig: AgentRig, model: AnthropicServer) -> None:
    core = rig.core
    service = TaskService(core.db, core.clock, core.settings)
    task, _ = service.create(Actor(rig.user), rig.chat, {"name": "tidy", "prompt": "Tidy the workspace.",
                                                         "schedule": {"kind": "interval", "every_seconds": 3600}})
    service.run_now(Actor(rig.user), task.id)
    model.play(bash("scripts/remote-schedule list"), bash("touch fired.txt"), text("I may not create it."))
    build_loop(core, "sched:approvals").tick()
    approval = pending_approval(rig)
    assert (approval.task_id, approval.requested_for, approval.chat_id) == (task.id, "alice@example.com", rig.chat)
    reject = next(o["option_id"] for o in json.loads(approval.options) if o["kind"] == "reject_once")
    assert answer_elsewhere(rig, approval.id, reject)["state"] == "rejected"
    settle(core, WAIT)
    fired = rig.run_row(approval.run_id)
    assert fired.source == RunSource.SCHEDULE.value and fired.status == RunStatus.SUCCEEDED.value, fired.error
    listed, touched = tool_states(rig, fired.id).values()
    assert listed[-1]["decision"]["by"] == "capability" and "approval" not in listed[-1]
    assert touched[-1]["status"] == "failed" and touched[-1]["approval"]["state"] == "rejected"
    assert touched[-1]["decision"] == {**touched[-1]["decision"], "outcome": "rejected", "option": reject,
                                       "by": "user:alice@example.com"}
    assert [a.id for a in approvals.list_for(core.db, rig.user)] == [approval.id]
    assert not (core.settings.workspaces_dir / str(rig.project) / "fired.txt").exists()


def test_a_hint_from_another_process_wakes_a_waiter_here(settings: Settings) -> None:
    """The hint path alone (no fallback re-read involved): a subscriber's event is set by a
    notify sent from another process."""
    from app.core.db import Database

    db = Database(settings.db_url)

    async def wait_for_hint() -> float:
        listener = hints.listener(db)
        event = listener.subscribe()
        try:
            assert await asyncio.to_thread(listener.ready.wait, 30), "the listener did not start"
            await asyncio.sleep(0)  # the listener's own first wake-up (PostgreSQL) is on this loop
            event.clear()
            started = time.monotonic()
            await asyncio.to_thread(subprocess.run, [sys.executable, "-c", (
                "import sys; from app.core.db import Database; from app.attention import hints; "
                "hints.notify(Database(sys.argv[1]))"), db.url], cwd=ROOT, check=True, timeout=60)
            await asyncio.wait_for(event.wait(), 30)
            return time.monotonic() - started
        finally:
            listener.unsubscribe(event)

    try:
        assert run_async(wait_for_hint()) < 30
    finally:
        db.dispose()
