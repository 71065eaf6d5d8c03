"""How fast ``overlap=replace`` hands a chat to the newer fire (SPEC §19): a trigger call answered as
the web process answers it, one real scheduler process, the demo agent working in a long
``/sleep``.

Run: ``python -m tests.perf.bench_replace [--quick]``.

* ``replace_superseded_p50_ms`` / ``_p95_ms``: the newer call → the running fire's record ends
  ``superseded`` (the scheduler process sees the stop request on its poll and cancels the turn).
* ``replace_newer_started_p50_ms`` / ``_p95_ms``: the newer call → the newer fire's turn started.
  SPEC §19 asks for 2 s.
"""

from __future__ import annotations

import dataclasses
import time

from sqlmodel import select

from app.core import chats
from app.core.db import Database
from app.core.stops import request_stop
from app.core.wake import DatabaseWaker
from app.schedules.hooks import Call, HookService
from app.schedules.model import RunOutcome, TaskRun
from app.schedules.service import Actor, TaskService
from tests.integration.procs import Schedulers
from tests.integration.receivers import wait_until
from tests.perf.common import emit, main_for, median, percentile, prepared

TARGET_MS = 2000.0


@dataclasses.dataclass(frozen=True)
class Sizes:
    repeats: int


FULL, QUICK = Sizes(repeats=20), Sizes(repeats=2)


def _record(db: Database, task_run_id: int) -> TaskRun:
    with db.read() as s:
        return s.exec(select(TaskRun).where(TaskRun.id == task_run_id)).one()


def bench(kind: str, sizes: Sizes) -> None:
    with prepared(kind, "bench-replace-") as b:
        tasks = TaskService(b.core.db, b.core.clock, b.core.settings, DatabaseWaker(b.core.db))
        hooks = HookService(b.core.db, b.core.clock, tasks.ask)
        group = Schedulers(b.url, b.settings.data_dir, b.tmp / "logs")
        superseded, started = [], []
        try:
            group.start(b.core.db, CHATCRON_RUN_LEASE_SECONDS=60)
            for i in range(sizes.repeats):
                chat = chats.create_chat(b.core.db, b.core.clock, b.user, b.project_id, f"R{i}")
                task, _ = tasks.create(Actor(b.user), chat.id, {
                    "name": f"replace {i}", "prompt": "/sleep 60\nWork.", "overlap": "replace",
                    "schedule": {"kind": "interval", "every_seconds": 86400}})
                hook_id, secret = hooks.make(task.id, b.user.email)

                def call(body: bytes, hook_id: str = hook_id, secret: str = secret) -> int:
                    answer = hooks.call(Call(hook_id, {"authorization": f"Bearer {secret}"}, body), str)
                    return answer["run_id"]

                first = call(b"old")
                wait_until(lambda first=first: _record(b.core.db, first).run_id)  # its turn is running
                asked = time.monotonic()
                newer = call(b"new")
                wait_until(lambda first=first: _record(b.core.db, first).status == RunOutcome.SUPERSEDED.value)
                superseded.append((time.monotonic() - asked) * 1000)
                wait_until(lambda newer=newer: _record(b.core.db, newer).run_id)
                started.append((time.monotonic() - asked) * 1000)
                request_stop(b.core.db, b.user, chat.id)  # the newer turn is not measured: free the slot
                wait_until(lambda newer=newer: _record(b.core.db, newer).status != RunOutcome.RUNNING.value)
        finally:
            group.close()
    emit("replace_superseded_p50_ms", median(superseded), "ms", TARGET_MS, kind)
    emit("replace_superseded_p95_ms", percentile(superseded, 95), "ms", None, kind)
    emit("replace_newer_started_p50_ms", median(started), "ms", TARGET_MS, kind)
    emit("replace_newer_started_p95_ms", percentile(started, 95), "ms", TARGET_MS, kind)


def main() -> None:
    main_for(__doc__, bench, FULL, QUICK)


if __name__ == "__main__":
    main()
