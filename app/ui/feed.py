"""One follower per open chat per web worker, shared by every tab showing that chat.

Without it each tab polls the event log on its own (20 tabs on one chat: 20 queries per poll).
A :class:`ChatFeed` polls once for all of them, keeps the newest events it read, and wakes the
tabs waiting on it; a tab whose cursor is older than what the feed keeps (it just opened, or fell
behind) reads the log itself. A feed nobody waited on for a while stops and is forgotten.

Nor does every open chat query its own log on every poll: one poller per worker follows the store's
newest event id (:class:`Pulse`), and a feed wakes and reads its chat only when that id moved past
what it saw at its last read — and, on PostgreSQL, every ``RESCAN_SECONDS`` anyway, for an event
whose transaction committed after a newer one's (PostgreSQL hands out ids before commit; SQLite's
one writer commits them in order). Twenty idle chats cost one
index-only read per poll, not twenty.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

POLL_SECONDS = 0.15  # one read of the newest event id per worker, however many chats and tabs are open
RESCAN_SECONDS = 5.0  # a feed reads its chat at least this often, whatever the newest id says
KEEP = 500  # newest events kept for the tabs
IDLE_SECONDS = 30.0  # a feed no tab waited on for this long stops

Fetch = Callable[[int, int], Awaitable[list[Any]]]  # (chat id, after event id) → events, ascending
NewestId = Callable[[], Awaitable[int]]  # → the store's newest event id


class Pulse:
    """The store's newest event id, followed by one poller per worker for all its feeds: a feed waits on
    the pulse (no wake-up of its own until the id moves) instead of polling on its own."""

    def __init__(self) -> None:
        self.value = 0
        self._moved: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self._wanted = time.monotonic()

    def _start(self, read: NewestId) -> asyncio.Event:
        loop = asyncio.get_running_loop()
        if self._task is None or self._task.done() or self._task.get_loop() is not loop:
            self._moved = asyncio.Event()
            self._task = loop.create_task(self._run(read))
        return self._moved  # type: ignore[return-value]

    async def wait_past(self, seen: int, timeout: float, read: NewestId) -> int:
        """The newest id once it is past ``seen``, or after ``timeout`` s, whichever comes first."""
        self._wanted = time.monotonic()
        moved = self._start(read)
        if self.value == seen and timeout > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(moved.wait(), timeout)
        return self.value

    async def _run(self, read: NewestId) -> None:
        while time.monotonic() - self._wanted < IDLE_SECONDS:
            try:
                value = await read()
            except Exception:  # the store may be briefly unavailable: the next poll retries
                value = self.value
            if value != self.value:
                self.value = value
                moved, self._moved = self._moved, asyncio.Event()
                if moved is not None:
                    moved.set()
            await asyncio.sleep(POLL_SECONDS)


_pulse = Pulse()


class ChatFeed:
    def __init__(self, chat_id: int, cursor: int, fetch: Fetch, newest: NewestId | None = None,
                 rescan: float | None = RESCAN_SECONDS) -> None:
        self.chat_id = chat_id
        self.cursor = cursor  # the newest event id the feed has read
        self.base = cursor  # ``recent`` holds every event after this id
        self.recent: list[Any] = []
        self._fetch = fetch
        self._newest = newest  # None: read the chat on every poll
        self._rescan = rescan  # None: only when the newest id moved (a store that commits in id order)
        self._waiters: list[asyncio.Future] = []  # tabs waiting for new events
        self._last_wait = time.monotonic()
        self._task: asyncio.Task | None = None

    def covers(self, cursor: int) -> bool:
        return cursor >= self.base

    async def after(self, cursor: int, timeout: float) -> list[Any] | None:
        """Events after ``cursor``, waiting up to ``timeout`` s for some; None when the feed does not
        reach back that far (the caller reads the log itself)."""
        self._last_wait = time.monotonic()
        if not self.covers(cursor) or self._task is None or self._task.done():
            return None
        if cursor >= self.cursor:
            await self._wait(timeout)
            if not self.covers(cursor):
                return None
        return [event for event in self.recent if event.id > cursor]

    async def _wait(self, timeout: float) -> None:
        """Until the feed reads new events or ``timeout`` s pass: a bare future and a timer (no task to
        create and cancel, as ``wait_for`` would, twice a second for every idle tab)."""
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        self._waiters = [w for w in self._waiters if not w.done()]
        self._waiters.append(waiter)
        timer = loop.call_later(timeout, _wake, waiter)
        try:
            await waiter
        finally:
            timer.cancel()

    async def _worth_reading(self, seen: int, read_at: float) -> tuple[bool, int]:
        """(whether to read the chat now, the newest id of the store now); waits on the worker's pulse."""
        if self._newest is None:
            return True, seen
        rescan = self._rescan if self._rescan is not None else float("inf")
        wait = min(rescan - (time.monotonic() - read_at), IDLE_SECONDS / 2)  # (and look at the clock now and then)
        newest = await _pulse.wait_past(seen, wait, self._newest)
        # (!=, not >: ids deleted at the top, as delete-user may, are handed out again on SQLite)
        return newest != seen or time.monotonic() - read_at >= rescan, newest

    async def run(self) -> None:
        seen, read_at, found = -1, float("-inf"), False  # the store's newest id at the last read, when, and
        while time.monotonic() - self._last_wait < IDLE_SECONDS:  # whether that read found events
            try:
                due, newest = (True, seen) if found else await self._worth_reading(seen, read_at)
                events = await self._fetch(self.chat_id, self.cursor) if due else []
                if due:
                    seen, read_at = newest, time.monotonic()
            except Exception:  # the store may be briefly unavailable: the next poll retries
                await asyncio.sleep(POLL_SECONDS)
                events = []
            found = bool(events)
            if events:
                self.recent.extend(events)
                if len(self.recent) > KEEP:
                    self.base = self.recent[-KEEP - 1].id
                    del self.recent[:-KEEP]
                self.cursor = events[-1].id
                waiters, self._waiters = self._waiters, []
                for waiter in waiters:
                    _wake(waiter)
            elif self._newest is None:
                await asyncio.sleep(POLL_SECONDS)


def _wake(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_result(None)


_feeds: dict[int, ChatFeed] = {}


def feed_for(chat_id: int, cursor: int, fetch: Fetch, newest: NewestId | None = None,
             rescan: float | None = RESCAN_SECONDS) -> ChatFeed:
    """The running feed of a chat in this worker, started at ``cursor`` if there is none."""
    feed = _feeds.get(chat_id)
    if feed is None or feed._task is None or feed._task.done():
        feed = ChatFeed(chat_id, cursor, fetch, newest, rescan)
        _feeds[chat_id] = feed
        feed._task = asyncio.get_running_loop().create_task(_run(feed))
    return feed


async def _run(feed: ChatFeed) -> None:
    try:
        await feed.run()
    finally:
        if _feeds.get(feed.chat_id) is feed:
            del _feeds[feed.chat_id]
