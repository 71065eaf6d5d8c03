"""What the Schedules drawer and dialog compute (app/ui/schedule_views.py, schedule_form.py), without a browser."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re

import pytest

from app.core.envelope import build as envelope
from app.core.errors import InvalidInput
from app.schedules.model import ScheduledTask, TaskRun, TaskStatus
from app.ui import schedule_form, schedule_views, timeline
from app.ui.schedule_form import FormFields
from app.ui.transcript import envelope_parts

NOW = dt.datetime(2026, 3, 27, 12, 0, tzinfo=dt.UTC)  # a Friday; Paris moves to summer time on Sunday 29th


def task(schedule: dict, status: str = "active", **fields: object) -> ScheduledTask:
    base = {"id": 7, "chat_id": 1, "project_id": 1, "owner": "ann@example.com", "name": "standup",
            "prompt": "collect the news", "schedule": json.dumps(schedule), "status": status,
            "next_run_at": NOW + dt.timedelta(minutes=4), "armed_at": NOW - dt.timedelta(seconds=56),
            "created_at": NOW, "updated_at": NOW}
    return ScheduledTask(**{**base, **fields})


HOURLY = {"kind": "interval", "every_seconds": 3600}
PARIS_NINE = {"kind": "cron", "cron": "0 9 * * *", "timezone": "Europe/Paris"}


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "now"), (3, "now"), (-4, "now"), (42, "in 42 s"), (-42, "42 s ago"), (4 * 60 + 59, "in 4 min"),
    (3599, "in 59 min"), (3600, "in 1 h"), (2 * 3600 + 15 * 60, "in 2 h 15 min"), (11 * 3600 + 60, "in 11 h"),
    (-26 * 3600, "1 day 2 h ago"), (5 * 86400 + 3600, "in 5 days"),
], ids=lambda v: str(v))
def test_relative_times_read_at_a_glance(seconds: int, text: str) -> None:
    assert schedule_views.relative(NOW + dt.timedelta(seconds=seconds), NOW) == text


@pytest.mark.parametrize(("status", "arm", "pause", "resume", "run_now"), [
    ("draft", True, False, False, False),
    ("active", False, True, False, True),
    ("paused", False, False, True, True),
    ("error", False, True, True, True),
    ("exhausted", False, False, True, True),
    ("completed", False, False, False, False),  # its goal is reached: the drawer offers no Run now
], ids=lambda v: str(v))
def test_controls_follow_the_rules_of_each_status(status: str, arm: bool, pause: bool, resume: bool,
                                                  run_now: bool) -> None:
    row = schedule_views.task_row(task(HOURLY, status), NOW, "UTC")
    assert (row.can_arm, row.can_pause, row.can_resume, row.can_run_now) == (arm, pause, resume, run_now)
    assert row.status_color == schedule_views.STATUS_COLORS[TaskStatus(status)]


def test_a_cron_task_shows_its_own_zone_and_an_interval_the_viewers() -> None:
    cron = schedule_views.task_row(task(PARIS_NINE, next_run_at=dt.datetime(2026, 3, 30, 7, tzinfo=dt.UTC)),
                                   NOW, "Asia/Tokyo")
    assert cron.description == "At 09:00 (Europe/Paris time)"
    assert cron.next_abs == "Mon 30 Mar 2026, 09:00:00 CEST (Europe/Paris)"
    assert cron.next_rel == "in 2 days 19 h"
    interval = schedule_views.task_row(task(HOURLY), NOW, "Asia/Tokyo")
    assert interval.next_abs.endswith("21:04:00 JST (Asia/Tokyo)")
    assert (interval.next_rel, interval.runs, interval.last_rel) == ("in 4 min", "0 / ∞", "never")


def test_only_active_tasks_show_a_next_run() -> None:
    paused = schedule_views.task_row(task(HOURLY, "paused"), NOW, "UTC")
    assert paused.next_rel == "—" and "resume" in paused.next_abs
    draft = schedule_views.task_row(task(HOURLY, "draft", next_run_at=None, created_by="agent"), NOW, "UTC")
    assert draft.next_rel == "—" and "arms it" in draft.next_abs


def test_last_run_outcome_error_and_bounded_count() -> None:
    row = schedule_views.task_row(task(HOURLY, "error", run_count=3, max_runs=12, last_run_status="failed",
                                       last_run_at=NOW - dt.timedelta(minutes=2), last_error="boom"), NOW, "UTC")
    assert (row.last_rel, row.last_status, row.last_color, row.runs, row.last_error) == \
        ("2 min ago", "failed", "red", "3 / 12", "boom")


def test_a_history_line_compares_nominal_and_actual_time() -> None:
    run = TaskRun(id=1, task_id=7, occurrence_at=NOW, claimed_at=NOW, started_at=NOW + dt.timedelta(seconds=2),
                  finished_at=NOW + dt.timedelta(seconds=6.5), status="succeeded", fire_number=3, run_id=41,
                  trigger="schedule")
    line = schedule_views.run_row(run, schedule_views.zone_of("Europe/Paris"))
    assert (line.run_id, line.fire, line.trigger, line.late, line.duration) == \
        ("41", "#3", "on schedule", "+2.0 s", "4.5 s")
    assert (line.nominal, line.actual) == ("Fri 27 Mar, 13:00:00", "13:00:02")


def test_timeline_places_each_active_task_in_its_lane() -> None:
    tasks = [task(HOURLY, next_run_at=NOW + dt.timedelta(hours=1)),
             task(HOURLY, "draft", id=8, next_run_at=None),
             task(PARIS_NINE, id=9, name="digest", next_run_at=dt.datetime(2026, 3, 28, 8, tzinfo=dt.UTC))]
    line = timeline.timeline(tasks, NOW, "Europe/Paris")
    hourly = [m for m in line.markers if m.label.startswith("standup")]
    digest = [m for m in line.markers if m.label.startswith("digest")]
    assert len(hourly) == 8  # 168 fires: too dense for dots, one band per local day (7 midnights, 8 days)
    assert line.label == f"{168 + 7} fires"
    assert {m.top for m in hourly} == {"0px"} and {m.top for m in digest} == {"12px"}
    assert line.height == "24px"
    assert digest[0].label == "digest · Sat 28 Mar, 09:00 CET"
    assert digest[1].label == "digest · Sun 29 Mar, 09:00 CEST"  # after the spring-forward night
    lefts = [float(m.left.rstrip("%")) for m in hourly]
    assert lefts == sorted(lefts) and lefts[0] == 0


def test_timeline_ticks_are_local_midnights() -> None:
    ticks = timeline.day_ticks(NOW, schedule_views.zone_of("Europe/Paris"))
    assert [t.label for t in ticks] == ["Sat 28", "Sun 29", "Mon 30", "Tue 31", "Wed 1", "Thu 2", "Fri 3"]
    assert ticks[0].left == f"{11 / (7 * 24) * 100:.3f}%"  # 12:00 UTC is 13:00 in Paris: 11 h to midnight


def fields(**changes: str) -> FormFields:
    return dataclasses.replace(FormFields(name="standup", prompt="collect the news"), **changes)


def test_a_once_time_is_wall_time_in_the_chosen_zone() -> None:
    body = schedule_form.body_of(fields(kind="once", at="2026-03-29T02:30", timezone="America/New_York"))
    assert body["schedule"] == {"kind": "once", "at": "2026-03-29T06:30:00Z"}
    assert body["max_runs"] is None  # a once task fires once: the form sends no limit
    typed = schedule_form.body_of(fields(kind="once", at="2026-03-29T02:30", timezone="UTC", max_runs="5"))
    assert typed["max_runs"] is None  # typed before the kind was switched to once: cleared
    assert schedule_form.body_of(fields(kind="interval", every="10", max_runs="5"))["max_runs"] == 5


def test_a_zone_named_by_its_abbreviation_is_not_said_twice() -> None:
    at = dt.datetime(2026, 12, 3, 9, 23, tzinfo=dt.UTC)
    assert schedule_views.absolute(at, schedule_views.zone_of("UTC")) == "Thu 3 Dec 2026, 09:23:00 UTC"
    assert schedule_views.describe({"kind": "once", "at": "2026-12-03T09:23:00Z"}, schedule_views.zone_of("UTC")) \
        == "Once, Thu 3 Dec 2026, 09:23:00 UTC"
    assert schedule_views.absolute(at, schedule_views.zone_of("Europe/Paris")) \
        == "Thu 3 Dec 2026, 10:23:00 CET (Europe/Paris)"


@pytest.mark.parametrize(("changes", "field"), [
    ({"kind": "interval", "every": "soon"}, "schedule.every_seconds"),
    ({"kind": "once", "at": "", "timezone": "UTC"}, "schedule.at"),
    ({"kind": "once", "at": "2030-01-01T09:00", "timezone": "Mars/Base"}, "schedule.timezone"),
    ({"max_runs": "twelve"}, "max_runs"),
], ids=["every", "at", "zone", "max_runs"])
def test_conversion_errors_name_the_api_field(changes: dict, field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        schedule_form.body_of(fields(**changes))
    assert caught.value.field == field
    assert schedule_form.explain(caught.value).startswith(schedule_form.LABELS[field] + ": ")


def test_editing_without_changes_sends_nothing_and_keeps_the_schedule() -> None:
    for schedule in (HOURLY, PARIS_NINE, {"kind": "once", "at": "2030-01-01T08:00:00Z"}):
        stored = task(schedule, max_runs=None if schedule["kind"] == "once" else 5, overlap="skip")
        shown = schedule_form.fields_of(stored, "Europe/Paris")
        assert schedule_form.patch_of(shown, schedule_form.original_of(stored)) == {}, schedule
    # a repeating task made once keeps no hidden max runs that would exhaust it unseen
    made_once = dataclasses.replace(schedule_form.fields_of(task(HOURLY, max_runs=5), "UTC"), kind="once",
                                    at="2030-01-01T08:00", timezone="UTC")
    assert schedule_form.patch_of(made_once, schedule_form.original_of(task(HOURLY, max_runs=5)))["max_runs"] is None
    once = schedule_form.fields_of(task({"kind": "once", "at": "2030-01-01T08:00:00Z"}), "Europe/Paris")
    assert (once.at, once.timezone) == ("2030-01-01T09:00", "Europe/Paris")


def test_a_changed_field_is_the_whole_patch() -> None:
    stored = task(PARIS_NINE)
    shown = dataclasses.replace(schedule_form.fields_of(stored, "UTC"), cron="*/5 * * * *")
    assert schedule_form.patch_of(shown, schedule_form.original_of(stored)) == {
        "schedule": {"kind": "cron", "cron": "*/5 * * * *", "timezone": "Europe/Paris"}}


def test_default_once_time_is_the_next_full_hour_in_the_zone() -> None:
    assert schedule_form.default_at(NOW, "Asia/Kolkata") == "2026-03-27T18:00"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:00", schedule_form.default_at(NOW, "Not/AZone"))


def test_the_envelope_header_is_parsed_for_the_transcript() -> None:
    assert envelope_parts(envelope("standup", "collect the news\nthen report", 3, 12)) == \
        ("standup", "3/12", "collect the news\nthen report")
    assert envelope_parts(envelope('say "hi"', "x", 1, None)) == ('say "hi"', "1/∞", "x")
    assert envelope_parts("a plain prompt") == ("", "", "a plain prompt")
