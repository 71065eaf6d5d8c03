"""Property tests of app.schedules.cron.evaluate over generated valid expressions, zones and start instants."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from app.schedules.cron.describe import describe
from app.schedules.cron.evaluate import next_fire_times
from app.schedules.cron.fields import CronError, parse_cron
from tests.unit.cron_reference import NAIVE_EPOCH, parse, scan_utc, utc_seconds

MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
ZONES = ["UTC", "America/New_York", "Europe/London", "Australia/Lord_Howe", "America/Santiago", "Asia/Kolkata"]
HORIZON = 2922 * 86400
PROPERTY_SETTINGS = settings(max_examples=150, derandomize=True, deadline=None)


@st.composite
def _field(draw: st.DrawFn, low: int, high: int, names: list[str] | None = None) -> str:
    def value() -> str:
        n = draw(st.integers(low, high))
        if names and n - (low if names is MONTHS else 0) < len(names) and draw(st.booleans()):
            return names[n - (1 if names is MONTHS else 0)]
        return str(n)

    def term() -> str:
        kind = draw(st.sampled_from(["star", "star_step", "single", "range", "range_step"]))
        step = draw(st.integers(1, min(high - low + 1, 12)))
        if kind == "star":
            return "*"
        if kind == "star_step":
            return f"*/{step}"
        if kind == "single":
            return value()
        a, b = sorted(draw(st.tuples(st.integers(low, high), st.integers(low, high))))
        text = f"{a}-{b}"
        return text if kind == "range" else f"{text}/{step}"

    return ",".join(term() for _ in range(draw(st.integers(1, 3))))


@st.composite
def expressions(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(["@hourly", "@daily", "@weekly", "@monthly", "@yearly"]))
    fields = [
        draw(_field(0, 59)),
        draw(_field(0, 23)),
        draw(_field(1, 31)),
        draw(_field(1, 12, MONTHS)),
        draw(_field(0, 7, DAYS)),
    ]
    expr = " ".join(fields)
    try:
        parse_cron(expr)
    except CronError:
        assume(False)  # a day-of-month no month has: rejected statically, tested elsewhere
    return expr


instants = st.datetimes(min_value=datetime(1975, 1, 1), max_value=datetime(2090, 1, 1))


@PROPERTY_SETTINGS
@given(expr=expressions())
def test_describe_never_raises_on_valid_input(expr: str) -> None:
    text = describe(expr)
    assert isinstance(text, str) and text[0].isupper()


@PROPERTY_SETTINGS
@given(expr=expressions(), after=instants)
def test_in_utc_fires_equal_a_plain_minute_scan(expr: str, after: datetime) -> None:
    start = utc_seconds(after.replace(tzinfo=UTC))
    expected = scan_utc(parse(expr), start, 3, limit_days=2924)
    try:
        got = [utc_seconds(f) for f in next_fire_times(expr, "UTC", after.replace(tzinfo=UTC), 3)]
    except CronError as exc:
        assert "never fires within 8 years" in str(exc)
        assert not expected or expected[0] - start > HORIZON - 86400
        return
    assert got == expected[: len(got)]
    if len(got) < 3 and len(expected) > len(got):
        assert expected[len(got)] - got[-1] > HORIZON - 86400


@PROPERTY_SETTINGS
@given(expr=expressions(), zone=st.sampled_from(ZONES), after=instants, fold=st.integers(0, 1))
def test_fires_are_after_ascending_and_on_matching_minutes_or_a_jump(
    expr: str, zone: str, after: datetime, fold: int
) -> None:
    tz = ZoneInfo(zone)
    aware = after.replace(tzinfo=tz, fold=fold)
    try:
        fires = next_fire_times(expr, zone, aware, 4)
    except CronError:
        return
    seconds = [utc_seconds(f) for f in fires]
    assert seconds[0] > utc_seconds(aware)
    assert all(a < b for a, b in zip(seconds, seconds[1:], strict=False))
    entry = parse(expr)
    for fire in fires:
        assert fire.tzinfo is UTC
        wall = fire.astimezone(tz).replace(tzinfo=None)
        if not entry.matches(wall):
            assert not entry.wildcard and _is_jump_over_a_matching_minute(entry, tz, fire), fire


def _is_jump_over_a_matching_minute(entry, tz: ZoneInfo, fire: datetime) -> bool:
    before = (fire - timedelta(seconds=1)).astimezone(tz).utcoffset()
    after = fire.astimezone(tz).utcoffset()
    assert before is not None and after is not None
    if after <= before:
        return False
    t = utc_seconds(fire)
    lo, hi = t + int(before.total_seconds()), t + int(after.total_seconds())
    return any(entry.matches(NAIVE_EPOCH + timedelta(seconds=w)) for w in range(lo - lo % 60, hi + 1, 60))


@PROPERTY_SETTINGS
@given(expr=expressions(), zone=st.sampled_from(ZONES), after=instants)
def test_asking_for_several_equals_asking_one_at_a_time(expr: str, zone: str, after: datetime) -> None:
    aware = after.replace(tzinfo=ZoneInfo(zone))
    try:
        several = next_fire_times(expr, zone, aware, 3)
    except CronError:
        return
    one_by_one = []
    current = aware
    for _ in several:
        current = next_fire_times(expr, zone, current, 1)[0]
        one_by_one.append(current)
    assert one_by_one == several
