"""A chat whose project runs the installed ``codex`` preset (codex-acp) against the scripted
Responses server, with the agent API served on a real socket for ``remote-schedule``.

The agent is the one ``setup --test`` installs into ``.tools/agents`` (CHATCRON_AGENTS_DIR); the
rig installs it there itself when it is missing (the product's own command, a no-op once
installed). The model name is one Codex has no metadata for, so the preset's catalog is in play.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from sqlmodel import select

import app
from app.core import chats, projects
from app.core.agents import presets
from app.core.chats import SCHEDULED_TASKS
from app.core.config import Settings
from app.core.context import Core
from app.core.models import Chat, Event, Run, User
from app.core.providers.registry import ProviderFactory
from app.core.turns import RunHandle, RunResult
from app.core.workspace import agent_home, workspace_path
from app.schedules.model import ScheduledTask
from tests.agents.responses_server import ResponsesServer
from tests.conftest import make_core, with_settings
from tests.integration.apiclient import add_user
from tests.integration.apiserver import ApiServer, free_port

ROOT = Path(app.__file__).resolve().parent.parent
TEST_AGENTS_DIR = Path(os.environ.get("CHATCRON_AGENTS_DIR") or ROOT / ".tools" / "agents")
MODEL = "scripted-model"
API_KEY = "sk-test-codex"
WAIT = 120.0  # codex-acp starts in well under a second; a loaded 2-core machine is slower


def agents_dir(name: str) -> Path:
    """The suite's agents folder with ``name`` installed in it."""
    presets.install(presets.PRESETS[name], TEST_AGENTS_DIR)
    return TEST_AGENTS_DIR


def codex_settings(base_url: str) -> dict[str, str]:
    return {"agent": "codex", "model": MODEL, "env.OPENAI_BASE_URL": base_url, "env.OPENAI_API_KEY": API_KEY}


@dataclasses.dataclass
class CodexRig:
    core: Core
    model: ResponsesServer
    api: ApiServer
    user: User
    project: int
    chat: int
    closed: bool = False

    @property
    def pool(self):  # noqa: ANN201 - the AgentPool of this core
        factory = self.core.prompts.providers
        assert isinstance(factory, ProviderFactory)
        return factory.agents

    @property
    def home(self) -> Path:
        return agent_home(self.core.settings, self.project)

    @property
    def workspace(self) -> Path:
        return workspace_path(self.core.settings.workspaces_dir, self.project)

    def configure(self, **changes: str) -> None:
        projects.set_provider(self.core.db, self.project, "acp", {**codex_settings(self.model.base_url), **changes})

    def events(self, run_id: int) -> list[Event]:
        with self.core.db.read() as s:
            return list(s.exec(select(Event).where(Event.run_id == run_id).order_by(Event.id)))

    def tool_states(self, run_id: int) -> dict[str, list[dict]]:
        """Each tool call's successive states in the run's events, by id."""
        calls: dict[str, list[dict]] = {}
        for event in self.events(run_id):
            if event.type == "tool":
                state = json.loads(event.text)
                calls.setdefault(state["id"], []).append(state)
        return calls

    def chat_row(self) -> Chat:
        with self.core.db.read() as s:
            return s.get(Chat, self.chat)

    def run_row(self, run_id: int) -> Run:
        with self.core.db.read() as s:
            return s.get(Run, run_id)

    def tasks(self) -> list[ScheduledTask]:
        with self.core.db.read() as s:
            return list(s.exec(select(ScheduledTask).order_by(ScheduledTask.id)))

    def agent_processes(self) -> list[tuple[int, str]]:
        """(pid, state letter) of every process working in the project's workspace (the agents)."""
        found = []
        for proc in Path("/proc").iterdir():
            try:
                if proc.name.isdigit() and (proc / "cwd").resolve() == self.workspace.resolve():
                    stat = (proc / "stat").read_text()
                    found.append((int(proc.name), stat[stat.rindex(")") + 2]))
            except OSError:
                continue  # gone meanwhile, or not ours to look at
        return found

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.core.prompts.shutdown(5.0)
        self.api.close()
        self.core.db.dispose()


def build_codex_rig(settings: Settings, model: ResponsesServer, *, skill: bool = True,
                    **changes: object) -> CodexRig:
    port = free_port()
    core = make_core(with_settings(settings, api_url=f"http://127.0.0.1:{port}",
                                   agents_dir_override=agents_dir("codex"), **changes))
    api = ApiServer(core, port)
    user = add_user(core, "alice@example.com")
    project = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, "Alice's", user)
    projects.set_provider(core.db, project.id, "acp", codex_settings(model.base_url))
    chat = chats.create_chat(core.db, core.clock, user, project.id, "Standups")
    if skill:
        chats.update_chat(core.db, core.clock, user, chat.id, skills=[SCHEDULED_TASKS])
    return CodexRig(core, model, api, user, project.id, chat.id)


def reopen(rig: CodexRig) -> CodexRig:
    """The same data dir and database with a new core: a restart of the process (the old core's
    agents are closed with it, so nothing warm survives)."""
    rig.close()
    core = make_core(rig.core.settings)
    return dataclasses.replace(rig, core=core, api=ApiServer(core, rig.api.port), closed=False)


def finished(handle: RunHandle) -> RunResult:
    result = handle.wait(WAIT)
    assert result is not None, f"turn {handle.run_id} did not finish in {WAIT} s"
    return result

