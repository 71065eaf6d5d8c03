"""How long the drawer's 7-day timeline takes to build for many dense tasks.

Run: ``python -m tests.perf.bench_timeline`` (add ``--quick`` for a smoke run). Prints one JSON
object per line: ``{"metric", "value", "unit", "target", "ok", "db"}``; values are medians over
several repeats, on one pinned core. Not a CI assertion — docs/BENCHMARKS.md records the figures.

Each case is 20 active tasks firing every minute (10,080 fires a week each), viewed from
Europe/Paris (whose week holds a clock change for the cron zones that have one): the timeline
counts each local day's fires instead of listing them, so the cost follows days, not fires.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import time

from app.schedules.model import ScheduledTask
from app.ui.timeline import timeline

NOW = dt.datetime(2026, 3, 27, 12, 0, tzinfo=dt.UTC)  # the week of Europe's spring-forward
TASKS = 20
TARGET_MS = 20.0  # the drawer redraws on every poll
CASES = {
    "interval 60 s": {"kind": "interval", "every_seconds": 60},
    "cron * * * * * UTC": {"kind": "cron", "cron": "* * * * *", "timezone": "UTC"},
    "cron * * * * * America/New_York": {"kind": "cron", "cron": "* * * * *", "timezone": "America/New_York"},
    "cron */5 9-17 * * 1-5 Europe/Paris": {"kind": "cron", "cron": "*/5 9-17 * * 1-5", "timezone": "Europe/Paris"},
    # every minute in the zone whose clock changes this week: the walk around the change is the worst case
    "cron * * * * * Europe/Paris": {"kind": "cron", "cron": "* * * * *", "timezone": "Europe/Paris"},
}


def _tasks(schedule: dict) -> list[ScheduledTask]:
    return [ScheduledTask(id=i, chat_id=1, project_id=1, owner="bench@example.com", name=f"task {i}", prompt="p",
                          schedule=json.dumps(schedule), status="active", next_run_at=NOW + dt.timedelta(minutes=1),
                          armed_at=NOW, created_at=NOW, updated_at=NOW) for i in range(TASKS)]


def _median_ms(tasks: list[ScheduledTask], repeats: int) -> float:
    timeline(tasks, NOW, "Europe/Paris")  # warm-up: zone tables, parsed crons
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        timeline(tasks, NOW, "Europe/Paris")
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _line(metric: str, value: float, unit: str, target: float | None) -> str:
    ok = None if target is None else value <= target
    return json.dumps({"metric": metric, "value": round(value, 2), "unit": unit, "target": target, "ok": ok,
                       "db": None})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (smoke run)")
    args = parser.parse_args()
    repeats = 3 if args.quick else 15
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    for name, schedule in CASES.items():
        print(_line(f"timeline.build_ms[{TASKS} tasks, {name}]", _median_ms(_tasks(schedule), repeats), "ms",
                    TARGET_MS), flush=True)


if __name__ == "__main__":
    main()
