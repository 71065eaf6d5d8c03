"""Cron day extensions of SPEC §20 / issue 31 (``L``, ``L-n``, ``LW``, ``nW``, ``dL``, ``d#n``) through
the public entry ``next_fire_times``, written from the contract's semantics, not from the engine.

Expected lists are written out by hand as local wall times (``_at``); a sweep over every item
against a small calendar-module model of the contract (tests/unit/calendar_model.py) backs them up. DST cases
assert UTC instants: the extensions only decide which days match, times of day follow SPEC §3.
"""

from __future__ import annotations

import calendar
from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest

from app.schedules import timing
from app.schedules.cron.describe import describe
from app.schedules.cron.evaluate import next_fire_times
from app.schedules.cron.fields import CronError, parse_cron
from app.schedules.spec import CronSchedule, ScheduleError
from tests.unit.calendar_model import day_of


def _walls(expr: str, tz: str, after: str, count: int) -> list[str]:
    """The next ``count`` fires after the local wall time ``after``, as local "YYYY-MM-DD HH:MM"."""
    zone = ZoneInfo(tz)
    start = datetime.fromisoformat(after).replace(tzinfo=zone)
    return [f.astimezone(zone).strftime("%Y-%m-%d %H:%M") for f in next_fire_times(expr, tz, start, count)]


def _at(clock: str, dates: str) -> list[str]:
    """``_at("09:00", "2027-01-31 02-28 2028-01-31")``: a token without a year keeps the last year."""
    out, year = [], ""
    for token in dates.split():
        if token.count("-") == 2:
            year, token = token[:4], token[5:]
        out.append(f"{year}-{token} {clock}")
    return out


def _utc(expr: str, tz: str, after: str, count: int) -> list[str]:
    found = next_fire_times(expr, tz, datetime.fromisoformat(after.replace("Z", "+00:00")), count)
    return [f.strftime("%Y-%m-%dT%H:%MZ") for f in found]


NEW_YEAR = "2026-12-31 12:00"
MONTH_ENDS = "2027-01-31 02-28 03-31 04-30 05-31 06-30 07-31 08-31 09-30 10-31 11-30 12-31 " \
             "2028-01-31 02-29 03-31 04-30 05-31 06-30 07-31 08-31 09-30 10-31 11-30 12-31"

