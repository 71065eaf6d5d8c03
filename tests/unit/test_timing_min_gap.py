"""min_gap_seconds — computed from field sets and zone transitions — against brute-force enumeration."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.schedules.cron.evaluate import next_fire_times
from app.schedules.timing import min_gap_detail, min_gap_seconds
from tests.unit.cron_reference import utc_seconds

ZONES = [
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",
    "Australia/Sydney",
    "America/Santiago",
    "Asia/Kolkata",
]
EXPRESSIONS = [
    "0,59 1,3 * * *",
    "30 2,3 * * *",
    "0 1,2 * * *",
    "*/30 1 * * *",
    "0 2 * * *",
    "*/20 0-3 * * *",
    "45 23 * * *",
    "0,30 0 * * *",
    "59 0,1 * * *",
    "15 1,2 * * 0",
    "0 */6 * * *",
    "*/15 2 * * *",
    "0 0 1 * *",
    "@hourly",
    "5,55 * * * *",
    "0 0,2 8-14 3,4,9,10 sun",
]


def brute_min_gap(expr: str, zone: str, year: int) -> int | None:
    """Smallest gap between consecutive fires whose local date lies in ``year``: by enumeration."""
    tz = ZoneInfo(zone)
    after = datetime(year, 1, 1, tzinfo=tz) - timedelta(seconds=1)
    last = date(year, 12, 31)
    fires: list[int] = []
    while True:
        chunk = next_fire_times(expr, zone, after, 500)
        inside = [f for f in chunk if f.astimezone(tz).date() <= last]
        fires += [utc_seconds(f) for f in inside]
        if len(inside) < len(chunk) or not chunk:
            break
        after = chunk[-1]
    gaps = [b - a for a, b in zip(fires, fires[1:], strict=False)]
    return min(gaps) if gaps else None


@pytest.mark.parametrize("zone", ZONES)
@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_min_gap_equals_brute_force_enumeration(expr: str, zone: str) -> None:
    start = datetime(2024, 1, 1, tzinfo=ZoneInfo(zone))
    assert min_gap_seconds(expr, zone, start=start, years=1) == brute_min_gap(expr, zone, 2024)


@pytest.mark.parametrize(
    ("expr", "zone", "gap", "why"),
    [
        ("0,59 1,3 * * *", "America/New_York", 60, "01:59 EST, then the jump to 03:00 EDT"),
        ("30 2,3 * * *", "America/New_York", 1800, "02:30 fires at the 03:00 jump, then 03:30"),
        ("0 2 * * *", "America/New_York", 82800, "02:00 at the jump, then 02:00 EDT the next day"),
        ("30 1 * * *", "Europe/London", 84600, "01:30 lands on the 02:00 jump"),
        ("*/30 1 * * *", "America/New_York", 1800, None),
        ("* * * * *", "Asia/Kolkata", 60, None),
        ("*/7 * * * *", "UTC", 240, None),
        ("0 9 * * 1-5", "Europe/Paris", 86400, None),  # the short night is a Sunday's
        ("15 2 * * *", "Australia/Lord_Howe", 85500, "02:15 falls in the 30-minute gap and fires at 02:30"),
    ],
    ids=lambda v: v if isinstance(v, str) and " " not in v else None,
)
def test_known_minimum_gaps(expr: str, zone: str, gap: int, why: str | None) -> None:
    detail = min_gap_detail(expr, zone, start=datetime(2025, 1, 1, tzinfo=ZoneInfo("UTC")))
    assert detail is not None and detail.seconds == gap
    assert (detail.at is not None) == (why is not None)


def test_without_a_start_the_analysis_covers_1970_to_2099() -> None:
    # Sao Paulo dropped DST in 2019: its compression shows only in the long default window.
    assert min_gap_seconds("30 0 * * *", "America/Sao_Paulo") == 84600
    assert (
        min_gap_seconds("30 0 * * *", "America/Sao_Paulo", start=datetime(2025, 1, 1, tzinfo=ZoneInfo("UTC"))) == 86400
    )


def test_fewer_than_two_fires_have_no_gap() -> None:
    start = datetime(2027, 2, 2, tzinfo=ZoneInfo("UTC"))
    assert min_gap_seconds("0 0 */31 2 mon", "UTC", start=start) is None


@st.composite
def sparse_expressions(draw: st.DrawFn) -> str:
    minutes = sorted(draw(st.sets(st.integers(0, 59), min_size=1, max_size=3)))
    hours = sorted(draw(st.sets(st.integers(0, 4), min_size=1, max_size=3)))
    hour_text = draw(st.sampled_from([",".join(map(str, hours)), "*/2", "*"]))
    days = draw(st.sampled_from(["* * *", "* * 0", "*/2 * *", "1-15 * 0,6", "* 3,4,9,10,11 *"]))
    return f"{','.join(map(str, minutes))} {hour_text} {days}"


@settings(max_examples=25, derandomize=True, deadline=None)
@given(expr=sparse_expressions(), zone=st.sampled_from(ZONES[:5]))
def test_min_gap_equals_brute_force_for_generated_expressions(expr: str, zone: str) -> None:
    start = datetime(2023, 1, 1, tzinfo=ZoneInfo(zone))
    assert min_gap_seconds(expr, zone, start=start, years=1) == brute_min_gap(expr, zone, 2023)
