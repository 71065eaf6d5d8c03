"""Store-wide marks a web worker reads once for all its tabs, and when a tab's loop should act on one.

An open tab's loops (the transcript's tail, the sidebar's watcher, the Schedules button's counts)
must notice changes within a second or so, yet an idle tab should cost the worker next to nothing
(twenty idle tabs: ≤ 2 % of a core, docs/BENCHMARKS.md). So no loop asks the database about its own
tab on every round. A :class:`SharedMark` is a small store-wide value — the access mark
(app/core/access.py), the attention change mark (app/attention/reads.py), the tasks mark — that the
worker reads at most once per ``max_age`` whoever asks; a :class:`MarkWatch` tells one loop when
to do its own, per-tab reading: when the mark moved since it last did, and every ``every`` seconds
anyway (for what no mark shows, such as a session that simply expired).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")
MOVED, PERIODIC = "moved", "periodic"


class SharedMark(Generic[T]):
    def __init__(self, read: Callable[[], T], max_age: float) -> None:
        self._read, self.max_age = read, max_age
        self._lock = threading.Lock()
        self._at, self._value = float("-inf"), None

    def _fresh(self, max_age: float) -> bool:
        return self._value is not None and time.monotonic() - self._at < max_age

    def read(self, max_age: float | None = None) -> T:
        """Blocking: the mark, read from the store unless this worker read it within ``max_age``."""
        age = self.max_age if max_age is None else max_age
        with self._lock:
            if not self._fresh(age):
                self._value, self._at = self._read(), time.monotonic()
            return self._value  # type: ignore[return-value]

    async def get(self) -> T:
        """The mark; a fresh one without leaving the event loop, else read in a worker thread."""
        if self._fresh(self.max_age):
            return self._value  # type: ignore[return-value]
        return await asyncio.to_thread(self.read)


class MarkWatch(Generic[T]):
    """When one loop should do its own reading: the mark moved since it last did, or ``every`` s passed."""

    def __init__(self, mark: SharedMark[T], every: float) -> None:
        self.mark, self.every = mark, every
        self._seen: T | None = None
        self._at = time.monotonic()

    async def due(self) -> str:
        """``MOVED`` (or the mark could not be read), ``PERIODIC``, or "" (nothing to do): truthy when due."""
        try:
            value = await self.mark.get()
        except Exception:  # the store may be briefly away: do the reading the slow way
            return MOVED
        if value != self._seen:
            self._seen, self._at = value, time.monotonic()
            return MOVED
        if time.monotonic() - self._at >= self.every:
            self._at = time.monotonic()
            return PERIODIC
        return ""
