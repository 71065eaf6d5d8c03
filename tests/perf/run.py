"""Every benchmark figure in one run: ``python -m tests.perf.run [--quick]`` (``make bench``).

Prints one JSON object per line, ``{"metric", "value", "unit", "target", "ok", "db"}``, each figure
on SQLite and, when ``CHATCRON_TEST_POSTGRES_URL`` is set, on PostgreSQL (in a throw-away schema);
then one machine line ``{"machine": {...}}``. Each figure sets up its own temp data dir and real
processes (see the modules): bench_cron (time engine), fire lateness (bench_scheduler),
bench_burst, bench_idle, bench_web (wake via HTTP, UI latency, API list rate), bench_agent (fire →
first text with the real Claude Code agent, cold and warm; its memory), bench_sandbox (what the agent
sandbox adds to a turn's start), bench_webhook (fire end → webhook received), bench_approval (an
approval answered in another process → the waiting turn answers the agent, and → the agent's next text).

``--quick`` is the CI smoke run: small sizes, a few seconds each, the same code paths; its values
mean nothing. A figure that fails prints its lines with ``value: null, ok: false`` and the traceback
on stderr, the other figures still run, and the exit status is 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sqlite3
import sys
import time
import traceback
from collections.abc import Callable

import pytest
import sqlalchemy as sa

from app.core.db import normalize_url
from app.schedules.service import TaskService
from tests.integration.procs import Schedulers
from tests.perf import (
    bench_agent,
    bench_approval,
    bench_burst,
    bench_cron,
    bench_idle,
    bench_sandbox,
    bench_scheduler,
    bench_web,
    bench_webhook,
)
from tests.perf.common import PG_ENV, databases, emit, median, percentile, prepared

CRON_TARGET_PER_S = float(bench_cron.TARGET_PER_S)
LATENESS_P99_TARGET_MS = 100.0
AGENT_METRICS = ["agent_first_text_cold_p50_ms", "agent_first_text_cold_p95_ms", "agent_first_text_warm_p50_ms",
                 "agent_first_text_warm_p95_ms", "agent_first_text_warm_hostnet_p50_ms",
                 "agent_first_text_warm_hostnet_p95_ms", "agent_network_fence_first_text_p50_ms",
                 "agent_process_rss_mb"]


@dataclasses.dataclass(frozen=True)
class Plan:
    cron_calls: int
    cron_repeats: int
    lateness: bench_scheduler.Sizes
    burst: bench_burst.Sizes
    idle: bench_idle.Sizes
    web: bench_web.Sizes
    agent: bench_agent.Sizes
    sandbox: bench_sandbox.Sizes
    webhook: bench_webhook.Sizes
    approval: bench_approval.Sizes


FULL = Plan(5000, 7, bench_scheduler.Sizes(wake_samples=0, tasks=200, window_s=60.0),
            bench_burst.FULL, bench_idle.FULL, bench_web.FULL, bench_agent.FULL, bench_sandbox.FULL,
            bench_webhook.FULL, bench_approval.FULL)
QUICK = Plan(300, 3, bench_scheduler.Sizes(wake_samples=0, tasks=20, window_s=4.0),
             bench_burst.QUICK, bench_idle.QUICK, bench_web.QUICK, bench_agent.QUICK, bench_sandbox.QUICK,
             bench_webhook.QUICK, bench_approval.QUICK)


def cron_figure(plan: Plan) -> None:
    """The slowest common expression's next-occurrences per second, on one pinned core (bench_cron)."""
    pinned = hasattr(os, "sched_setaffinity")
    if pinned:
        before = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {min(before)})
    try:
        rates = [bench_cron._rate(bench_cron._ours(expr), plan.cron_calls, plan.cron_repeats)
                 for expr in bench_cron.COMMON]
    finally:
        if pinned:
            os.sched_setaffinity(0, before)
    emit("cron_next_per_s", min(rates), "next/s", CRON_TARGET_PER_S, None, higher_is_better=True)


