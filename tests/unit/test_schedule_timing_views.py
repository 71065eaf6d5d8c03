"""What the drawer and the dialog show of SPEC §14 (app/ui/schedule_notes.py, outcomes.py,
form_check.py, schedule_form.py, timeline.py): the jitter and the active window in the preview and
the timeline (the times shown are the times that fire), a pause's note and end, outcome labels,
the advanced timing's fields in and out. Pure: fixed instants, no database."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json

import pytest

from app.core.clock import FakeClock
from app.core.config import load_settings
from app.core.errors import InvalidInput
from app.schedules.model import ScheduledTask, TaskRun
from app.schedules.plan import Plan
from app.schedules.preview import preview
from app.schedules.service import TaskService
from app.schedules.spec import parse_schedule
from app.ui import form_check, outcomes, schedule_form, schedule_notes, schedule_views, timeline
from app.ui.schedule_form import FormFields

NOW = dt.datetime(2026, 3, 27, 12, 0, tzinfo=dt.UTC)  # a Friday
PARIS = "Europe/Paris"
NINE_PARIS = {"kind": "cron", "cron": "0 9 * * *", "timezone": PARIS}
HOURLY = {"kind": "interval", "every_seconds": 3600}


def task(schedule: dict, status: str = "active", **fields: object) -> ScheduledTask:
    base = {"id": 7, "chat_id": 1, "project_id": 1, "owner": "ann@example.com", "name": "standup",
            "prompt": "collect the news", "schedule": json.dumps(schedule), "status": status,
            "next_run_at": NOW + dt.timedelta(minutes=4), "armed_at": NOW - dt.timedelta(seconds=56),
            "created_at": NOW, "updated_at": NOW, "catchup_window_seconds": 3600, "jitter_seconds": 0}
    return ScheduledTask(**{**base, **fields})


def form(**changes: str) -> FormFields:
    return dataclasses.replace(FormFields(name="standup", prompt="collect the news"), **changes)


# --- outcomes -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("status", "count", "label", "color"), [
    ("missed", 1, "missed", "orange"), ("missed", 3, "missed (3 occurrences)", "orange"),
    ("missed", None, "missed", "orange"), ("deferred", None, "deferred", "amber"),
    ("failed", None, "failed", "red"), ("skipped", None, "skipped", "gray"), ("nonsense", None, "nonsense", "gray"),
], ids=lambda v: str(v))
def test_every_outcome_has_a_label_and_a_colour(status: str, count: int | None, label: str, color: str) -> None:
    assert (outcomes.label(status, count), outcomes.color(status)) == (label, color)


def test_a_missed_record_reads_as_missed_and_not_fired() -> None:
    run = TaskRun(id=3, task_id=7, occurrence_at=NOW, planned_at=NOW, claimed_at=NOW + dt.timedelta(hours=2),
                  finished_at=NOW + dt.timedelta(hours=2), status="missed", missed_count=4, fire_number=0,
                  trigger="schedule", error="4 occurrences missed, the first by 2 h 5 min (catch-up window 10 min)")
    line = schedule_views.run_row(run, schedule_views.zone_of("UTC"))
    assert (line.label, line.color, line.fired, line.error_color) == ("missed (4 occurrences)", "orange", False,
                                                                      "orange")
    assert line.error.startswith("4 occurrences missed, the first by 2 h 5 min")


def test_a_skip_next_record_says_who_skipped() -> None:
    run = TaskRun(id=4, task_id=7, occurrence_at=NOW, claimed_at=NOW - dt.timedelta(hours=1), status="skipped",
                  fire_number=0, attempts=0, trigger="schedule", error="skipped by ann@example.com")
    line = schedule_views.run_row(run, schedule_views.zone_of("UTC"))
    assert (line.label, line.fired, line.error, line.error_color) == ("skipped", False,
                                                                     "skipped by ann@example.com", "gray")


def test_a_jittered_fire_is_late_from_its_planned_start() -> None:
    planned = NOW + dt.timedelta(seconds=17)
    run = TaskRun(id=5, task_id=7, occurrence_at=NOW, planned_at=planned, claimed_at=planned,
                  started_at=planned + dt.timedelta(seconds=2), finished_at=planned + dt.timedelta(seconds=5),
                  status="succeeded", fire_number=2, trigger="schedule")
    line = schedule_views.run_row(run, schedule_views.zone_of("UTC"))
    assert (line.nominal, line.jitter, line.late, line.fired) == ("Fri 27 Mar, 12:00:17", "+17.0 s jitter",
                                                                  "+2.0 s", True)


# --- the drawer row -------------------------------------------------------------------------------

def test_a_paused_row_shows_its_note_and_when_it_resumes() -> None:
    until = dt.datetime(2026, 3, 30, 7, tzinfo=dt.UTC)
    row = schedule_views.task_row(task(HOURLY, "paused", pause_note="holiday", paused_until=until), NOW, PARIS)
    assert (row.pause_note, row.resumes, row.paused_until) == ("holiday", "resumes Mon 30 Mar, 09:00",
                                                               "2026-03-30T09:00")
    assert not row.can_skip and row.can_resume
    plain = schedule_views.task_row(task(HOURLY, "paused"), NOW, PARIS)
    assert (plain.pause_note, plain.resumes) == ("", "")


def test_the_row_tells_the_window_and_timing_only_when_not_default() -> None:
    row = schedule_views.task_row(task(NINE_PARIS, starts_at=dt.datetime(2026, 3, 30, 7, tzinfo=dt.UTC),
                                       ends_at=dt.datetime(2026, 4, 30, 7, tzinfo=dt.UTC), jitter_seconds=30,
                                       catchup_window_seconds=600), NOW, "UTC")
    assert row.window == "starts Mon 30 Mar, 09:00 CEST · until Thu 30 Apr, 09:00 CEST"
    assert row.timing == "jitter up to 30 s · catch-up 10 min"
    plain = schedule_views.task_row(task(HOURLY), NOW, "UTC")
    assert (plain.window, plain.timing, plain.can_skip) == ("", "", True)
    assert schedule_views.task_row(task(HOURLY, catchup_window_seconds=None), NOW, "UTC").timing == \
        "fires however late"


def test_an_ended_window_is_no_error() -> None:
    done = task(HOURLY, "completed", next_run_at=None, last_error="active window ended",
                ends_at=NOW - dt.timedelta(hours=1))
    row = schedule_views.task_row(done, NOW, "UTC")
    assert row.error_calm and row.window == "ended Fri 27 Mar, 11:00"
    assert not schedule_views.task_row(task(HOURLY, "error", last_error="boom"), NOW, "UTC").error_calm


def test_an_active_task_whose_window_has_no_occurrence_left_says_so() -> None:
    row = schedule_views.task_row(task(HOURLY, next_run_at=None, ends_at=NOW + dt.timedelta(minutes=30)), NOW, "UTC")
    assert (row.next_rel, row.next_abs, row.can_skip) == ("—", "no occurrence is left before its active window "
                                                          "ends", False)


@pytest.mark.parametrize(("seconds", "words"), [(0, "0 s"), (30, "30 s"), (600, "10 min"), (3600, "1 h"),
                                                (7500, "2 h 5 min"), (86400 + 4 * 3600 + 60, "1 d 4 h")])
def test_duration_words(seconds: int, words: str) -> None:
    assert schedule_notes.duration_words(seconds) == words


# --- the dialog's advanced timing -----------------------------------------------------------------

def test_the_advanced_timing_goes_into_the_body() -> None:
    body = schedule_form.body_of(form(catchup="10", catchup_unit="minutes", jitter="30", timezone=PARIS,
                                      starts="2026-03-30T09:00", ends="2026-04-30T18:30"))
    assert (body["catchup_window_seconds"], body["jitter_seconds"]) == (600, 30)
    assert (body["starts_at"], body["ends_at"]) == ("2026-03-30T07:00:00Z", "2026-04-30T16:30:00Z")
    late = schedule_form.body_of(form(catchup_mode="late", catchup="abc"))
    assert (late["catchup_window_seconds"], late["starts_at"], late["ends_at"]) == (None, None, None)
    assert schedule_form.body_of(form())["catchup_window_seconds"] == 3600  # the default: 1 hour


def test_a_once_task_keeps_its_jitter_and_drops_a_window_typed_before() -> None:
    body = schedule_form.body_of(form(kind="once", at="2026-04-01T09:00", jitter="60", ends="2026-04-30T18:30"))
    assert (body["jitter_seconds"], body["starts_at"], body["ends_at"]) == (60, None, None)


@pytest.mark.parametrize(("changes", "field"), [
    ({"jitter": "1.5"}, "jitter_seconds"), ({"catchup": "soon"}, "catchup_window_seconds"),
    ({"starts": "next monday"}, "starts_at"), ({"ends": "2026-13-01T00:00"}, "ends_at"),
], ids=["jitter", "catch-up", "starts", "ends"])
def test_unreadable_timing_names_the_api_field(changes: dict, field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        schedule_form.body_of(form(**changes))
    assert caught.value.field == field
    assert schedule_form.explain(caught.value).startswith(schedule_form.LABELS[field] + ": ")


def test_an_untouched_edit_of_a_timed_task_sends_nothing() -> None:
    stored = task(NINE_PARIS, jitter_seconds=45, catchup_window_seconds=None,
                  starts_at=dt.datetime(2026, 3, 30, 7, 0, 0, 500, tzinfo=dt.UTC),
                  ends_at=dt.datetime(2026, 4, 30, 16, 30, 15, tzinfo=dt.UTC))
    fields = schedule_form.fields_of(stored, "Asia/Tokyo")
    assert (fields.starts, fields.ends, fields.jitter, fields.catchup_mode) == \
        ("2026-03-30T09:00", "2026-04-30T18:30:15", "45", "late")  # in the cron's own zone
    assert schedule_form.timing_set(fields) and not schedule_form.timing_set(form())
    original = schedule_form.original_of(stored)
    assert schedule_form.patch_of(fields, original) == {}
    assert schedule_form.patch_of(dataclasses.replace(fields, jitter="50"), original) == {"jitter_seconds": 50}


def test_the_pause_form_body() -> None:
    assert schedule_form.pause_body("  ", "", PARIS) == {"note": None, "until": None}
    assert schedule_form.pause_body(" holiday ", "2026-04-06T09:00", PARIS) == \
        {"note": "holiday", "until": "2026-04-06T07:00:00Z"}
    with pytest.raises(InvalidInput) as caught:
        schedule_form.pause_body("", "monday", PARIS)
    assert caught.value.field == "until"


# --- the preview: the times that fire ---------------------------------------------------------------

def test_the_preview_stops_before_the_end_and_starts_at_the_start() -> None:
    ends = dt.datetime(2026, 3, 30, 7, tzinfo=dt.UTC)  # Monday 09:00 Paris: that fire is not in the window
    fires = preview(NINE_PARIS, NOW, 5, ends_at=ends)["fires"]
    assert [f["utc"] for f in fires] == ["2026-03-28T08:00:00Z", "2026-03-29T07:00:00Z"]
    starts = dt.datetime(2026, 3, 28, 9, 30, tzinfo=dt.UTC)
    assert preview(HOURLY, NOW, 2, starts_at=starts)["fires"][0]["utc"] == "2026-03-28T09:30:00Z"
    assert form_check.window_line(starts, ends, NOW, schedule_views.zone_of(PARIS)) == \
        "Starts Sat 28 Mar, 10:30 CET · ends Mon 30 Mar, 09:00 CEST: nothing fires from then on"


def test_an_unsaved_task_shows_each_fire_with_its_spread() -> None:
    fires = preview(NINE_PARIS, NOW, 2, jitter_seconds=30)["fires"]
    assert fires[0] == {"utc": "2026-03-28T08:00:00Z", "local": "2026-03-28T09:00:00+01:00",
                        "nominal": "2026-03-28T08:00:00Z", "latest": "2026-03-28T08:00:30Z"}
    assert form_check.fire_text(fires[0], schedule_views.zone_of(PARIS)) == "Sat 28 Mar, 09:00 – 09:00:30 CET"


def test_a_saved_task_shows_its_exact_jittered_instants() -> None:
    plan = Plan(parse_schedule(NINE_PARIS), jitter_seconds=30, task_id=7)
    fires = preview(NINE_PARIS, NOW, 3, jitter_seconds=30, task_id=7)["fires"]
    nominals = plan.upcoming(NOW, 3)
    assert [f["utc"] for f in fires] == [plan.fire_at(n).isoformat().replace("+00:00", "Z") for n in nominals]
    assert any(f["utc"] != f["nominal"] for f in fires)
    text = form_check.fire_text(fires[0], schedule_views.zone_of(PARIS))
    assert text == f"Sat 28 Mar, {plan.fire_at(nominals[0]).astimezone(schedule_views.zone_of(PARIS)):%H:%M:%S} CET"


def test_the_dialog_previews_the_window_and_says_the_jitter_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    service = TaskService(None, FakeClock(NOW), load_settings({}))  # validate reads no database
    monkeypatch.setattr(form_check, "task_service", lambda: service)
    check = form_check.check_form(form(kind="cron", cron="0 9 * * *", timezone=PARIS, jitter="30",
                                       ends="2026-03-30T09:00"), None, PARIS)
    assert (check.error, len(check.fires)) == ("", 2)
    assert check.fires[0]["local"] == "Sat 28 Mar, 09:00 – 09:00:30 CET"
    assert check.window == "Ends Mon 30 Mar, 09:00 CEST: nothing fires from then on"
    # the smallest gap is 23 h, on the night Paris springs forward; the bound keeps to one line
    assert check.jitter_hint == "At most a tenth of the smallest gap: up to 2\u00a0h\u00a018\u00a0min here"
    too_much = form_check.check_form(form(every="1", every_unit="hours", jitter="400"), None, PARIS)
    assert too_much.error_field == "jitter_seconds" and too_much.error.startswith("Jitter: 400 s is more than")
    assert len(too_much.fires) == 5  # an error in the advanced timing keeps the preview


# --- the timeline -----------------------------------------------------------------------------------

def test_the_timeline_dots_are_the_jittered_fires() -> None:
    plan = Plan(parse_schedule(NINE_PARIS), jitter_seconds=600, task_id=7)
    nominal = plan.next_after(NOW)
    timed = task(NINE_PARIS, jitter_seconds=600, next_run_at=plan.fire_at(nominal), next_occurrence_at=nominal,
                 armed_at=None)
    fires = timeline.upcoming(timed, NOW, NOW + dt.timedelta(days=7), 10)
    assert fires == [plan.fire_at(n) for n in plan.upcoming(NOW, 7)]
    line = timeline.timeline([timed], NOW, "UTC")
    assert line.label == "7 fires" and line.markers[0].label.startswith("standup · Sat 28 Mar, 09:")


# --- found in review --------------------------------------------------------------------------------

@pytest.mark.parametrize(("changes", "field"), [
    ({"jitter": "100000000000"}, "jitter_seconds"), ({"catchup": "999999999", "catchup_unit": "hours"},
                                                     "catchup_window_seconds"),
    ({"kind": "interval", "starts": "9999-12-31T23:30"}, "starts_at"), ({"ends": "1900-01-01T00:00"}, "ends_at"),
], ids=["jitter", "catch-up", "starts", "ends"])
def test_huge_values_are_refused_by_name_never_overflowed(changes: dict, field: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidInput) as caught:
        schedule_form.timing_of(form(**changes))
    assert caught.value.field == field
    service = TaskService(None, FakeClock(NOW), load_settings({}))
    monkeypatch.setattr(form_check, "task_service", lambda: service)
    check = form_check.check_form(form(every="1", every_unit="hours", **changes), None, PARIS)
    assert check.error_field == field  # the live check answers in the dialog; it does not raise
    with pytest.raises(InvalidInput) as caught:
        schedule_form.pause_body("", "9999-12-31T23:30", "America/New_York")
    assert caught.value.field == "until"


def test_an_untouched_end_in_the_repeated_autumn_hour_is_not_sent_back_an_hour_early() -> None:
    ends = dt.datetime(2026, 10, 25, 1, 30, tzinfo=dt.UTC)  # 02:30 CET: the second 02:30 in Paris that night
    stored = task(NINE_PARIS, ends_at=ends)
    fields = schedule_form.fields_of(stored, PARIS)
    assert fields.ends == "2026-10-25T02:30"
    original = schedule_form.original_of(stored)
    assert schedule_form.patch_of(dataclasses.replace(fields, name="renamed"), original) == {"name": "renamed"}
    moved = schedule_form.patch_of(dataclasses.replace(fields, ends="2026-10-25T03:30"), original)
    assert moved == {"ends_at": "2026-10-25T02:30:00Z"}


def test_an_edit_of_only_the_jitter_previews_the_grid_the_task_keeps(monkeypatch: pytest.MonkeyPatch) -> None:
    service = TaskService(None, FakeClock(NOW), load_settings({}))
    monkeypatch.setattr(form_check, "task_service", lambda: service)
    armed = NOW - dt.timedelta(minutes=43)  # 11:17: the hourly grid is :17
    stored = task(HOURLY, armed_at=armed)
    fields = dataclasses.replace(schedule_form.fields_of(stored, "UTC"), jitter="30")
    check = form_check.check_form(fields, schedule_form.original_of(stored), "UTC")
    assert check.error == "" and all(":17" in fire["local"] for fire in check.fires), check.fires


def test_the_timeline_lists_a_last_fire_whose_jitter_passes_the_end() -> None:
    armed = dt.datetime(2026, 3, 27, 9, 17, tzinfo=dt.UTC)
    ends = dt.datetime(2026, 3, 27, 17, 18, tzinfo=dt.UTC)
    plan = Plan(parse_schedule(HOURLY), armed_at=armed, ends_at=ends, jitter_seconds=360, task_id=1)
    nominal = plan.next_after(NOW)
    timed = task(HOURLY, id=1, jitter_seconds=360, armed_at=armed, ends_at=ends, next_run_at=plan.fire_at(nominal),
                 next_occurrence_at=nominal)
    listed = timeline.upcoming(timed, NOW, NOW + dt.timedelta(days=1), 20)
    assert listed == [plan.fire_at(n) for n in plan.upcoming(NOW - dt.timedelta(seconds=1), 20)]
    assert len(listed) == timeline.fire_count(timed, NOW, NOW + dt.timedelta(days=1)) == 6  # 12:17 … 17:17
