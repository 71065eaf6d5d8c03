"""SPEC §20 exclusions in the plan: excluded local days are not occurrences — for the next fire, the
lists, the counts and the n-th — on ordinary days and on days the clock changes, in three zones."""

from __future__ import annotations

import datetime as dt
from datetime import UTC

import pytest

from app.core.errors import InvalidInput
from app.schedules import exclusions
from app.schedules.plan import Plan
from app.schedules.spec import parse_schedule


def plan(cron: str, zone: str, dates: list[str] = (), holidays: object = None) -> Plan:  # type: ignore[assignment]
    schedule = parse_schedule({"kind": "cron", "cron": cron, "timezone": zone})
    return Plan(schedule, exclusions=exclusions.check(list(dates), holidays))


def local(instants: list[dt.datetime], zone: str) -> list[str]:
    from zoneinfo import ZoneInfo
    return [i.astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M %Z") for i in instants]


def utc(*args: int) -> dt.datetime:
    return dt.datetime(*args, tzinfo=UTC)


# (cron, zone, excluded dates, after (UTC), expected next three fires, local)
DST_DAYS = [
    # Berlin springs forward on 2026-03-29: 02:30 does not exist, a fixed-time job fires at the jump (03:00 CEST)
    ("30 2 * * *", "Europe/Berlin", [], utc(2026, 3, 28, 12), [
        "2026-03-29 03:00 CEST", "2026-03-30 02:30 CEST", "2026-03-31 02:30 CEST"]),
    ("30 2 * * *", "Europe/Berlin", ["2026-03-29"], utc(2026, 3, 28, 12), [
        "2026-03-30 02:30 CEST", "2026-03-31 02:30 CEST", "2026-04-01 02:30 CEST"]),
    # the last Sunday of March is that day: `0L` and an exclusion of it
    ("30 2 * * 0L", "Europe/Berlin", ["2026-03-29"], utc(2026, 3, 1), [
        "2026-04-26 02:30 CEST", "2026-05-31 02:30 CEST", "2026-06-28 02:30 CEST"]),
    # New York falls back on 2026-11-01: 01:30 happens twice; a fixed-time job fires in the first pass only
    ("30 1 * * *", "America/New_York", [], utc(2026, 10, 31, 12), [
        "2026-11-01 01:30 EDT", "2026-11-02 01:30 EST", "2026-11-03 01:30 EST"]),
    ("30 1 * * *", "America/New_York", ["2026-11-01"], utc(2026, 10, 31, 12), [
        "2026-11-02 01:30 EST", "2026-11-03 01:30 EST", "2026-11-04 01:30 EST"]),
    # a wildcard job walks the repeated hour twice; excluded, none of the four fires
    ("*/30 1 * * 0#1", "America/New_York", ["2026-11-01"], utc(2026, 10, 31, 12), [
        "2026-12-06 01:00 EST", "2026-12-06 01:30 EST", "2027-01-03 01:00 EST"]),
    # Lord Howe Island moves its clocks by 30 minutes: back at 02:00 on 2026-04-05 (01:30-02:00 twice)
    ("45 1 * * *", "Australia/Lord_Howe", [], utc(2026, 4, 4), [
        "2026-04-05 01:45 +11", "2026-04-06 01:45 +1030", "2026-04-07 01:45 +1030"]),
    ("45 1 * * *", "Australia/Lord_Howe", ["2026-04-05", "2026-04-06"], utc(2026, 4, 4), [
        "2026-04-07 01:45 +1030", "2026-04-08 01:45 +1030", "2026-04-09 01:45 +1030"]),
    # ... and forward at 02:00 on 2026-10-04 (02:00-02:30 skipped): 02:15 fires at the jump, 02:30
    ("15 2 * * *", "Australia/Lord_Howe", [], utc(2026, 10, 3), [
        "2026-10-04 02:30 +11", "2026-10-05 02:15 +11", "2026-10-06 02:15 +11"]),
    ("15 2 * * *", "Australia/Lord_Howe", ["2026-10-04"], utc(2026, 10, 3), [
        "2026-10-05 02:15 +11", "2026-10-06 02:15 +11", "2026-10-07 02:15 +11"]),
]


@pytest.mark.parametrize(("cron", "zone", "dates", "after", "expected"), DST_DAYS)
def test_exclusions_on_days_the_clock_changes(cron: str, zone: str, dates: list[str], after: dt.datetime,
                                              expected: list[str]) -> None:
    p = plan(cron, zone, dates)
    assert local(p.upcoming(after, 3), zone) == expected
    assert p.next_after(after) == p.upcoming(after, 3)[0]
    assert p.nth_after(after, 3) == p.upcoming(after, 3)[2]


@pytest.mark.parametrize(("cron", "zone", "dates"), [
    ("*/30 1 * * *", "America/New_York", ["2026-11-01", "2026-11-03"]),
    ("*/15 * * * *", "Europe/Berlin", ["2026-03-29", "2026-10-25"]),
    ("0 9 * * 1-5", "Europe/Berlin", ["2026-03-30"]),
    ("*/10 1,2 * * *", "Australia/Lord_Howe", ["2026-04-05", "2026-10-04"]),
])
def test_the_count_leaves_out_exactly_what_the_list_leaves_out(cron: str, zone: str, dates: list[str]) -> None:
    p = plan(cron, zone, dates)
    for start in (utc(2026, 3, 27), utc(2026, 4, 3), utc(2026, 10, 23), utc(2026, 10, 30)):
        until = start + dt.timedelta(days=7)
        listed = [x for x in p.upcoming(start, 2000) if x <= until]
        assert p.count(start, until) == len(listed)
        excluded = p.excluded_between(start, until, limit=2000)
        bare = Plan(p.schedule)
        assert p.count(start, until) + len(excluded) == bare.count(start, until)
        assert {at for at, _ in excluded}.isdisjoint(listed)


def test_holidays_of_two_countries_and_a_subdivision() -> None:
    us = plan("0 9 * * 1", "America/New_York", holidays={"country": "US", "subdivision": None})
    after = utc(2026, 1, 10)
    assert local(us.upcoming(after, 3), "America/New_York") == [
        "2026-01-12 09:00 EST", "2026-01-26 09:00 EST", "2026-02-02 09:00 EST"]
    assert [(local([at], "America/New_York")[0], why) for at, why in us.excluded_between(after, utc(2026, 2, 3))] == [
        ("2026-01-19 09:00 EST", "Martin Luther King Jr. Day")]
    bavaria = plan("0 9 * * 1-5", "Europe/Berlin", holidays="DE-BY")
    germany = plan("0 9 * * 1-5", "Europe/Berlin", holidays="DE")
    start = utc(2026, 1, 5, 12)
    assert local(bavaria.upcoming(start, 2), "Europe/Berlin") == ["2026-01-07 09:00 CET", "2026-01-08 09:00 CET"]
    assert local(germany.upcoming(start, 2), "Europe/Berlin") == ["2026-01-06 09:00 CET", "2026-01-07 09:00 CET"]
    assert bavaria.excluded_reason(utc(2026, 1, 6, 8)) == "Epiphany"
    # both kinds at once: a date of one's own and a holiday
    both = plan("0 9 * * *", "Europe/Berlin", ["2026-12-24"], {"country": "de"})
    assert [why for _, why in both.excluded_between(utc(2026, 12, 23), utc(2026, 12, 27))] == [
        "excluded date", "Christmas Day", "Second Day of Christmas"]


def test_an_excluded_last_day_moves_to_the_next_month() -> None:
    p = plan("0 18 L * *", "UTC", ["2027-01-31"])
    assert [x.date().isoformat() for x in p.upcoming(utc(2027, 1, 15), 3)] == ["2027-02-28", "2027-03-31",
                                                                              "2027-04-30"]


BAD = [
    (("2026-02-30",), None, "exclude_dates", "'2026-02-30' is not a date"),
    (("26-01-01",), None, "exclude_dates", "not a date written YYYY-MM-DD"),
    ((1,), None, "exclude_dates", "not a date"),
    ("2026-01-01", None, "exclude_dates", "must be a list"),
    ([f"2026-01-{d:02d}" for d in range(1, 32)] * 12, None, "exclude_dates", "the limit is 366"),
    ((), {"country": "XX"}, "holidays.country", "'XX' is not a country code"),
    ((), {"country": 7}, "holidays.country", "not a country code"),
    ((), {"country": "US", "subdivision": "ZZ"}, "holidays.subdivision", "'ZZ' is not a subdivision of US"),
    ((), {"country": "US", "region": "CA"}, "holidays", "must be null or"),
    ((), ["US"], "holidays", "must be null or"),
]


@pytest.mark.parametrize(("dates", "holidays", "field", "words"), BAD)
def test_bad_exclusions_name_their_field(dates: object, holidays: object, field: str, words: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        exclusions.check(list(dates) if isinstance(dates, tuple) else dates, holidays)
    assert caught.value.field == field and words in str(caught.value)


def test_only_cron_schedules_take_exclusions_and_the_stored_form_round_trips() -> None:
    with pytest.raises(InvalidInput, match="^exclude_dates: only a cron schedule"):
        exclusions.check(["2026-01-01"], None, cron=False)
    with pytest.raises(InvalidInput, match="^holidays: only a cron schedule"):
        exclusions.check([], "US", cron=False)
    assert not exclusions.check(None, None, cron=False)
    made = exclusions.check(["2026-12-31", "2026-01-01", "2026-01-01"], {"country": "de", "subdivision": "by"})
    assert made.as_json() == {"exclude_dates": ["2026-01-01", "2026-12-31"],
                              "holidays": {"country": "DE", "subdivision": "BY"}}
    assert exclusions.stored(made.dates_json(), made.holidays_json()) == made


def test_week_dates_and_country_aliases_are_read_strictly() -> None:
    with pytest.raises(InvalidInput, match="'2026-W01-1' is not a date written YYYY-MM-DD"):
        exclusions.check(["2026-W01-1"], None)  # an ISO week date Python would read as 2025-12-29
    assert exclusions.check([], "UK").as_json()["holidays"] == {"country": "GB", "subdivision": None}
    assert exclusions.check([], {"country": "usa"}).as_json()["holidays"] == {"country": "US", "subdivision": None}
