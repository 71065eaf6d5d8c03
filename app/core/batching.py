"""Coalesce a provider's stream into few writes without delaying it noticeably.

A chunk is written at once when the previous write ended at least ``interval`` seconds ago (the
first chunk: when the batcher is ``first_hold`` seconds old); otherwise it waits in a buffer that a
timer flushes when the interval is up. The first hold is short: a turn that ends within it (the
demo agent, a command that prints and exits) is written once, with its end, while a real agent's
first words — tens of milliseconds after the prompt — are not kept back for a whole interval.
So a word-by-word stream still shows word by word in the page, while a provider that emits a
burst of chunks (a fast agent, a command printing many lines) costs one write per interval
instead of one per chunk.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from app.core.timers import TIMERS, TimerHandle, Timers


class Batcher:
    """Thread-safe; ``write`` returns False when the run has ended elsewhere (then ``ended`` is set)."""

    def __init__(self, write: Callable[[str], bool], interval: float = 0.05, max_buffer: int = 65536,
                 timers: Timers = TIMERS, first_hold: float = 0.01) -> None:
        self._write = write
        self._timers = timers
        self.interval = interval
        self.max_buffer = max_buffer  # characters held back at most: a flood is written as it comes
        self._buffered = 0
        self._lock = threading.Lock()
        self._buffer: list[str] = []
        self._last = time.monotonic() - interval + min(first_hold, interval)  # the first chunk waits less
        self._timer: TimerHandle | None = None
        self.ended = False

    def add(self, chunk: str) -> None:
        if not chunk:
            return
        with self._lock:
            self._buffer.append(chunk)
            self._buffered += len(chunk)
            wait = self._last + self.interval - time.monotonic()
            if wait <= 0 or self._buffered >= self.max_buffer:
                self._flush_locked()
            elif self._timer is None:
                self._timer = self._timers.call_later(wait, self.flush)

    def flush(self) -> None:
        with self._lock:
            self._flush_locked()

    def take(self) -> str:
        """End batching: return what is still buffered (the caller writes it) and stop the timer."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            text = "".join(self._buffer)
            self._buffer.clear()
            self._buffered = 0
            return "" if self.ended else text

    def _flush_locked(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        text = "".join(self._buffer)
        self._buffer.clear()
        self._buffered = 0
        if text and not self.ended and not self._write(text):
            self.ended = True
        self._last = time.monotonic()  # from the end of the write: a slow store gets bigger batches
