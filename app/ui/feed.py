"""One follower per open chat per web worker, shared by every tab showing that chat.

Without it each tab polls the event log on its own (20 tabs on one chat: 20 queries per poll).
A :class:`ChatFeed` polls once for all of them, keeps the newest events it read, and wakes the
tabs waiting on it; a tab whose cursor is older than what the feed keeps (it just opened, or fell
behind) reads the log itself. A feed nobody waited on for a while stops and is forgotten.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

POLL_SECONDS = 0.15  # one indexed query per open chat per worker, however many tabs show it
KEEP = 500  # newest events kept for the tabs
IDLE_SECONDS = 30.0  # a feed no tab waited on for this long stops

Fetch = Callable[[int, int], Awaitable[list[Any]]]  # (chat id, after event id) → events, ascending


class ChatFeed:
    def __init__(self, chat_id: int, cursor: int, fetch: Fetch) -> None:
        self.chat_id = chat_id
        self.cursor = cursor  # the newest event id the feed has read
        self.base = cursor  # ``recent`` holds every event after this id
        self.recent: list[Any] = []
        self._fetch = fetch
        self._changed = asyncio.Event()
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
            changed = self._changed
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), timeout)
            if not self.covers(cursor):
                return None
        return [event for event in self.recent if event.id > cursor]

    async def run(self) -> None:
        while time.monotonic() - self._last_wait < IDLE_SECONDS:
            try:
                events = await self._fetch(self.chat_id, self.cursor)
            except Exception:  # the store may be briefly unavailable: the next poll retries
                events = []
            if events:
                self.recent.extend(events)
                if len(self.recent) > KEEP:
                    self.base = self.recent[-KEEP - 1].id
                    del self.recent[:-KEEP]
                self.cursor = events[-1].id
                changed, self._changed = self._changed, asyncio.Event()
                changed.set()
            else:
                await asyncio.sleep(POLL_SECONDS)


_feeds: dict[int, ChatFeed] = {}


def feed_for(chat_id: int, cursor: int, fetch: Fetch) -> ChatFeed:
    """The running feed of a chat in this worker, started at ``cursor`` if there is none."""
    feed = _feeds.get(chat_id)
    if feed is None or feed._task is None or feed._task.done():
        feed = ChatFeed(chat_id, cursor, fetch)
        _feeds[chat_id] = feed
        feed._task = asyncio.get_running_loop().create_task(_run(feed))
    return feed


async def _run(feed: ChatFeed) -> None:
    try:
        await feed.run()
    finally:
        if _feeds.get(feed.chat_id) is feed:
            del _feeds[feed.chat_id]
