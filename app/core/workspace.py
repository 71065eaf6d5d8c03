"""Project workspaces: ``<data-dir>/workspaces/<project-id>/``, never outside that folder."""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
from pathlib import Path

from app.core.config import Settings


def workspace_path(root: Path, project_id: int) -> Path:
    """The workspace folder of a project; refuses ids that could name another folder."""
    if not isinstance(project_id, int) or isinstance(project_id, bool) or project_id <= 0:
        raise ValueError(f"project id {project_id!r} is not a positive integer")
    base = root.resolve()
    path = (base / str(project_id)).resolve()
    if path.parent != base:
        raise ValueError("workspace path escapes the workspaces folder")
    return path


def ensure_workspace(root: Path, project_id: int) -> Path:
    """Create the project's workspace folder if missing and return it."""
    path = workspace_path(root, project_id)
    path.mkdir(parents=True, exist_ok=True)
    return path


def agent_home(settings: Settings, project_id: int) -> Path:
    """``<data-dir>/agent-homes/<project-id>/``: the HOME of every agent of the project (agent CLIs
    keep their sessions and credentials there); created absolute, since an agent resolves a
    relative HOME against its session's working directory."""
    path = workspace_path(settings.data_dir / "agent-homes", project_id)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def loose_agent_dirs(settings: Settings, chat_id: int) -> tuple[Path, Path]:
    """(home, working directory) of an agent in a loose chat, which has no project workspace."""
    base = workspace_path(settings.data_dir / "agent-homes" / "loose", chat_id)
    home, work = base / "home", base / "work"
    for folder in (home, work):
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return home, work


def agent_token_file(settings: Settings, chat_id: int) -> Path:
    """Where a warm agent of the chat finds its turn's schedule token (SCHEDULE_API_TOKEN_FILE):
    outside every agent home, one folder per chat, the file present only during a turn."""
    return workspace_path(settings.data_dir / "agent-tokens", chat_id) / "token"


ASSETS_DIR = Path(__file__).resolve().parent / "agent_assets"
# source file in app/core/agent_assets → (path inside the workspace, file mode)
ASSETS = {
    "remote-schedule": ("scripts/remote-schedule", 0o755),
    "SKILL.md": (".agents/skills/scheduled-tasks/SKILL.md", 0o644),
}


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def publish_assets(workspace: Path) -> list[str]:
    """Make the workspace's copies of the CLI and SKILL.md byte-identical to ours (by sha256).

    Returns the workspace paths that were missing or changed and have been rewritten. A path that
    is a symlink or folder is replaced, so a tampered copy cannot point outside the workspace.
    """
    rewritten = []
    for name, (relative, mode) in ASSETS.items():
        source = (ASSETS_DIR / name).read_bytes()
        target = workspace / relative
        current = None
        if target.is_file() and not target.is_symlink():
            current = _sha256(target.read_bytes())
        if current == _sha256(source) and (target.stat().st_mode & 0o777) == mode:
            continue
        _real_folders(workspace, target.parent)
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.is_dir():
            shutil.rmtree(target)
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_bytes(source)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
        rewritten.append(relative)
    return rewritten


def _real_folders(workspace: Path, folder: Path) -> None:
    """Make every folder from the workspace down to ``folder`` a real folder, never a link.

    An agent controls its workspace: a ``scripts`` that is a symlink to somewhere else must not
    make the server write (or delete) outside the workspace, so links and files in the way are
    removed and replaced by folders.
    """
    current = workspace
    for part in folder.relative_to(workspace).parts:
        current = current / part
        if current.is_symlink() or (current.exists() and not current.is_dir()):
            current.unlink()
        if not current.exists():
            current.mkdir()
    if not folder.resolve().is_relative_to(workspace.resolve()):
        raise ValueError(f"{folder} escapes the workspace")


@functools.cache
def skill_text() -> str:
    """SKILL.md, force-appended to a scheduled fire's prompt (a packaged file: read once)."""
    return (ASSETS_DIR / "SKILL.md").read_text(encoding="utf-8")
