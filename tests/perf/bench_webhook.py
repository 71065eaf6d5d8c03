"""Fire end → webhook received: how long a finished fire waits for its notification (SPEC §13).

A real scheduler process on a fresh database fires one demo task (``notify: always``) by run-now,
``samples`` times in a row; the task's owner has a webhook channel pointing at a receiver on
loopback. Each sample is the receiver's arrival wall time minus the fire's ``finished_at`` (written
by the scheduler in the transaction that ended the fire), so it covers the wake hint, the fan-out,
the lease, the signed POST and the answer. ``python -m tests.perf.bench_webhook [--quick]``.
"""

from __future__ import annotations

import dataclasses
import json
import time

from sqlmodel import select

from app.attention.notify import channels
from app.core import chats
from app.core.models import User
from app.core.wake import DatabaseWaker
from app.schedules.model import ScheduledTask, TaskRun
from app.schedules.service import Actor, TaskService
from tests.integration.procs import Schedulers
from tests.integration.receivers import webhook_receiver
from tests.perf.common import emit, main_for, median, percentile, prepared

DAILY = {"kind": "interval", "every_seconds": 86400}


@dataclasses.dataclass(frozen=True)
class Sizes:
    samples: int


FULL = Sizes(samples=40)
QUICK = Sizes(samples=3)


def _finished_at(core, task_id: int, count: int) -> list[float]:
    with core.db.read() as s:
        rows = s.exec(select(TaskRun).where(TaskRun.task_id == task_id, TaskRun.finished_at.is_not(None))
                      .order_by(TaskRun.id)).all()
    return [r.finished_at.timestamp() for r in rows][:count]


def bench(kind: str, sizes: Sizes) -> list[float]:
    """Emit ``webhook_latency_p50_ms`` / ``_p95_ms`` on ``kind``; returns the samples (ms)."""
    with prepared(kind, "bench-webhook-", webhook_allow_private=True) as b, webhook_receiver() as receiver:
        core = b.core
        user: User = b.user
        chat = chats.create_chat(core.db, core.clock, user, b.project_id, "bench")
        channels.create(core.db, core.clock, core.settings, user, {"kind": "webhook", "url": receiver.url})
        tasks = TaskService(core.db, core.clock, core.settings, DatabaseWaker(core.db))
        task, _ = tasks.create(Actor(user), chat.id, {"name": "ping", "prompt": "ping", "schedule": DAILY,
                                                      "notify": "always"})
        group = Schedulers(b.url, b.settings.data_dir, b.tmp / "logs")
        try:
            group.start(core.db, CHATCRON_RUN_LEASE_SECONDS=60, CHATCRON_WEBHOOK_ALLOW_PRIVATE=1)  # loopback receiver
            for i in range(sizes.samples):
                tasks.run_now(Actor(user), task.id)
                receiver.wait_for(i + 1, timeout=30)
                _settle(core, task.id)
                time.sleep(0.05)  # the next fire starts from an idle deliverer, not mid-round
        finally:
            group.close()
        ends = _finished_at(core, task.id, sizes.samples)
        arrivals = [r.wall for r in receiver.got]
        bodies = [json.loads(r.body) for r in receiver.got]
    assert all(b["event"] == "fire.finished" for b in bodies)
    late = [(arrival - end) * 1000 for arrival, end in zip(arrivals, ends, strict=True)]
    emit("webhook_latency_p50_ms", median(late), "ms", None, kind)
    emit("webhook_latency_p95_ms", percentile(late, 95), "ms", None, kind)
    return late


def _settle(core, task_id: int) -> None:
    """Wait until the task has no fire in flight (so run-now starts a new one)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with core.db.read() as s:
            task = s.get(ScheduledTask, task_id)
            if task.active_run_id is None and not task.pending_run:
                return
        time.sleep(0.01)
    raise AssertionError("the fire did not finish in 30 s")


if __name__ == "__main__":
    main_for(__doc__, bench, FULL, QUICK)
