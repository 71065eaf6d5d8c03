"""Shared threads: one timer thread for the whole process instead of a ``threading.Timer`` (a
thread) per use, and reusable worker threads for turns.

Turns use two timers each (the output batcher's flush and the run timeout); a burst of a
thousand fires would otherwise start two thousand short-lived threads. Callbacks run on a pool
of worker threads, so a slow one (a database write) delays the others only when every worker is
busy.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

log = logging.getLogger("chatcron.timers")


class TimerHandle:
    def __init__(self, timers: Timers) -> None:
        self.cancelled = False
        self.fired = False  # left the heap to run
        self._timers = timers

    def cancel(self) -> None:
        self._timers._cancel(self)


class Timers:
    """``call_later(delay, fn)`` runs ``fn()`` after ``delay`` seconds unless its handle is cancelled."""

    def __init__(self, workers: int = 8) -> None:
        self._heap: list[tuple[float, int, TimerHandle, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._cv = threading.Condition()
        self._thread: threading.Thread | None = None
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="timer")
        self._cancelled = 0

    def __len__(self) -> int:
        with self._cv:
            return len(self._heap) - self._cancelled

    def call_later(self, delay: float, fn: Callable[[], None]) -> TimerHandle:
        handle = TimerHandle(self)
        with self._cv:
            heapq.heappush(self._heap, (time.monotonic() + max(0.0, delay), next(self._seq), handle, fn))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="timers", daemon=True)
                self._thread.start()
            self._cv.notify()
        return handle

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._heap:
                    self._cv.wait()
                at, _, handle, fn = self._heap[0]
                wait = at - time.monotonic()
                if wait > 0:
                    self._cv.wait(wait)
                    continue
                heapq.heappop(self._heap)
                if handle.cancelled:
                    self._cancelled -= 1
                    continue
                handle.fired = True
            self._pool.submit(_logged, fn)

    def _cancel(self, handle: TimerHandle) -> None:
        """Cancel a pending timer (a fired or cancelled one: nothing to do). Cancelled entries are
        dropped once they are most of the heap: long timeouts cancelled early would otherwise pile
        up until their instant."""
        with self._cv:
            if handle.cancelled or handle.fired:
                handle.cancelled = True
                return
            handle.cancelled = True
            self._cancelled += 1
            if self._cancelled > 256 and self._cancelled * 2 > len(self._heap):
                self._heap = [entry for entry in self._heap if not entry[2].cancelled]
                heapq.heapify(self._heap)
                self._cancelled = 0


def _logged(fn: Callable[[], None]) -> None:
    try:
        fn()
    except Exception:
        log.exception("action=timer_callback_failed")


TIMERS = Timers()  # process-wide


class Workers:
    """Threads for turns, reused: ``submit`` hands a job to an idle worker or starts a new one.

    Unbounded on purpose (a turn may wait minutes on its agent and every turn must run now), but
    a burst of a thousand short turns reuses a few dozen threads instead of starting a thousand,
    and a worker idle for ``idle_seconds`` ends, so a quiet process keeps none.
    """

    def __init__(self, name: str = "turn", idle_seconds: float = 30.0) -> None:
        self.name, self.idle_seconds = name, idle_seconds
        self._jobs: queue.SimpleQueue[tuple[Callable[..., None], tuple]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # workers waiting for a job
        self._count = itertools.count(1)

    def submit(self, fn: Callable[..., None], *args: object) -> None:
        with self._lock:
            self._jobs.put((fn, args))
            if self._idle > 0:
                self._idle -= 1
                return
        threading.Thread(target=self._work, name=f"{self.name}-{next(self._count)}", daemon=True).start()

    def _work(self) -> None:
        while True:
            try:
                fn, args = self._jobs.get(timeout=self.idle_seconds)
            except queue.Empty:
                with self._lock:
                    if self._jobs.empty():  # no job was promised to an idle worker: this one ends
                        self._idle -= 1
                        return
                continue
            try:
                fn(*args)
            except Exception:
                log.exception("action=worker_job_failed")
            with self._lock:
                self._idle += 1
