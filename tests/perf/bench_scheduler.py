"""Wake latency and fire lateness of a real scheduler process, on SQLite and (if configured) PostgreSQL.

Run: ``python -m tests.perf.bench_scheduler`` (``--quick`` for a smoke run). Prints one JSON object
per line: ``{"metric", "value", "unit", "target", "ok", "db"}``. Not a CI assertion —
docs/BENCHMARKS.md records the figures. PostgreSQL is measured when ``CHATCRON_TEST_POSTGRES_URL``
is set (in a throw-away schema).

* ``wake_latency``: an idle scheduler (its one task's next fire an hour away, lease 60 s so its
  own safety iteration comes every 20 s); ``run_now`` from this process, measured from just before
  the call to the fire's ``TaskRun.started_at`` (same host clock). One sample at a time: the next
  run-now waits for the previous fire to finish. Target: SPEC §3, "must start within 250 ms".
* ``fire_lateness``: tasks in separate chats whose ``next_run_at`` is set directly in the database
  to instants spread evenly over a window; lateness = ``TaskRun.started_at − occurrence_at``.
  Demo word delay 0, ``CHATCRON_MAX_CONCURRENT_RUNS=0``. Targets (ours): p50 ≤ 250 ms, p99 ≤ 1 s.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import json
import os
import secrets
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import sqlalchemy as sa
from sqlmodel import func, select

from app.core import auth, chats, projects
from app.core.config import Settings
from app.core.context import Core
from app.core.db import normalize_url
from app.core.migrate import upgrade
from app.core.models import User
from app.core.wake import DatabaseWaker
from app.schedules.model import ScheduledTask, TaskRun
from app.schedules.service import Actor, TaskService
from app.wiring import build_core
from tests.integration.procs import Schedulers, wait_for

PG_ENV = "CHATCRON_TEST_POSTGRES_URL"
WAKE_TARGET_MS = 250.0
LATENESS_P50_TARGET_MS = 250.0
LATENESS_P99_TARGET_MS = 1000.0


@dataclasses.dataclass(frozen=True)
class Sizes:
    wake_samples: int
    tasks: int
    window_s: float


FULL = Sizes(wake_samples=30, tasks=200, window_s=60.0)
QUICK = Sizes(wake_samples=10, tasks=40, window_s=12.0)


def _line(metric: str, value: float, unit: str, target: float | None, db: str) -> str:
    ok = None if target is None else value <= target
    return json.dumps({"metric": metric, "value": round(value, 1), "unit": unit, "target": target, "ok": ok,
                       "db": db})


def _percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(p / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


@contextlib.contextmanager
def _database(kind: str, tmp: Path) -> Iterator[str]:
    """A fresh database URL: a SQLite file, or a new schema in the configured PostgreSQL."""
    if kind == "sqlite":
        yield f"sqlite:///{tmp / 'bench.db'}"
        return
    base = normalize_url(os.environ[PG_ENV])
    schema = "bench_" + secrets.token_hex(6)
    engine = sa.create_engine(base)
    with engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
    try:
        yield f"{base}{'&' if '?' in base else '?'}options=-csearch_path%3D{schema}"
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        engine.dispose()


def _task(core: Core, svc: TaskService, user: User, project_id: int, title: str) -> int:
    chat = chats.create_chat(core.db, core.clock, user, project_id, title)
    body = {"name": title, "prompt": "bench", "schedule": {"kind": "interval", "every_seconds": 3600}}
    return svc.create(Actor(user), chat.id, body)[0].id


def _started(core: Core, task_ids: list[int]) -> list[TaskRun]:
    with core.db.read() as s:
        return list(s.exec(select(TaskRun).where(TaskRun.task_id.in_(task_ids), TaskRun.started_at.is_not(None))))


def _succeeded(core: Core, task_id: int) -> int:
    """Finished fires of the task whose start is recorded (a fast turn may finish before that write)."""
    with core.db.read() as s:
        return s.exec(select(func.count()).select_from(TaskRun).where(
            TaskRun.task_id == task_id, TaskRun.status == "succeeded", TaskRun.started_at.is_not(None))).one()


def wake_latency(core: Core, svc: TaskService, user: User, task_id: int, samples: int, procs: list) -> list[float]:
    """Milliseconds from just before run_now to the fire's TaskRun.started_at, one sample at a time."""
    latencies = []
    for i in range(samples):
        asked = core.clock.now()
        svc.run_now(Actor(user), task_id)
        wait_for(lambda n=i: _succeeded(core, task_id) > n, 30, f"wake sample {i + 1}", procs, every=0.005)
        with core.db.read() as s:
            row = s.exec(select(TaskRun).where(TaskRun.task_id == task_id).order_by(TaskRun.id.desc())).first()
        latencies.append((row.started_at - asked).total_seconds() * 1000)
        time.sleep(0.2)  # let the loop settle back to idle: every sample starts from sleep
    return latencies


