"""What a preset writes into a sandboxed agent's home becomes the agent uid's (SPEC §12)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.agents.cli import codex
from app.agents.sandbox import hand_over_written
from app.core.config import Settings

AGENT = 54321

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="only a root server hands files to another uid")


def settings(tmp_path: Path, sandbox: str = "bwrap") -> Settings:
    return Settings(data_dir=tmp_path, agent_sandbox=sandbox, agent_uid=AGENT, agent_gid=AGENT)


def test_the_written_files_and_their_folders_below_home_change_owner(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    written = codex.PRESET.prepare_home(home, {"model": "local-model"})
    hand_over_written(settings(tmp_path), home, written)
    for path in [home / ".codex", home / ".codex" / "config.toml", home / ".codex" / "rules",
                 home / ".codex" / codex.RULES, home / ".codex" / codex.CATALOG]:
        assert path.lstat().st_uid == AGENT, path
    assert home.lstat().st_uid == 0, "the home itself is the sandbox's to hand over"


def test_nothing_outside_home_and_no_link_target_changes_owner(tmp_path: Path) -> None:
    home, outside = tmp_path / "home", tmp_path / "secret"
    home.mkdir()
    outside.write_text("x")
    (home / "link").symlink_to(outside)
    hand_over_written(settings(tmp_path), home, [home / "link", outside, tmp_path])
    assert outside.stat().st_uid == 0 and tmp_path.stat().st_uid == 0


def test_unsandboxed_nothing_changes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    written = codex.PRESET.prepare_home(home, {})
    hand_over_written(settings(tmp_path, "off"), home, written)
    assert (home / ".codex" / "config.toml").stat().st_uid == 0
