"""The ``command`` provider: one run of a configured CLI (an agent CLI in print mode) per turn.

What the child gets and what it may not do:

- argv: the command line split like a shell would (``shlex``), never run through a shell, and
  started through the agent sandbox (``app.agents.sandbox``: bubblewrap, the agent uid, limits);
- cwd: the project's workspace (a loose chat gets a temporary folder, removed afterwards);
  HOME: the project's agent home (a loose chat: the same temporary folder);
- stdin: the prompt, UTF-8, then closed;
- environment: only PATH, HOME, LANG=C.UTF-8, TERM=dumb (and the server's certificate variables),
  plus the turn's own variables (``SCHEDULE_API_URL``/``SCHEDULE_API_TOKEN`` when schedule tools
  are on). The server's environment is never inherited: it holds secrets (database URL, API keys);
- stdout: decoded as UTF-8 and emitted line by line (newline kept) as it arrives; a line longer
  than 64 KiB is emitted in 64 KiB pieces, so memory stays bounded whatever the child prints;
- stderr: only its last 4 KiB are kept, for the error message;
- a turn owns the child's process group (``start_new_session``): on cancel (timeout, shutdown,
  run ended elsewhere) the group gets SIGTERM, then SIGKILL after a short grace; when the command
  exits on its own, anything it left running in the group is killed too.
  A grandchild that starts its own session escapes the group; the turn stops waiting for its
  output two seconds after the command exits.

Sandboxed, the group is the sandbox's outer bwrap: killing it takes the whole PID namespace with
it (``--die-with-parent``), escaped grandchildren included.

Exit status 0 is success; anything else fails the turn with ``command exited with N: <stderr tail>``,
naming the sandbox limit the command most likely hit. A command that could not start at all (its
program missing, its sandbox not built) is an AgentStartError: its detail is the administrator's.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import selectors
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

from app.agents import egress, sandbox
from app.agents.workspace import agent_home
from app.core.config import Settings
from app.core.ports import AgentStartError, Emit, ProviderError, TurnRequest, stream_of

MAX_LINE_BYTES = 64 * 1024
STDERR_TAIL_BYTES = 4096
KILL_GRACE_SECONDS = 2.0
DRAIN_SECONDS = 2.0  # after the command exits, how long an escaped grandchild may hold stdout open
_READ_BYTES = 64 * 1024
_POLL_SECONDS = 0.1
NO_COMMAND = "no command configured: set CHATCRON_PROVIDER_COMMAND or the project's command"


def split_command(line: str) -> tuple[str, ...]:
    """The argv of a command line, split like a POSIX shell would; raises ProviderError if unusable."""
    try:
        argv = shlex.split(line)
    except ValueError as exc:
        raise ProviderError(f"the command line cannot be split: {exc}") from None
    if not argv:
        raise ProviderError(NO_COMMAND)
    return tuple(argv)


class LineSplitter:
    """Turns a byte stream into text lines of at most ``max_bytes`` bytes each, newline kept.

    Holds at most ``max_bytes`` plus one read; invalid UTF-8 becomes U+FFFD, and a character
    cut by the length limit is completed in the next piece.
    """

    def __init__(self, max_bytes: int = MAX_LINE_BYTES) -> None:
        self._max = max_bytes
        self._buf = bytearray()
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, data: bytes) -> Iterator[str]:
        self._buf += data
        while True:
            newline = self._buf.find(b"\n", 0, self._max)
            if newline >= 0:
                size = newline + 1
            elif len(self._buf) >= self._max:
                size = self._max
            else:
                return
            text = self._decoder.decode(bytes(self._buf[:size]))
            del self._buf[:size]
            if text:
                yield text

    def flush(self) -> Iterator[str]:
        """The unterminated last line, if any."""
        text = self._decoder.decode(bytes(self._buf), final=True)
        self._buf.clear()
        if text:
            yield text


class _Child:
    """One running command: its pipes, its process group, and the helper threads around it."""

    def __init__(self, launch: sandbox.Launch, program: str, prompt: bytes) -> None:
        self.sandboxed = launch.sandboxed
        try:
            self.proc = launch.popen(  # argv from settings; no shell
                bufsize=0, start_new_session=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE)
        except OSError as exc:
            raise AgentStartError(f"command could not start: {program}: {exc.strerror or exc}") from None
        self._tail = bytearray()
        self._stderr = threading.Thread(target=self._collect_stderr, name="command-stderr", daemon=True)
        self._stderr.start()
        threading.Thread(target=self._feed, args=(prompt,), name="command-stdin", daemon=True).start()

    @property
    def stdout(self) -> IO[bytes]:
        assert self.proc.stdout is not None
        return self.proc.stdout

    def _feed(self, prompt: bytes) -> None:
        pipe = self.proc.stdin
        assert pipe is not None
        view = memoryview(prompt)
        try:
            while view:  # a raw pipe may take part of a write
                view = view[pipe.write(view) or 0:]
        except (OSError, ValueError):
            pass  # the command exited or stopped reading: its exit status tells the story
        finally:
            with contextlib.suppress(OSError):
                pipe.close()

    def _collect_stderr(self) -> None:
        pipe = self.proc.stderr
        assert pipe is not None
        try:
            while chunk := pipe.read(4096):
                self._tail += chunk
                del self._tail[:-STDERR_TAIL_BYTES]
        except (OSError, ValueError):
            pass
        finally:
            with contextlib.suppress(OSError):
                pipe.close()

    def stderr_tail(self) -> str:
        """The last few KiB of stderr, stripped; waits briefly for the pipe to close."""
        self._stderr.join(1.0)
        text = bytes(self._tail).decode("utf-8", "replace").strip()
        return ("…" + text) if len(self._tail) >= STDERR_TAIL_BYTES else text

    def exited(self) -> bool:
        """Whether the command itself has exited, without reaping it.

        Left unreaped, its pid (which is also the group id) cannot be reused, so signalling the
        group stays safe until :meth:`stop`.
        """
        if self.proc.returncode is not None:
            return True
        flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
        try:
            return os.waitid(os.P_PID, self.proc.pid, flags) is not None
        except ChildProcessError:
            return True

    def signal_group(self, sig: signal.Signals) -> None:
        if self.proc.returncode is None:  # reaped: the group id may belong to someone else now
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, sig)

    def stop(self, grace: float) -> int:
        """End the whole group (SIGTERM, ``grace`` seconds, SIGKILL), reap, return the exit status."""
        if not self.exited():
            self.signal_group(signal.SIGTERM)
            deadline = time.monotonic() + grace
            while not self.exited() and time.monotonic() < deadline:
                time.sleep(0.02)
        self.signal_group(signal.SIGKILL)  # also whatever the command left behind
        code = self.proc.wait()
        with contextlib.suppress(OSError):
            self.stdout.close()
        return code


@contextlib.contextmanager
def _workdir(settings: Settings, request: TurnRequest) -> Iterator[tuple[Path, Path]]:
    """(cwd, HOME) of the turn: the project's workspace and agent home, or one scratch folder."""
    if request.workspace is not None:
        home = agent_home(settings, request.project_id) if request.project_id is not None else request.workspace
        yield request.workspace, home
        return
    with sandbox.scratch(settings) as folder:
        yield folder, folder


