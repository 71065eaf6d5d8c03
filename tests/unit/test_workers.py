"""Reusable turn threads (app/core/timers.py ``Workers``): every job runs, idle threads are reused,
an idle thread ends after its idle time, a failing job does not cost the pool a thread."""

from __future__ import annotations

import threading
import time

from app.core.timers import Workers

WAIT = 10.0  # seconds: generous, a healthy run takes milliseconds


def _workers_alive(name: str) -> int:
    return sum(1 for t in threading.enumerate() if t.name.startswith(f"{name}-") and t.is_alive())


def _wait_until(probe, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.01)


def test_every_job_runs_once_with_its_arguments() -> None:
    workers = Workers("w-every", idle_seconds=5)
    done: list[int] = []
    lock, finished = threading.Lock(), threading.Event()

    def job(i: int) -> None:
        with lock:
            done.append(i)
            if len(done) == 200:
                finished.set()

    for i in range(200):
        workers.submit(job, i)
    assert finished.wait(WAIT)
    assert sorted(done) == list(range(200))


def test_sequential_jobs_reuse_one_idle_thread() -> None:
    workers = Workers("w-reuse", idle_seconds=5)
    names: list[str] = []
    for _ in range(20):
        ran = threading.Event()
        workers.submit(lambda ran=ran: (names.append(threading.current_thread().name), ran.set()))
        assert ran.wait(WAIT)
        _wait_until(lambda: workers._idle == 1)  # the worker is back, waiting for the next job
    assert len(set(names)) == 1


def test_concurrent_jobs_each_get_a_thread_at_once() -> None:
    """Unbounded: 30 blocked jobs all run at the same time (a turn may wait minutes on its agent)."""
    workers = Workers("w-many", idle_seconds=5)
    release, started = threading.Event(), threading.Semaphore(0)

    def job() -> None:
        started.release()
        release.wait(WAIT)

    for _ in range(30):
        workers.submit(job)
    for _ in range(30):
        assert started.acquire(timeout=WAIT)
    release.set()


def test_idle_threads_end_after_their_idle_time() -> None:
    workers = Workers("w-idle", idle_seconds=0.2)
    release = threading.Event()
    for _ in range(5):
        workers.submit(release.wait, WAIT)
    _wait_until(lambda: _workers_alive("w-idle") == 5)
    release.set()
    _wait_until(lambda: _workers_alive("w-idle") == 0)
    assert workers._idle == 0
    ran = threading.Event()
    workers.submit(ran.set)  # a new thread is started for the next job
    assert ran.wait(WAIT)


def test_a_failing_job_leaves_the_thread_working() -> None:
    workers = Workers("w-fail", idle_seconds=5)
    workers.submit(lambda: 1 / 0)
    _wait_until(lambda: workers._idle == 1)
    ran = threading.Event()
    workers.submit(ran.set)
    assert ran.wait(WAIT)
    assert _workers_alive("w-fail") == 1
