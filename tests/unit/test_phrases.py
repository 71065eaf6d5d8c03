"""The natural-language schedule grammar of SPEC §20 (``app/schedules/phrases.py``), table-driven.

Every phrase docs/CRON.md documents is parsed in two zones at one injected ``now`` and compared
with the API schedule dict written out by hand; every refusal must quote the part of the phrase
it did not understand. The docs' own examples table is checked against the parser and the preview.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.schedules.phrases import parse_phrase
from app.schedules.phrases_reply import read_back
from app.schedules.spec import ScheduleError, parse_schedule

REPO = Path(__file__).resolve().parents[2]
NOW = dt.datetime(2026, 11, 20, 10, 0, tzinfo=dt.UTC)  # a Friday: 11:00 in Berlin, 05:00 in New York
BERLIN, NEW_YORK = "Europe/Berlin", "America/New_York"
ZONES = [BERLIN, NEW_YORK]


def cron(expr: str) -> tuple[str, Any]:
    return ("cron", expr)


def every(seconds: int) -> tuple[str, Any]:
    return ("interval", seconds)


def once(berlin: str, new_york: str | None = None) -> tuple[str, Any]:
    """The UTC instant in each zone (the same in both for a relative phrase)."""
    return ("once", {BERLIN: berlin, NEW_YORK: new_york or berlin})


def expected(meaning: tuple[str, Any], zone: str) -> dict[str, Any]:
    kind, value = meaning
    if kind == "cron":
        return {"kind": "cron", "cron": value, "timezone": zone}
    if kind == "interval":
        return {"kind": "interval", "every_seconds": value}
    return {"kind": "once", "at": value[zone]}


# (phrase, meaning[, exclude_dates[, holidays]])
PHRASES: list[tuple[Any, ...]] = [
    # -- minutes and hours: cron when the spacing divides the hour or the day, else an interval
    ("every minute", cron("* * * * *")),
    ("every 15 minutes", cron("*/15 * * * *")),
    ("every 30 mins", cron("*/30 * * * *")),
    ("every 45 minutes", every(2700)),
    ("every 90 minutes", every(5400)),
    ("every 60 minutes", cron("0 * * * *")),
    ("every hour", cron("0 * * * *")),
    ("hourly", cron("0 * * * *")),
    ("every 1 hour", cron("0 * * * *")),
    ("every 2 hours", cron("0 */2 * * *")),
    ("every 6 hours", cron("0 */6 * * *")),
    ("every 5 hours", every(18000)),
    ("every 24 hours", cron("0 0 * * *")),
    ("every 36 hours", every(129600)),
    ("every other minute", cron("*/2 * * * *")),
    ("every other hour", cron("0 */2 * * *")),
    # -- days and weeks (09:00 when no time is given)
    ("every day", cron("0 9 * * *")),
    ("every day at 9", cron("0 9 * * *")),
    ("every 1 day at 17:45", cron("45 17 * * *")),
    ("daily at 21:30", cron("30 21 * * *")),
    ("daily", cron("0 9 * * *")),
    ("every day at noon", cron("0 12 * * *")),
    ("every day at midnight", cron("0 0 * * *")),
    ("every day at 9pm", cron("0 21 * * *")),
    ("every day at 12am", cron("0 0 * * *")),
    ("every day at 12pm", cron("0 12 * * *")),
    ("every day at 9:30 pm", cron("30 21 * * *")),
    ("every day at 9 a.m.", cron("0 9 * * *")),
    ("every day 7am", cron("0 7 * * *")),
    ("every 3 days", every(259200)),
    ("every other day", every(172800)),
    ("every week on Monday at 9", cron("0 9 * * 1")),
    ("weekly on Friday at 5pm", cron("0 17 * * 5")),
    ("every 2 weeks", every(1209600)),
    ("every other week", every(1209600)),
    ("every weekday at 9:30", cron("30 9 * * 1-5")),
    ("weekdays at 8am", cron("0 8 * * 1-5")),
    ("on weekdays", cron("0 9 * * 1-5")),
    ("every weekend at noon", cron("0 12 * * 0,6")),
    ("every weekend day at 10", cron("0 10 * * 0,6")),
    ("every Monday at 9", cron("0 9 * * 1")),
    ("every Sunday", cron("0 9 * * 0")),
    ("every Monday and Thursday at 18:00", cron("0 18 * * 1,4")),
    ("every mon, wed and fri at 7:15am", cron("15 7 * * 1,3,5")),
    ("every Friday, Monday, and Friday at 8", cron("0 8 * * 1,5")),
    ("on Tuesdays and Fridays at midnight", cron("0 0 * * 2,5")),
    ("Saturdays at 10:30", cron("30 10 * * 6")),
    # -- days of the month
    ("the first Monday of the month at 9am", cron("0 9 * * 1#1")),
    ("first Monday of every month at 9am", cron("0 9 * * 1#1")),
    ("the second Tuesday of every month at 14:00", cron("0 14 * * 2#2")),
    ("the third Wednesday of the month", cron("0 9 * * 3#3")),
    ("the 4th Thursday of each month at 10", cron("0 10 * * 4#4")),
    ("the fifth Friday of the month", cron("0 9 * * 5#5")),
    ("the last Friday of the month at 17:00", cron("0 17 * * 5L")),
    ("every last Sunday of the month", cron("0 9 * * 0L")),
    ("on the first Monday of the month", cron("0 9 * * 1#1")),
    ("the last day of the month at 18:00", cron("0 18 L * *")),
    ("the last weekday of the month", cron("0 9 LW * *")),
    ("the first weekday of the month at 8", cron("0 8 1W * *")),
    ("day 15 of every month at 8", cron("0 8 15 * *")),
    ("on day 31 of every month", cron("0 9 31 * *")),
    ("the 1st of every month", cron("0 9 1 * *")),
    ("the first day of the month", cron("0 9 1 * *")),
    ("every month on the 10th at 9:30pm", cron("30 21 10 * *")),
    ("monthly on the last day", cron("0 9 L * *")),
    ("monthly on the second Monday at 7", cron("0 7 * * 1#2")),
    # -- once: a wall time in the zone, or now plus a duration
    ("on 2027-01-04 at 9", once("2027-01-04T08:00:00Z", "2027-01-04T14:00:00Z")),
    ("on January 4", once("2027-01-04T08:00:00Z", "2027-01-04T14:00:00Z")),
    ("Jan 4 2027 at 10:15", once("2027-01-04T09:15:00Z", "2027-01-04T15:15:00Z")),
    ("on Jan 4th, 2027 at 10:15", once("2027-01-04T09:15:00Z", "2027-01-04T15:15:00Z")),
    ("on 4 January 2027 at 9pm", once("2027-01-04T20:00:00Z", "2027-01-05T02:00:00Z")),
    ("the 4th of January at noon", once("2027-01-04T11:00:00Z", "2027-01-04T17:00:00Z")),
    ("on December 1", once("2026-12-01T08:00:00Z", "2026-12-01T14:00:00Z")),
    ("the first of March at 8", once("2027-03-01T07:00:00Z", "2027-03-01T13:00:00Z")),
    ("March second 2027", once("2027-03-02T08:00:00Z", "2027-03-02T14:00:00Z")),
    # 08:00 today has gone by in Berlin (11:00 there), not yet in New York (05:00 there)
    ("on November 20 at 8", once("2027-11-20T07:00:00Z", "2026-11-20T13:00:00Z")),
    ("on Feb 29", once("2028-02-29T08:00:00Z", "2028-02-29T14:00:00Z")),
    ("tomorrow at 7", once("2026-11-21T06:00:00Z", "2026-11-21T12:00:00Z")),
    ("today at 23:00", once("2026-11-20T22:00:00Z", "2026-11-21T04:00:00Z")),
    ("in 30 minutes", once("2026-11-20T10:30:00Z")),
    ("in 2 hours", once("2026-11-20T12:00:00Z")),
    ("in 3 days", once("2026-11-23T10:00:00Z")),
    ("in 1 week", once("2026-11-27T10:00:00Z")),
    ("in an hour and 30 minutes", once("2026-11-20T11:30:00Z")),
    ("in 1 day, 2 hours", once("2026-11-21T12:00:00Z")),
    # the clocks go back: a repeated wall time is its first pass
    ("on 2027-10-31 at 2:30", once("2027-10-31T00:30:00Z", "2027-10-31T06:30:00Z")),
    ("on 2027-11-07 at 1:30", once("2027-11-07T00:30:00Z", "2027-11-07T05:30:00Z")),
    # -- exclusions (local dates, sorted and unique; one holiday calendar)
    ("every weekday at 9 excluding 2026-12-24 and 2026-12-31", cron("0 9 * * 1-5"), ["2026-12-24", "2026-12-31"]),
    ("every day at 8 except Dec 31 2026, Dec 24 2026 and Dec 25 2026", cron("0 8 * * *"),
     ["2026-12-24", "2026-12-25", "2026-12-31"]),
    ("every day except on 2026-12-24 and on 2026-12-24", cron("0 9 * * *"), ["2026-12-24"]),
    ("every Friday but not 2026-11-27", cron("0 9 * * 5"), ["2026-11-27"]),
    ("every weekday at 9 excluding US holidays", cron("0 9 * * 1-5"), [], {"country": "US", "subdivision": None}),
    ("every day at 9 excluding public holidays in DE-BY", cron("0 9 * * *"), [],
     {"country": "DE", "subdivision": "BY"}),
    ("every Monday at 10 excluding us-ca holidays and 2026-12-28", cron("0 10 * * 1"), ["2026-12-28"],
     {"country": "US", "subdivision": "CA"}),
    ("every 15 minutes excluding 2026-12-25", cron("*/15 * * * *"), ["2026-12-25"]),
    ("the last Friday of the month skipping FR holidays", cron("0 9 * * 5L"), [],
     {"country": "FR", "subdivision": None}),
    ("every weekday excluding holidays in GB-SCT", cron("0 9 * * 1-5"), [], {"country": "GB", "subdivision": "SCT"}),
    ("  Every   WEEKDAY at 9AM   excluding  us  HOLIDAYS ", cron("0 9 * * 1-5"), [],
     {"country": "US", "subdivision": None}),
]


def _case(zone: str, phrase: str, meaning: tuple[str, Any], dates: list[str] | None = None,
          holidays: dict[str, Any] | None = None) -> Any:
    return pytest.param(zone, phrase, meaning, dates or [], holidays, id=f"{phrase.strip()}-{zone.split('/')[1]}")


@pytest.mark.parametrize(("zone", "phrase", "meaning", "dates", "holidays"),
                         [_case(zone, *row) for row in PHRASES for zone in ZONES])
def test_every_documented_phrase(zone: str, phrase: str, meaning: tuple[str, Any], dates: list[str],
                                 holidays: dict[str, Any] | None) -> None:
    parsed = parse_phrase(phrase, zone, NOW)
    assert parsed.schedule == expected(meaning, zone)
    assert (parsed.exclude_dates, parsed.holidays) == (dates, holidays)
    parse_schedule(parsed.schedule)  # the engine takes it as it is


# -- refusals: each names the part not understood -----------------------------------------------

REFUSALS = [
    ("fortnightly", '"fortnightly" is not understood'),
    ("every fortnight", '"fortnight" is not understood; expected a number, "minute"'),
    ("Fortnightly at 9", '"Fortnightly" is not understood'),
    ("every day at 25:00", '"25:00" is not a time'),
    ("every day at 9:60", '"9:60" is not a time'),
    ("every day at 13pm", '"13pm" is not a time: with am or pm the hour goes from 1 to 12'),
    ("every day at 0am", '"0am" is not a time'),
    ("every day at 9:5", '"9:5" is not a time: minutes take two digits'),
    ("every day at 24", '"24" is not a time'),
    ("every day at tea", '"tea" is not a time'),
    ("every day at", 'expected a time such as 9, 9am, 9:30, 21:00, noon or midnight after "at"'),
    ("the sixth Monday of the month", '"the sixth Monday": a month has at most five Mondays'),
    ("the 7th Friday of every month", '"the 7th Friday": a month has at most five Fridays'),
    ("the 32nd of every month", '"the 32nd": a day of the month goes from 1 to 31'),
    ("day 0 of every month", '"day 0": a day of the month goes from 1 to 31'),
    ("day fifteen of every month", '"fifteen" is not understood; expected a day number'),
    ("the second weekday of the month", '"the second weekday": only the first and the last weekday'),
    ("the first Monday", 'expected "of the month" or "of every month" after "Monday"'),
    ("the last", 'after "last"'),
    ("the first Monday of February", '"February" is not understood; expected "month"'),
    ("every 0 minutes", '"every 0 minutes": the number must be at least 1'),
    ("every 30 seconds", '"seconds" is not understood; expected "minutes", "hours", "days" or "weeks"'),
    ("every 2 months", '"months" is not understood'),
    ("every year", '"year" is not understood'),
    ("every", 'after "every"'),
    ("every 2 days at 9", '"at 9" does not go with "every 2 days"'),
    ("every 15 minutes at 9", '"at 9" does not go with "every 15 minutes"'),
    ("every 2 weeks on Monday", '"on Monday" does not go with "every 2 weeks"'),
    ("every hour at 9:30", '"at 9:30" does not go with "every hour"'),
    ("every week", '"every week" needs a day'),
    ("weekly at 9", '"weekly" needs a day'),
    ("every month", '"every month" needs a day'),
    ("monthly", '"monthly" needs a day'),
    ("on Monday at 9", '"on Monday" is ambiguous: say "every Monday"'),
    ("tuesday", '"tuesday" is ambiguous'),
    ("on 2020-01-01 at 9", '"on 2020-01-01 at 9" is in the past'),
    ("Jan 4 2026", '"Jan 4 2026" is in the past'),
    ("today at 0:01", '"today at 0:01" is in the past'),
    ("on 2027-02-30", '"2027-02-30" is not a date'),
    ("February 30", '"February 30" is not a date'),
    ("on Feb 29 2027", '"Feb 29 2027" is not a date'),
    ("every day excluding Dec 24", '"Dec 24" needs a year'),
    ("every day excluding 2020-01-01", '"2020-01-01" is in the past'),
    ("every day excluding XX holidays", '"XX holidays": XX is not a country the holiday calendar knows'),
    ("every day excluding DE-ZZ holidays", '"DE-ZZ holidays": ZZ is not a subdivision of DE'),
    ("every day excluding holidays", 'expected "in" and a country code'),
    ("every day excluding German holidays", '"German" is not understood; expected a date'),
    ("every day excluding US holidays and FR holidays", '"FR holidays": only one holiday calendar'),
    ("every 2 days excluding 2026-12-24", '"excluding 2026-12-24" needs a schedule with local dates: "every 2 days"'),
    ("in 2 hours excluding US holidays", '"excluding US holidays" needs a schedule with local dates: "in 2 hours"'),
    ("on 2027-01-04 except 2027-01-04", '"except 2027-01-04" needs a schedule with local dates'),
    ("in 0 minutes", '"in 0 minutes": the number must be at least 1'),
    ("in soon", '"soon" is not understood; expected a number and a unit'),
    ("in 2", 'expected "minutes", "hours", "days" or "weeks" after "2"'),
    ("in 1000 weeks", '"in 1000 weeks" is more than 8 years away'),
    ("every 99999999 weeks", '"every 99999999 weeks" is longer than the longest interval'),
    ("every day at 9 please", '"please" is not understood; expected the end of the phrase'),
    ("every weekday at 9 and 17", '"and" is not understood'),
    ("every day at 9 but never", '"never" is not understood; expected "not"'),
    ("0 9 * * 1", '"0 9 * * 1" is a cron expression, not a phrase'),
    ("@daily", '"@daily" is a cron expression, not a phrase'),
    ("*/15 minutes", '"*/15" is not understood'),
    ("every day at 9 #1", '"#1" is not understood'),
    ("on jan 0th", '"jan 0th" is not a date'),
    ("the 0th of march", '"0th of march" is not a date'),
    ("the 0th monday of the month", '"the 0th monday" is not a day of the month'),
    ("every day at 9 excluding 0th jan 2027", '"0th jan 2027" is not a date'),
    ("every day @ 9", '"@" is not understood'),
    ("every mon-fri", '"mon-fri" is not understood'),
    ("next monday", '"next" is not understood'),
    ("2027-01-04T09:00", '"2027-01-04T09:00" is not understood'),
    ("every 15min", '"15min" is not understood'),
    ("", "is empty"),
    ("   ", "is empty"),
    ("every day " * 60, "a phrase holds at most 500"),
]


@pytest.mark.parametrize("zone", ZONES)
@pytest.mark.parametrize(("phrase", "needle"), REFUSALS, ids=[p[:40] or "empty" for p, _ in REFUSALS])
def test_a_phrase_not_understood_is_refused_naming_the_part(zone: str, phrase: str, needle: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        parse_phrase(phrase, zone, NOW)
    assert caught.value.field == "text"
    assert needle in caught.value.message, caught.value.message


@pytest.mark.parametrize(("zone", "phrase"), [(BERLIN, "on 2027-03-28 at 2:30"), (NEW_YORK, "on 2027-03-14 at 2:30"),
                                              (BERLIN, "on March 28 at 2:00")])
def test_a_wall_time_the_clocks_skip_is_refused_naming_it(zone: str, phrase: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        parse_phrase(phrase, zone, NOW)
    assert caught.value.field == "text"
    assert f'"{phrase}": ' in caught.value.message and f"does not exist in {zone}" in caught.value.message


def test_a_wall_time_past_the_last_utc_instant_is_refused_naming_it() -> None:
    assert parse_phrase("on 9999-12-31 at 23:59", BERLIN, NOW).schedule["at"] == "9999-12-31T22:59:00Z"
    with pytest.raises(ScheduleError) as caught:
        parse_phrase("on 9999-12-31 at 23:59", NEW_YORK, NOW)  # 10000-01-01 in UTC
    assert '"on 9999-12-31 at 23:59" is outside the calendar' in caught.value.message


def test_the_same_wall_time_exists_in_the_other_zone() -> None:
    assert parse_phrase("on 2027-03-28 at 2:30", NEW_YORK, NOW).schedule == \
        {"kind": "once", "at": "2027-03-28T06:30:00Z"}


@pytest.mark.parametrize("zone", ["Mars/Olympus_Mons", "localtime", "", 5, None])
def test_a_bad_zone_is_refused_on_the_timezone_field(zone: Any) -> None:
    with pytest.raises(ScheduleError) as caught:
        parse_phrase("every day at 9", zone, NOW)
    assert caught.value.field == "timezone"


def test_a_phrase_that_is_not_text_is_refused() -> None:
    with pytest.raises(ScheduleError) as caught:
        parse_phrase(["every day"], BERLIN, NOW)
    assert caught.value.field == "text"


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=60), st.lists(st.sampled_from(
    ["every", "day", "at", "9", "9:30", "the", "first", "last", "monday", "of", "month", "on", "2027-01-04", "in",
     "2", "hours", "excluding", "us", "holidays", "and", ",", "weekday", "jan", "4th", "noon", "week", "other",
     "2026-12-24", "minutes", "fifth", "friday", "tomorrow", "every", "de-by", "public", "except"]),
    max_size=8).map(" ".join)))
def test_any_text_is_read_or_refused_on_a_field(text: str) -> None:
    """Never a crash: whatever is typed, the answer is a schedule the engine takes and previews, or a
    refusal on ``text``."""
    try:
        parsed = parse_phrase(text, BERLIN, NOW)
    except ScheduleError as exc:
        assert exc.field == "text" and exc.message
        return
    parse_schedule(parsed.schedule)
    assert read_back(text, BERLIN, NOW)["schedule"] == parsed.schedule


# -- the read-back and docs/CRON.md --------------------------------------------------------------


def test_the_read_back_has_the_canonical_form_the_english_and_five_fires() -> None:
    answer = read_back("first Monday of every month at 9am excluding 2026-12-07", BERLIN, NOW)
    assert answer["schedule"] == {"kind": "cron", "cron": "0 9 * * 1#1", "timezone": BERLIN}
    assert answer["canonical"] == "0 9 * * 1#1" and answer["exclude_dates"] == ["2026-12-07"]
    assert "first Monday" in answer["description"]
    assert answer["next"] == ["2027-01-04T08:00:00Z", "2027-02-01T08:00:00Z", "2027-03-01T08:00:00Z",
                              "2027-04-05T07:00:00Z", "2027-05-03T07:00:00Z"]
    assert [f["local"] for f in answer["fires"]][:1] == ["2027-01-04T09:00:00+01:00"]
    assert answer["excluded"] == [{"utc": "2026-12-07T08:00:00Z", "local": "2026-12-07T09:00:00+01:00",
                                   "reason": "excluded date", "day_count": 1}]


@pytest.mark.parametrize(("phrase", "canonical"), [("every 90 minutes", "every 5400 s"),
                                                   ("on 2027-01-04 at 9", "once at 2027-01-04T09:00:00+01:00"),
                                                   ("in 2 hours", "once at 2026-11-20T13:00:00+01:00")])
def test_the_canonical_form_of_an_interval_and_a_once(phrase: str, canonical: str) -> None:
    assert read_back(phrase, BERLIN, NOW)["canonical"] == canonical


def documented_rows(opening: str) -> list[list[str]]:
    """The table rows of docs/CRON.md "Natural-language entry" whose first cell opens with ``opening``."""
    text = (REPO / "docs" / "CRON.md").read_text(encoding="utf-8")
    section = text.split("\n## Natural-language entry\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith(f"| {opening}")]
    return [[cell.strip() for cell in row.strip().strip("|").split(" | ")] for row in rows]


def _wall(local: str) -> str:
    return dt.datetime.fromisoformat(local).strftime("%Y-%m-%d %H:%M")


def test_docs_cron_shows_every_phrase_with_its_read_back() -> None:
    """Each documented example reads back as documented (Europe/Berlin, at the documented ``now``)."""
    rows = documented_rows("`")
    assert len(rows) >= 50
    for phrase, canonical, fires, *excluded in rows:
        answer = read_back(phrase.strip("`"), BERLIN, NOW)
        shown = ", ".join(_wall(f["local"]) for f in answer["fires"][:3])
        assert (f"`{answer['canonical']}`", shown) == (canonical, fires), phrase
        if excluded:
            skipped = ", ".join(f"{_wall(e['local'])} ({e['reason']})" for e in answer["excluded"][:3])
            assert excluded == [skipped or "none"], phrase


def test_docs_cron_quotes_the_refusals_as_they_are() -> None:
    rows = documented_rows('"')
    assert len(rows) >= 15
    for phrase, message in rows:
        with pytest.raises(ScheduleError) as caught:
            parse_phrase(phrase.strip('"'), BERLIN, NOW)
        assert caught.value.message == message, phrase


def test_a_date_without_a_year_is_its_next_one_even_when_this_years_fell_in_a_clock_change() -> None:
    # 2026-03-29 02:30 never happened in Berlin; in June a user means 2027-03-29, which exists
    june = dt.datetime(2026, 6, 15, tzinfo=dt.UTC)
    assert parse_phrase("on March 29 at 2:30", BERLIN, june).schedule == {"kind": "once",
                                                                        "at": "2027-03-29T00:30:00Z"}


def test_a_holiday_calendars_alias_is_kept_as_its_country_code() -> None:
    assert parse_phrase("every weekday at 9 excluding uk holidays", "Europe/London", NOW).holidays == {
        "country": "GB", "subdivision": None}