def lateness_figure(kind: str, sizes: bench_scheduler.Sizes) -> None:
    """Tasks whose occurrences are spread over a window; turn start − nominal instant (bench_scheduler)."""
    with prepared(kind, "bench-lateness-") as b:
        svc = TaskService(b.core.db, b.core.clock, b.settings)
        task_ids = [bench_scheduler._task(b.core, svc, b.user, b.project_id, f"spread {i}")
                    for i in range(sizes.tasks)]
        group = Schedulers(b.url, b.settings.data_dir, b.tmp / "logs")
        try:
            proc = group.start(b.core.db, CHATCRON_RUN_LEASE_SECONDS=60, CHATCRON_MAX_CONCURRENT_RUNS=0)
            late = bench_scheduler.fire_lateness(b.core, task_ids, sizes.window_s, [proc])
        finally:
            group.close()
    emit("fire_lateness_p50_ms", median(late), "ms", None, kind)
    emit("fire_lateness_p99_ms", percentile(late, 99), "ms", LATENESS_P99_TARGET_MS, kind)


def machine() -> dict[str, object]:
    model = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info: dict[str, object] = {
        "cores": os.cpu_count(), "cpu": model, "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version, "sqlalchemy": sa.__version__, "postgresql": None,
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }
    if os.environ.get(PG_ENV):
        engine = sa.create_engine(normalize_url(os.environ[PG_ENV]))
        try:
            with engine.connect() as conn:
                info["postgresql"] = conn.exec_driver_sql("SHOW server_version").scalar_one()
        finally:
            engine.dispose()
    return info


def _guarded(name: str, metrics: list[str], db: str | None, figure: Callable[[], None]) -> bool:
    """Run one figure; on failure print its lines as null/false and the traceback on stderr."""
    started = time.monotonic()
    try:
        figure()
        return True
    except (Exception, pytest.fail.Exception):  # one broken figure must not hide the others
        traceback.print_exc()
        print(f"[bench] {name} on {db} failed", file=sys.stderr)
        for metric in metrics:
            emit(metric, None, "", None, db)
        return False
    finally:
        print(f"[bench] {name} ({db}) took {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (CI smoke run)")
    parser.add_argument("--only", help="comma-separated figure groups: "
                                       "cron,lateness,burst,idle,web,agent,sandbox,webhook,approval")
    args = parser.parse_args()
    plan = QUICK if args.quick else FULL
    only = set(args.only.split(",")) if args.only else {"cron", "lateness", "burst", "idle", "web", "agent", "sandbox",
                                                        "webhook", "approval"}
    ok = True
    if "cron" in only:
        ok &= _guarded("cron", ["cron_next_per_s"], None, lambda: cron_figure(plan))
    if "agent" in only:  # the agent's figures do not depend on the store: SQLite only
        ok &= _guarded("agent", AGENT_METRICS, "sqlite", lambda: bench_agent.bench("sqlite", plan.agent))
    for kind in databases():
        groups = [
            ("lateness", ["fire_lateness_p50_ms", "fire_lateness_p99_ms"],
             lambda k=kind: lateness_figure(k, plan.lateness)),
            ("burst", ["burst_fires_per_s", "db_single_row_writes_per_s", "burst_vs_db_limit"],
             lambda k=kind: bench_burst.bench(k, plan.burst)),
            ("idle", ["idle_cpu_percent", "idle_rss_mb"], lambda k=kind: bench_idle.bench(k, plan.idle)),
            ("web", ["wake_latency_p50_ms", "wake_latency_p95_ms", "ui_event_latency_p50_ms",
                     "ui_event_latency_p95_ms", "ui_event_latency_all_pages_p95_ms", "api_list_rps"],
             lambda k=kind: bench_web.bench(k, plan.web)),
            ("sandbox", bench_sandbox.METRICS, lambda k=kind: bench_sandbox.bench(k, plan.sandbox)),
            ("webhook", ["webhook_latency_p50_ms", "webhook_latency_p95_ms"],
             lambda k=kind: bench_webhook.bench(k, plan.webhook)),
            ("approval", bench_approval.METRICS, lambda k=kind: bench_approval.bench(k, plan.approval)),
        ]
        for name, metrics, figure in groups:
            if name in only:
                ok &= _guarded(name, metrics, kind, figure)
    print(json.dumps({"machine": machine()}), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