VECTORS = [
    # -- day-of-month: L, L-n -----------------------------------------------------------------------
    ("0 9 L * *", "Europe/Berlin", NEW_YEAR, _at("09:00", MONTH_ENDS)),  # Feb 28, then Feb 29 in 2028
    ("0 9 L-0 * *", "Europe/Berlin", NEW_YEAR, _at("09:00", "2027-01-31 02-28 03-31")),
    ("30 8 L-1 * *", "UTC", NEW_YEAR, _at("08:30", "2027-01-30 02-27 03-30 04-29 05-30 06-29 07-30 08-30 "
                                                   "09-29 10-30 11-29 12-30 2028-01-30 02-28")),
    ("0 9 L-2 * *", "Europe/Berlin", "2028-01-15 00:00", _at("09:00", "2028-01-29 02-27 03-29")),
    # L-30 is only ever the 1st of a 31-day month
    ("0 9 L-30 * *", "UTC", NEW_YEAR, _at("09:00", "2027-01-01 03-01 05-01 07-01 08-01 10-01 12-01 2028-01-01")),
    ("0 9 L-28 2 *", "UTC", NEW_YEAR, _at("09:00", "2028-02-01 2032-02-01")),  # Feb 1 of leap years only
    # -- LW: the last day, or the Friday before it (months ending on Saturday or Sunday) ------------
    # (31 Dec 2026 is a Thursday, the last weekday of its month)
    ("0 18 LW * *", "America/New_York", NEW_YEAR, _at("18:00", "2026-12-31 2027-01-29 02-26 03-31 04-30 05-31 06-30 "
                                                                 "07-30 08-31 09-30 10-29 11-30 12-31 2028-01-31 "
                                                                 "02-29 03-31 04-28 05-31 06-30 07-31 08-31 09-29 "
                                                                 "10-31 11-30 12-29")),
    # -- nW: the nearest weekday in the same month ---------------------------------------------------
    # 1 May 2027 and 1 Jan 2028 are Saturdays: Monday the 3rd, never the last day of the month before;
    # 1 Aug 2027 is a Sunday: Monday the 2nd
    ("0 9 1W * *", "UTC", NEW_YEAR, _at("09:00", "2027-01-01 02-01 03-01 04-01 05-03 06-01 07-01 08-02 09-01 "
                                                  "10-01 11-01 12-01 2028-01-03")),
    # 31 Jan and 31 Oct 2027 are Sundays and the month's last day: Friday the 29th; 31 Jul a Saturday
    ("0 9 31W * *", "UTC", NEW_YEAR, _at("09:00", "2027-01-29 03-31 05-31 07-30 08-31 10-29 12-31")),
    # 15 May 2027 is a Saturday (Friday 14th), 15 Aug 2027 a Sunday (Monday 16th)
    ("0 9 15W * *", "UTC", NEW_YEAR, _at("09:00", "2027-01-15 02-15 03-15 04-15 05-14 06-15 07-15 08-16 09-15 "
                                                   "10-15 11-15 12-15")),
    # February has no 30th: no match; 30 May 2027 is a Sunday but not the last day: Monday the 31st
    ("0 9 30W * *", "UTC", NEW_YEAR, _at("09:00", "2027-01-29 03-30 04-30 05-31 06-30 07-30")),
    # 30 Apr 2028: Sunday and last day, Friday 28th; 30 Jul 2028: Sunday, Monday 31st; 30 Sep: Saturday
    ("0 9 30W * *", "UTC", "2028-03-31 12:00", _at("09:00", "2028-04-28 05-30 06-30 07-31 08-30 09-29")),
    # 29 Feb 2032 is a Sunday and the last day of the month: Friday the 27th
    ("0 9 29W 2 *", "UTC", NEW_YEAR, _at("09:00", "2028-02-29 2032-02-27 2036-02-29")),
    # starting just before or after a shifted day: the shift never leaves its month
    ("0 9 1W * *", "UTC", "2027-04-29 12:00", _at("09:00", "2027-05-03 06-01")),
    ("0 9 15W * *", "UTC", "2027-05-14 09:00", _at("09:00", "2027-06-15 07-15")),
    ("0 9 31W * *", "UTC", "2027-01-29 10:00", _at("09:00", "2027-03-31 05-31")),
    ("0 9 LW * *", "UTC", "2027-07-30 09:00", _at("09:00", "2027-08-31 09-30")),
    # -- dL: the last such weekday of the month -------------------------------------------------------
    ("0 9 * * 5L", "Europe/Berlin", NEW_YEAR, _at("09:00", "2027-01-29 02-26 03-26 04-30 05-28 06-25 07-30 "
                                                           "08-27 09-24 10-29 11-26 12-31")),
    ("0 9 * * friL", "Europe/Berlin", NEW_YEAR, _at("09:00", "2027-01-29 02-26 03-26")),
    ("0 9 * * 0L", "UTC", NEW_YEAR, _at("09:00", "2027-01-31 02-28 03-28 04-25 05-30 06-27 07-25 08-29 09-26 "
                                                  "10-31 11-28 12-26")),
    ("0 9 * * 7L", "UTC", NEW_YEAR, _at("09:00", "2027-01-31 02-28 03-28")),
    ("0 9 * * 0L", "UTC", "2027-10-24 10:00", _at("09:00", "2027-10-31 11-28")),
    ("0 9 * * 5L", "UTC", "2027-12-31 09:00", _at("09:00", "2028-01-28 02-25")),
    # -- d#n --------------------------------------------------------------------------------------------
    # five Mondays: March, May, August, November 2027; January, May, July, October 2028
    ("0 9 * * 1#5", "UTC", NEW_YEAR, _at("09:00", "2027-03-29 05-31 08-30 11-29 2028-01-31 05-29 07-31 10-30")),
    ("0 9 * * mon#5", "UTC", NEW_YEAR, _at("09:00", "2027-03-29 05-31")),
    ("0 9 * * 3#3", "Australia/Lord_Howe", NEW_YEAR, _at("09:00", "2027-01-20 02-17 03-17")),
    ("0 9 * * 6#4", "UTC", NEW_YEAR, _at("09:00", "2027-01-23 02-27 03-27")),
    # -- lists mixing extended and classic items ----------------------------------------------------
    ("0 9 1,15,L * *", "UTC", "2027-01-01 00:00", _at("09:00", "2027-01-01 01-15 01-31 02-01 02-15 02-28 03-01")),
    ("0 9 1,15,L * *", "UTC", "2028-02-01 12:00", _at("09:00", "2028-02-15 02-29 03-01")),
    ("0 9 * * 1#1,5L", "UTC", NEW_YEAR, _at("09:00", "2027-01-04 01-29 02-01 02-26 03-01 03-26 04-05 04-30")),
    # -- the day rule: OR when neither field starts with '*', else AND --------------------------------
    # last day OR last Friday: 30 Apr 2027 is both, and fires once
    ("0 9 L * 5L", "UTC", NEW_YEAR, _at("09:00", "2027-01-29 01-31 02-26 02-28 03-26 03-31 04-30 05-28 05-31")),
    ("0 9 L * 1", "UTC", NEW_YEAR, _at("09:00", "2027-01-04 01-11 01-18 01-25 01-31 02-01")),  # or any Monday
    # '*/2' starts with '*': a last Friday that is an odd day
    ("0 9 */2 * 5L", "UTC", NEW_YEAR, _at("09:00", "2027-01-29 06-25 08-27 10-29 12-31")),
    # '*/2' in day-of-week: a last day that is a Sunday, Tuesday, Thursday or Saturday
    ("0 9 L * */2", "UTC", NEW_YEAR, _at("09:00", "2027-01-31 02-28 07-31 08-31 09-30 10-31 11-30")),
    # -- with a month field -----------------------------------------------------------------------------
    ("0 9 L 2 *", "UTC", NEW_YEAR, _at("09:00", "2027-02-28 2028-02-29 2029-02-28 2030-02-28 2031-02-28 "
                                                 "2032-02-29")),
    ("0 9 LW 1,7 *", "UTC", NEW_YEAR, _at("09:00", "2027-01-29 07-30 2028-01-31 07-31")),
]


