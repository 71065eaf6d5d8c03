"""What the UI computes for SPEC §20, without a browser: the dialog's "Skip these dates" and "Skip
public holidays" fields in and out of the API's values, a phrase filling the form, the preview's
excluded rows in order among the fires, the task card's words, and the timeline's skipped markers."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from zoneinfo import ZoneInfo

import pytest

from app.core.errors import InvalidInput
from app.schedules import exclusions
from app.schedules.model import ScheduledTask
from app.schedules.phrases_reply import read_back
from app.schedules.plan import plan_of
from app.schedules.preview import preview
from app.ui import calendar_form, calendar_views, form_check, phrase_form, schedule_form, timeline
from app.ui.schedule_form import FormFields

NOW = dt.datetime(2026, 12, 21, 12, 0, tzinfo=dt.UTC)  # a Monday; Christmas is on the Friday
BERLIN = "Europe/Berlin"
WEEKDAYS_9 = {"kind": "cron", "cron": "0 9 * * 1-5", "timezone": BERLIN}


def task(schedule: dict, dates: tuple[str, ...] = (), holidays: dict | None = None, **fields: object) -> ScheduledTask:
    row = ScheduledTask(**{"id": 7, "chat_id": 1, "project_id": 1, "owner": "ann@example.com", "name": "standup",
                           "prompt": "news", "schedule": json.dumps(schedule), "status": "active", "armed_at": NOW,
                           "created_at": NOW, "updated_at": NOW, "exclude_dates": json.dumps(sorted(dates)),
                           "holidays": json.dumps(holidays) if holidays else None, **fields})
    row.next_run_at = plan_of(row).next_after(NOW)
    return row


def form(**changes: str) -> FormFields:
    return dataclasses.replace(FormFields(name="standup", prompt="news", kind="cron", timezone=BERLIN), **changes)


# -- the dialog's fields ---------------------------------------------------------------------
@pytest.mark.parametrize(("typed", "dates"), [
    ("", []), ("2026-12-24", ["2026-12-24"]), ("2026-12-31, 2026-12-24", ["2026-12-24", "2026-12-31"]),
    (" 2026-12-24  2026-12-31 ", ["2026-12-24", "2026-12-31"]), ("2026-12-24,2026-12-24;2026-12-31",
                                                                 ["2026-12-24", "2026-12-31"]),
], ids=["empty", "one", "commas", "spaces", "repeated"])
def test_skipped_dates_are_typed_with_commas_or_spaces(typed: str, dates: list[str]) -> None:
    assert calendar_form.dates_of(typed) == dates
    assert schedule_form.body_of(form(exclude_dates=typed))["exclude_dates"] == dates


def test_a_holiday_calendar_is_a_country_and_maybe_a_region() -> None:
    assert schedule_form.body_of(form())["holidays"] is None
    assert schedule_form.body_of(form(holidays_country=" us "))["holidays"] == {"country": "US", "subdivision": None}
    assert schedule_form.body_of(form(holidays_country="DE", holidays_subdivision="BY"))["holidays"] == {
        "country": "DE", "subdivision": "BY"}
    with pytest.raises(InvalidInput) as caught:
        schedule_form.body_of(form(holidays_subdivision="BY"))
    assert caught.value.field == "holidays.country" and "DE for BY" in caught.value.message


def test_only_a_cron_schedule_sends_exclusions() -> None:
    """Typed before switching to an interval (or stored while the task was cron): cleared, not refused unseen."""
    body = schedule_form.body_of(form(kind="interval", exclude_dates="2026-12-24", holidays_country="US"))
    assert (body["exclude_dates"], body["holidays"]) == ([], None)


@pytest.mark.parametrize(("changes", "field", "words"), [
    ({"exclude_dates": "2026-12-24, 24.12.2026"}, "exclude_dates",
     "Skip these dates: '24.12.2026' is not a date written YYYY-MM-DD"),
    ({"holidays_country": "XX"}, "holidays.country", "Holiday country: 'XX' is not a country code"),
    ({"holidays_country": "DE", "holidays_subdivision": "ZZ"}, "holidays.subdivision",
     "Holiday region: 'ZZ' is not a subdivision of DE"),
], ids=["date", "country", "region"])
def test_a_refusal_names_its_field_and_lands_under_its_input(changes: dict, field: str, words: str) -> None:
    body = schedule_form.body_of(form(**changes))
    with pytest.raises(InvalidInput) as caught:
        exclusions.check(body["exclude_dates"], body["holidays"])
    assert caught.value.field == field
    assert schedule_form.explain(caught.value).startswith(words)
    assert schedule_form.INPUTS[field] in calendar_form.FIELDS


def test_an_edit_loads_the_exclusions_back_and_sends_them_only_when_changed() -> None:
    stored = task(WEEKDAYS_9, ("2026-12-31", "2026-12-24"), {"country": "DE", "subdivision": "BY"})
    fields = schedule_form.fields_of(stored, "UTC")
    assert (fields.exclude_dates, fields.holidays_country, fields.holidays_subdivision) == (
        "2026-12-24, 2026-12-31", "DE", "BY")
    original = schedule_form.original_of(stored)
    assert schedule_form.patch_of(fields, original) == {}
    patch = schedule_form.patch_of(dataclasses.replace(fields, exclude_dates="2026-12-24"), original)
    assert patch == {"exclude_dates": ["2026-12-24"]}
    cleared = dataclasses.replace(fields, holidays_country="", holidays_subdivision="")
    assert schedule_form.patch_of(cleared, original) == {"holidays": None}


def test_the_preview_reads_what_it_can() -> None:
    assert calendar_form.readable("cron", "2026-12-24 soon", "XX", "") == {"exclude_dates": ["2026-12-24"],
                                                                           "holidays": None}
    assert calendar_form.readable("interval", "2026-12-24", "US", "") == {"exclude_dates": [], "holidays": None}


def test_the_country_list_has_names_and_the_regions_follow_the_country() -> None:
    assert ("US", "United States") in calendar_form.countries()
    assert ("DE", "Germany") in calendar_form.countries()
    assert "BY" in calendar_form.subdivisions("de") and calendar_form.subdivisions("XX") == []


# -- the preview's excluded rows -------------------------------------------------------------
def test_excluded_occurrences_sit_in_order_among_the_fires() -> None:
    shown = preview(WEEKDAYS_9, NOW, 5, exclude_dates=["2026-12-23"], holidays={"country": "DE", "subdivision": None})
    fires = [{"local": f["local"], "relative": "", "utc": f["utc"], "note": "", "excluded": ""} for f in shown["fires"]]
    rows = form_check.with_excluded(fires, shown["excluded"], ZoneInfo(BERLIN), NOW)
    assert [(row["local"] if row["excluded"] else row["utc"][:10], row["excluded"]) for row in rows] == [
        ("2026-12-22", ""),
        ("Wed 23 Dec, 09:00 CET", "excluded · skipped date"),
        ("2026-12-24", ""),
        ("Fri 25 Dec, 09:00 CET", "excluded · Christmas Day"),
        ("2026-12-28", ""), ("2026-12-29", ""), ("2026-12-30", ""),
    ]


def test_a_days_many_skipped_occurrences_are_one_row() -> None:
    every_15 = {"kind": "cron", "cron": "*/15 9-17 * * *", "timezone": BERLIN}
    shown = preview(every_15, NOW, 5, exclude_dates=["2026-12-21"])  # today, from 13:15 in Berlin
    fires = [{"local": "", "relative": "", "utc": f["utc"], "note": "", "excluded": ""} for f in shown["fires"]]
    rows = form_check.with_excluded(fires, shown["excluded"], ZoneInfo(BERLIN), NOW)
    assert len(shown["excluded"]) == 3 and {x["day_count"] for x in shown["excluded"]} == {19}  # first few, all counted
    assert [(row["local"], row["excluded"]) for row in rows if row["excluded"]] == [
        ("Mon 21 Dec, 13:15 CET and later", "excluded · skipped date · 19 times")]
    assert rows[0]["excluded"] and [row["utc"][:10] for row in rows[1:]] == ["2026-12-22"] * 5


def test_a_day_skipped_between_fires_is_one_row_for_its_occurrences() -> None:
    hourly = {"kind": "cron", "cron": "0 9-17 * * *", "timezone": BERLIN}
    now = NOW.replace(hour=15)  # 16:00 in Berlin: 17:00 today, then the 23rd
    shown = preview(hourly, now, 12, exclude_dates=["2026-12-22"])
    fires = [{"local": "", "relative": "", "utc": f["utc"], "note": "", "excluded": ""} for f in shown["fires"]]
    rows = form_check.with_excluded(fires, shown["excluded"], ZoneInfo(BERLIN), now)
    assert [(row["utc"][:10], row["local"], row["excluded"]) for row in rows][:3] == [
        ("2026-12-21", "", ""),
        ("2026-12-22", "Tue 22 Dec, 09:00 CET and later", "excluded · skipped date · 9 times"),
        ("2026-12-23", "", ""),
    ]


def test_whole_skipped_days_of_a_frequent_schedule_are_counted_in_full() -> None:
    every_10 = {"kind": "cron", "cron": "*/10 * * * *", "timezone": BERLIN}
    now = dt.datetime(2026, 12, 23, 22, 55, tzinfo=dt.UTC)  # 23:55 in Berlin; the 24th and 25th are skipped
    shown = preview(every_10, now, 5, exclude_dates=["2026-12-24", "2026-12-25"])
    fires = [{"local": "", "relative": "", "utc": f["utc"], "note": "", "excluded": ""} for f in shown["fires"]]
    rows = form_check.with_excluded(fires, shown["excluded"], ZoneInfo(BERLIN), now)
    assert [(row["local"], row["excluded"]) for row in rows if row["excluded"]] == [
        ("Thu 24 Dec, 00:00 CET and later", "excluded · skipped date · 144 times"),
        ("Fri 25 Dec, 00:00 CET and later", "excluded · skipped date · 144 times")]
    assert [row["utc"] for row in rows if not row["excluded"]][0] == "2026-12-25T23:00:00Z"


# -- a phrase fills the form -----------------------------------------------------------------
@pytest.mark.parametrize(("phrase", "filled"), [
    ("first Monday of every month at 9am", {"kind": "cron", "cron": "0 9 * * 1#1", "timezone": BERLIN}),
    ("every weekday at 9 excluding 2026-12-24 and US holidays",
     {"kind": "cron", "cron": "0 9 * * 1-5", "exclude_dates": "2026-12-24", "holidays_country": "US",
      "holidays_subdivision": ""}),
    ("every 2 days", {"kind": "interval", "every": "2", "every_unit": "days", "exclude_dates": ""}),
    ("every 90 minutes", {"kind": "interval", "every": "90", "every_unit": "minutes"}),
    ("on 2027-01-04 at 9", {"kind": "once", "at": "2027-01-04T09:00", "timezone": BERLIN}),
], ids=["first-monday", "exclusions", "days", "minutes", "once"])
def test_a_phrase_fills_the_schedule_fields(phrase: str, filled: dict) -> None:
    before = form(exclude_dates="2026-12-31", holidays_country="DE", name="kept")
    after = phrase_form.filled(before, read_back(phrase, BERLIN, NOW), BERLIN)
    assert {name: getattr(after, name) for name in filled} == filled
    assert after.name == "kept"  # only the schedule's fields change
    assert set(phrase_form.schedule_part(after)) == set(phrase_form.SCHEDULE_FIELDS)


def test_a_phrase_not_understood_says_why_in_its_own_words() -> None:
    with pytest.raises(InvalidInput) as caught:
        read_back("fortnightly", BERLIN, NOW)
    assert phrase_form.words(caught.value).startswith('"fortnightly" is not understood')
    with pytest.raises(InvalidInput) as caught:
        read_back("   ", BERLIN, NOW)
    assert phrase_form.words(caught.value).startswith("The phrase is empty")
    with pytest.raises(InvalidInput) as caught:
        read_back("every day at 9", "Mars/Olympus", NOW)
    assert phrase_form.words(caught.value).startswith("Time zone: ")


# -- the card's words ------------------------------------------------------------------------
@pytest.mark.parametrize(("dates", "holidays", "words"), [
    ((), None, ""),
    (("2026-12-24",), None, "Skips Thu 24 Dec 2026"),
    (("2026-12-24", "2026-12-31"), {"country": "US", "subdivision": None}, "Skips US public holidays and 2 dates"),
    ((), {"country": "DE", "subdivision": "BY"}, "Skips DE-BY public holidays"),
    (("2026-12-24", "2026-12-31", "2027-01-04"), None, "Skips 3 dates"),
], ids=["none", "one-date", "us-and-dates", "region", "dates"])
def test_a_card_says_what_it_skips(dates: tuple[str, ...], holidays: dict | None, words: str) -> None:
    assert calendar_views.exclusion_words(task(WEEKDAYS_9, dates, holidays)) == words


def test_the_cards_tooltip_names_the_dates() -> None:
    assert calendar_views.exclusion_dates(task(WEEKDAYS_9, ("2026-12-31", "2026-12-24"))) == \
        "Thu 24 Dec 2026, Thu 31 Dec 2026"
    many = tuple(f"2027-01-{day:02d}" for day in range(4, 20))
    assert calendar_views.exclusion_dates(task(WEEKDAYS_9, many)).endswith("and 4 more")


# -- the timeline ----------------------------------------------------------------------------
def test_a_skipped_occurrence_is_a_hollow_marker_in_the_tasks_lane() -> None:
    line = timeline.timeline([task(WEEKDAYS_9, ("2026-12-23",), {"country": "DE", "subdivision": None})],
                             NOW, "Europe/Paris")
    skipped = [m for m in line.markers if m.excluded]
    fired = [m for m in line.markers if not m.excluded]
    assert [m.label for m in skipped] == [
        "standup · Wed 23 Dec, 09:00 CET · excluded (skipped date)",
        "standup · Fri 25 Dec, 09:00 CET · excluded (Christmas Day)",
    ]
    assert [m.label.split(" · ")[1] for m in fired] == ["Tue 22 Dec, 09:00 CET", "Thu 24 Dec, 09:00 CET",
                                                        "Mon 28 Dec, 09:00 CET"]
    assert {m.top for m in line.markers} == {"0px"} and line.label == "3 fires"  # a skipped one is no fire


def test_a_task_whose_week_is_all_skipped_still_shows_its_lane() -> None:
    monday = {"kind": "cron", "cron": "0 9 * * 1", "timezone": BERLIN}
    line = timeline.timeline([task(monday, ("2026-12-28",))], NOW, "UTC")
    assert [(m.excluded, m.label) for m in line.markers] == [
        (True, "standup · Mon 28 Dec, 09:00 CET · excluded (skipped date)")]
    assert line.label == "no fires" and line.height == "12px"


def test_a_dense_tasks_skipped_day_is_one_hollow_band() -> None:
    every_10 = {"kind": "cron", "cron": "*/10 * * * *", "timezone": BERLIN}
    line = timeline.timeline([task(every_10, ("2026-12-24",))], NOW, BERLIN)
    [skipped] = [m for m in line.markers if m.excluded]
    assert skipped.label == "standup · Thu 24 Dec · excluded (skipped date)" and skipped.width
    assert "Thu 24" not in " ".join(m.label for m in line.markers if not m.excluded)  # no fires banded that day


def test_no_skipped_marker_past_the_last_run_left_or_for_a_paused_task() -> None:
    two_left = task(WEEKDAYS_9, ("2026-12-23", "2026-12-25"), max_runs=2, run_count=0)  # fires the 22nd and 24th
    assert [m.label for m in timeline.timeline([two_left], NOW, BERLIN).markers if m.excluded] == [
        "standup · Wed 23 Dec, 09:00 CET · excluded (skipped date)"]
    paused = task(WEEKDAYS_9, ("2026-12-23",), status="paused")
    assert timeline.timeline([paused], NOW, BERLIN).markers == []


def test_the_timeline_skips_only_what_the_runs_left_would_have_reached() -> None:
    every_minute = {"kind": "cron", "cron": "* * * * *", "timezone": BERLIN}
    far = task(every_minute, ("2026-12-24",), max_runs=1_000_000)  # its last run is years away: not searched for
    assert [skip.day.isoformat() for skip in timeline.skipped(far, NOW, NOW + dt.timedelta(days=7))] == ["2026-12-24"]
    near = task(every_minute, ("2026-12-24",), max_runs=3000)  # its runs end on the 23rd, before the skipped day
    assert timeline.skipped(near, NOW, NOW + dt.timedelta(days=7)) == []
