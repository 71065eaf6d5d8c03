"""Gemini CLI and opencode install with the product's command and start an ACP session (SPEC §11).

The bar for these two presets: ``install-agent`` (a no-op once ``setup --test`` installed them),
then the agent the ``acp`` provider would launch for a project — the preset's command line, its
environment and prepared home, through the provider's own plan and agent process — answers
``initialize`` and ``session/new``. No model is called. Both are heavy (5–30 s to start on a
loaded 2-core machine, 220–520 MB), so each starts once, on SQLite only.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from app import manage
from app.agents.providers.acp import AcpProvider
from app.agents.providers.acp_agent import WarmAgent
from app.agents.workspace import agent_home, ensure_workspace
from app.core import projects
from app.core.config import Settings
from app.core.context import Core
from app.core.models import Project
from app.core.ports import TurnRequest
from tests.agents.rig import TEST_AGENTS_DIR
from tests.conftest import make_core, run_async, with_settings
from tests.integration.apiclient import add_user
from tests.integration.test_acp_claude import tree

START_SECONDS = 180.0

pytestmark = [pytest.mark.heavy_agent, pytest.mark.slow]


@pytest.fixture
def core(settings: Settings) -> Iterator[Core]:
    c = make_core(with_settings(settings, agents_dir_override=TEST_AGENTS_DIR))
    yield c
    c.prompts.shutdown(5.0)
    c.db.dispose()


def install(core: Core, name: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert manage.run(["install-agent", name], core) == 0
        assert manage.run(["list-agents"], core) == 0
    return out.getvalue()


async def start_session(provider: AcpProvider, request: TurnRequest) -> tuple[dict, str, int]:
    """(initialize result, new session id, peak RSS in kB) of the agent the provider would launch."""
    plan, _ = provider.plan(request)
    agent = await WarmAgent.start(plan.key, plan.launch())
    try:
        created = await agent.call(agent.conn.new_session(cwd=str(plan.cwd), mcp_servers=[]), START_SECONDS)
        status = Path(f"/proc/{agent.proc.pid}/status").read_text()
        peak = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM")))
        init = agent.init.model_dump(by_alias=True, exclude_none=True, mode="json")
        return init, created.session_id, peak
    finally:
        await agent.close(5.0)


CASES = {
    # name: (project settings, package line list-agents prints, agent name in initialize)
    "gemini": ({"env.GEMINI_API_KEY": "test-key-not-used"}, "gemini 0.61.0 (@google/gemini-cli@0.61.0)"),
    "opencode": ({"tool_policy": "deny"}, "opencode 1.18.33 (opencode-ai@1.18.33)"),
}


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # agent processes, not the store
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_preset_installs_and_starts_a_session(core: Core, name: str) -> None:
    options, listed = CASES[name]
    printed = install(core, name)
    assert f"installed: {name} (" in printed and listed in printed.splitlines()

    alice = add_user(core, "alice@example.com")
    project = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, "Alice's", alice)
    projects.set_provider(core.db, project.id, "acp", {"agent": name, **options})
    with core.db.read() as s:
        row = s.get(Project, project.id)
    provider = core.prompts.providers(row)
    assert isinstance(provider, AcpProvider)
    workspace = ensure_workspace(core.settings.workspaces_dir, project.id)
    request = TurnRequest(chat_id=1, run_id=1, text="", workspace=workspace, project_id=project.id)

    init, session_id, peak_kb = run_async(start_session(provider, request))
    assert init["agentCapabilities"]["loadSession"] is True
    assert session_id
    assert peak_kb < 1_500_000, f"{name} used {peak_kb} kB"
    home = agent_home(core.settings, project.id)
    if name == "gemini":
        settings = json.loads((home / ".gemini" / "settings.json").read_text())
        assert settings["privacy"] == {"usageStatisticsEnabled": False}
        chats = [p.name for p in (home / ".gemini" / "tmp").glob("*/chats/session-*.jsonl")]
        assert any(session_id[:8] in chat for chat in chats), f"gemini keeps its sessions in the agent home: {chats}"
    else:
        assert (home / ".local" / "share" / "opencode" / "opencode.db").is_file(), "opencode's sessions"
        assert not (home / ".npm").exists(), "no package fetch at start"


def _listeners(pid: int) -> set[int]:
    """Loopback TCP ports listening in the network namespace of process ``pid``."""
    ports = set()
    for line in Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        if state == "0A" and local.startswith("0100007F:"):
            ports.add(int(local.split(":")[1], 16))
    return ports


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # agent processes, not the store
def test_two_projects_opencode_agents_running_at_once_cannot_see_each_other(core: Core) -> None:
    """opencode serves its local API (no authentication) on a loopback port: in each agent's own
    network namespace, beside its relay, never on the host's loopback, where another project's
    agent found it (SPEC §12.1; the proxy refuses loopback, tests/integration/test_sandbox_network.py)."""
    install(core, "opencode")
    alice = add_user(core, "alice@example.com")
    plans = []
    for name in ("First", "Second"):
        project = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, name, alice)
        projects.set_provider(core.db, project.id, "acp", {"agent": "opencode"})
        with core.db.read() as s:
            provider = core.prompts.providers(s.get(Project, project.id))
        request = TurnRequest(chat_id=project.id, run_id=project.id, text="", workspace=ensure_workspace(
            core.settings.workspaces_dir, project.id), project_id=project.id)
        plans.append(provider.plan(request)[0])

    async def both() -> list[set[int]]:
        agents = [await WarmAgent.start(plan.key, plan.launch()) for plan in plans]
        try:
            for agent, plan in zip(agents, plans, strict=True):
                await agent.call(agent.conn.new_session(cwd=str(plan.cwd), mcp_servers=[]), START_SECONDS)
            # the agent's processes past bwrap's outer one live in its namespace
            host_net = os.readlink("/proc/self/ns/net")
            inside = [next(p for p in tree(agent.proc.pid) if os.readlink(f"/proc/{p}/ns/net") != host_net)
                      for agent in agents]
            assert os.readlink(f"/proc/{inside[0]}/ns/net") != os.readlink(f"/proc/{inside[1]}/ns/net")
            return [_listeners(pid) for pid in inside]
        finally:
            for agent in agents:
                await agent.close(5.0)

    first, second = run_async(both())
    host = _listeners(os.getpid())
    assert 3128 in first and 3128 in second, "each has its relay"
    own_first, own_second = first - {3128}, second - {3128}
    assert own_first and own_second, "opencode listens on a loopback port of its own namespace"
    # both hold the same port (opencode's 4096): only possible in namespaces of their own, where
    # 127.0.0.1:4096 is each one's own server and nobody else's
    assert own_first & own_second, (first, second)
    assert not (own_first | own_second) & host, "the host's loopback does not hold the agents' listeners"
