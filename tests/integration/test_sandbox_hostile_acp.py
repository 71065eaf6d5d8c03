"""A hostile agent under the `acp` provider: the real Claude Code, sandboxed, on SQLite and PostgreSQL.

The scripted model server (tests/agents/anthropic_server.py) makes Claude Code's Bash tool run
tests/integration/hostile_agent.py (copied into the workspace) with an order on stdin: the same
attempts as the `command` provider's tests, from a shell of a real agent CLI whose node runtime
and native binary run inside the sandbox too. What the tool printed comes back in the model's
next request, whole.
"""

from __future__ import annotations

import json
import shlex
import shutil
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.core.config import Settings
from app.core.models import RunSource, RunStatus
from app.core.turns import RunHandle, RunResult
from app.schedules.model import ScheduledTask, TaskStatus
from tests.agents.anthropic_server import AnthropicServer, bash, text, user_texts
from tests.agents.rig import AgentRig, build_rig
from tests.conftest import with_settings
from tests.integration.fenced import HOSTILE, Fenced, build, host_processes, left_behind, namespace_mates
from tests.integration.test_sandbox_hostile import OPENAI_KEY, outside_targets, probe_args

pytestmark = pytest.mark.slow  # the real Claude Code in the sandbox: left out of `make check`

WAIT = 180.0  # a cold Claude Code on a loaded 2-core machine takes seconds
MAX_MEMORY, MAX_FILE = 2 << 30, 64 << 20  # node and Claude Code run under these too


@pytest.fixture
def model() -> Iterator[AnthropicServer]:
    server = AnthropicServer()
    yield server
    server.close()


@pytest.fixture
def acp(settings: Settings, model: AnthropicServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[AgentRig,
                                                                                                       Fenced]]:
    monkeypatch.setenv("CHATCRON_OPENAI_API_KEY", OPENAI_KEY)
    rig = build_rig(with_settings(settings, openai_api_key=OPENAI_KEY, agent_max_memory_bytes=MAX_MEMORY,
                                  agent_max_file_bytes=MAX_FILE), model)
    try:
        world = build(rig.core, rig.api, alice=rig.user, project=rig.project)
        shutil.copy(HOSTILE, world.workspace / "hostile_agent.py")
        yield rig, world
    finally:
        rig.close()


def order(world: Fenced, mode: str, args: dict[str, Any] | None = None) -> str:
    """The shell command the model has Claude Code run."""
    line = f"hostile:{mode} {json.dumps(args or {})}"
    return f"printf '%s\\n' {shlex.quote(line)} | python3 hostile_agent.py {world.marker}"


def turn(rig: AgentRig, model: AnthropicServer, command: str, *, chat: int | None = None,
         **start: Any) -> RunResult:  # PromptService.start's keywords
    model.play(bash(command), text("Done."))
    result = rig.core.prompts.start(chat or rig.chat, "Run the checks, please.", **start).wait(WAIT)
    assert result is not None, f"the turn did not finish in {WAIT} s"
    return result


def tool_output(model: AnthropicServer) -> str:
    """What the Bash tool printed, as Claude Code sent it back to the model."""
    return user_texts(model.main_requests()[-1])[-1]


def reply(model: AnthropicServer) -> Any:  # the hostile agent's JSON
    out = tool_output(model)
    return json.JSONDecoder().raw_decode(out[out.index("{"):])[0]


def holding(world: Fenced, handle: RunHandle) -> dict[str, Any]:
    """Wait until the hostile script holds (it writes ``holding`` in the workspace); what it said."""
    flag = world.workspace / "holding"
    deadline = time.monotonic() + WAIT
    while not flag.exists():
        assert not handle.done, f"the turn ended before the script held: {handle.wait(0)}"
        assert time.monotonic() < deadline, "the agent's shell never ran the hostile script"
        time.sleep(0.05)  # polling for a file the agent is about to write, under a deadline
    return json.loads(flag.read_text())


def health(world: Fenced) -> dict[str, Any]:
    with urllib.request.urlopen(world.server.url + "/api/health", timeout=10) as response:
        return json.loads(response.read())


def test_claude_codes_shell_reaches_nothing_of_the_server(acp: tuple[AgentRig, Fenced],
                                                          model: AnthropicServer) -> None:
    rig, world = acp
    args = probe_args(world)
    before = world.snapshot()

    result = turn(rig, model, order(world, "probe", args))

    assert result.status == RunStatus.SUCCEEDED, result
    seen = reply(model)
    leaks = {name: detail for name, (stopped, detail) in seen.items() if not stopped}
    written = [p for p in outside_targets(world) if p.endswith("pwned") and (world.workspace / p).exists()]
    for path in written:
        (world.workspace / path).unlink()
    assert leaks == {} and written == [], leaks
    assert seen["whoami"][1]["uid"] == 65534
    after = world.snapshot()
    assert after["files"] == before["files"]
    # the turn's own rows aside (its chat's session id, usage), nothing the agent can touch moved
    assert {k: v for k, v in after["tables"].items() if k != "chats"} == \
        {k: v for k, v in before["tables"].items() if k != "chats"}


