"""The schedule dialog's words (issue 15, point 7): each error names its field once and in plain
terms, a past date is told in the zone it was typed in, the interval floor is said in minutes,
and a clock change that moves a fire is said on its preview row. Fixed dates, no clock read."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from app.core.clock import FakeClock
from app.core.config import load_settings
from app.core.errors import InvalidInput
from app.schedules import clock_notes
from app.schedules.preview import preview
from app.schedules.service import TaskService
from app.schedules.spec import CronSchedule, ScheduleError, parse_schedule, span
from app.schedules.timing import next_occurrences
from app.ui import schedule_form
from app.ui.schedule_form import FormFields

NY = "America/New_York"
SPRING = dt.datetime(2027, 3, 13, 12, tzinfo=dt.UTC)  # the day before New York springs forward
FALL = dt.datetime(2027, 11, 6, 12, tzinfo=dt.UTC)  # the day before New York falls back
NOW = dt.datetime(2026, 3, 2, 12, tzinfo=dt.UTC)


def _explained(schedule: dict, floor: int = 1) -> str:
    with pytest.raises(ScheduleError) as caught:
        parse_schedule(schedule, min_every_seconds=floor)
    exc = caught.value
    return schedule_form.explain(InvalidInput(exc.field, exc.message))


@pytest.mark.parametrize(("cron", "zone", "said"), [
    ("0 9 * *", "UTC", "Cron expression: expected 5 fields (minute hour day-of-month month day-of-week), got 4"),
    ("@reboot", "UTC", "Cron expression: unknown macro '@reboot'"),
    ("61 * * * *", "UTC", "Cron expression: minute: 61 is out of range 0-59"),
    ("0 9 * * *", "Mars/Base", "Time zone: 'Mars/Base' is not"),
], ids=["fields", "macro", "minute", "zone"])
def test_a_cron_error_names_its_field_once(cron: str, zone: str, said: str) -> None:
    message = _explained({"kind": "cron", "cron": cron, "timezone": zone})
    assert message.startswith(said), message
    reason = message.split(": ", 1)[1]
    assert not reason.startswith(("expression", "timezone")), message  # the field is named once


@pytest.mark.parametrize(("every", "floor", "said"), [
    (0, 60, "Interval: must be at least 1 minute"),
    (1, 60, "Interval: must be at least 1 minute (1 second is too short)"),
    (90, 3600, "Interval: must be at least 1 hour (1 minute 30 seconds is too short)"),
    (-5, 1, "Interval: must be at least 1 second"),
    (10**12, 1, "Interval: must be at most 8 years"),
])
def test_the_interval_floor_is_said_in_words(every: int, floor: int, said: str) -> None:
    message = _explained({"kind": "interval", "every_seconds": every}, floor)
    assert message.startswith(said), message
    assert "252460800" not in message.split("(")[0]


def test_the_service_reports_the_configured_floor_and_plain_max_runs() -> None:
    service = TaskService(None, FakeClock(NOW), load_settings({}))  # validate reads no database
    body = {"name": "n", "prompt": "p", "schedule": {"kind": "interval", "every_seconds": 0}}
    with pytest.raises(InvalidInput) as caught:
        service.validate(body)
    assert caught.value.message == "schedule.every_seconds: must be at least 1 minute"
    with pytest.raises(InvalidInput) as caught:
        service.validate({**body, "schedule": {"kind": "interval", "every_seconds": 60}, "max_runs": 0})
    assert caught.value.message == "max_runs: must be a whole number from 1 to 1000000 (leave it empty for no limit)"
    assert "null" not in caught.value.message


def test_a_past_once_time_is_told_in_the_zone_it_was_typed_in() -> None:
    fields = FormFields(name="n", prompt="p", kind="once", at="2026-03-01T09:00", timezone="Europe/Paris")
    schedule = schedule_form.schedule_of(fields)
    with pytest.raises(ScheduleError) as caught:
        preview(schedule, NOW, display_timezone="Europe/Paris")
    assert caught.value.message == "2026-03-01 09:00 (Europe/Paris) is in the past"
    assert schedule_form.explain(InvalidInput(caught.value.field, caught.value.message)) == \
        "Date and time: 2026-03-01 09:00 (Europe/Paris) is in the past"


def test_the_preview_refuses_an_interval_below_the_floor_it_is_given() -> None:
    with pytest.raises(ScheduleError, match="must be at least 1 minute"):
        preview({"kind": "interval", "every_seconds": 1}, NOW, min_every_seconds=60)
    assert len(preview({"kind": "interval", "every_seconds": 1}, NOW)["fires"]) == 5  # the API's own preview


def test_span_reads_like_a_person_wrote_it() -> None:
    assert [span(s) for s in (1, 60, 90, 3600, 86400 + 60)] == \
        ["1 second", "1 minute", "1 minute 30 seconds", "1 hour", "1 day 1 minute"]


@pytest.mark.parametrize(("every", "unit", "seconds"), [
    ("1", "hours", 3600), ("15", "minutes", 900), ("90", "seconds", 90), ("2", "days", 172800),
])
def test_the_interval_unit_multiplies_and_edits_read_back(every: str, unit: str, seconds: int) -> None:
    fields = FormFields(kind="interval", every=every, every_unit=unit)
    assert schedule_form.schedule_of(fields) == {"kind": "interval", "every_seconds": seconds}
    assert schedule_form.every_of(seconds) == (every, unit)


def test_the_unit_is_a_field_the_dialog_accepts() -> None:
    assert schedule_form.typed("every_unit", "minutes", 100) == ("every_unit", "minutes")
    with pytest.raises(InvalidInput):
        schedule_form.typed("every_unit", "fortnights", 100)
    with pytest.raises(InvalidInput) as caught:
        schedule_form.schedule_of(FormFields(kind="interval", every="soon", every_unit="minutes"))
    assert schedule_form.explain(caught.value) == "Interval: must be a whole number of minutes"


def test_max_runs_says_empty_means_no_limit() -> None:
    with pytest.raises(InvalidInput) as caught:
        schedule_form.body_of(FormFields(max_runs="twelve"))
    assert "leave it empty for no limit" in caught.value.message and "null" not in caught.value.message


def test_the_reason_save_is_disabled_names_the_field() -> None:
    fields = FormFields(name="", prompt="p", every="0")
    assert schedule_form.blocked_reason("name", fields) == "Name is missing"
    assert schedule_form.blocked_reason("schedule.every_seconds", fields) == \
        "Interval needs fixing (see the message above)"
    assert schedule_form.blocked_reason("", fields) == ""


def test_only_a_changed_dialog_is_worth_asking_about() -> None:
    opened = dataclasses.asdict(FormFields(name="a"))
    assert not schedule_form.changed(FormFields(name="a"), opened)
    assert schedule_form.changed(FormFields(name="ab"), opened)
    assert not schedule_form.changed(FormFields(name="ab"), {})  # nothing was opened


def test_a_missing_once_time_says_where_it_runs() -> None:
    assert clock_notes.once_note(dt.datetime(2027, 3, 14, 2, 30), NY) == \
        "02:30 does not exist on this day (clocks go forward); it runs at 03:30"
    assert clock_notes.once_note(dt.datetime(2027, 11, 7, 1, 30), NY) == \
        "01:30 happens twice on this day (clocks go back); it runs the first time"
    assert clock_notes.once_note(dt.datetime(2027, 3, 15, 2, 30), NY) == ""
    assert clock_notes.once_note(dt.datetime(2027, 3, 14, 2, 30), "UTC") == ""


def _notes(expr: str, after: dt.datetime, count: int = 3) -> list[tuple[str, str]]:
    zone = clock_notes.load_zone(NY).zone
    fires = next_occurrences(CronSchedule(expr, NY), after, count)
    return [(f"{f.astimezone(zone):%m-%d %H:%M}", clock_notes.cron_note(expr, NY, f)) for f in fires]


def test_a_spring_forward_fire_says_which_time_does_not_exist() -> None:
    assert _notes("30 2 * * *", SPRING, 2) == [
        ("03-14 03:00", "02:30 does not exist on this day (clocks go forward); it runs at 03:00"),
        ("03-15 02:30", ""),
    ]
    assert _notes("0,30 2 * * *", SPRING, 1) == [
        ("03-14 03:00", "02:00 and 02:30 do not exist on this day (clocks go forward); it runs at 03:00")]
    assert all(note == "" for _, note in _notes("*/30 * * * *", SPRING + dt.timedelta(hours=17), 4))


def test_a_fall_back_fire_says_the_hour_repeats() -> None:
    assert _notes("30 1 * * *", FALL, 2) == [
        ("11-07 01:30", "01:30 happens twice on this day (clocks go back); it runs only the first time"),
        ("11-08 01:30", ""),
    ]
    hourly = _notes("30 * * * *", FALL + dt.timedelta(hours=16), 3)
    assert [note.rsplit("; ", 1)[-1] for _, note in hourly] == ["", "this is the first", "this is the second"]
