"""Project workspaces stay inside ``<data-dir>/workspaces/`` whatever id is passed."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agents.workspace import ensure_workspace, workspace_path

ESCAPING = [0, -1, True, False, "../x", "1", 1.0, None]


@pytest.mark.parametrize("project_id", ESCAPING, ids=[repr(v) for v in ESCAPING])
def test_id_that_could_escape_is_refused(tmp_path: Path, project_id: object) -> None:
    with pytest.raises(ValueError):
        workspace_path(tmp_path, project_id)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ensure_workspace(tmp_path, project_id)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_workspace_is_a_direct_child_named_by_the_id(tmp_path: Path) -> None:
    assert workspace_path(tmp_path, 42) == (tmp_path / "42").resolve()
    assert not (tmp_path / "42").exists()


def test_ensure_creates_the_folder_and_is_idempotent(tmp_path: Path) -> None:
    root = tmp_path / "workspaces"
    path = ensure_workspace(root, 7)
    assert path.is_dir() and path == (root / "7").resolve()
    assert ensure_workspace(root, 7) == path
