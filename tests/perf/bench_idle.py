"""What an idle scheduler costs: CPU and memory of a real scheduler process holding many armed tasks.

Run: ``python -m tests.perf.bench_idle [--quick]``.

N active interval tasks whose next fire is 1–2 h away (a few hundred created through the service
in their own chats, the rest copied in bulk into the same chats with fresh names). One
``python -m scheduler`` process with default settings is started; after it settles, its CPU time
(``/proc/<pid>/stat`` utime+stime) is read over consecutive windows and its ``VmRSS`` once a
second. ``idle_cpu_percent`` is the median of the windows' CPU (percent of one core);
``idle_rss_mb`` is the largest RSS seen. Targets ≤ 1 % and ≤ 250 MB.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import time

import sqlalchemy as sa
from sqlmodel import select

from app.schedules.model import ScheduledTask
from tests.integration.procs import Schedulers
from tests.perf.bench_burst import make_tasks
from tests.perf.common import Bench, emit, main_for, median, prepared

CPU_TARGET_PERCENT = 1.0
RSS_TARGET_MB = 250.0
TICKS = os.sysconf("SC_CLK_TCK")


@dataclasses.dataclass(frozen=True)
class Sizes:
    tasks: int
    seed_tasks: int  # created through the service, one chat each; the rest are bulk copies
    windows: int
    window_s: float
    settle_s: float


FULL = Sizes(tasks=10_000, seed_tasks=200, windows=6, window_s=10.0, settle_s=5.0)
QUICK = Sizes(tasks=500, seed_tasks=20, windows=2, window_s=2.0, settle_s=2.0)


def add_far_tasks(b: Bench, sizes: Sizes) -> None:
    """``sizes.tasks`` active tasks whose next fire is between 1 h and 2 h from now."""
    make_tasks(b, sizes.seed_tasks)
    with b.core.db.read() as s:
        seeds = [t.model_dump() for t in s.exec(select(ScheduledTask))]
    now = b.core.clock.now()
    rows = []
    for i in range(sizes.tasks):
        row = {k: v for k, v in seeds[i % len(seeds)].items() if k != "id"}
        row.update(name=f"idle {i}", idempotency_key=None,
                   next_run_at=now + dt.timedelta(hours=1, seconds=3600 * i / sizes.tasks))
        rows.append(row)
    with b.core.db.write() as s:
        s.exec(sa.delete(ScheduledTask))
        for start in range(0, len(rows), 1000):
            s.connection().execute(sa.insert(ScheduledTask.__table__), rows[start:start + 1000])


def cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def rss_mb(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def measure(pid: int, sizes: Sizes) -> tuple[list[float], list[float]]:
    """CPU percent per window and RSS samples (MB), one a second."""
    cpu, rss = [], []
    for _ in range(sizes.windows):
        started, used = time.monotonic(), cpu_seconds(pid)
        while time.monotonic() - started < sizes.window_s:
            rss.append(rss_mb(pid))
            time.sleep(min(1.0, sizes.window_s))
        cpu.append(100 * (cpu_seconds(pid) - used) / (time.monotonic() - started))
    return cpu, rss


def bench(kind: str, sizes: Sizes) -> None:
    with prepared(kind, "bench-idle-") as b:
        add_far_tasks(b, sizes)
        group = Schedulers(b.url, b.settings.data_dir, b.tmp / "logs")
        try:
            proc = group.start(b.core.db)
            time.sleep(sizes.settle_s)
            cpu, rss = measure(proc.pid, sizes)
            if proc.popen.poll() is not None:
                raise RuntimeError(f"scheduler exited during the idle measurement\n{proc.log_tail()}")
        finally:
            group.close()
    emit("idle_cpu_percent", median(cpu), "%", CPU_TARGET_PERCENT, kind)
    emit("idle_rss_mb", max(rss), "MB", RSS_TARGET_MB, kind)


def main() -> None:
    main_for(__doc__, bench, FULL, QUICK)


if __name__ == "__main__":
    main()
