"""One loop: run everything due, then sleep until the earliest deadline (SPEC §3 "The loop").

APScheduler drives it as a single job re-added for the next instant it must run: the earliest
deadline, the next heartbeat, or *now* when a wake hint arrives. There are no per-task timers
and no polling: between deadlines the process sleeps. If the database can be read but not
written, the loop backs off by the busy-retry interval instead of spinning.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import threading
from collections.abc import Callable

from sqlmodel import Session

from app.core.clock import Clock
from app.core.db import STORE_FAILURES, Database, first_line
from app.core.errors import AgentUnavailable
from app.core.wake import Waker
from scheduler import claims
from scheduler import decisions as d
from scheduler.protocols import ChatBusy, ChatGone, Directory, Executor, Fire, TurnOutcome

log = logging.getLogger("chatcron.scheduler")
JOB_ID = "chatcron-loop"
CLAIM_BATCH = 100  # tasks claimed (and turns started) per transaction


@dataclasses.dataclass(frozen=True)
class LoopConfig:
    instance: str
    lease_seconds: int
    backoff_seconds: int  # after a store error
    history_limit: int
    limits: d.Limits

    @property
    def beat_seconds(self) -> float:
        return max(0.5, self.lease_seconds / 3)


@dataclasses.dataclass
class LoopStats:
    iterations: int = 0
    fires: int = 0
    store_errors: int = 0


Schedule = Callable[[dt.datetime], None]  # ask the driver to run tick() at an instant


class Loop:
    def __init__(self, db: Database, clock: Clock, config: LoopConfig, executor: Executor, directory: Directory,
                 waker: Waker, schedule: Schedule | None = None) -> None:
        self.db, self.clock, self.config = db, clock, config
        self.executor, self.directory, self.waker = executor, directory, waker
        self.schedule = schedule or (lambda when: None)
        self.stats = LoopStats()
        self._lock = threading.Lock()
        self._running = False
        self._dirty = False
        self._stopped = False
        self._last_beat: dt.datetime | None = None
        self._in_flight: dict[int, Fire] = {}
        self._started_at = clock.now()  # when the turns being started were started

    # -- driver side -------------------------------------------------------------------------
    # The driver (APScheduler) may start tick() while one is running (a wake); the lock and the
    # dirty flag make the running tick iterate again instead, so a wake is never dropped, and the
    # next run is scheduled under the lock, so a wake cannot be overwritten by a later deadline.
    def wake(self) -> None:
        """Run the loop as soon as possible (a mutation happened somewhere)."""
        with self._lock:
            self._dirty = True
            if not self._running and not self._stopped:
                self.schedule(self.clock.now())

    def stop(self) -> None:
        """Schedule nothing more (the driver is shutting down)."""
        with self._lock:
            self._stopped = True

    def tick(self) -> dt.datetime | None:
        """Iterate until no wake arrived meanwhile; returns (and schedules) the next instant to run."""
        with self._lock:
            if self._running:
                self._dirty = True
                return None
            self._running = True
        when = self.clock.now()
        try:
            while True:
                with self._lock:
                    self._dirty = False
                when, failed = self._iterate_safely()
                with self._lock:
                    if failed or not self._dirty or self._stopped:
                        break
        finally:
            with self._lock:
                self._running = False
                if not self._stopped:
                    self.schedule(when)
        return when

    def _iterate_safely(self) -> tuple[dt.datetime, bool]:
        try:
            return self._iterate(), False
        except STORE_FAILURES as exc:
            self.stats.store_errors += 1
            log.error("action=store_error backoff_s=%s error=%s", self.config.backoff_seconds,
                      first_line(exc))
            return self.clock.now() + dt.timedelta(seconds=self.config.backoff_seconds), True

    def beat(self) -> None:
        """Renew this instance's lease and release dead instances' claims (own thread, every lease/3 s)."""
        now = self.clock.now()
        try:
            claims.heartbeat(self.db, now, self.config.instance, self.stats.iterations)
            claims.recover(self.db, now, self.config.lease_seconds)
            self._last_beat = now
        except STORE_FAILURES as exc:
            log.error("action=heartbeat_failed error=%s", first_line(exc))

    # -- the iteration -----------------------------------------------------------------------
    def _iterate(self) -> dt.datetime:
        now = self.clock.now()
        self.stats.iterations += 1
        if self._last_beat is None or (now - self._last_beat).total_seconds() >= self.config.beat_seconds:
            claims.heartbeat(self.db, now, self.config.instance, self.stats.iterations)
            claims.recover(self.db, now, self.config.lease_seconds)
            self._last_beat = now
        due = claims.due_task_ids(self.db, now)
        for first in range(0, len(due), CLAIM_BATCH):
            if self._stopped:  # shutting down: claim nothing more
                break
            fires = claims.claim_many(self.db, self.clock.now(), due[first:first + CLAIM_BATCH],
                                           self.config.instance, self.directory, self.config.limits)
            if fires:
                self._start(fires)
        now = self.clock.now()
        beat = (self._last_beat or now) + dt.timedelta(seconds=self.config.beat_seconds)
        deadline = claims.next_deadline(self.db, now)
        return min(beat, deadline) if deadline else beat

    def _start(self, fires: list[Fire]) -> None:
        """Start the claimed turns together; each turn's start is recorded in the transaction that
        begins it, its end in the transaction that records the end (see the hooks below)."""
        for x in fires:  # before the start: a fast turn may finish first
            self._in_flight[x.task_run_id] = x
        self._started_at = self.clock.now()
        try:
            results = self.executor.start_many(fires, self)
        except Exception as exc:  # nothing started: each fire fails rather than leave its claim wedged
            log.exception("action=fires_failed_to_start count=%s", len(fires))
            results = [exc] * len(fires)
        for fire, result in zip(fires, results, strict=True):
            self._started(fire, result)

    def _started(self, fire: Fire, result: int | Exception) -> None:
        if isinstance(result, ChatBusy):
            self._in_flight.pop(fire.task_run_id, None)
            claims.release_busy(self.db, self.clock.now(), fire, self.config.limits)
        elif isinstance(result, ChatGone):
            self._failed(fire, f"the chat is gone: {result}")
        elif isinstance(result, AgentUnavailable):  # its own words are the whole story for the task's owner
            log.error("action=fire_failed_to_start task_id=%s error=%s", fire.task_id, result)
            self._failed(fire, str(result))
        elif isinstance(result, Exception):  # a turn that cannot start is a failed fire, never a wedged claim
            log.error("action=fire_failed_to_start task_id=%s error=%s", fire.task_id, result)
            self._failed(fire, f"the turn could not start: {result}")
        else:
            self.stats.fires += 1
            lateness = (self._started_at - (fire.planned_at or fire.occurrence_at)).total_seconds() * 1000
            log.info("action=fired task_id=%s task_run_id=%s run_id=%s chat_id=%s trigger=%s lateness_ms=%.1f",
                     fire.task_id, fire.task_run_id, result, fire.chat_id, fire.trigger.value, lateness)

    def _failed(self, fire: Fire, error: str) -> None:
        try:
            claims.finish(self.db, self.clock.now(), fire.task_run_id, False, "", error, self.config.limits,
                          self.config.history_limit)
        except STORE_FAILURES:
            log.exception("action=finish_failed task_run_id=%s", fire.task_run_id)
        self.finished(fire, TurnOutcome(False, "", error))

    # -- FireHooks (called by the executor) --------------------------------------------------------
    def started(self, s: Session, started: list[tuple[Fire, int]]) -> None:
        claims.mark_started_in(s, self._started_at, [(self._in_flight[request.task_run_id], run_id)
                                                     for request, run_id in started])

    def record(self, s: Session, request: Fire, outcome: TurnOutcome) -> None:
        claims.finish_in(s, self.db, self.clock.now(), request.task_run_id, outcome.succeeded, outcome.output,
                         outcome.error, self.config.limits, self.config.history_limit)

    def finished(self, request: Fire, outcome: TurnOutcome) -> None:
        self._in_flight.pop(request.task_run_id, None)
        log.debug("action=fire_finished task_id=%s task_run_id=%s succeeded=%s", request.task_id,
                 request.task_run_id, outcome.succeeded)
        self.waker.notify()  # a freed chat may have a queued follow-up; other schedulers too
        self.wake()

    def in_flight(self) -> list[Fire]:
        return list(self._in_flight.values())
