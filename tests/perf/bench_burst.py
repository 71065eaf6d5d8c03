"""Burst throughput of one real scheduler process, against the database's own single-row write rate.

Run: ``python -m tests.perf.bench_burst [--quick]``.

* ``burst_fires_per_s``: N tasks in N chats, all due at the same instant (``next_run_at`` set
  directly in the database), ``CHATCRON_MAX_CONCURRENT_RUNS=0`` (cap off), demo provider with
  word delay 0 and a one-word prompt (the "no-op provider"). Rate = N ÷ (last ``TaskRun.finished_at``
  − the due instant); median over repeats. Target ≥ 300/s on SQLite.
* ``db_single_row_writes_per_s``: single-row UPDATE transactions per second through the same
  ``Database`` (engine, pragmas, write lock) from this process, measured right after each burst
  while the scheduler is idle; median over repeats.
* ``burst_vs_db_limit``: the first ÷ the second (how many fires per single-row write; higher is
  better). A fire writes about eight transactions, so ≈ 0.12 is "as fast as the database allows".
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time

import sqlalchemy as sa
from sqlmodel import func, select

from app.core import chats
from app.core.models import Chat
from app.core.wake import DatabaseWaker
from app.schedules.model import ScheduledTask, TaskRun
from app.schedules.service import Actor, TaskService
from tests.integration.procs import Schedulers, wait_for
from tests.perf.common import Bench, emit, main_for, median, prepared

TARGET_FIRES_PER_S = 300.0


@dataclasses.dataclass(frozen=True)
class Sizes:
    tasks: int
    repeats: int
    write_seconds: float


FULL = Sizes(tasks=1000, repeats=3, write_seconds=3.0)
QUICK = Sizes(tasks=40, repeats=2, write_seconds=0.5)


def make_tasks(b: Bench, count: int, prompt: str = "go", every_seconds: int = 3600) -> list[int]:
    """``count`` interval tasks, one per new chat, created through the service (armed, next fire later)."""
    svc = TaskService(b.core.db, b.core.clock, b.settings)
    ids = []
    for i in range(count):
        chat = chats.create_chat(b.core.db, b.core.clock, b.user, b.project_id, f"burst {i}")
        body = {"name": f"t{i}", "prompt": prompt, "schedule": {"kind": "interval", "every_seconds": every_seconds}}
        ids.append(svc.create(Actor(b.user), chat.id, body)[0].id)
    return ids


def _finished(b: Bench, due: dt.datetime) -> tuple[int, dt.datetime | None]:
    with b.core.db.read() as s:
        return s.exec(select(func.count(), func.max(TaskRun.finished_at)).where(
            TaskRun.occurrence_at == due, TaskRun.finished_at.is_not(None))).one()


def burst_once(b: Bench, task_ids: list[int], procs: list) -> float:
    """Fires per second: every task due at one instant, until every turn has finished."""
    due = b.core.clock.now().replace(microsecond=0) + dt.timedelta(seconds=2)
    with b.core.db.write() as s:
        s.exec(sa.update(ScheduledTask).where(ScheduledTask.id.in_(task_ids)).values(next_run_at=due))
    DatabaseWaker(b.core.db).notify()
    wait_for(lambda: _finished(b, due)[0] >= len(task_ids), 600, "every burst fire to finish", procs, every=0.1)
    count, last = _finished(b, due)
    return count / max((last - due).total_seconds(), 1e-3)


def single_row_writes_per_s(b: Bench, seconds: float) -> float:
    """Single-row UPDATE transactions per second through ``b.core.db`` for ``seconds``."""
    chat_id = chats.create_chat(b.core.db, b.core.clock, b.user, b.project_id, "writes").id
    done, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        with b.core.db.write() as s:
            s.exec(sa.update(Chat).where(Chat.id == chat_id).values(title=f"w{done}"))
        done += 1
    return done / (time.perf_counter() - started)


def bench(kind: str, sizes: Sizes) -> None:
    with prepared(kind, "bench-burst-") as b:
        # a fresh set of tasks per repeat: re-arming a task that has just fired makes its next
        # occurrence a follow-up, which is not what a burst of independent tasks looks like
        sets = [make_tasks(b, sizes.tasks) for _ in range(sizes.repeats)]
        group = Schedulers(b.url, b.settings.data_dir, b.tmp / "logs")
        try:
            proc = group.start(b.core.db, CHATCRON_RUN_LEASE_SECONDS=60, CHATCRON_MAX_CONCURRENT_RUNS=0)
            rates, writes = [], []
            for task_ids in sets:
                rates.append(burst_once(b, task_ids, [proc]))
                time.sleep(1)
                writes.append(single_row_writes_per_s(b, sizes.write_seconds))
        finally:
            group.close()
    fires, limit = median(rates), median(writes)
    emit("burst_fires_per_s", fires, "fires/s", TARGET_FIRES_PER_S if kind == "sqlite" else None, kind,
         higher_is_better=True)
    emit("db_single_row_writes_per_s", limit, "tx/s", None, kind, higher_is_better=True)
    emit("burst_vs_db_limit", fires / limit, "ratio", None, kind, higher_is_better=True)


def main() -> None:
    main_for(__doc__, bench, FULL, QUICK)


if __name__ == "__main__":
    main()
