"""The shared timer thread (app/core/timers.py): delays, cancellation, a slow callback, the pending count.

Every test uses its own ``Timers()``; waits are on threading.Events with generous timeouts, and the
only timing asserted is a lower bound (a callback never runs before its delay).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from app.core.batching import Batcher
from app.core.timers import Timers

WAIT = 10.0  # seconds: generous, a healthy run takes milliseconds


@pytest.fixture
def make_timers() -> Iterator[Callable[..., Timers]]:
    """Fresh ``Timers`` instances; at teardown whatever a failed test left pending is cancelled and
    the callback pools are freed (a timer thread is a daemon blocked on its condition)."""
    made: list[Timers] = []

    def make(workers: int = 4) -> Timers:
        made.append(Timers(workers=workers))
        return made[-1]

    yield make
    for t in made:
        with t._cv:
            pending = [entry[2] for entry in t._heap if not entry[2].cancelled]
        for handle in pending:
            handle.cancel()
        t._pool.shutdown(wait=False)


@pytest.fixture
def timers(make_timers: Callable[..., Timers]) -> Timers:
    return make_timers()


def wait_until(condition: Callable[[], bool], timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.005)


def test_callback_runs_after_its_delay(timers: Timers) -> None:
    fired = threading.Event()
    began = time.monotonic()
    timers.call_later(0.2, fired.set)
    assert fired.wait(WAIT)
    assert time.monotonic() - began >= 0.2


def test_zero_and_negative_delays_run_at_once(timers: Timers) -> None:
    zero, negative = threading.Event(), threading.Event()
    timers.call_later(0, zero.set)
    timers.call_later(-5, negative.set)
    assert zero.wait(WAIT) and negative.wait(WAIT)


def test_callbacks_run_in_deadline_order_not_call_order(make_timers: Callable[..., Timers]) -> None:
    timers = make_timers(workers=1)  # one worker runs callbacks in the order the timer thread hands them over
    order: list[str] = []
    done = threading.Event()
    timers.call_later(0.3, lambda: (order.append("late"), done.set()))
    timers.call_later(0.1, lambda: order.append("early"))
    timers.call_later(0.2, lambda: order.append("middle"))
    assert done.wait(WAIT)
    assert order == ["early", "middle", "late"]


def test_a_cancelled_timer_never_runs(make_timers: Callable[..., Timers]) -> None:
    timers = make_timers(workers=1)  # FIFO: had the cancelled one run, it would have run before the sentinel
    cancelled_ran, sentinel = threading.Event(), threading.Event()
    handle = timers.call_later(0.1, cancelled_ran.set)
    handle.cancel()
    assert handle.cancelled
    timers.call_later(0.3, sentinel.set)  # due after the cancelled one's instant
    assert sentinel.wait(WAIT)
    assert not cancelled_ran.is_set()
    assert len(timers) == 0


def test_cancel_twice_counts_once(timers: Timers) -> None:
    keep = timers.call_later(3600, lambda: None)
    handle = timers.call_later(3600, lambda: None)
    handle.cancel()
    handle.cancel()
    assert len(timers) == 1
    keep.cancel()
    assert len(timers) == 0


def test_a_slow_callback_does_not_delay_another_timer(timers: Timers) -> None:
    release, slow_started, fast = threading.Event(), threading.Event(), threading.Event()

    def slow() -> None:
        slow_started.set()
        release.wait(WAIT)

    timers.call_later(0, slow)
    assert slow_started.wait(WAIT)
    timers.call_later(0.05, fast.set)
    try:
        assert fast.wait(WAIT), "the second timer waited for the slow callback"
        assert not release.is_set()  # the slow callback was still running when the other one fired
    finally:
        release.set()


def test_a_failing_callback_does_not_stop_the_timer_thread(timers: Timers) -> None:
    failed, after = threading.Event(), threading.Event()

    def boom() -> None:
        failed.set()
        raise RuntimeError("callback failure")

    timers.call_later(0, boom)
    assert failed.wait(WAIT)
    timers.call_later(0.01, after.set)
    assert after.wait(WAIT)


def test_len_counts_pending_timers(timers: Timers) -> None:
    assert len(timers) == 0
    handles = [timers.call_later(3600, lambda: None) for _ in range(3)]
    assert len(timers) == 3
    handles[0].cancel()
    assert len(timers) == 2
    fired = threading.Event()
    timers.call_later(0, fired.set)
    assert fired.wait(WAIT)
    wait_until(lambda: len(timers) == 2)  # the fired one is no longer pending
    for handle in handles[1:]:
        handle.cancel()
    assert len(timers) == 0


def test_many_threads_scheduling_at_once_each_callback_runs_exactly_once(timers: Timers) -> None:
    threads, per_thread = 10, 50
    counts = [0] * (threads * per_thread)
    lock = threading.Lock()
    all_done = threading.Event()
    ran = [0]

    def callback(i: int) -> None:
        with lock:
            counts[i] += 1
            ran[0] += 1
            if ran[0] == len(counts):
                all_done.set()

    start = threading.Barrier(threads)

    def schedule(first: int) -> None:
        start.wait(WAIT)
        for i in range(first, first + per_thread):
            timers.call_later((i % 7) / 100, lambda i=i: callback(i))

    workers = [threading.Thread(target=schedule, args=(k * per_thread,)) for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(WAIT)
    assert all_done.wait(WAIT)
    assert counts == [1] * len(counts)
    wait_until(lambda: len(timers) == 0)


def test_many_cancelled_timers_are_dropped_from_the_heap(timers: Timers) -> None:
    handles = [timers.call_later(3600, lambda: None) for _ in range(1000)]
    assert len(timers) == 1000 and len(timers._heap) == 1000
    for handle in handles:
        handle.cancel()
    assert len(timers) == 0
    assert len(timers._heap) <= 500, "cancelled long timers pile up in the heap until their instant"
    assert all(entry[2].cancelled for entry in timers._heap)
    # a live timer among them still fires
    fired = threading.Event()
    timers.call_later(0, fired.set)
    assert fired.wait(WAIT)


def test_cancelling_a_timer_that_already_fired_leaves_the_count_alone(timers: Timers) -> None:
    fired = threading.Event()
    handle = timers.call_later(0, fired.set)
    assert fired.wait(WAIT)
    wait_until(lambda: len(timers._heap) == 0)
    handle.cancel()  # e.g. a run timeout cancelled in ``finally`` after it fired
    assert len(timers) == 0


def test_a_batcher_flushed_by_its_timer_leaves_no_pending_timer(timers: Timers) -> None:
    written: list[str] = []
    wrote = threading.Event()

    def write(text: str) -> bool:
        written.append(text)
        wrote.set()
        return True

    batcher = Batcher(write, interval=0.05, timers=timers, first_hold=0.05)
    batcher.add("first ")  # within the first hold: buffered (a turn done by then is one write)
    batcher.add("second")
    assert wrote.wait(WAIT)  # the timer flushed both in one write
    assert written == ["first second"]
    wait_until(lambda: len(timers) == 0)
    wrote.clear()
    wait_until(lambda: time.monotonic() - batcher._last >= 0.05)
    batcher.add("third")  # a quiet interval has passed: written at once, no timer
    assert written == ["first second", "third"] and len(timers) == 0
    assert batcher.take() == ""


def test_a_turn_ending_within_its_first_interval_leaves_everything_to_take(timers: Timers) -> None:
    written: list[str] = []
    batcher = Batcher(written.append, interval=30.0, timers=timers, first_hold=30.0)
    for word in ("Demo ", "agent ", "here."):
        batcher.add(word)
    assert written == [] and batcher.take() == "Demo agent here."
    assert len(timers) == 0  # take() cancelled the pending flush


def test_the_first_chunk_is_held_only_for_the_first_hold(timers: Timers) -> None:
    written: list[str] = []

    def write(text: str) -> bool:
        written.append(text)
        return True

    batcher = Batcher(write, interval=30.0, timers=timers, first_hold=0.0)
    batcher.add("Ready.")  # nothing held: a fast agent's first words go out at once
    batcher.add(" More")  # then the interval applies
    assert written == ["Ready."] and len(timers) == 1
    assert batcher.take() == " More"
    assert len(timers) == 0