class CommandProvider:
    """Runs ``argv`` once per turn; see the module docstring for what the child gets."""

    name = "command"

    def __init__(self, argv: Sequence[str], settings: Settings, *, egress: egress.Policy | None = None,
                 kill_grace_seconds: float = KILL_GRACE_SECONDS, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        if not argv:
            raise ProviderError(NO_COMMAND)
        self.argv = tuple(argv)
        self.settings = settings
        self.egress = egress  # where the agent may connect besides the agent API (SPEC §12.1)
        self.kill_grace_seconds = kill_grace_seconds
        self.max_line_bytes = max_line_bytes

    def run(self, request: TurnRequest, emit: Emit, cancel: threading.Event) -> None:
        """Stream the command's stdout; raises ProviderError on a non-zero exit or on cancel."""
        with _workdir(self.settings, request) as (cwd, home):
            launch = sandbox.prepare(self.settings, self.argv, workspace=cwd, home=home, env=request.env,
                                     egress=self.egress)
            try:
                if launch.route is not None:
                    launch.route.on_refused = egress.refusal_reporter(egress.stream_writer(stream_of(emit)))
                child = _Child(launch, self.argv[0], request.text.encode("utf-8"))
                try:
                    self._pump(child, emit, cancel)
                finally:
                    code = child.stop(self.kill_grace_seconds)
            finally:
                launch.end()
        if code != 0:
            tail = child.stderr_tail()
            failed = AgentStartError if sandbox.start_failure(code, tail, sandboxed=child.sandboxed) else ProviderError
            raise failed(sandbox.explain_exit(self.settings, code, tail, sandboxed=child.sandboxed))

    def _pump(self, child: _Child, emit: Emit, cancel: threading.Event) -> None:
        """Emit stdout lines until EOF, then wait for the command; raises ProviderError on cancel."""
        lines = LineSplitter(self.max_line_bytes)
        fd = child.stdout.fileno()
        drain_until: float | None = None
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while not cancel.is_set():
                if selector.select(_POLL_SECONDS):
                    data = os.read(fd, _READ_BYTES)
                    if not data:
                        break
                    for line in lines.feed(data):
                        emit(line)
                elif drain_until is None and child.exited():
                    child.signal_group(signal.SIGKILL)  # leftovers would hold stdout open
                    drain_until = time.monotonic() + DRAIN_SECONDS
                elif drain_until is not None and time.monotonic() > drain_until:
                    break
        if cancel.is_set():
            raise ProviderError("cancelled")
        for line in lines.flush():
            emit(line)
        while not child.exited():  # stdout closed, the command still running
            if cancel.wait(_POLL_SECONDS):
                raise ProviderError("cancelled")