def test_every_process_of_the_agent_is_the_agent_uid_and_sessions_live_in_its_home(
        acp: tuple[AgentRig, Fenced], model: AnthropicServer) -> None:
    rig, world = acp
    model.play(bash(order(world, "hold")), text("Done."))
    handle = rig.core.prompts.start(rig.chat, "Hold on.")
    holding(world, handle)
    try:
        held = list(host_processes(world.marker))
        mates = namespace_mates(held[0][0])
        assert health(world)["agent_sandbox"] == "bwrap"
    finally:
        world.release()
    result = handle.wait(WAIT)
    assert result is not None and result.status == RunStatus.SUCCEEDED, result
    commands = " ".join(m["cmdline"] for m in mates.values())
    assert "node" in commands and "claude" in commands and "hostile_agent.py" in commands, commands
    assert {m["Uid"] for m in mates.values()} == {"65534\t65534\t65534\t65534"}, mates
    assert {m["CapEff"] for m in mates.values()} == {"0000000000000000"}
    # Claude Code keeps its session under HOME, the project's agent home, owned by the agent
    sessions = [p for p in (world.home / ".claude").rglob("*.jsonl")]
    assert sessions and {p.stat().st_uid for p in sessions} == {65534}


@pytest.mark.serial  # RLIMIT_NPROC counts every process of the agent uid on the host: while the bomb
# holds its 256, another worker's agent cannot start (docs/SECURITY.md)
def test_a_fork_bomb_from_its_shell_stops_at_the_process_limit(acp: tuple[AgentRig, Fenced],
                                                               model: AnthropicServer) -> None:
    rig, world = acp
    limit = rig.core.settings.agent_max_procs
    model.play(bash(order(world, "fork", {"max": 4 * limit})), text("Done."))
    handle = rig.core.prompts.start(rig.chat, "Fork away.")
    said = holding(world, handle)  # forked until the limit stopped it; holds its children
    counted = len(list(host_processes(world.marker)))
    try:
        assert health(world)["status"] == "ok", "the server stopped serving under the fork bomb"
    finally:
        world.release()
    result = handle.wait(WAIT)
    assert result is not None, "the turn did not end"
    assert said["forked"] < limit and counted <= limit, (said, counted)
    if result.status == RunStatus.SUCCEEDED:  # the agent outlived the bomb and saw the fork fail
        out = tool_output(model)
        assert "Resource temporarily unavailable" in out, out[-2000:]
    else:  # the limit counts the agent's own threads too: a node runtime that could not start one
        # while the bomb held every slot may die, and then the turn fails saying so
        assert result.status == RunStatus.FAILED and result.error, result
    assert left_behind(world.marker) == []


@pytest.mark.parametrize(("mode", "says"), [("memory", "MemoryError"), ("bigfile", "File too large")])
def test_a_hog_in_its_shell_stops_at_its_limit(acp: tuple[AgentRig, Fenced], model: AnthropicServer, mode: str,
                                               says: str) -> None:
    rig, world = acp
    result = turn(rig, model, order(world, mode))
    assert result.status == RunStatus.SUCCEEDED, result  # the tool failed; the agent carried on
    out = tool_output(model)
    assert says in out, out[-2000:]
    done = json.JSONDecoder().raw_decode(out[out.index("{"):])[0]
    if mode == "memory":
        assert 0 < done["allocated"] < MAX_MEMORY
    else:
        assert done["written"] == MAX_FILE == (world.workspace / "big.bin").stat().st_size
    assert health(world)["status"] == "ok"


def test_its_shell_cannot_arm_resume_or_run_its_draft(acp: tuple[AgentRig, Fenced], model: AnthropicServer) -> None:
    rig, world = acp
    result = turn(rig, model, order(world, "schedule", {"chat": rig.chat}))
    assert result.status == RunStatus.SUCCEEDED, result
    codes = reply(model)
    tid = codes.pop("created")
    assert codes == {"arm": 403, "resume": 403, "run_now_draft": 409, "patch_enabled": 400, "patch_status": 400,
                     "patch_schedule": 403, "user_api_projects": 401, "user_api_arm": 401,
                     "user_api_new_project": 401, "user_api_prompt": 401}, codes
    with rig.core.db.read() as s:
        task = s.get(ScheduledTask, tid)
    assert (task.status, task.next_run_at, task.armed_at) == (TaskStatus.DRAFT.value, None, None)
    token_file = rig.core.settings.agent_tokens_dir / str(rig.chat) / "token"
    assert not token_file.exists(), "the grant's file outlived the turn"


def test_a_fires_shell_can_only_complete_its_own_task(acp: tuple[AgentRig, Fenced], model: AnthropicServer) -> None:
    rig, world = acp
    chat, own, claim = world.fire_target()
    other = world.other_task()
    with rig.core.db.read() as s:
        other_before = s.get(ScheduledTask, other).model_dump()
    rig.configure()  # the fire's chat is in the same project: the same Claude Code

    result = turn(rig, model, order(world, "fire", {"own": own, "other": other}), chat=chat,
                  source=RunSource.SCHEDULE, task_id=own, task_run_id=claim, owner_id=rig.user.id)

    assert result.status == RunStatus.SUCCEEDED, result
    assert reply(model) == {"list": 403, "create": 403, "get_own": 403, "pause_own": 403, "run_now_own": 403,
                            "rename_own": 403, "delete_other": 403, "pause_other": 403, "run_now_other": 403,
                            "arm_other": 403, "complete_current": 200}
    with rig.core.db.read() as s:
        assert s.get(ScheduledTask, own).status == TaskStatus.COMPLETED.value
        assert s.get(ScheduledTask, other).model_dump() == other_before


def test_the_agents_install_is_read_only_to_it(acp: tuple[AgentRig, Fenced], model: AnthropicServer) -> None:
    rig, world = acp
    install = (rig.core.settings.agents_dir / "claude").resolve()  # bound where it really is
    target = install / "pwned"
    result = turn(rig, model, f"touch {shlex.quote(str(target))}; echo exit=$?")
    assert result.status == RunStatus.SUCCEEDED, result
    assert "Read-only file system" in tool_output(model) and not target.exists()
    assert not Path(world.home / "pwned").exists()
