"""One agent process speaking ACP: spawned in one place, initialized, kept warm between turns.

Every agent process is started by :func:`_launch` (the sandbox wraps it there, SPEC §12). The
process leads its own process group, so ending it ends whatever it started; its stderr is read
continuously (an unread pipe would stall it) and its tail is kept for error messages.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import acp
from acp import PROTOCOL_VERSION
from acp.client.connection import ClientSideConnection
from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation, InitializeResponse

from app.agents import sandbox
from app.agents.egress.policy import Policy
from app.agents.providers.acp_client import AgentClient, quiet_sdk_usage_errors
from app.agents.sandbox import Launch
from app.core.config import Settings
from app.core.ports import AgentStartError, ProviderError

log = logging.getLogger("chatcron.acp")
STDERR_TAIL_BYTES = 4096
LINE_LIMIT = 64 * 1024 * 1024  # one JSON-RPC frame (a session replay can be large)
INITIALIZE_SECONDS = 60.0


def _launch(settings: Settings, argv: Sequence[str], *, workspace: Path, home: Path, env: Mapping[str, str],
            read_only: Sequence[Path] = (), egress: Policy | None = None) -> Launch:
    """The one place an agent process's command line is decided: the agent sandbox's (SPEC §12),
    with node's install and the token folder read-only, HOME the agent home (sessions persist),
    its network through the egress proxy under ``egress`` (SPEC §12.1)."""
    return sandbox.prepare(settings, argv, workspace=workspace, home=home, env=env, read_only=read_only,
                           egress=egress)


class AgentExited(ProviderError):
    """The agent process ended (or its connection broke) while chatcron needed it."""


class WarmAgent:
    """A running agent and its connection; used by one turn at a time (its chat's)."""

    def __init__(self, key: tuple, proc: asyncio.subprocess.Process, conn: ClientSideConnection,
                 client: AgentClient) -> None:
        self.key, self.proc, self.conn, self.client = key, proc, conn, client
        self.init: InitializeResponse | None = None
        self.sessions: dict[str, int | None] = {}  # open here → the last run this process ran in it
        self.stale: set[str] = set()  # open here but out of step (after a cancel): reopen first
        self.models: dict[str, str] = {}  # session → the model chosen for it here
        self.sandboxed = False  # bwrap in between: its exit status 128+N is the agent's signal N
        self.launch: Launch | None = None
        self.busy = False
        self.transient = False  # over the process cap: closed after its turn
        self.last_used = time.monotonic()
        self._tail: collections.deque[bytes] = collections.deque()
        self._tail_size = 0
        self._stderr_task: asyncio.Task | None = None

    @classmethod
    async def start(cls, key: tuple, launch: Launch) -> WarmAgent:
        quiet_sdk_usage_errors()
        client = AgentClient()
        try:
            # spawned on the pool's own long-lived loop thread: bwrap's --die-with-parent fires when
            # the spawning thread ends, which must not happen while the agent is kept warm
            proc = await asyncio.create_subprocess_exec(
                *launch.argv, cwd=str(launch.cwd), env=launch.env, start_new_session=True,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                limit=LINE_LIMIT, preexec_fn=launch.preexec_fn, pass_fds=launch.pass_fds)
        except OSError as exc:
            launch.end()
            raise AgentStartError(f"the agent could not start: {launch.argv[0]}: {exc.strerror or exc}") from None
        finally:
            launch.close()  # the sandbox's fds (environment, passwd) are the child's now
        conn = ClientSideConnection(client, proc.stdin, proc.stdout, observers=[client.observe])
        agent = cls(key, proc, conn, client)
        agent.sandboxed = launch.sandboxed
        agent.launch = launch  # its egress socket ends with it (_reap)
        agent._stderr_task = asyncio.get_running_loop().create_task(agent._read_stderr())
        try:
            agent.init = await agent.call(agent.conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(
                    fs=FileSystemCapabilities(read_text_file=False, write_text_file=False), terminal=False),
                client_info=Implementation(name="chatcron", title="chatcron", version="2")), INITIALIZE_SECONDS)
        except (ProviderError, acp.RequestError) as exc:  # it never became an agent: the administrator's to fix
            await agent.kill()
            raise AgentStartError(f"the agent did not complete the ACP handshake (initialize): {exc}") from None
        except BaseException:
            await agent.kill()
            raise
        log.info("action=agent_started pid=%s agent=%s", proc.pid,
                 agent.init.agent_info.name if agent.init and agent.init.agent_info else "?")
        return agent

    # -- capabilities ------------------------------------------------------------------------
    @property
    def can_resume(self) -> bool:
        caps = self.init.agent_capabilities if self.init else None
        return bool(caps and caps.session_capabilities and caps.session_capabilities.resume is not None)

    @property
    def can_load(self) -> bool:
        caps = self.init.agent_capabilities if self.init else None
        return bool(caps and caps.load_session)

    @property
    def can_close(self) -> bool:
        caps = self.init.agent_capabilities if self.init else None
        return bool(caps and caps.session_capabilities and caps.session_capabilities.close is not None)

    # -- calls -------------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return self.proc.returncode is None

    async def call(self, request, timeout: float | None = None):  # any ACP call
        """Await one request; the agent exiting or breaking the connection is AgentExited with the
        tail of its stderr."""
        try:
            return await asyncio.wait_for(request, timeout)
        except (ConnectionError, BrokenPipeError) as exc:
            raise await self.exited(f"the connection broke ({exc})") from None
        except TimeoutError:
            raise ProviderError(f"the agent did not answer within {timeout:.0f} s") from None
        except acp.RequestError as exc:
            if not self.alive:  # the error is the agent dying, not an answer
                raise await self.exited(str(exc)) from None
            raise

    async def exited(self, why: str) -> AgentExited:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.proc.wait(), 2.0)
        if self._stderr_task is not None:  # the last lines it wrote
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._stderr_task), 1.0)
        code = self.proc.returncode
        if code is not None and self.sandboxed and 128 < code < 128 + 65:
            code = 128 - code  # bwrap reports a child killed by signal N as 128+N, like a shell
        if code is None:
            what = f"the agent stopped answering: {why}"
        elif code < 0:
            what = f"the agent was killed by {signal.Signals(-code).name}" if -code in signal.valid_signals() \
                else f"the agent was killed by signal {-code}"
        else:
            what = f"the agent exited with {code}"
        tail = self.stderr_tail()
        return AgentExited(f"{what} during the turn: {tail}" if tail else f"{what} during the turn")

    async def _read_stderr(self) -> None:
        stream = self.proc.stderr
        assert stream is not None
        with contextlib.suppress(Exception):
            while chunk := await stream.read(4096):
                self._tail.append(chunk)
                self._tail_size += len(chunk)
                while self._tail_size - len(self._tail[0]) >= STDERR_TAIL_BYTES:
                    self._tail_size -= len(self._tail.popleft())

    def stderr_tail(self) -> str:
        data = b"".join(self._tail)[-STDERR_TAIL_BYTES:]
        return data.decode("utf-8", "replace").strip()

    # -- ending ----------------------------------------------------------------------------------
    def signal_group(self, sig: signal.Signals) -> None:
        """Signal the agent's process group, also after the agent itself has exited: what it
        started (the agent CLI, its tools) may still run, and Linux gives no new process a pid
        that is still the id of a live process group, so the id still names the leftovers."""
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, sig)

    async def kill(self) -> None:
        """End the process group at once (a hung or dead agent)."""
        self.signal_group(signal.SIGKILL)
        await self._reap()

    async def close(self, grace: float) -> None:
        """End the agent: SIGTERM to its group (the adapter and the agent CLI it runs), SIGKILL
        after ``grace`` seconds. Its sessions are on disk already; a later process loads them."""
        self.signal_group(signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self.proc.wait()), grace)
        self.signal_group(signal.SIGKILL)  # the agent, or what it left behind
        await self._reap()

    async def _reap(self) -> None:
        with contextlib.suppress(Exception):
            await self.conn.close()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.proc.wait(), 5.0)
        if self._stderr_task is not None:
            self._stderr_task.cancel()
        if self.launch is not None:
            self.launch.end()
        log.info("action=agent_stopped pid=%s code=%s", self.proc.pid, self.proc.returncode)
