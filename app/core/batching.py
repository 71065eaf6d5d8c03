"""Coalesce a provider's stream into few writes without delaying it noticeably.

A chunk is written at once when the previous write is at least ``interval`` seconds old; otherwise
it waits in a buffer that a timer flushes when the interval is up. So a word-by-word stream still
shows word by word in the page, while a provider that emits a burst of chunks (a fast agent, a
command printing many lines) costs one write per interval instead of one per chunk.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Batcher:
    """Thread-safe; ``write`` returns False when the run has ended elsewhere (then ``ended`` is set)."""

    def __init__(self, write: Callable[[str], bool], interval: float = 0.05, max_buffer: int = 65536) -> None:
        self._write = write
        self.interval = interval
        self.max_buffer = max_buffer  # characters held back at most: a flood is written as it comes
        self._buffered = 0
        self._lock = threading.Lock()
        self._buffer: list[str] = []
        self._last = 0.0
        self._timer: threading.Timer | None = None
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
                self._timer = threading.Timer(wait, self.flush)
                self._timer.daemon = True
                self._timer.start()

    def flush(self) -> None:
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        text = "".join(self._buffer)
        self._buffer.clear()
        self._buffered = 0
        self._last = time.monotonic()
        if text and not self.ended and not self._write(text):
            self.ended = True
