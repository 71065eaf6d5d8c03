"""Codex through the ``acp`` provider when things go wrong (SPEC §11): a session it cannot load,
``tool_policy=deny``, an agent that dies mid-turn, one that hangs, a model stream that hangs.

Same set-up as tests/integration/test_acp_codex.py. These exercise the agent process and the
provider, not the store: SQLite only. No test sleeps: an agent "dies" or "hangs" because the
scripted model makes it run ``kill -KILL $PPID`` or ``kill -STOP $PPID`` (the shell's parent is
codex-acp itself).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core.config import Settings
from app.core.models import RunStatus
from app.core.providers.acp_turn import LOST_SESSION
from tests.agents.codex_rig import CodexRig, build_codex_rig, finished, reopen
from tests.agents.responses_server import ResponsesServer, Text, hang, shell, step


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """SQLite only (the conftest's fixture runs PostgreSQL too)."""
    return f"sqlite:///{tmp_path / 'test.db'}"


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


def test_a_session_codex_cannot_load_starts_anew_with_the_chats_history(rig: CodexRig,
                                                                        model: ResponsesServer) -> None:
    model.add(step(Text("Noted: the release is on Friday.")))
    first = finished(rig.core.prompts.start(rig.chat, "Remember: the release is on Friday."))
    assert first.status == RunStatus.SUCCEEDED, first
    lost = rig.chat_row().provider_session_id
    again = reopen(rig)
    try:
        for rollout in (rig.home / ".codex" / "sessions").rglob(f"*{lost}.jsonl"):
            rollout.unlink()  # codex keeps nothing else that could bring the session back
        model.add(step(Text("It is on Friday.")))
        second = finished(again.core.prompts.start(again.chat, "When is the release?"))
        assert second.status == RunStatus.SUCCEEDED, second
        assert second.session_id and second.session_id != lost
        [status] = [e.text for e in again.events(second.run_id) if e.type == "status"]
        assert status == LOST_SESSION
        seeded = model.requests[-1].user_texts()[-1]
        assert "Remember: the release is on Friday." in seeded and "Noted: the release is on Friday." in seeded
        assert seeded.endswith("When is the release?")
    finally:
        again.close()


def test_tool_policy_deny_refuses_every_command_but_remote_schedule(rig: CodexRig, model: ResponsesServer) -> None:
    rig.configure(tool_policy="deny")
    (rig.workspace / "notes.txt").write_text("secret\n")
    for command in ("touch made-by-codex.txt", "cat notes.txt"):  # cat: one Codex would run unasked
        before = len(model.requests)
        model.add(step(shell(command)))
        refused = finished(rig.core.prompts.start(rig.chat, f"please run {command}"))
        assert refused.status == RunStatus.SUCCEEDED, refused
        [last] = [states[-1] for states in rig.tool_states(refused.run_id).values()]
        assert (last["status"], last["input"]) == ("failed", command)
        assert (last["decision"]["outcome"], last["decision"]["by"]) == ("rejected", "policy:deny")
        assert "secret" not in last.get("output", "")
        assert len(model.requests) == before + 1, "codex ends its turn on a refusal: no tool result is sent"
    assert not (rig.workspace / "made-by-codex.txt").exists()

    model.add(step(shell("scripts/remote-schedule list")), step(Text("There are no schedules.")))
    listed = finished(rig.core.prompts.start(rig.chat, "which schedules are there?"))
    assert listed.status == RunStatus.SUCCEEDED and listed.output.endswith("There are no schedules.")
    [last] = [states[-1] for states in rig.tool_states(listed.run_id).values()]
    assert (last["status"], last["decision"]["by"]) == ("completed", "capability")
    assert model.requests[-1].user_texts()[-2:] == ["please run cat notes.txt", "which schedules are there?"]


def test_an_agent_that_dies_mid_turn_fails_the_turn_and_the_next_one_continues(rig: CodexRig,
                                                                               model: ResponsesServer) -> None:
    model.add(step(shell("kill -KILL $PPID")))  # the command's parent is codex-acp itself
    died = finished(rig.core.prompts.start(rig.chat, "stop yourself"))
    assert died.status == RunStatus.FAILED and "killed by SIGKILL" in (died.error or ""), died
    [last] = [states[-1] for states in rig.tool_states(died.run_id).values()]
    assert last["input"] == "kill -KILL $PPID"
    model.add(step(Text("Back again.")))
    after = finished(rig.core.prompts.start(rig.chat, "are you there?"))
    assert after.status == RunStatus.SUCCEEDED and after.output == "Back again.", after
    assert model.requests[-1].user_texts()[0] == "stop yourself", "a new process loaded the chat's session"


def test_a_hung_agent_is_cancelled_at_the_timeout_then_killed(settings: Settings, model: ResponsesServer) -> None:
    rig = build_codex_rig(settings, model, run_timeout_seconds=6, agent_cancel_grace_seconds=1.0)
    try:
        model.add(step(shell("kill -STOP $PPID")))  # codex-acp stops: it cannot answer the cancel
        hung = finished(rig.core.prompts.start(rig.chat, "freeze"))
        assert hung.status == RunStatus.FAILED and hung.error == "timed out after 6 s", hung
        assert rig.agent_processes() == [], "the stopped agent (and its shell) were killed, not left behind"
        model.add(step(Text("Thawed.")))
        after = finished(rig.core.prompts.start(rig.chat, "hello?"))
        assert after.status == RunStatus.SUCCEEDED and after.output == "Thawed.", after
    finally:
        rig.close()


def test_a_model_stream_that_hangs_is_cancelled_and_codex_stays_usable(settings: Settings,
                                                                       model: ResponsesServer) -> None:
    rig = build_codex_rig(settings, model, run_timeout_seconds=4, agent_cancel_grace_seconds=5.0)
    try:
        model.add(hang())
        hung = finished(rig.core.prompts.start(rig.chat, "think forever"))
        assert hung.status == RunStatus.FAILED, hung
        model.release()
        model.add(step(Text("Done thinking.")))
        after = finished(rig.core.prompts.start(rig.chat, "and now?"))
        assert after.status == RunStatus.SUCCEEDED and after.output == "Done thinking.", after
    finally:
        rig.close()
