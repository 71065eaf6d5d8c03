"""The deliverer: one background thread per process (web and scheduler alike) plus a small pool.

Each round it fans out new attention events and leases as many due deliveries as it has free
workers; attempts run on the pool, each ending within ``attempt_seconds`` however slowly the other
side answers (``senders.AttemptDeadline``), so a dead webhook only ever occupies one of this
deliverer's workers — never a fire, a request or the loop itself — and ``outbox.claim_due`` leases
at most one delivery per channel and ``outbox.PER_USER`` per user at a time, across every
deliverer: a hung receiver holds one worker, and the other users' deliveries go on. The database
decides who delivers what (see ``outbox``), so any number of deliverers may run on one store.
A round runs every ``poll_seconds`` (one indexed query when idle), at once after an attempt ends,
and at once on :meth:`Deliverer.kick` — the scheduler kicks on every wake hint (a fire that ended
sends one), and :func:`kick_local` kicks this process's deliverers (a test delivery just queued).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from app.attention.notify import outbox, policy
from app.attention.notify.destinations import STRICT, Destinations
from app.attention.notify.senders import TIMEOUT_SECONDS, Mailer, send_webhook
from app.core.clock import Clock
from app.core.config import Settings
from app.core.db import STORE_FAILURES, Database, first_line
from app.core.turns import instance_id

log = logging.getLogger("chatcron.notify")
Sender = Callable[[outbox.Job], policy.Outcome]


@dataclasses.dataclass(frozen=True)
class DelivererConfig:
    owner: str  # this deliverer's lease name (host:pid:nonce)
    poll_seconds: float = 1.0
    lease_seconds: float = 60.0  # longer than any attempt (``attempt_seconds``)
    workers: int = 4
    attempt_seconds: float = TIMEOUT_SECONDS  # one attempt's wall-time bound (CHATCRON_NOTIFY_ATTEMPT_SECONDS)
    backoff: Sequence[float] = policy.BACKOFF_SECONDS
    fan_out_batch: int = 100
    prune_every_seconds: float = 3600.0  # settled deliveries older than outbox.KEEP_DAYS are forgotten
    destinations: Destinations = STRICT  # where webhooks may connect (CHATCRON_WEBHOOK_ALLOW_PRIVATE)


_LOCAL: weakref.WeakSet[Deliverer] = weakref.WeakSet()  # this process's running deliverers


def kick_local() -> None:
    """Run a round now in every deliverer of this process (a hint only: the poll covers a lost one)."""
    for deliverer in list(_LOCAL):
        deliverer.kick()


def config_for(role: str, attempt_seconds: float = TIMEOUT_SECONDS,
               destinations: Destinations = STRICT) -> DelivererConfig:
    """A process's deliverer: its lease outlasts an attempt with room to record the result."""
    return DelivererConfig(owner=f"{role}:{instance_id()}", attempt_seconds=attempt_seconds,
                           lease_seconds=max(60.0, 3 * attempt_seconds), destinations=destinations)


class Deliverer:
    def __init__(self, db: Database, clock: Clock, config: DelivererConfig, webhook: Sender | None = None,
                 email: Sender | None = None) -> None:
        self.db, self.clock, self.config = db, clock, config
        self._webhook = webhook or functools.partial(send_webhook, timeout=config.attempt_seconds,
                                                     guard=config.destinations)
        self._email = email
        self._stop = threading.Event()
        self._kick = threading.Event()
        self._busy = 0
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._thread: threading.Thread | None = None
        self._pruned_at = 0.0  # time.monotonic() of the last prune; 0: at the first round

    @classmethod
    def for_settings(cls, db: Database, clock: Clock, settings: Settings, role: str) -> Deliverer:
        smtp, seconds = settings.smtp, settings.notify_attempt_seconds
        mailer = Mailer(smtp, settings.smtp_from, timeout=seconds).send if smtp is not None else None
        return cls(db, clock, config_for(role, seconds, Destinations.of(settings)), email=mailer)

    def start(self) -> Deliverer:
        if self._thread is None:
            self._pool = ThreadPoolExecutor(self.config.workers, thread_name_prefix="notify-send")
            self._thread = threading.Thread(target=self._run, name="notify-deliverer", daemon=True)
            self._thread.start()
            _LOCAL.add(self)
        return self

    def kick(self) -> None:
        """Run a round now (something was just recorded); safe from any thread."""
        self._kick.set()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop leasing; attempts in flight get ``timeout`` seconds (an unfinished one is retried
        elsewhere when its lease expires)."""
        self._stop.set()
        self._kick.set()
        _LOCAL.discard(self)
        if self._thread is not None:
            self._thread.join(timeout)
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._prune()
                self.round()
            except STORE_FAILURES as exc:  # the store is down: try again next round
                log.warning("action=deliverer_round_failed error=%s", first_line(exc))
            except Exception:
                log.exception("action=deliverer_round_crashed")
            self._kick.wait(self.config.poll_seconds)
            self._kick.clear()

    def _prune(self) -> None:
        if time.monotonic() - self._pruned_at >= self.config.prune_every_seconds or not self._pruned_at:
            self._pruned_at = time.monotonic()
            outbox.prune(self.db, self.clock.now())

    def round(self) -> int:
        """Fan out new events and start attempts for due deliveries (on the pool when started,
        else inline); returns how many attempts began."""
        now = self.clock.now()
        if not outbox.has_work(self.db, now):
            return 0
        outbox.fan_out(self.db, now, self.config.fan_out_batch)
        with self._lock:
            free = self.config.workers - self._busy
        jobs = outbox.claim_due(self.db, now, self.config.owner, self.config.lease_seconds, free)
        for job in jobs:
            with self._lock:
                self._busy += 1
            if self._pool is not None:
                self._pool.submit(self._attempt, job)
            else:
                self._attempt(job)
        return len(jobs)

    def _attempt(self, job: outbox.Job) -> None:
        try:
            outcome = self.send(job)
            outbox.record(self.db, job, self.config.owner,
                          policy.after_attempt(job.attempts, outcome, self.clock.now(), self.config.backoff))
        except STORE_FAILURES as exc:  # the lease expires and someone tries again: at least once
            log.warning("action=delivery_record_failed delivery_id=%s error=%s", job.id, first_line(exc))
        except Exception:
            log.exception("action=delivery_crashed delivery_id=%s", job.id)
        finally:
            with self._lock:
                self._busy -= 1
            self._kick.set()  # a worker is free: look for more

    def send(self, job: outbox.Job) -> policy.Outcome:
        if job.channel_deleted:
            return policy.Outcome(False, None, "the channel was deleted", final=True)
        if outbox.is_email(job):
            if self._email is None:
                return policy.Outcome(False, None, "email is not configured (CHATCRON_SMTP_URL is unset)")
            return self._email(job)
        return self._webhook(job)
