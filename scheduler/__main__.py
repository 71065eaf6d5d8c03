"""``python -m scheduler``: the composition root of the scheduler process.

Settings, engine, prompt service, APScheduler and signals are wired here and nowhere else.
SIGTERM (or Ctrl-C) stops it cleanly: no new claims, in-flight turns get a grace period to
finish, what is still running then is recorded as abandoned, and the instance is marked stopped.
"""

from __future__ import annotations

import datetime as dt
import logging
import signal
import sys
import threading
import time

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler

from app.attention.notify.deliverer import Deliverer
from app.core import redact
from app.core.clock import UTC
from app.core.config import ConfigError, Settings, load_settings
from app.core.context import Core
from app.core.turns import instance_id
from app.core.wake import DatabaseWaker, WakeListener
from app.wiring import build_core
from scheduler import claims
from scheduler import decisions as d
from scheduler.adapters import CoreDirectory, PromptExecutor
from scheduler.loop import JOB_ID, Loop, LoopConfig

log = logging.getLogger("chatcron.scheduler")
GRACE_SECONDS = 10.0


def limits_of(settings: Settings) -> d.Limits:
    return d.Limits(min_interval_seconds=settings.min_interval_seconds,
                    max_concurrent_runs=settings.max_concurrent_runs,
                    busy_retry_seconds=settings.busy_retry_seconds,
                    backoff_seconds=settings.failure_backoff_seconds,
                    backoff_cap_seconds=settings.failure_backoff_cap_seconds,
                    max_consecutive_failures=settings.max_consecutive_failures)


def build_loop(core: Core, instance: str) -> Loop:
    config = LoopConfig(instance=instance, lease_seconds=core.settings.run_lease_seconds,
                        backoff_seconds=core.settings.busy_retry_seconds,
                        history_limit=core.settings.run_history_limit, limits=limits_of(core.settings))
    return Loop(core.db, core.clock, config, PromptExecutor(core.prompts), CoreDirectory(core.db),
                DatabaseWaker(core.db))


def run(core: Core) -> int:
    instance = "sched:" + instance_id()
    loop = build_loop(core, instance)
    # Two workers and two instances: a wake may start tick() while one runs; the loop's own lock
    # turns that into "iterate again" (see Loop.tick), so APScheduler never drops a wake.
    aps = BackgroundScheduler(timezone=UTC, executors={"default": ThreadPoolExecutor(2)},
                              job_defaults={"misfire_grace_time": None, "coalesce": True, "max_instances": 2})

    def schedule(when: dt.datetime) -> None:
        aps.add_job(loop.tick, "date", run_date=when, id=JOB_ID, replace_existing=True)

    loop.schedule = schedule
    stop = threading.Event()
    listener = WakeListener(core.db)
    listener.open()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    aps.start()
    core.prompts.start_pump()  # sweeps dead turns' runs from the start, not only after a first fire
    beat = threading.Thread(target=_beat, args=(loop, stop), name="scheduler-heartbeat", daemon=True)
    beat.start()
    deliverer = Deliverer.for_settings(core.db, core.clock, core.settings, "sched").start()  # SPEC §13 outbox
    loop.wake()
    log.info("action=scheduler_started instance=%s db=%s", instance, "sqlite" if core.db.sqlite else "postgresql")
    print(f"scheduler {instance} running (SIGTERM stops it)", flush=True)
    while not stop.is_set():
        # Sleeps in select(); the 1 s bound only lets SIGTERM be noticed. A lost hint is covered by
        # the loop's heartbeat iteration (every lease/3 s), which re-reads what is due.
        if listener.wait(1.0):
            loop.wake()
            deliverer.kick()  # a fire may just have ended: its notifications go out now, not at the next poll
    deliverer.stop(2.0)
    shutdown(core, loop, aps, listener, instance)
    return 0


def _beat(loop: Loop, stop: threading.Event) -> None:
    """The instance lease, renewed on its own thread so a long iteration never lets it lapse.

    Each beat also wakes the loop: a safety re-check that covers a lost wake hint.
    """
    while not stop.is_set():
        loop.beat()
        loop.wake()
        stop.wait(loop.config.beat_seconds)


def shutdown(core: Core, loop: Loop, aps: BackgroundScheduler, listener: WakeListener, instance: str) -> None:
    """Stop claiming, let turns finish for a grace period, abandon the rest, mark the instance stopped."""
    loop.stop()  # first: a running iteration must not re-add its job while APScheduler shuts down
    aps.shutdown(wait=True)
    listener.close()
    deadline = time.monotonic() + GRACE_SECONDS
    for handle in core.prompts.running():
        handle.wait(max(0.0, deadline - time.monotonic()))
    # Record what is still running as abandoned first, so cancelling the turns cannot re-arm anything.
    abandoned = claims.recover(core.db, core.clock.now(), core.settings.run_lease_seconds, only_instance=instance)
    core.prompts.shutdown(2.0)
    claims.stop_instance(core.db, core.clock.now(), instance)
    log.info("action=scheduler_stopped instance=%s abandoned=%s", instance, len(abandoned))


def main() -> int:
    redact.install()  # no token or password reaches the log (app/core/redact.py)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s",
                        stream=sys.stdout)
    logging.getLogger("apscheduler").setLevel(logging.WARNING)  # one line per tick is noise
    try:
        core = build_core(load_settings())
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2
    try:
        return run(core)
    finally:
        core.db.dispose()


if __name__ == "__main__":
    sys.exit(main())
