"""Which agent answers in a project's chats, in words a user reads (the chat header's badge, SPEC §18).

A pure reading of the project's provider and settings against the server's defaults: nothing is
started, nothing installed is checked, and no setting's value but the model's is shown (an API key,
a base URL or a command line never reaches the page).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import PurePosixPath

from app.agents.providers.command import split_command
from app.core.config import Settings
from app.core.models import Project
from app.core.ports import ProviderError

# an ACP preset's name → what its users call it
PRESET_NAMES = {"claude": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI", "opencode": "opencode"}


@dataclasses.dataclass(frozen=True)
class AgentIdentity:
    """``kind`` picks the empty chat's help: "demo" (it obeys the demo's directives), "agent" (a real
    agent that simply answers), "unset" (the project's settings name no usable agent)."""

    kind: str
    name: str  # "Claude Code", "Demo agent", "ACP agent (my-agent)"
    model: str = ""  # "" when the agent's own default applies

    @property
    def label(self) -> str:
        """"Claude Code · claude-sonnet-4-5" (the badge's text)."""
        return f"{self.name} · {self.model}" if self.model else self.name

    @property
    def provider_words(self) -> str:
        """What the badge's tooltip adds: where the answer comes from."""
        return {"demo": "The demo agent: it echoes what you write and obeys a few directives; "
                        "the project's owners choose a real agent on its settings page.",
                "unset": "This project's agent settings are incomplete: a turn would fail. "
                         "The project's owners fix them on its settings page."}.get(
            self.kind, f"Every turn in this chat, typed or fired by a schedule, is answered by {self.label}.")


def who_answers(settings: Settings, project: Project | None) -> AgentIdentity:
    """The agent of ``project`` (None: a chat outside projects, the server's default)."""
    name = (project.provider if project and project.provider else None) or settings.provider
    try:
        options = json.loads(project.provider_settings or "{}") if project is not None else {}
    except ValueError:
        options = {}
    if not isinstance(options, dict):
        options = {}
    model = str(options.get("model") or "").strip()
    if name == "demo":
        return AgentIdentity("demo", "Demo agent")
    if name == "openai":
        return AgentIdentity("agent", "OpenAI-compatible model", model or settings.openai_model)
    if name == "command":
        command = str(options.get("command") or "") or settings.provider_command
        return AgentIdentity("agent", f"Command agent ({_program(command)})")
    if name == "acp":
        preset = str(options.get("agent") or "")
        if preset:
            return AgentIdentity("agent", PRESET_NAMES.get(preset, preset), model)
        command = str(options.get("command") or "")
        if command:
            return AgentIdentity("agent", f"ACP agent ({_program(command)})", model)
    return AgentIdentity("unset", "No agent set")


def _program(command: str) -> str:
    """The program's file name of a command line ("my-agent" of "/opt/bin/my-agent --flag"); never its
    arguments (they may hold a secret) nor its folder (a server path)."""
    try:
        argv = split_command(command)
    except ProviderError:  # malformed or empty: name nothing rather than guess
        return "no command"
    return PurePosixPath(argv[0]).name
