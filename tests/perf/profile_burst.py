"""The burst of ``bench_burst`` in this process, counted: SQL statements, transactions and CPU per fire.

Run: ``python -m tests.perf.profile_burst [N] [--by-statement]`` (SQLite; N tasks, default 1,000).
Under ``py-spy record --gil -- python -m tests.perf.profile_burst`` it shows where a fire's CPU
goes without a second process in the way. The loop is the scheduler's own (``build_loop``), driven
by calling ``tick`` until every fire has finished; the provider is the no-op demo (word delay 0).
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import time

import sqlalchemy as sa
from sqlmodel import func, select

from app.core.db import Database
from app.schedules.model import ScheduledTask, TaskRun
from scheduler.__main__ import build_loop
from tests.perf.bench_burst import make_tasks
from tests.perf.common import prepared


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="?", type=int, default=1000)
    parser.add_argument("--by-statement", action="store_true", help="count statements by their first words")
    args = parser.parse_args()
    with prepared("sqlite", "profile-burst-", max_concurrent_runs=0) as b:
        ids = make_tasks(b, args.tasks)
        loop = build_loop(b.core, "sched:profile")
        loop.tick()
        counts: collections.Counter[str] = collections.Counter()

        @sa.event.listens_for(b.core.db.engine, "before_cursor_execute")
        def _statement(conn, cursor, statement, params, context, many) -> None:
            words = statement.split()
            counts[" ".join(words[:3]) if args.by_statement else words[0].upper()] += 1

        @sa.event.listens_for(b.core.db.engine, "commit")
        def _commit(conn) -> None:
            counts["COMMIT"] += 1

        watcher = Database(b.url)  # its polls are not counted
        due = b.core.clock.now()
        with b.core.db.write() as s:
            s.exec(sa.update(ScheduledTask).where(ScheduledTask.id.in_(ids)).values(next_run_at=due))
        counts.clear()
        wall, cpu = time.perf_counter(), time.process_time()
        while _finished(watcher, due) < len(ids):
            loop.tick()
            time.sleep(0.005)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        n = len(ids)
        print(f"{n} fires: {n / wall:.1f} fires/s in one process, {1000 * cpu / n:.2f} ms CPU per fire")
        print("per fire:", {key: round(value / n, 2) for key, value in counts.most_common()})
        watcher.dispose()


def _finished(db: Database, due: dt.datetime) -> int:
    with db.read() as s:
        return s.exec(select(func.count()).where(TaskRun.occurrence_at == due, TaskRun.finished_at.is_not(None))).one()


if __name__ == "__main__":
    main()
