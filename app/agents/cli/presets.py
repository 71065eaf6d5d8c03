"""Presets: an ACP agent pinned to exact npm versions, installed under ``<agents-dir>/<name>/``.

``install`` runs npm with ``--prefix`` into that folder (no global install); it is a no-op when
every package is already there at its pinned version, so it is safe to run again and works
offline once installed. npm uses its own configured registry: nothing here names one.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from app.agents.cli import claude, codex, gemini, opencode
from app.agents.cli.base import Preset, installed_version
from app.core.errors import ChatcronError

NPM_TIMEOUT_SECONDS = 900


class AgentInstallError(ChatcronError):
    """A preset could not be installed or is not installed."""


def missing_packages(preset: Preset, install_dir: Path) -> list[str]:
    """``name@version`` of each pinned package that is absent or at another version."""
    return [f"{name}@{version}" for name, version in preset.packages.items()
            if installed_version(install_dir, name) != version]


def install(preset: Preset, agents_dir: Path, *, npm: str = "npm") -> tuple[Path, bool]:
    """Install the preset's pinned packages; returns (install dir, whether npm ran)."""
    target = agents_dir.resolve() / preset.name
    wanted = missing_packages(preset, target)
    if not wanted:
        return target, False
    executable = shutil.which(npm)
    if executable is None:
        raise AgentInstallError(f"npm is not installed: it is needed to install the {preset.name} agent")
    target.mkdir(parents=True, exist_ok=True)
    argv = [executable, "install", "--prefix", str(target), "--no-audit", "--no-fund", "--save-exact",
            "--loglevel", "error", *[f"{name}@{version}" for name, version in preset.packages.items()]]
    try:
        done = subprocess.run(argv, cwd=target, capture_output=True, text=True, timeout=NPM_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        raise AgentInstallError(f"npm did not finish installing {preset.name} in {NPM_TIMEOUT_SECONDS} s") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip()[-2000:]
        raise AgentInstallError(f"npm could not install {preset.name} (exit {done.returncode}): {tail}")
    still = missing_packages(preset, target)
    if still:
        raise AgentInstallError(f"npm finished but {', '.join(still)} is not installed in {target}")
    return target, True


def require_installed(preset: Preset, agents_dir: Path) -> Path:
    """The preset's install dir; raises AgentInstallError saying how to install it when it is not."""
    target = agents_dir.resolve() / preset.name
    if missing_packages(preset, target):
        raise AgentInstallError(f"the {preset.name} agent is not installed: run "
                                f"`python -m app.manage install-agent {preset.name}`")
    return target


PRESETS: dict[str, Preset] = {
    preset.name: preset for preset in (claude.PRESET, codex.PRESET, gemini.PRESET, opencode.PRESET)
}
