"""The 7-day timeline, the dialog's next-5 preview and the All schedules rows show the fires that
will happen (issue point: "the timeline misstates what will happen"): every day of a dense task
counted (not cut after 2,016 fires), no more than the runs left, none after the task's end, and
daylight-saving days counted from real instants — pure functions, injected instants."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json

import pytest

from app.schedules import overview, timing
from app.schedules.model import ScheduledTask
from app.schedules.preview import preview
from app.schedules.spec import parse_schedule
from app.ui import all_tasks, form_check, schedule_form, schedule_views, timeline

NOW = dt.datetime(2026, 3, 27, 12, 0, tzinfo=dt.UTC)  # a Friday
EVERY_MINUTE = {"kind": "interval", "every_seconds": 60}
CRON_EVERY_MINUTE = {"kind": "cron", "cron": "* * * * *", "timezone": "UTC"}
ONCE = {"kind": "once", "at": "2026-03-28T08:00:00Z"}
# Fri 12:01 .. 23:59, six whole days, Fri 3 Apr 00:00 .. 12:00 (the window's end included)
WEEK_OF_MINUTES = ["719", "1440", "1440", "1440", "1440", "1440", "1440", "721"]


def task(schedule: dict, status: str = "active", **fields: object) -> ScheduledTask:
    base = {"id": 7, "chat_id": 1, "project_id": 1, "owner": "ann@example.com", "name": "ping",
            "prompt": "check", "schedule": json.dumps(schedule), "status": status,
            "next_run_at": NOW + dt.timedelta(minutes=1), "armed_at": NOW, "created_at": NOW, "updated_at": NOW}
    return ScheduledTask(**{**base, **fields})


def ending(row: ScheduledTask, at: dt.datetime) -> ScheduledTask:
    """``row`` with an end (SPEC §14 ``ends_at``: occurrences exist in ``[starts_at, ends_at)``)."""
    row.ends_at = at
    return row


def bands(line: timeline.Timeline) -> list[timeline.Marker]:
    return [m for m in line.markers if m.width]


def percent(text: str) -> float:
    return float(text.rstrip("%"))


# --- dense tasks: every day counted ------------------------------------------------------------

@pytest.mark.parametrize("schedule", [EVERY_MINUTE, CRON_EVERY_MINUTE], ids=["interval 60 s", "cron * * * * *"])
def test_an_every_minute_task_fills_all_seven_days(schedule: dict) -> None:
    line = timeline.timeline([task(schedule)], NOW, "UTC")
    assert [b.count for b in bands(line)] == WEEK_OF_MINUTES  # not ending on Friday
    assert len(bands(line)) == len(line.markers)
    assert line.label == "10,080 fires"  # the true total, not "2016+"
    assert line.dense == ["ping: every 1 min · 1440/day"]
    assert abs(sum(percent(b.width) for b in bands(line)) - 100) < 0.01  # the bands tile the week


def test_the_viewers_short_day_has_fewer_minutes() -> None:
    line = timeline.timeline([task(CRON_EVERY_MINUTE)], NOW, "Europe/Paris")
    counts = [b.count for b in bands(line)]
    assert counts[2] == "1380" and bands(line)[2].label == "ping · Sun 29 Mar · 1380 fires"  # 23 h in Paris
    assert line.label == "10,080 fires"


def test_the_fires_of_the_week_are_counted_not_listed_fast_enough_for_the_drawer() -> None:
    every_second = task({"kind": "interval", "every_seconds": 1}, next_run_at=NOW + dt.timedelta(seconds=1))
    line = timeline.timeline([every_second], NOW, "UTC")
    assert line.label == "604,800 fires" and bands(line)[1].count == "86,400"
    assert line.dense == ["ping: every 1 s · 86,400/day"]


# --- runs left -----------------------------------------------------------------------------------

def test_one_run_left_is_one_fire_everywhere() -> None:
    last = task(EVERY_MINUTE, max_runs=5, run_count=4)
    line = timeline.timeline([last], NOW, "UTC")
    assert len(line.markers) == 1 and not line.markers[0].width and line.label == "1 fire"
    assert line.markers[0].label == "ping · Fri 27 Mar, 12:01 UTC"
    assert timeline.upcoming(last, NOW, NOW + dt.timedelta(days=7), 5) == [NOW + dt.timedelta(minutes=1)]
    assert timeline.fire_count(last, NOW, NOW + dt.timedelta(days=7)) == 1
    assert len(preview(EVERY_MINUTE, NOW, 5, runs_left=1)["fires"]) == 1
    row = all_tasks._row(overview.Listed(last, "chat", "project"), NOW, "UTC")
    assert (row.coming, row.next_rel) == ("1 fire left", "in 1 min")


def test_three_runs_left_of_an_every_minute_task_are_three_dots() -> None:
    line = timeline.timeline([task(EVERY_MINUTE, max_runs=10, run_count=7)], NOW, "UTC")
    assert len(line.markers) == 3 and not any(m.width for m in line.markers)
    assert line.label == "3 fires" and line.dense == []


def test_runs_left_end_a_band_at_the_last_fire() -> None:
    line = timeline.timeline([task(CRON_EVERY_MINUTE, max_runs=150, run_count=50)], NOW, "UTC")
    assert [b.count for b in bands(line)] == ["100"] and line.label == "100 fires"
    assert bands(line)[0].width == f"{100 / (7 * 24 * 60) * 100:.3f}%"  # 12:00 → the 100th fire at 13:40
    assert line.dense == ["ping: every 1 min · 1440/day · 100 left"]


def test_runs_left_spread_over_days_stop_on_the_day_they_run_out() -> None:
    line = timeline.timeline([task(EVERY_MINUTE, max_runs=5000)], NOW, "UTC")
    assert [b.count for b in bands(line)] == ["719", "1440", "1440", "1401"] and line.label == "5000 fires"
    assert timeline.coming(task(EVERY_MINUTE, max_runs=5000), NOW) == "5000 fires left"


def test_a_task_with_no_runs_left_shows_nothing() -> None:
    used = task(EVERY_MINUTE, max_runs=5, run_count=5)  # still active: its next claim exhausts it
    line = timeline.timeline([used], NOW, "UTC")
    assert (line.markers, line.label) == ([], "no fires")
    assert preview(EVERY_MINUTE, NOW, 5, runs_left=0)["fires"] == []
    row = schedule_views.task_row(used, NOW, "UTC")
    assert (row.next_rel, row.next_when, row.next_abs) == ("—", "", "no runs left: all 5 used")
    assert timeline.coming(used, NOW) == "no runs left"


def test_a_once_task_fires_once() -> None:
    once = task(ONCE, next_run_at=dt.datetime(2026, 3, 28, 8, tzinfo=dt.UTC))
    line = timeline.timeline([once], NOW, "UTC")
    assert len(line.markers) == 1 and line.label == "1 fire"
    assert timeline.coming(once, NOW) == "1 fire in 7 days"
    ran_early = task(ONCE, next_run_at=dt.datetime(2026, 3, 28, 8, tzinfo=dt.UTC), run_count=1)  # a run-now
    assert timeline.timeline([ran_early], NOW, "UTC").label == "1 fire"


def test_an_unbounded_row_counts_its_week() -> None:
    row = all_tasks._row(overview.Listed(task(CRON_EVERY_MINUTE), "chat", "project"), NOW, "UTC")
    assert row.coming == "10,080 fires in 7 days"
    assert all_tasks._row(overview.Listed(task(EVERY_MINUTE, "paused"), "c", "p"), NOW, "UTC").coming == ""


# --- the dialog's next-5 preview ---------------------------------------------------------------

@pytest.mark.parametrize(("max_runs", "run_count", "kind", "left"), [
    ("", 0, "interval", None), ("5", 4, "interval", 1), ("3", 3, "interval", 0), ("abc", 0, "interval", None),
    ("9", 1, "once", None),
], ids=["no limit", "one left", "none left", "max runs being typed", "once: no max runs (saving clears it)"])
def test_the_preview_is_bounded_by_the_runs_left(max_runs: str, run_count: int, kind: str,
                                                 left: int | None) -> None:
    stored = schedule_form.original_of(task(EVERY_MINUTE, max_runs=5, run_count=run_count))
    fields = dataclasses.replace(schedule_form.FormFields(name="ping", prompt="check"), kind=kind,
                                 max_runs=max_runs)
    assert form_check._runs_left(fields, stored) == left
    assert schedule_form.patch_of(schedule_form.fields_of(task(EVERY_MINUTE, max_runs=5), "UTC"), stored) == {}


def test_the_preview_stops_at_an_end() -> None:
    fires = preview(EVERY_MINUTE, NOW, 5, until=NOW + dt.timedelta(minutes=3))["fires"]
    assert [f["utc"] for f in fires] == ["2026-03-27T12:01:00Z", "2026-03-27T12:02:00Z", "2026-03-27T12:03:00Z"]
    assert len(preview(EVERY_MINUTE, NOW, 5, runs_left=9)["fires"]) == 5


# --- an end ----------------------------------------------------------------------------------------

def test_an_end_cuts_the_week() -> None:
    ended = ending(task(EVERY_MINUTE), dt.datetime(2026, 3, 31, 6, tzinfo=dt.UTC))  # Tuesday 06:00
    line = timeline.timeline([ended], NOW, "UTC")
    # the window is [starts_at, ends_at): Tuesday 00:00 .. 05:59, not 06:00 itself
    assert [b.count for b in bands(line)] == ["719", "1440", "1440", "1440", "360"] and line.label == "5399 fires"
    last = bands(line)[-1]
    assert abs(percent(last.left) + percent(last.width) - (3 * 24 + 18) / (7 * 24) * 100) < 0.01
    assert line.dense == ["ping: every 1 min · 1440/day"]
    assert timeline.fire_count(task(EVERY_MINUTE), NOW, NOW + dt.timedelta(days=2)) == 2880  # an explicit until
    assert timeline.upcoming(task(EVERY_MINUTE), NOW, NOW + dt.timedelta(minutes=3), 50)[-1] == \
        NOW + dt.timedelta(minutes=3)


def test_a_task_past_its_end_fires_no_more() -> None:
    ended = ending(task(EVERY_MINUTE), NOW)
    assert timeline.timeline([ended], NOW, "UTC").label == "no fires"
    row = schedule_views.task_row(ended, NOW, "UTC")
    assert (row.next_rel, row.next_abs) == ("—", "its active window has ended")


# --- clock changes: days counted from real instants ---------------------------------------------

SPRING = dt.datetime(2026, 3, 6, 17, tzinfo=dt.UTC)  # Friday noon in New York; summer time begins Sunday 8
FALL = dt.datetime(2026, 10, 30, 16, tzinfo=dt.UTC)  # Friday noon in New York; it ends Sunday 1 November


@pytest.mark.parametrize(("cron", "now", "sunday"), [
    ("0 * * * *", SPRING, 23), ("0 * * * *", FALL, 25),
    ("0,30 0-23 * * *", SPRING, 46), ("0,30 0-23 * * *", FALL, 48),
], ids=["hourly, spring forward", "hourly, fall back", "fixed times, spring forward", "fixed times, fall back"])
def test_a_clock_change_day_counts_its_real_fires(cron: str, now: dt.datetime, sunday: int) -> None:
    schedule = {"kind": "cron", "cron": cron, "timezone": "America/New_York"}
    parsed = parse_schedule(schedule)
    row = task(schedule, next_run_at=timing.next_occurrence(parsed, now))
    line = timeline.timeline([row], now, "America/New_York")
    day = bands(line)[2]
    assert day.label.startswith("ping · Sun ") and day.count == str(sunday)
    zone = schedule_views.zone_of("America/New_York")
    local = (now.astimezone(zone) + dt.timedelta(days=2)).date()
    start = dt.datetime(local.year, local.month, local.day, tzinfo=zone).astimezone(dt.UTC)
    end = dt.datetime(local.year, local.month, local.day + 1, tzinfo=zone).astimezone(dt.UTC)
    listed = timing.next_occurrences(parsed, start - dt.timedelta(seconds=1), 60)
    assert sum(start <= fire < end for fire in listed) == sunday


# --- counting without listing agrees with listing ------------------------------------------------

COUNT_CASES = [
    ("* * * * *", "America/New_York", dt.datetime(2026, 3, 7, 20, tzinfo=dt.UTC), 2),
    ("* * * * *", "America/New_York", dt.datetime(2026, 10, 31, 20, tzinfo=dt.UTC), 2),
    ("*/7 2 * * *", "Europe/Paris", dt.datetime(2026, 3, 28, tzinfo=dt.UTC), 3),
    ("0,59 1,3 * * *", "America/New_York", dt.datetime(2026, 3, 7, tzinfo=dt.UTC), 3),
    ("30 2 * * *", "Europe/Paris", dt.datetime(2026, 10, 24, tzinfo=dt.UTC), 3),
    ("15 1-3 * * *", "Australia/Lord_Howe", dt.datetime(2026, 4, 4, tzinfo=dt.UTC), 3),
    ("*/20 * * * *", "Australia/Lord_Howe", dt.datetime(2026, 10, 3, tzinfo=dt.UTC), 2),
    ("0 9-17 * * 1-5", "Asia/Kolkata", dt.datetime(2026, 3, 27, 5, 17, 31, 250, tzinfo=dt.UTC), 7),
    ("5 0-23/2 13 * 5", "America/Santiago", dt.datetime(2026, 4, 1, tzinfo=dt.UTC), 30),
]


@pytest.mark.parametrize(("expr", "zone", "after", "days"), COUNT_CASES,
                         ids=[f"{expr} {zone}" for expr, zone, _, _ in COUNT_CASES])
def test_counting_cron_fires_matches_listing_them(expr: str, zone: str, after: dt.datetime, days: int) -> None:
    schedule = parse_schedule({"kind": "cron", "cron": expr, "timezone": zone})
    listed = timing.next_occurrences(schedule, after, 5000)
    for hours in range(1, days * 24 + 1, 5):
        until = after + dt.timedelta(hours=hours, seconds=17)
        assert timing.count_occurrences(schedule, after, until) == sum(fire <= until for fire in listed), until


@pytest.mark.parametrize("armed", [None, NOW - dt.timedelta(seconds=37, microseconds=5)], ids=["unarmed", "armed"])
def test_counting_interval_fires_is_arithmetic_on_the_grid(armed: dt.datetime | None) -> None:
    schedule = parse_schedule({"kind": "interval", "every_seconds": 90})
    listed = timing.next_occurrences(schedule, NOW, 2000, armed_at=armed)
    for minutes in (0, 1, 2, 3, 59, 1440, 2999):
        until = NOW + dt.timedelta(minutes=minutes)
        assert timing.count_occurrences(schedule, NOW, until, armed_at=armed) == sum(f <= until for f in listed)
    assert timing.nth_occurrence(schedule, NOW, 700, armed_at=armed) == listed[699]


def test_runs_left() -> None:
    assert (timing.runs_left(None, 9), timing.runs_left(5, 4), timing.runs_left(5, 7)) == (None, 1, 0)
