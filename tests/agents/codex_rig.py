"""tests/agents/rig.py for Codex: a chat whose project runs the installed ``codex`` preset
(codex-acp) against the scripted Responses server, with the agent API on a real socket.

The model name is one Codex has no metadata for, so the preset's model catalog is in play; the
API key makes the preset write its own provider table, as a deployment with an OpenAI key does
(only the base URL differs).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from sqlmodel import select

from app.agents.workspace import agent_home, workspace_path
from app.core import chats, projects
from app.core.chats import SCHEDULED_TASKS
from app.core.config import Settings
from app.schedules.model import ScheduledTask
from tests.agents.responses_server import ResponsesServer
from tests.agents.rig import AGENT_LEASE_SECONDS, AgentRig, agents_dir, loopback_entry
from tests.conftest import make_core, with_settings
from tests.integration.apiclient import add_user
from tests.integration.apiserver import ApiServer
from tests.isolation import free_port

MODEL = "scripted-model"
API_KEY = "sk-test-codex"


def codex_settings(base_url: str) -> dict[str, str]:
    """Project settings of a chat whose agent is Codex talking to the Responses API at ``base_url``."""
    return {"agent": "codex", "model": MODEL, "env.OPENAI_BASE_URL": base_url, "env.OPENAI_API_KEY": API_KEY,
            "allow_hosts": loopback_entry(base_url)}


@dataclasses.dataclass
class CodexRig(AgentRig):
    model: ResponsesServer  # type: ignore[assignment] - the Responses server, not Anthropic's
    closed: bool = False

    def close(self) -> None:
        """Once: a rig :func:`reopen` replaced is closed already when its fixture ends."""
        if not self.closed:
            self.closed = True
            super().close()

    @property
    def home(self) -> Path:
        return agent_home(self.core.settings, self.project)

    @property
    def workspace(self) -> Path:
        return workspace_path(self.core.settings.workspaces_dir, self.project)

    def configure(self, **changes: str) -> None:
        projects.set_provider(self.core.db, self.project, "acp", {**codex_settings(self.model.base_url), **changes})

    def tool_states(self, run_id: int) -> dict[str, list[dict]]:
        """Each tool call's successive states in the run's events, by id."""
        calls: dict[str, list[dict]] = {}
        for event in self.events(run_id):
            if event.type == "tool":
                state = json.loads(event.text)
                calls.setdefault(state["id"], []).append(state)
        return calls

    def last_tool_states(self, run_id: int) -> list[dict]:
        return [states[-1] for states in self.tool_states(run_id).values()]

    def tasks(self) -> list[ScheduledTask]:
        with self.core.db.read() as s:
            return list(s.exec(select(ScheduledTask).order_by(ScheduledTask.id)))


def build_codex_rig(settings: Settings, model: ResponsesServer, *, skill: bool = True,
                    **changes: object) -> CodexRig:
    port = free_port()
    changes = {"run_lease_seconds": AGENT_LEASE_SECONDS, **changes}
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
    """The same data dir and database with a new core: a restart of the process (the old core,
    its agents and its API server closed first, so nothing warm survives)."""
    rig.close()
    core = make_core(rig.core.settings)
    return dataclasses.replace(rig, core=core, api=ApiServer(core, rig.api.port), closed=False)
