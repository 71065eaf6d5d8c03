"""What a failed agent process says to the user: its exit status, the sandbox limit it most likely
hit, and the end of its stderr.

bwrap reports a child killed by signal N as exit status 128+N (like a shell), so a sandboxed
process's status is read back as that signal. A limit shows as the agent's own error text
(fork fails with EAGAIN, malloc with ENOMEM, a write past RLIMIT_FSIZE with EFBIG or SIGXFSZ):
recognising those makes the turn's error name the setting to raise.
"""

from __future__ import annotations

import re
import signal

from app.core.config import Settings

_LIMITS = (
    ("agent_max_procs", "CHATCRON_AGENT_MAX_PROCS", "processes",
     re.compile(r"Resource temporarily unavailable|fork: retry|[Cc]annot fork|BlockingIOError|EAGAIN")),
    ("agent_max_memory_bytes", "CHATCRON_AGENT_MAX_MEMORY_BYTES", "memory",
     re.compile(r"MemoryError|Cannot allocate memory|[Oo]ut of memory|allocation failed|ENOMEM|bad_alloc")),
    ("agent_max_file_bytes", "CHATCRON_AGENT_MAX_FILE_BYTES", "file size",
     re.compile(r"File too large|File size limit exceeded|EFBIG")),
)
_BWRAP_EXEC = re.compile(r"^bwrap: execvp (.+)$", re.M)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _status(code: int, sandboxed: bool) -> str:
    if code < 0:
        return f"command killed by {_signal_name(-code)}"
    if sandboxed and 128 < code < 128 + 65:
        return f"command killed by {_signal_name(code - 128)}"
    return f"command exited with {code}"


def limit_hint(settings: Settings, code: int, stderr_tail: str) -> str | None:
    """'sandbox limit reached: <what>, <VARIABLE>=<value>', or None."""
    xfsz = code in (-signal.SIGXFSZ, 128 + signal.SIGXFSZ)
    for field, variable, what, pattern in _LIMITS:
        if pattern.search(stderr_tail) or (xfsz and field == "agent_max_file_bytes"):
            return f"sandbox limit reached: {what}, {variable}={getattr(settings, field)}"
    return None


def start_failure(code: int, stderr_tail: str, *, sandboxed: bool) -> str | None:
    """What kept a sandboxed command from starting — bwrap could not build its sandbox or find its
    program (bwrap's own last line, exit status 1) — or None when it did start."""
    if not sandboxed or code != 1:
        return None
    lines = stderr_tail.strip().splitlines()
    last = lines[-1] if lines else ""
    missing = _BWRAP_EXEC.match(last)
    if missing:
        return f"command could not start: {missing.group(1)}"
    if last.startswith("bwrap: "):
        return f"the agent sandbox could not start: {last}"
    return None


def explain_exit(settings: Settings, code: int, stderr_tail: str, *, sandboxed: bool) -> str:
    """The error of a command that exited with ``code`` (non-zero)."""
    failed_start = start_failure(code, stderr_tail, sandboxed=sandboxed)
    if failed_start is not None:
        return failed_start
    what = _status(code, sandboxed)
    hint = limit_hint(settings, code, stderr_tail) if sandboxed else None
    if hint:
        what = f"{what} ({hint})"
    return f"{what}: {stderr_tail}" if stderr_tail else what
