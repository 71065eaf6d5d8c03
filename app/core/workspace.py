"""Project workspaces: ``<data-dir>/workspaces/<project-id>/``, never outside that folder."""

from __future__ import annotations

from pathlib import Path


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
