"""Next-occurrence throughput of the cron engine, against raw croniter in the same run.

Run: ``python -m tests.perf.bench_cron`` (add ``--quick`` for a smoke run). Prints one JSON
object per line: ``{"metric", "value", "unit", "target", "ok", "db"}``; values are medians
over several repeats, on one pinned core. Not a CI assertion — docs/BENCHMARKS.md records the
figures.

* ``ours``: ``next_fire_times(expr, tz, after, 1)`` called afresh each time, ``after`` being the
  previous result — what the scheduler does after every fire.
* ``croniter_iter``: one ``croniter`` object, ``get_next()`` repeatedly (its cheapest use).
* ``croniter_fresh``: a new ``croniter(expr, after)`` per call — the like-for-like comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from croniter import croniter

from app.schedules.cron.evaluate import next_fire_times
from app.schedules.cron.fields import CronError
from app.schedules.timing import min_gap_seconds

COMMON = ["*/5 * * * *", "0 9 * * 1-5", "30 2 * * *", "0 0 1 * *", "@hourly"]
# SPEC §20 calendar items, and how croniter spells each (its last Friday is ``L5``; None: it has no spelling)
CALENDAR = {"0 9 L * *": "0 9 L * *", "0 17 LW * *": None, "0 9 15W * *": "0 9 15W * *",
            "0 18 * * 5L": "0 18 * * L5", "0 9 * * 1#1": "0 9 * * 1#1"}
ZONE = "America/New_York"
TARGET_PER_S = 20_000
START = datetime(2025, 1, 1, tzinfo=UTC)


def _rate(run: Callable[[int], None], calls: int, repeats: int) -> float:
    """Median calls per second over ``repeats`` timed runs of ``calls`` calls (after a warm-up)."""
    run(min(calls, 200))
    rates = []
    for _ in range(repeats):
        started = time.perf_counter()
        run(calls)
        rates.append(calls / (time.perf_counter() - started))
    return statistics.median(rates)


def _ours(expr: str) -> Callable[[int], None]:
    def run(n: int) -> None:
        after = START
        for _ in range(n):
            after = next_fire_times(expr, ZONE, after, 1)[0]

    return run


def _croniter_iter(expr: str) -> Callable[[int], None]:
    def run(n: int) -> None:
        it = croniter(expr, START.astimezone(ZoneInfo(ZONE)))
        for _ in range(n):
            it.get_next(datetime)

    return run


def _croniter_fresh(expr: str) -> Callable[[int], None]:
    def run(n: int) -> None:
        after = START.astimezone(ZoneInfo(ZONE))
        for _ in range(n):
            after = croniter(expr, after).get_next(datetime)

    return run


def _plan_with_holidays(expr: str) -> Callable[[int], None]:
    """``Plan.next_after`` of a cron task excluding US public holidays and a date a month (SPEC §20)."""
    from app.schedules import exclusions
    from app.schedules.plan import Plan
    from app.schedules.spec import parse_schedule

    dates = [f"{year}-{month:02d}-15" for year in range(2025, 2045) for month in range(1, 13)][:366]
    plan = Plan(parse_schedule({"kind": "cron", "cron": expr, "timezone": ZONE}),
                exclusions=exclusions.check(dates, {"country": "US"}))

    def run(n: int) -> None:
        after = START
        for _ in range(n):
            found = plan.next_after(after)
            assert found is not None
            after = found

    return run


def _calendar(calls: int, repeats: int) -> None:
    for expr, theirs in CALENDAR.items():
        print(_line(f"cron.next_per_s.ours[{expr}]", _rate(_ours(expr), calls, repeats), "next/s", TARGET_PER_S),
              flush=True)
        if theirs is not None:
            print(_line(f"cron.next_per_s.croniter_fresh[{theirs}]", _rate(_croniter_fresh(theirs), calls, repeats),
                        "next/s", None), flush=True)
    for expr in ("0 9 * * 1-5", "*/5 * * * *"):
        print(_line(f"plan.next_per_s.us_holidays_and_dates[{expr}]",
                    _rate(_plan_with_holidays(expr), calls, repeats), "next/s", None), flush=True)


def _latency_ms(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        try:
            action()
        except CronError:
            pass
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _line(metric: str, value: float, unit: str, target: float | None, higher_is_better: bool = True) -> str:
    ok = None if target is None else (value >= target if higher_is_better else value <= target)
    return json.dumps(
        {"metric": metric, "value": round(value, 2), "unit": unit, "target": target, "ok": ok, "db": None}
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls and repeats (smoke run)")
    args = parser.parse_args()
    calls, repeats = (500, 3) if args.quick else (5000, 7)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    ours_rates = []
    for expr in COMMON:
        rate = _rate(_ours(expr), calls, repeats)
        ours_rates.append(rate)
        print(_line(f"cron.next_per_s.ours[{expr}]", rate, "next/s", TARGET_PER_S), flush=True)
        print(
            _line(
                f"cron.next_per_s.croniter_fresh[{expr}]", _rate(_croniter_fresh(expr), calls, repeats), "next/s", None
            ),
            flush=True,
        )
        print(
            _line(
                f"cron.next_per_s.croniter_iter[{expr}]", _rate(_croniter_iter(expr), calls, repeats), "next/s", None
            ),
            flush=True,
        )
    print(_line("cron.next_per_s.ours.min_over_common", min(ours_rates), "next/s", TARGET_PER_S))
    _calendar(calls, repeats)
    never = _latency_ms(lambda: next_fire_times("0 0 31 2 *", ZONE, START), repeats)
    print(_line("cron.reject_never_firing_ms[0 0 31 2 *]", never, "ms", 50, higher_is_better=False))
    rare = _latency_ms(lambda: next_fire_times("0 0 */31 2 mon", ZONE, datetime(2027, 2, 2, tzinfo=UTC)), repeats)
    print(_line("cron.reject_never_firing_ms[0 0 */31 2 mon]", rare, "ms", 50, higher_is_better=False))
    gap8 = _latency_ms(lambda: min_gap_seconds("*/5 * * * *", "Europe/Berlin", start=START), 1)
    print(_line("cron.min_gap_ms[8 years, first call]", gap8, "ms", None, higher_is_better=False))
    gap_all = _latency_ms(lambda: min_gap_seconds("0,59 1,3 * * *", "Europe/Madrid"), 1)
    print(_line("cron.min_gap_ms[1970-2099, first call]", gap_all, "ms", None, higher_is_better=False))


if __name__ == "__main__":
    main()
