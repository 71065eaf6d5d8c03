"""The ``claude`` preset: Claude Code through its ACP adapter.

The adapter (``@zed-industries/claude-agent-acp``) runs Claude Code through the agent SDK; the
SDK's bundled JavaScript build is older than the pinned ``@anthropic-ai/claude-code``, whose
native binary comes in a platform package (npm skips claude-code's postinstall, which the binary
does not need). ``CLAUDE_CODE_EXECUTABLE`` points the adapter at that binary.

No permission mode is set: Claude Code's default mode asks before a tool that acts (Bash,
edits), so every such call reaches the product's ``tool_policy`` — under ``ask``, a person
(SPEC §13). It runs read-only tools (reads, ``ls``, ``echo``) unasked under every policy.
"""

from __future__ import annotations

import os
import platform
import shutil
from collections.abc import Mapping
from pathlib import Path

from app.agents.cli.base import Preset

ADAPTER = "@zed-industries/claude-agent-acp"
CLAUDE_CODE = "@anthropic-ai/claude-code"
_ARCH = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}

# Claude Code's own switches for an unattended, self-hosted agent: no update checks, telemetry or
# side requests (title generation, model checks) that would reach a host nobody configured.
QUIET = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


class NativeBinaryMissing(RuntimeError):
    """The platform package with Claude Code's native binary is not installed."""


def native_binary(install_dir: Path) -> Path:
    """Claude Code's native binary for this machine, from its platform package.

    The package is ``@anthropic-ai/claude-code-<os>-<arch>[-musl]``; npm installs only the one that
    matches, so the first executable ``claude`` among them is ours. Falls back to the copy that
    claude-code's postinstall would have linked (``bin/claude.exe``) when it is a real binary.
    """
    scope = install_dir / "node_modules" / "@anthropic-ai"
    arch = _ARCH.get(platform.machine().lower(), platform.machine().lower())
    system = platform.system().lower()
    names = [f"claude-code-{system}-{arch}", f"claude-code-{system}-{arch}-musl"]
    candidates = [scope / name / "claude" for name in names] + [scope / "claude-code" / "bin" / "claude.exe"]
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK) and path.stat().st_size > 1 << 20:
            return path
    raise NativeBinaryMissing(f"Claude Code's native binary for {system}-{arch} is not in {scope}: "
                              "reinstall with `python -m app.manage install-agent claude`")


def _argv(install_dir: Path) -> list[str]:
    script = install_dir / "node_modules" / ADAPTER / "dist" / "index.js"
    return [shutil.which("node") or "node", str(script)]


def _env(install_dir: Path, home: Path, settings: Mapping[str, str]) -> dict[str, str]:
    return {**QUIET, "CLAUDE_CODE_EXECUTABLE": str(native_binary(install_dir))}


def _prepare_home(home: Path, settings: Mapping[str, str]) -> list[Path]:
    """Claude Code keeps ``~/.claude.json`` and a backup of it; with only the backup there the
    adapter refuses to start a session (auth_required), so the backup is restored first."""
    config, backup = home / ".claude.json", home / ".claude.json.backup"
    if backup.is_file() and not config.exists():
        shutil.copyfile(backup, config)
        return [config]
    return []


PRESET = Preset(
    name="claude",
    model_hosts=("api.anthropic.com:443",),
    packages={ADAPTER: "0.23.1", CLAUDE_CODE: "2.1.328"},
    argv=_argv,
    env=_env,
    prepare_home=_prepare_home,
)
