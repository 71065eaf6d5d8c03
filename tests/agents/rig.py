"""A chat whose project runs a real ACP agent (the installed ``claude`` preset) against the
scripted model server, with the agent API served on a real socket for ``remote-schedule``.

Shared by the integration tests and the benchmark. The agent is the one ``setup --test`` installs
into ``.tools/agents`` (CHATCRON_AGENTS_DIR); the rig installs it there itself when it is missing
(the product's own command, a no-op once installed).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from urllib.parse import urlsplit

from sqlmodel import select

import app
from app.agents.cli import presets
from app.agents.providers.registry import ProviderFactory
from app.core import chats, projects
from app.core.chats import SCHEDULED_TASKS
from app.core.config import Settings
from app.core.context import Core
from app.core.models import Chat, Event, Run, User
from app.core.turns import FireCaps, RunHandle, RunResult, TurnSpec
from tests.agents.anthropic_server import AnthropicServer
from tests.conftest import make_core, with_settings
from tests.integration.apiclient import add_user
from tests.integration.apiserver import ApiServer
from tests.isolation import free_port

ROOT = Path(app.__file__).resolve().parent.parent
# The product's default lease: a real agent CLI starting on a loaded 2-core machine can hold the
# CPU for seconds, and the suite's 5 s lease then saw a live turn abandoned by its own process.
AGENT_LEASE_SECONDS = 30
TEST_AGENTS_DIR = Path(os.environ.get("CHATCRON_AGENTS_DIR") or ROOT / ".tools" / "agents")


def agents_dir(name: str = "claude") -> Path:
    """The suite's agents folder with ``name`` installed in it."""
    presets.install(presets.PRESETS[name], TEST_AGENTS_DIR)
    return TEST_AGENTS_DIR


def claude_settings(model_url: str) -> dict[str, str]:
    """Project settings of a chat whose agent is Claude Code talking to ``model_url`` (the scripted
    server on the host's loopback: allowed explicitly, as a local model server would be)."""
    return {"agent": "claude", "env.ANTHROPIC_BASE_URL": model_url, "env.ANTHROPIC_API_KEY": "sk-ant-test",
            "allow_hosts": loopback_entry(model_url)}


def loopback_entry(url: str) -> str:
    """The ``allow_hosts`` entry of a server on the host's loopback: ``127.0.0.1:PORT``."""
    parts = urlsplit(url)
    assert parts.hostname == "127.0.0.1" and parts.port, url
    return f"127.0.0.1:{parts.port}"


@dataclasses.dataclass
class AgentRig:
    core: Core
    model: AnthropicServer
    api: ApiServer
    user: User
    project: int
    chat: int

    @property
    def pool(self):  # the AgentPool of this core
        factory = self.core.prompts.providers
        assert isinstance(factory, ProviderFactory)
        return factory.agents

    def configure(self, **changes: str) -> None:
        projects.set_provider(self.core.db, self.project, "acp", {**claude_settings(self.model.url), **changes})

    def events(self, run_id: int) -> list[Event]:
        with self.core.db.read() as s:
            return list(s.exec(select(Event).where(Event.run_id == run_id).order_by(Event.id)))

    def chat_row(self) -> Chat:
        with self.core.db.read() as s:
            return s.get(Chat, self.chat)

    def run_row(self, run_id: int) -> Run:
        with self.core.db.read() as s:
            return s.get(Run, run_id)

    def close(self) -> None:
        self.core.prompts.shutdown(5.0)
        self.api.close()
        self.core.db.dispose()


def build_rig(settings: Settings, model: AnthropicServer, *, skill: bool = True, **changes: object) -> AgentRig:
    port = free_port()
    changes = {"run_lease_seconds": AGENT_LEASE_SECONDS, **changes}
    core = make_core(with_settings(settings, api_url=f"http://127.0.0.1:{port}", agents_dir_override=agents_dir(),
                                   **changes))
    api = ApiServer(core, port)
    user = add_user(core, "alice@example.com")
    project = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, "Alice's", user)
    projects.set_provider(core.db, project.id, "acp", claude_settings(model.url))
    chat = chats.create_chat(core.db, core.clock, user, project.id, "Standups")
    if skill:
        chats.update_chat(core.db, core.clock, user, chat.id, skills=[SCHEDULED_TASKS])
    return AgentRig(core, model, api, user, project.id, chat.id)


def reopen(rig: AgentRig) -> AgentRig:
    """The same data dir and database with a new core and API server: a restart of the process
    (the rig is changed in place, so whoever closes it closes the new ones)."""
    rig.core.prompts.shutdown(5.0)
    rig.api.close()
    rig.core.db.dispose()
    rig.core = make_core(rig.core.settings)
    rig.api = ApiServer(rig.core, rig.api.port)
    return rig


def capped_turn(core: Core, chat_id: int, prompt: str, caps: FireCaps | None, wait: float) -> RunResult:
    """A turn started through the prompt service with a fire's caps (SPEC §15), awaited."""
    [handle] = core.prompts.start_many([TurnSpec(chat_id, prompt, caps=caps)])
    assert isinstance(handle, RunHandle), handle
    result = handle.wait(wait)
    assert result is not None, f"turn {handle.run_id} did not finish in {wait} s"
    return result