def fire_lateness(core: Core, task_ids: list[int], window_s: float, procs: list) -> list[float]:
    """Milliseconds from each occurrence to its TaskRun.started_at, occurrences spread over ``window_s``."""
    base = core.clock.now() + dt.timedelta(seconds=3)
    step = window_s / len(task_ids)
    with core.db.write() as s:
        for i, task_id in enumerate(task_ids):
            s.exec(sa.update(ScheduledTask).where(ScheduledTask.id == task_id)
                   .values(next_run_at=base + dt.timedelta(seconds=i * step)))
    DatabaseWaker(core.db).notify()
    wait_for(lambda: len(_started(core, task_ids)) >= len(task_ids), window_s + 60, "every occurrence to fire", procs,
             every=0.5)
    return [(r.started_at - r.occurrence_at).total_seconds() * 1000 for r in _started(core, task_ids)]


def bench(kind: str, sizes: Sizes) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-scheduler-") as folder, _database(kind, Path(folder)) as url:
        tmp = Path(folder)
        settings = Settings(data_dir=tmp / "data", database_url=url, demo_word_delay_seconds=0.0,
                            max_tasks_per_project=0, max_tasks_per_user=0)
        core = build_core(settings)
        upgrade(core.db)
        user = auth.create_user(core.db, core.clock, "bench@example.com", "password-1")
        project_id = projects.create_project(core.db, core.clock, settings.workspaces_dir, "bench", user).id
        svc = TaskService(core.db, core.clock, settings, DatabaseWaker(core.db))
        waker_task = _task(core, svc, user, project_id, "wake")
        spread = [_task(core, TaskService(core.db, core.clock, settings), user, project_id, f"spread {i}")
                  for i in range(sizes.tasks)]
        group = Schedulers(url, settings.data_dir, tmp / "logs")
        try:
            proc = group.start(core.db, CHATCRON_RUN_LEASE_SECONDS=60, CHATCRON_MAX_CONCURRENT_RUNS=0)
            wake = wake_latency(core, svc, user, waker_task, sizes.wake_samples, [proc])
            print(_line("wake_latency_p50_ms", statistics.median(wake), "ms", WAKE_TARGET_MS, kind), flush=True)
            print(_line("wake_latency_p95_ms", _percentile(wake, 95), "ms", WAKE_TARGET_MS, kind), flush=True)
            late = fire_lateness(core, spread, sizes.window_s, [proc])
            print(_line("fire_lateness_p50_ms", statistics.median(late), "ms", LATENESS_P50_TARGET_MS, kind),
                  flush=True)
            print(_line("fire_lateness_p99_ms", _percentile(late, 99), "ms", LATENESS_P99_TARGET_MS, kind),
                  flush=True)
        finally:
            group.close()  # SIGKILL: a clean stop is not what is measured here
            core.db.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples and tasks (smoke run)")
    args = parser.parse_args()
    sizes = QUICK if args.quick else FULL
    bench("sqlite", sizes)
    if os.environ.get(PG_ENV):
        bench("postgresql", sizes)


if __name__ == "__main__":
    main()
