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

import collections
import dataclasses
import json
import os
import platform
import re
import shutil
import threading
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


_SESSION_ID = re.compile(r"[0-9A-Za-z-]{8,64}")
CHUNK = 1 << 20  # bytes read at a time
KEEP = 64  # transcripts whose read position is remembered (least recently read forgotten first)


@dataclasses.dataclass
class _Read:
    """How far one transcript has been read, and the last usage of each model response in it."""

    inode: int
    offset: int = 0  # the end of the last whole line read
    messages: dict[str, tuple[int, int, int]] = dataclasses.field(default_factory=dict)


_reads: collections.OrderedDict[Path, _Read] = collections.OrderedDict()
_lock = threading.Lock()


def transcript(home: Path, session_id: str) -> Path | None:
    """Claude Code's transcript of a session: ``~/.claude/projects/<cwd, sanitized>/<id>.jsonl``
    (the folder name is not recomputed: Claude Code shortens long ones; the newest match wins)."""
    found = list((home / ".claude" / "projects").glob(f"*/{session_id}.jsonl"))
    if len(found) > 1:
        found.sort(key=lambda p: p.stat().st_mtime if p.exists() else 0.0)
    return found[-1] if found else None


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _take(line: bytes, messages: dict[str, tuple[int, int, int]]) -> None:
    """An assistant line's usage, by its message id (a response is written as several lines, one
    per content block, sharing one id: the last one counts)."""
    if b'"usage"' not in line:
        return
    try:
        entry = json.loads(line)
    except ValueError:
        return
    message = entry.get("message") if isinstance(entry, dict) and entry.get("type") == "assistant" else None
    usage = message.get("usage") if isinstance(message, dict) else None
    if not isinstance(usage, dict):
        return
    key = message.get("id") or entry.get("uuid")
    if isinstance(key, str):
        messages[key] = (_count(usage.get("input_tokens")), _count(usage.get("output_tokens")),
                         _count(usage.get("cache_read_input_tokens")))


def _read_on(path: Path, read: _Read) -> None:
    """Read what was appended since ``read.offset``, whole lines only (a half-written last line is
    read again next time)."""
    with path.open("rb") as f:
        f.seek(read.offset)
        carry = b""
        while chunk := f.read(CHUNK):
            data = carry + chunk
            end = data.rfind(b"\n") + 1
            for line in data[:end].splitlines():
                _take(line, read.messages)
            read.offset += end
            carry = data[end:]


def session_usage(home: Path, session_id: str) -> dict[str, int] | None:
    """The session's cumulative tokens from Claude Code's transcript (:func:`transcript`), or None.

    The ACP adapter (0.23.1) reports usage only when the prompt ends (its ``usage_update`` and the
    prompt's response, both on the SDK's ``result``), while Claude Code appends each model response
    to the transcript as it ends (``type: "assistant"`` lines with Anthropic's ``message.usage``):
    this is what a turn's usage so far is measured from (``acp_meter``), and a cancelled turn's
    usage, which has no prompt response. The counts mean what the adapter's prompt response means:
    ``input_tokens`` is Anthropic's, which counts neither cache reads nor cache writes;
    ``cached_tokens`` the cache reads (``cache_read_input_tokens``). A budget's tokens
    (``Usage.tokens``) are ``input_tokens + output_tokens``: cache reads and writes are not in them.
    A sub-agent's responses (its own transcript) are not counted.

    Reads are incremental: the first in this process reads the whole file (in 1 MiB chunks),
    later ones only what was appended (a file replaced or cut short is read anew).
    """
    if not _SESSION_ID.fullmatch(session_id):
        return None
    path = transcript(home, session_id)
    if path is None:
        return None
    with _lock:
        read = _reads.pop(path, None)
        try:
            stat = path.stat()
            if read is None or read.inode != stat.st_ino or stat.st_size < read.offset:
                read = _Read(stat.st_ino)
            _read_on(path, read)
        except OSError:  # gone, or unreadable: nothing known (a half-read file is read anew next time)
            return None
        _reads[path] = read
        while len(_reads) > KEEP:
            _reads.popitem(last=False)
        counts = list(read.messages.values())
    return {"input_tokens": sum(c[0] for c in counts), "output_tokens": sum(c[1] for c in counts),
            "cached_tokens": sum(c[2] for c in counts)}


PRESET = Preset(
    name="claude",
    model_hosts=("api.anthropic.com:443",),
    packages={ADAPTER: "0.23.1", CLAUDE_CODE: "2.1.328"},
    argv=_argv,
    env=_env,
    prepare_home=_prepare_home,
    session_usage=session_usage,
)
