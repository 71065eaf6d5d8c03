"""The engine against a minute-by-minute simulation of classic cron's main loop.

Around every daylight-saving transition of six zones over three years (and stretches of a
zone without DST), for 26 expressions and start points every ten minutes through both passes
of a repeated hour, the next five fires must equal what the simulated daemon runs. Instants
are compared as UTC seconds: Python ignores ``fold`` when two datetimes share a tzinfo.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo

import pytest

from app.schedules.cron.evaluate import next_fire_times
from tests.unit.cron_reference import EPOCH, fires, parse, simulate, simulate_many, utc_seconds

EXPRESSIONS = [
    "* * * * *",
    "*/5 * * * *",
    "*/30 * * * *",
    "0 * * * *",
    "15,45 * * * *",
    "@hourly",
    "0 2 * * *",
    "30 2 * * *",
    "0 1,2,3 * * *",
    "0,30 1-3 * * *",
    "59 1 * * *",
    "0 3 * * *",
    "30 1 * * *",
    "*/15 1-2 * * *",
    "* 2 * * *",
    "0 */2 * * *",
    "45 23 * * *",
    "30 0 * * *",
    "@daily",
    "*/10 0 * * 0",
    "0 2 * * sun",
    "30 1 * * 0,6",
    "15 2,3 */2 * 0",
    "0 0,2 8-14 3,4,9,10 sun",
    "0 9 * * 1-5",
    "0 0 1 * *",
]
DST_ZONES = [
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",  # 30-minute shift
    "Australia/Sydney",  # southern hemisphere
    "America/Santiago",  # southern hemisphere, changes at local midnight
    "Africa/Casablanca",  # steps back for Ramadan, forward after it
]
YEARS = range(2023, 2026)
WINDOW_BEFORE, WINDOW_AFTER = 12 * 3600, 30 * 3600
STARTS_AROUND = 3 * 3600


def _offset_fn(zone: ZoneInfo):
    def offset(t: int) -> int:
        delta = datetime.fromtimestamp(t, zone).utcoffset()
        assert delta is not None
        return int(delta.total_seconds())

    return offset


def _transitions(name: str) -> list[int]:
    """Transition instants found independently of the engine: hourly scan, then bisection."""
    offset = _offset_fn(ZoneInfo(name))
    start = utc_seconds(datetime(YEARS.start, 1, 1, tzinfo=UTC))
    stop = utc_seconds(datetime(YEARS.stop, 1, 1, tzinfo=UTC))
    found = []
    for t in range(start, stop, 3600):
        if offset(t) != offset(t + 3600):
            lo, hi = t, t + 3600
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if offset(mid) == offset(t) else (lo, mid)
            found.append(hi)
    return found


def _cases() -> list:
    cases = []
    for name in DST_ZONES:
        offset = _offset_fn(ZoneInfo(name))
        for t in _transitions(name):
            kind = "forward" if offset(t) > offset(t - 1) else "back"
            local = datetime.fromtimestamp(t, ZoneInfo(name)).date().isoformat()
            cases.append(pytest.param(name, t, id=f"{name}-{local}-{kind}"))
    for day in ("2024-03-10", "2024-11-03", "2025-06-15"):
        t = utc_seconds(datetime.fromisoformat(f"{day}T02:00:00+05:30"))
        cases.append(pytest.param("Asia/Kolkata", t, id=f"Asia/Kolkata-{day}-no-dst"))
    return cases


@cache
def _entries() -> list:
    return [parse(expr) for expr in EXPRESSIONS]


def _start_points(t: int) -> list[int]:
    points = [t - 1, t, t + 1]
    for k in range(-STARTS_AROUND, STARTS_AROUND + 1, 600):
        points += [t + k, t + k + 30]
    return points


@pytest.mark.parametrize(("zone_name", "transition"), _cases())
def test_next_fires_match_classic_cron_around_clock_changes(zone_name: str, transition: int) -> None:
    zone = ZoneInfo(zone_name)
    start, end = transition - WINDOW_BEFORE, transition + WINDOW_AFTER
    runs = simulate_many(_entries(), _offset_fn(zone), start, end)
    mismatches = []
    for expr, entry_runs in zip(EXPRESSIONS, runs, strict=True):
        reference = fires(entry_runs)
        for i, after in enumerate(_start_points(transition)):
            # Alternate the time zone of ``after``: local datetimes carry ``fold`` in the repeated hour.
            after_dt = datetime.fromtimestamp(after, zone if i % 2 else UTC)
            got = [utc_seconds(f) for f in next_fire_times(expr, zone_name, after_dt, 5)]
            expected = [f for f in reference if f > after][:5]
            if [g for g in got if g < end] != [e for e in expected if e < end]:
                mismatches.append(f"{expr!r} after {after_dt.isoformat()}: got {_iso(got)}, classic {_iso(expected)}")
    assert not mismatches, f"{len(mismatches)} mismatches, first: " + "\n".join(mismatches[:5])


def _iso(instants: list[int]) -> list[str]:
    return [(EPOCH + timedelta(seconds=s)).isoformat() for s in instants]


# --- where classic cron and the SPEC part ways (docs/CRON.md) -----------------------------------


def _window(zone: str, local: str, hours: int = 30) -> tuple[int, int, object]:
    start = utc_seconds(datetime.fromisoformat(local).replace(tzinfo=ZoneInfo(zone)))
    return start, start + hours * 3600, _offset_fn(ZoneInfo(zone))


def test_skipped_minutes_coalesce_into_one_fire_where_classic_cron_runs_each() -> None:
    start, end, offset = _window("America/New_York", "2024-03-09T12:00:00")
    runs = simulate(parse("0,30 2 * * *"), offset, start, end)
    jump = utc_seconds(datetime(2024, 3, 10, 7, tzinfo=UTC))
    assert [(r.at, r.queued) for r in runs if r.at == jump] == [(jump, 2)]  # classic: two runs, 10 s apart
    got = next_fire_times("0,30 2 * * *", "America/New_York", datetime(2024, 3, 9, 12, tzinfo=UTC), 2)
    assert [f.isoformat() for f in got] == ["2024-03-10T07:00:00+00:00", "2024-03-11T06:00:00+00:00"]


def test_fixed_time_minutes_of_a_skipped_day_fire_at_the_jump_where_classic_cron_drops_them() -> None:
    # Samoa skipped 30 December 2011: a 24-hour jump, a "large" change for classic cron.
    start, end, offset = _window("Pacific/Apia", "2011-12-29T06:00:00", hours=48)
    jump = utc_seconds(datetime(2011, 12, 30, 10, tzinfo=UTC))
    classic = fires(simulate(parse("0 12 * * *"), offset, start, end))
    assert jump not in classic
    got = next_fire_times("0 12 * * *", "Pacific/Apia", datetime(2011, 12, 29, 23, tzinfo=UTC), 2)
    assert [f.isoformat() for f in got] == ["2011-12-30T10:00:00+00:00", "2011-12-30T22:00:00+00:00"]


def test_a_day_repeated_by_a_large_step_back_fires_fixed_time_jobs_once_where_classic_cron_repeats() -> None:
    # Kwajalein went from +11 to -12 on 30 September 1969: the wall clock stepped back 23 hours.
    start, end, offset = _window("Pacific/Kwajalein", "1969-09-30T00:00:00", hours=48)
    classic = fires(simulate(parse("0 12 * * *"), offset, start, end))
    assert len([f for f in classic if f < utc_seconds(datetime(1969, 10, 2, tzinfo=UTC))]) == 2
    got = next_fire_times("0 12 * * *", "Pacific/Kwajalein", datetime(1969, 9, 29, 12, tzinfo=UTC), 2)
    assert [f.isoformat() for f in got] == ["1969-09-30T01:00:00+00:00", "1969-10-02T00:00:00+00:00"]


def test_the_reference_runs_skipped_minutes_of_a_small_jump_for_every_job() -> None:
    # No zone has jumped by 2-5 minutes since 1952; a synthetic clock exercises the "small" case.
    jump = 600

    def offset(t: int) -> int:
        return 0 if t < jump else 180

    runs = simulate_many([parse("* * * * *"), parse("11 0 * * *")], offset, 0, 1200)
    assert [r.at for r in runs[0]][:12] == [60 * k for k in range(1, 10)] + [jump, 660, 720]
    assert [(r.at, r.queued) for r in runs[0] if r.at == jump] == [(jump, 4)]  # 00:10 to 00:13 all run
    assert [r.at for r in runs[1]] == [jump]  # 00:11 was skipped, run late
