"""Warm agent processes: one per chat, on one event loop thread per chatcron process (SPEC §11).

A turn borrows its chat's agent (``acquire``) and gives it back (``release``). An agent idle for
``CHATCRON_AGENT_IDLE_SECONDS`` is closed; at most ``CHATCRON_MAX_AGENT_PROCESSES`` are kept, the
least recently used idle one closed first to make room. When every kept agent is busy, the turn
gets a one-off agent closed after it (the cap bounds what is kept warm, never a turn). An agent
whose launch changed (settings, preset version, environment) is replaced.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import concurrent.futures
import contextlib
import logging
import signal
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from app.agents.providers.acp_agent import Launch, WarmAgent

log = logging.getLogger("chatcron.acp")
T = TypeVar("T")


class AgentPool:
    """Thread-safe front (``run``) over an event loop that owns every agent of this process."""

    def __init__(self, *, max_processes: int, idle_seconds: float, cancel_grace_seconds: float) -> None:
        self.max_processes = max_processes
        self.idle_seconds = idle_seconds
        self.grace = cancel_grace_seconds
        self._agents: collections.OrderedDict[int, WarmAgent] = collections.OrderedDict()  # chat → agent, LRU first
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._reaper: asyncio.Task | None = None

    # -- the loop ------------------------------------------------------------------------------
    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise RuntimeError("the agent pool is closed")
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=self._loop.run_forever, name="acp-agents", daemon=True)
                self._thread.start()
                atexit.register(self._kill_all_now)
                self._loop.call_soon_threadsafe(self._start_reaper)
            return self._loop

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call_soon(self, fn: Callable[[], None]) -> None:
        self.loop.call_soon_threadsafe(fn)

    def _start_reaper(self) -> None:
        self._reaper = asyncio.get_running_loop().create_task(self._reap_idle())

    # -- borrowing -----------------------------------------------------------------------------
    async def acquire(self, chat_id: int, key: tuple, launch: Callable[[], Launch]) -> tuple[WarmAgent, bool]:
        """The chat's warm agent for this launch key, else a new one; (agent, started now)."""
        agent = self._agents.get(chat_id)
        if agent is not None and (agent.key != key or not agent.alive):
            self._agents.pop(chat_id, None)
            log.info("action=agent_replaced chat_id=%s reason=%s", chat_id, "exited" if not agent.alive else "launch")
            await agent.close(self.grace)
            agent = None
        if agent is not None and not agent.busy:
            self._agents.move_to_end(chat_id)
            agent.busy = True
            return agent, False
        await self._make_room()
        fresh = await WarmAgent.start(key, launch())
        fresh.busy = True
        if agent is None and len(self._agents) < self.max_processes:
            self._agents[chat_id] = fresh
        else:
            fresh.transient = True
        return fresh, True

    async def release(self, chat_id: int, agent: WarmAgent, *, keep: bool = True) -> None:
        agent.busy = False
        agent.last_used = time.monotonic()
        if keep and agent.alive and not agent.transient and self._agents.get(chat_id) is agent:
            return
        if self._agents.get(chat_id) is agent:
            del self._agents[chat_id]
        await agent.close(self.grace)

    async def discard(self, chat_id: int, agent: WarmAgent) -> None:
        """A hung or broken agent: killed, never reused."""
        if self._agents.get(chat_id) is agent:
            del self._agents[chat_id]
        await agent.kill()

    async def _make_room(self) -> None:
        while len(self._agents) >= self.max_processes > 0 or (self.max_processes == 0 and self._agents):
            idle = next(((cid, a) for cid, a in self._agents.items() if not a.busy), None)
            if idle is None:
                return
            del self._agents[idle[0]]
            log.info("action=agent_evicted chat_id=%s", idle[0])
            await idle[1].close(self.grace)

    async def _reap_idle(self) -> None:
        while True:
            await asyncio.sleep(max(0.2, min(self.idle_seconds / 4, 15.0)))
            cutoff = time.monotonic() - self.idle_seconds
            for chat_id, agent in list(self._agents.items()):
                if not agent.busy and (agent.last_used < cutoff or not agent.alive):
                    self._agents.pop(chat_id, None)
                    log.info("action=agent_idle_closed chat_id=%s", chat_id)
                    await agent.close(self.grace)

    # -- introspection (metrics, tests, benchmarks) ------------------------------------------------
    def pids(self) -> dict[int, int]:
        """chat id → pid of its warm agent."""
        return {chat_id: agent.proc.pid for chat_id, agent in list(self._agents.items()) if agent.alive}

    # -- the end ---------------------------------------------------------------------------------
    def close(self, timeout: float = 10.0) -> None:
        """Close every agent (SIGTERM, then SIGKILL after the grace) and stop the loop."""
        with self._lock:
            loop, was_closed, self._closed = self._loop, self._closed, True
        if loop is None or was_closed:
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._close_all(), loop).result(timeout)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout)

    async def _close_all(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
        agents, self._agents = list(self._agents.values()), collections.OrderedDict()
        await asyncio.gather(*(agent.close(min(self.grace, 2.0)) for agent in agents), return_exceptions=True)

    def _kill_all_now(self) -> None:
        """At interpreter exit: no agent outlives chatcron."""
        for agent in list(self._agents.values()):
            agent.signal_group(signal.SIGKILL)
