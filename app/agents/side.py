"""The agents' room as the core sees it: ``app.core.ports.AgentSide``, wired in by ``app.wiring``."""

from __future__ import annotations

from pathlib import Path

from app.agents import sandbox, workspace
from app.agents.providers.registry import make_provider_factory
from app.core.config import Settings
from app.core.ports import ProviderFactory


class Agents:
    def prepare(self, settings: Settings) -> None:
        sandbox.prepare_data_dir(settings)  # before the database opens: its file is made 0600
        sandbox.log_mode(settings)

    def providers(self, settings: Settings) -> ProviderFactory:
        return make_provider_factory(settings)

    def new_project(self, workspaces: Path, project_id: int) -> None:
        workspace.publish_assets(workspace.ensure_workspace(workspaces, project_id))

    def workspace(self, settings: Settings, project_id: int, *, tools: bool) -> tuple[Path, list[str]]:
        folder = workspace.ensure_workspace(settings.workspaces_dir, project_id)
        sandbox.hand_over(settings, folder)  # the agent owns its workspace (sandboxed: its uid)
        return folder, workspace.publish_assets(folder) if tools else []

    def skill_text(self) -> str:
        return workspace.skill_text()


AGENTS = Agents()
