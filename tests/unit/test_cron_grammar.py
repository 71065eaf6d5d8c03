"""Grammar, errors, descriptions and plain (DST-free) semantics of app.schedules.cron.evaluate."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone

import pytest

from app.schedules.cron.describe import describe
from app.schedules.cron.evaluate import next_fire_times
from app.schedules.cron.fields import CronError, parse_cron


def _fires(expr: str, after: str, count: int, tz: str = "UTC") -> list[str]:
    found = next_fire_times(expr, tz, datetime.fromisoformat(after), count)
    return [f.isoformat().replace("+00:00", "Z") for f in found]


@pytest.mark.parametrize(
    ("expr", "field", "values"),
    [
        ("*/15 * * * *", "minute", (0, 15, 30, 45)),
        ("05 09 * * *", "hour", (9,)),
        ("1-31/10 * * * *", "minute", (1, 11, 21, 31)),
        ("0 0 1-31/10 * *", "day_of_month", (1, 11, 21, 31)),
        ("0 0 * * 7", "day_of_week", (0,)),
        ("0 0 * * 0,7", "day_of_week", (0,)),
        ("0 0 * * 5-7", "day_of_week", (0, 5, 6)),
        ("0 0 * * */7", "day_of_week", (0,)),
        ("0 0 * * MON-fri", "day_of_week", (1, 2, 3, 4, 5)),
        ("0 0 * jan-Mar,dec *", "month", (1, 2, 3, 12)),
        ("0 0 * */4 *", "month", (1, 5, 9)),
        ("\t0  9 * *\t1-5 ", "day_of_week", (1, 2, 3, 4, 5)),
        ("@hourly", "hour", tuple(range(24))),
        ("@weekly", "day_of_week", (0,)),
        ("@MONTHLY", "day_of_month", (1,)),
        ("@annually", "month", (1,)),
    ],
    ids=lambda v: repr(v) if isinstance(v, str) and " " in v or str(v).startswith("@") else "",
)
def test_fields_expand_like_vixie_cron(expr: str, field: str, values: tuple[int, ...]) -> None:
    assert getattr(parse_cron(expr), field).values == values


@pytest.mark.parametrize(
    ("expr", "fixed", "days_and"),
    [
        ("0 9 * * *", True, True),
        ("*/5 9 * * *", False, True),
        ("0 * * * *", False, True),
        ("0 */2 * * *", False, True),
        ("@hourly", False, True),
        ("@daily", True, True),
        ("0 0 1,15 * 1", True, False),
        ("0 0 */2 * 1", True, True),
        ("0 0 1 * */2", True, True),
    ],
)
def test_fixed_time_and_day_rule_follow_the_leading_star(expr: str, fixed: bool, days_and: bool) -> None:
    spec = parse_cron(expr)
    assert (spec.fixed_time, spec.days_and) == (fixed, days_and)


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("61 * * * *", "minute: 61 is out of range 0-59"),
        ("* 24 * * *", "hour: 24 is out of range 0-23"),
        ("* * 0 * *", "day-of-month: 0 is out of range 1-31"),
        ("* * 32 * *", "day-of-month: 32 is out of range 1-31"),
        ("* * * 13 *", "month: 13 is out of range 1-12"),
        ("* * * * 8", "day-of-week: 8 is out of range 0-7"),
        ("* * * * foo", "day-of-week: 'foo' is not a number or name"),
        ("* * * * monday", "day-of-week: 'monday' is not a number or name"),
        ("* * * foo *", "month: 'foo' is not a number or name"),
        ("mon * * * *", "minute: 'mon' is not a number"),
        ("-1 * * * *", "minute: '-1' is not a number"),
        ("1-2-3 * * * *", "minute: '2-3' is not a number"),
        ("\uff11 * * * *", "minute: '\uff11' is not a number"),
        ("*/0 * * * *", "minute: step 0 in '*/0' is out of range 1-60"),
        ("*/61 * * * *", "minute: step 61 in '*/61' is out of range 1-60"),
        ("* */25 * * *", "hour: step 25 in '*/25' is out of range 1-24"),
        ("*/x * * * *", "minute: step 'x' in '*/x' is not a number"),
        ("5/15 * * * *", "minute: '5/15' has a step without a range (write 5-59/15 or */15)"),
        ("* * * * mon/2", "day-of-week: 'mon/2' has a step without a range"),
        ("5-1 * * * *", "minute: range '5-1' runs backwards"),
        ("* * * * fri-sun", "day-of-week: range 'fri-sun' runs backwards"),
        ("1,,2 * * * *", "minute: empty list item in '1,,2'"),
        ("1, * * * *", "minute: empty list item in '1,'"),
        ("* * * *", "expression: expected 5 fields (minute hour day-of-month month day-of-week), got 4"),
        ("* * * * * *", "expression: expected 5 fields (minute hour day-of-month month day-of-week), got 6"),
        ("", "expression: is empty"),
        ("   ", "expression: is empty"),
        ("@reboot", "expression: unknown macro '@reboot'"),
        ("0 0 31 2 *", "day-of-month: '31' never occurs in month '2', so the expression never fires"),
        ("0 0 30 2 *", "day-of-month: '30' never occurs in month '2'"),
        ("0 0 30,31 feb *", "day-of-month: '30,31' never occurs in month 'feb'"),
        ("0 0 31 4,6,9,11 *", "day-of-month: '31' never occurs in month '4,6,9,11'"),
        ("0 0 31 2 * ", "day-of-month: '31' never occurs"),
    ],
    ids=lambda v: repr(v) if v.count(" ") >= 3 or not v.strip() or v.startswith("@") else "",
)
def test_invalid_expressions_name_the_field_and_value(expr: str, message: str) -> None:
    with pytest.raises(CronError) as caught:
        parse_cron(expr)
    assert str(caught.value).startswith(message)
    assert str(caught.value).split(":")[0] == caught.value.field


def test_a_non_string_expression_is_a_cron_error() -> None:
    with pytest.raises(CronError, match="^expression: must be a string, not int"):
        parse_cron(5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("tz", "message"),
    [
        ("Mars/Olympus_Mons", "timezone: 'Mars/Olympus_Mons' is not a known IANA time zone"),
        ("", "timezone: '' is not an IANA time zone name"),
        ("localtime", "timezone: 'localtime' is not an IANA time zone name"),
        ("right/UTC", "timezone: 'right/UTC' is not an IANA time zone name"),
        ("../etc/passwd", "timezone: '../etc/passwd' is not an IANA time zone name"),
        ("/UTC", "timezone: '/UTC' is not an IANA time zone name"),
        ("America", "timezone: 'America' is not a known IANA time zone"),
    ],
)
def test_unknown_time_zones_are_cron_errors_naming_the_timezone(tz: str, message: str) -> None:
    with pytest.raises(CronError) as caught:
        next_fire_times("0 9 * * *", tz, datetime(2025, 1, 1, tzinfo=UTC))
    assert str(caught.value).startswith(message)
    assert caught.value.field == "timezone"


def test_a_naive_after_is_a_cron_error_naming_after() -> None:
    with pytest.raises(CronError, match="^after: 2025-01-01T00:00:00 has no time zone"):
        next_fire_times("0 9 * * *", "UTC", datetime(2025, 1, 1))


def test_a_negative_count_is_a_cron_error_and_zero_gives_nothing() -> None:
    with pytest.raises(CronError, match="^count: "):
        next_fire_times("0 9 * * *", "UTC", datetime(2025, 1, 1, tzinfo=UTC), -1)
    assert next_fire_times("0 9 * * *", "UTC", datetime(2025, 1, 1, tzinfo=UTC), 0) == []


@pytest.mark.parametrize(
    ("expr", "after"),
    [
        ("0 0 31 2 *", "2025-01-01T00:00:00Z"),
        ("0 0 30 2 *", "2025-01-01T00:00:00Z"),
        ("0 0 31 4,6,9,11 *", "2025-01-01T00:00:00Z"),
        # 1 February falls on a Monday in 2027 and next in 2038: nothing within 8 years of 2027-02-02.
        ("0 0 */31 2 mon", "2027-02-02T00:00:00Z"),
        ("*/5 * */31 2 mon", "2027-02-02T00:00:00Z"),
    ],
)
def test_never_firing_expressions_are_rejected_quickly(expr: str, after: str) -> None:
    started = time.perf_counter()
    with pytest.raises(CronError, match="never"):
        next_fire_times(expr, "Europe/Paris", datetime.fromisoformat(after))
    assert time.perf_counter() - started < 0.05


def test_an_expression_rare_but_within_eight_years_fires() -> None:
    assert _fires("0 0 */31 2 mon", "2021-02-02T00:00:00Z", 1) == ["2027-02-01T00:00:00Z"]
    assert _fires("0 0 29 2 *", "2096-03-01T00:00:00Z", 1) == ["2104-02-29T00:00:00Z"]


@pytest.mark.parametrize(
    ("expr", "after", "expected"),
    [
        ("*/20 * * * *", "2024-01-01T10:05:00Z", ["2024-01-01T10:20", "2024-01-01T10:40", "2024-01-01T11:00"]),
        ("0 9 * * 1-5", "2024-01-05T10:00:00Z", ["2024-01-08T09:00", "2024-01-09T09:00", "2024-01-10T09:00"]),
        # OR: neither day field starts with '*': the 1st, the 15th and every Monday.
        (
            "0 0 1,15 * 1",
            "2024-01-01T00:00:00Z",
            ["2024-01-08T00:00", "2024-01-15T00:00", "2024-01-22T00:00", "2024-01-29T00:00", "2024-02-01T00:00"],
        ),
        # AND: '*/2' starts with '*', so odd days that are Mondays (croniter ORs these).
        (
            "0 0 */2 * 1",
            "2024-01-01T00:00:00Z",
            ["2024-01-15T00:00", "2024-01-29T00:00", "2024-02-05T00:00", "2024-02-19T00:00"],
        ),
        ("0 0 * * 1", "2024-01-01T00:00:00Z", ["2024-01-08T00:00", "2024-01-15T00:00"]),
        ("0 12 * * 7", "2024-01-01T00:00:00Z", ["2024-01-07T12:00", "2024-01-14T12:00"]),
        ("0 0 31 * *", "2024-01-31T00:00:00Z", ["2024-03-31T00:00", "2024-05-31T00:00", "2024-07-31T00:00"]),
        ("0 0 29 2 *", "2024-02-29T00:00:00Z", ["2028-02-29T00:00"]),
        ("@yearly", "2024-06-01T00:00:00Z", ["2025-01-01T00:00"]),
        ("59 23 31 12 *", "2024-12-31T23:59:00Z", ["2025-12-31T23:59"]),
    ],
)
def test_next_fires_in_utc(expr: str, after: str, expected: list[str]) -> None:
    assert _fires(expr, after, len(expected)) == [f"{e}:00Z" for e in expected]


def test_results_are_strictly_after_even_inside_the_same_minute() -> None:
    after = datetime(2024, 1, 1, 9, 0, 0, 1, tzinfo=UTC)
    assert _fires("0 9 * * *", after.isoformat(), 1) == ["2024-01-02T09:00:00Z"]
    assert _fires("0 9 * * *", "2024-01-01T08:59:59.999999+00:00", 1) == ["2024-01-01T09:00:00Z"]


def test_after_may_be_in_any_time_zone() -> None:
    tokyo = timezone(timedelta(hours=9))
    same_instant = datetime(2024, 1, 1, 18, 5, tzinfo=tokyo)  # 09:05 UTC
    assert _fires("*/10 * * * *", same_instant.isoformat(), 2) == ["2024-01-01T09:10:00Z", "2024-01-01T09:20:00Z"]


def test_results_are_utc_datetimes() -> None:
    found = next_fire_times("0 9 * * *", "Asia/Kolkata", datetime(2024, 1, 1, tzinfo=UTC), 1)
    assert found[0].tzinfo is UTC
    assert found[0].isoformat() == "2024-01-01T03:30:00+00:00"


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        ("0 9 * * 1-5", "At 09:00, Monday through Friday"),
        ("*/5 * * * *", "Every 5 minutes"),
        ("30 * * * *", "At minute 30 past every hour"),
        ("30 2 1 * *", "At 02:30 on day 1 of the month"),
        ("* * * * *", "Every minute"),
        ("*/7 * * * *", "Every 7 minutes from minute 0 through 56"),
        ("*/15 1-2 * * *", "Every 15 minutes, between 01:00 and 02:59"),
        ("0 */2 * * *", "At minute 0 past every 2nd hour"),
        ("0,30 9-17 * * *", "At minutes 0 and 30 past hours 9 through 17"),
        ("0 9,17 * * *", "At 09:00 and 17:00"),
        ("0 0 1,15 * 1", "At 00:00 on days 1 and 15 of the month and on Monday"),
        ("0 0 */2 * 1", "At 00:00 on every 2nd day of the month, if it is a Monday"),
        ("0 0 */10 * *", "At 00:00 on days 1, 11, 21 and 31 of the month"),
        ("0 0 * * */2", "At 00:00, on Sunday, Tuesday, Thursday and Saturday"),
        ("0 12 * * 7", "At 12:00, only on Sunday"),
        ("0 0 1 */3 *", "At 00:00 on day 1 of the month, only in January, April, July and October"),
        ("0 6 * jun-aug sat,sun", "At 06:00, on Sunday and Saturday, June through August"),
        ("@hourly", "At minute 0 past every hour"),
        ("@daily", "At 00:00"),
        ("@weekly", "At 00:00, only on Sunday"),
        ("@monthly", "At 00:00 on day 1 of the month"),
        ("@yearly", "At 00:00 on day 1 of the month, only in January"),
    ],
)
def test_describe_reads_as_plain_english(expr: str, text: str) -> None:
    assert describe(expr) == text


def test_describe_rejects_what_parse_rejects() -> None:
    with pytest.raises(CronError, match="^minute: 61"):
        describe("61 * * * *")