@pytest.mark.parametrize(("expr", "tz", "after", "expected"), VECTORS,
                         ids=[f"{v[0]}@{v[1]}>{v[2][:10]}" for v in VECTORS])
def test_extended_days_fire_on_the_contracts_days(expr: str, tz: str, after: str, expected: list[str]) -> None:
    assert _walls(expr, tz, after, len(expected)) == expected


FIRST_OF_2027 = {0: "01-03 02-07 03-07", 1: "01-04 02-01 03-01", 2: "01-05 02-02 03-02", 3: "01-06 02-03 03-03",
                 4: "01-07 02-04 03-04", 5: "01-01 02-05 03-05", 6: "01-02 02-06 03-06", 7: "01-03 02-07 03-07"}


@pytest.mark.parametrize("dow", range(8))
def test_the_first_of_every_weekday_is_an_and_with_a_star_day_of_month(dow: int) -> None:
    expected = _at("09:00", "2027-" + FIRST_OF_2027[dow])
    assert _walls(f"0 9 * * {dow}#1", "UTC", NEW_YEAR, 3) == expected
    names = ["sun", "mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    assert _walls(f"0 9 * * {names[dow]}#1", "UTC", NEW_YEAR, 3) == expected


def test_a_year_view_of_the_fifth_monday() -> None:
    months: dict[int, list[int]] = {}
    for fire in next_fire_times("0 9 * * 1#5", "UTC", datetime(2027, 1, 1, tzinfo=UTC), 38):
        months.setdefault(fire.year, []).append(fire.month)
    assert {y: months[y] for y in (2027, 2028, 2029, 2030)} == {
        2027: [3, 5, 8, 11], 2028: [1, 5, 7, 10], 2029: [1, 4, 7, 10, 12], 2030: [4, 7, 9, 12]}
    five_mondays = {y: [m for m in range(1, 13) if sum(1 for week in calendar.monthcalendar(y, m) if week[0]) == 5]
                    for y in range(2027, 2036)}
    assert months == five_mondays  # 38 fires: every month of 2027-2035 that has five Mondays, no other


# -- a calendar-module model of the contract, and a sweep of every item ----------------------------


def _model_days(item: str, years: range) -> list[str]:
    months = [(y, m) for y in years for m in range(1, 13)]
    return [date(y, m, day).isoformat() for y, m in months if (day := day_of(item, y, m)) is not None]


SWEEP = [*(f"L-{n}" for n in range(31)), "L", "LW", *(f"{n}W" for n in range(1, 32)),
         *(f"{d}L" for d in range(8)), *(f"{d}#{n}" for d in range(8) for n in range(1, 6))]


@pytest.mark.parametrize("item", SWEEP)
def test_every_item_over_three_years_matches_the_calendar_model(item: str) -> None:
    expected = _model_days(item, range(2027, 2030))
    expr = f"0 12 * * {item}" if item[0].isdigit() and item[-1] != "W" else f"0 12 {item} * *"
    fires = next_fire_times(expr, "Europe/Berlin", datetime(2027, 1, 1, tzinfo=UTC), len(expected) + 1)
    local = [f.astimezone(ZoneInfo("Europe/Berlin")) for f in fires]
    assert all(f.hour == 12 and f.minute == 0 for f in local)
    assert [f.date().isoformat() for f in local[:-1]] == expected
    assert local[-1].year == 2030


# -- DST days: which day is the extension's; the time of day is SPEC §3's ----------------------------

DST_VECTORS = [
    # New York springs forward on the second Sunday of March (14 Mar 2027, 12 Mar 2028) at 02:00
    ("30 2 * * 0#2", "America/New_York", "2027-03-01T00:00Z", ["2027-03-14T07:00Z", "2027-04-11T06:30Z"]),
    ("0 2 * 3 0#2", "America/New_York", "2027-01-01T00:00Z", ["2027-03-14T07:00Z", "2028-03-12T07:00Z"]),
    # wildcard: the skipped hour has no occurrence, the next second Sunday has both
    ("*/30 2 * * 0#2", "America/New_York", "2027-03-01T00:00Z",
     ["2027-04-11T06:00Z", "2027-04-11T06:30Z", "2027-05-09T06:00Z", "2027-05-09T06:30Z"]),
    # and falls back on the first Sunday of November (7 Nov 2027): 01:00-02:00 twice
    ("*/30 1 * * 0#1", "America/New_York", "2027-11-01T00:00Z",
     ["2027-11-07T05:00Z", "2027-11-07T05:30Z", "2027-11-07T06:00Z", "2027-11-07T06:30Z",
      "2027-12-05T06:00Z", "2027-12-05T06:30Z"]),
    ("30 1 * * 0#1", "America/New_York", "2027-11-01T00:00Z", ["2027-11-07T05:30Z", "2027-12-05T06:30Z"]),
    # Berlin: the last Sunday of March (28 Mar 2027) skips 02:00-03:00, of October (31 Oct 2027) repeats it
    ("30 2 * * 0L", "Europe/Berlin", "2027-03-01T00:00Z", ["2027-03-28T01:00Z", "2027-04-25T00:30Z"]),
    ("30 2 L * *", "Europe/Berlin", "2027-10-01T00:00Z", ["2027-10-31T00:30Z", "2027-11-30T01:30Z"]),
    ("*/30 2 L * *", "Europe/Berlin", "2027-10-01T00:00Z",
     ["2027-10-31T00:00Z", "2027-10-31T00:30Z", "2027-10-31T01:00Z", "2027-10-31T01:30Z",
      "2027-11-30T01:00Z", "2027-11-30T01:30Z"]),
    ("0 2 * * 0#5", "Europe/Berlin", "2027-10-01T00:00Z", ["2027-10-31T00:00Z", "2028-01-30T01:00Z"]),
    # Lord Howe: +10:30 / +11:00. 3 Oct 2027 (first Sunday) jumps 02:00 -> 02:30 at 15:30Z on the 2nd;
    # 02:15 fires at the jump, and 02:30 (the jump instant itself) is the same single fire
    ("15,30 2 * * 0#1", "Australia/Lord_Howe", "2027-10-01T00:00Z",
     ["2027-10-02T15:30Z", "2027-11-06T15:15Z", "2027-11-06T15:30Z"]),
    ("*/15 2 * * 0#1", "Australia/Lord_Howe", "2027-10-01T00:00Z",
     ["2027-10-02T15:30Z", "2027-10-02T15:45Z", "2027-11-06T15:00Z", "2027-11-06T15:15Z"]),
    # 4 Apr 2027 (first Sunday) goes back 02:00 -> 01:30 at 15:00Z on the 3rd: 01:30-02:00 twice
    ("*/15 1 * * 0#1", "Australia/Lord_Howe", "2027-04-01T00:00Z",
     ["2027-04-03T14:00Z", "2027-04-03T14:15Z", "2027-04-03T14:30Z", "2027-04-03T14:45Z",
      "2027-04-03T15:00Z", "2027-04-03T15:15Z", "2027-05-01T14:30Z"]),
    ("45 1 * * 0#1", "Australia/Lord_Howe", "2027-04-01T00:00Z", ["2027-04-03T14:45Z", "2027-05-01T15:15Z"]),
]


@pytest.mark.parametrize(("expr", "tz", "after", "expected"), DST_VECTORS,
                         ids=[f"{v[0]}@{v[1]}>{v[2][:10]}" for v in DST_VECTORS])
def test_extended_days_on_clock_change_days(expr: str, tz: str, after: str, expected: list[str]) -> None:
    assert _utc(expr, tz, after, len(expected)) == expected


@pytest.mark.parametrize(("expr", "tz"), [
    ("*/30 2 * 3 0L", "Europe/Berlin"),  # the last Sunday of March is always the one without 02:xx
    ("* 2 * 3 0#2", "America/New_York"),  # so is the second Sunday of March in New York
    ("0 9 30W 2 *", "UTC"),  # February has no 30th
    ("0 9 L-30 2 *", "UTC"),
    ("0 9 L-30 4,6,9,11 *", "UTC"),
])
def test_an_extension_that_never_fires_is_refused(expr: str, tz: str) -> None:
    with pytest.raises(CronError, match="never"):
        next_fire_times(expr, tz, datetime(2027, 1, 1, tzinfo=UTC))


# -- the minimum interval sees the extended days (SPEC §3: exactly, from the field sets, DST included) -------

DAY = 86400
MIN_GAPS = [
    ("0 0 L * *", "UTC", 28 * DAY),  # 31 Jan -> 28 Feb
    ("0 0 1W * *", "UTC", 28 * DAY),  # 1 Feb -> 1 Mar of a common year (or the 2nd/3rd of both)
    ("0 0 LW * *", "UTC", 28 * DAY),
    ("0 0 * * 1#5", "UTC", 63 * DAY),  # 29 Mar -> 31 May 2027
    ("0 0,23 L,1 * *", "UTC", 3600),  # 23:00 on the last day, then 00:00 on the 1st
    ("0 9 L-1,L * *", "UTC", DAY),
    ("0 9 L-1,L * *", "Europe/Berlin", DAY - 3600),  # 31 Mar 2030 is the last day and a 23-hour Sunday
    ("30 2 * * 0#2", "America/New_York", 28 * DAY - 1800),  # 14 Feb 02:30 EST -> 14 Mar 2027 at the jump
]


@pytest.mark.parametrize(("expr", "tz", "gap"), MIN_GAPS, ids=[f"{m[0]}@{m[1]}" for m in MIN_GAPS])
def test_the_minimum_interval_is_the_closest_pair_of_extended_days(expr: str, tz: str, gap: int) -> None:
    schedule, now = CronSchedule(expr, tz), datetime(2027, 1, 1, tzinfo=UTC)
    timing.validate_min_interval(schedule, gap, now=now)
    with pytest.raises(ScheduleError, match=f"can fire {gap} s apart"):
        timing.validate_min_interval(schedule, gap + 1, now=now)


# -- refusals --------------------------------------------------------------------------------------

REFUSALS = [
    ("L * * * *", "minute", "L"),
    ("15W 9 * * *", "minute", "15W"),
    ("0 L * * *", "hour", "L"),
    ("0 1#1 * * *", "hour", "1#1"),
    ("0 0 1 L *", "month", "L"),
    ("0 0 1 2W *", "month", "2W"),
    ("0 0 * 1#1 *", "month", "1#1"),
    ("0 0 W * *", "day-of-month", "W"),
    ("0 0 L-31 * *", "day-of-month", "L-31"),
    ("0 0 1,L-31 * *", "day-of-month", "L-31"),
    ("0 0 0W * *", "day-of-month", "0W"),
    ("0 0 32W * *", "day-of-month", "32W"),
    ("0 0 L/2 * *", "day-of-month", "L/2"),
    ("0 0 15W/2 * *", "day-of-month", "15W/2"),
    ("0 0 1-15W * *", "day-of-month", "1-15W"),
    ("0 0 1#1 * *", "day-of-month", "1#1"),  # '#' is a day-of-week item
    ("0 0 5L * *", "day-of-month", "5L"),  # 'dL' is a day-of-week item
    ("0 0 * * 1#0", "day-of-week", "1#0"),
    ("0 0 * * 1#6", "day-of-week", "1#6"),
    ("0 0 * * 8#1", "day-of-week", "8#1"),
    ("0 0 * * 8L", "day-of-week", "8L"),
    ("0 0 * * 1-5L", "day-of-week", "1-5L"),
    ("0 0 * * 1#1-3", "day-of-week", "1#1-3"),
    ("0 0 * * 5L/2", "day-of-week", "5L/2"),
    ("0 0 * * 1W", "day-of-week", "1W"),  # 'W' is a day-of-month item
    ("0 0 * * L", "day-of-week", "5L"),  # a lone L: "write 5L for the last Friday"
    ("0 0 * * 1,L", "day-of-week", "5L"),
]


@pytest.mark.parametrize(("expr", "field", "item"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_misplaced_or_malformed_extensions_are_refused_naming_field_and_item(expr: str, field: str,
                                                                             item: str) -> None:
    with pytest.raises(CronError) as caught:
        parse_cron(expr)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: ")
    assert item in str(caught.value)
    with pytest.raises(CronError):
        next_fire_times(expr, "UTC", datetime(2027, 1, 1, tzinfo=UTC))


@pytest.mark.parametrize("expr", ["0 9 L-30 * *", "0 9 L-0 * *", "0 9 1W * *", "0 9 31W * *", "0 9 * * 7#5",
                                  "0 9 * * 0L,7L", "0 9 * * fri#2", "0 9 L,LW * *", "0 9 1-5,L * mon-fri",
                                  "0 9 1,15,L * *", "0 9 * * 1#1,5L", "0 9 LW * 1#1,3"])
def test_the_contracts_items_are_accepted(expr: str) -> None:
    parse_cron(expr)
    assert next_fire_times(expr, "UTC", datetime(2027, 1, 1, tzinfo=UTC), 1)


# -- describe() -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("expr", "words"), [
    ("0 9 L * *", ["09:00", "last"]),
    ("0 9 L-1 * *", ["last", ("2nd", "second")]),
    ("0 9 L-2 * *", ["last"]),
    ("0 9 LW * *", ["last", "weekday"]),
    ("0 9 15W * *", ["weekday", "15"]),
    ("0 9 * * 5L", ["last", "friday"]),
    ("0 9 * * 1#1", ["first", "monday"]),
    ("0 9 * * 2#2", [("second", "2nd"), "tuesday"]),
    ("0 9 L * 5L", ["last", "friday"]),
])
def test_describe_names_the_extended_days(expr: str, words: list) -> None:
    text = describe(expr)
    assert text and text[0].isupper()
    for word in words:
        alternatives = word if isinstance(word, tuple) else (word,)
        assert any(w in text.lower() for w in alternatives), (expr, text)


@pytest.mark.parametrize("expr", ["0 9 * 2 2#5", "0 9 * 2 0#5", "0 9 * 2 fri#5"])
def test_calendar_items_that_go_decades_without_a_day_are_refused_when_parsed(expr: str) -> None:
    # a fifth Tuesday of February: 2028, then 2056 — past its first fire the scheduler would find no next one
    with pytest.raises(CronError) as caught:
        parse_cron(expr)
    assert caught.value.field == "day-of-week" and "years apart" in caught.value.message


@pytest.mark.parametrize("expr", ["0 9 29W 2 *", "0 9 L-28 2 *", "0 9 * 2,3 1#5", "0 9 * * 1#5"])
def test_rare_but_regular_calendar_items_are_accepted(expr: str) -> None:
    assert parse_cron(expr).text == expr  # leap days at most 8 years apart, as classic 29 2 is
