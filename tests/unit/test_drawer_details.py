"""Drawer details (issue 15, point 8): the envelope's fire bound, the completion marker hidden from
a reply, the timeline's aggregation of dense schedules, the Schedules button's counts, the next
run's wall time and the last-run wording — pure functions, injected instants."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from app.core import envelope
from app.core.models import Event
from app.schedules.model import ScheduledTask
from app.ui import schedule_views, timeline
from app.ui.transcript import envelope_parts, merge_events

NOW = dt.datetime(2026, 3, 27, 12, 0, tzinfo=dt.UTC)  # a Friday, 13:00 in Paris
EVERY_10_MIN = {"kind": "interval", "every_seconds": 600}
ONCE = {"kind": "once", "at": "2026-03-28T08:00:00Z"}


def task(schedule: dict, status: str = "active", **fields: object) -> ScheduledTask:
    base = {"id": 7, "chat_id": 1, "project_id": 1, "owner": "ann@example.com", "name": "standup",
            "prompt": "collect the news", "schedule": json.dumps(schedule), "status": status,
            "next_run_at": NOW + dt.timedelta(minutes=4), "armed_at": NOW - dt.timedelta(seconds=56),
            "created_at": NOW, "updated_at": NOW}
    return ScheduledTask(**{**base, **fields})


# --- the envelope: fire k/N -------------------------------------------------------------------

@pytest.mark.parametrize(("max_runs", "once", "label"), [
    (None, True, "1/1"), (5, True, "1/1"), (None, False, "1/∞"), (12, False, "1/12"),
], ids=["once", "once with a limit", "recurring without limit", "recurring with max_runs"])
def test_the_envelope_says_how_many_fires_a_task_has(max_runs: int | None, once: bool, label: str) -> None:
    text = envelope.build("standup", "collect the news", 1, envelope.fire_bound(max_runs, once))
    assert text.startswith(f'[scheduled task "standup", fire {label}]\n\n')
    assert envelope_parts(text) == ("standup", label, "collect the news")


def test_a_later_fire_of_a_bounded_task_reads_k_of_n() -> None:
    parsed = envelope.parse(envelope.build("standup", "go", 3, envelope.fire_bound(12, once=False)))
    assert parsed is not None and (parsed.fire_number, parsed.max_runs, parsed.fire_label) == (3, 12, "3/12")


def test_the_fire_a_claim_makes_of_a_once_task_says_1_of_1() -> None:
    from scheduler import claims

    assert claims._fire_bound(task(ONCE), 1) == 1
    assert claims._fire_bound(task(ONCE), 2) == 2  # after a run-now before its time: 2/2, not 2/1
    assert claims._fire_bound(task(EVERY_10_MIN), 1) is None
    assert claims._fire_bound(task(EVERY_10_MIN, max_runs=4), 1) == 4


# --- the completion marker --------------------------------------------------------------------

@pytest.mark.parametrize(("reply", "body", "tail"), [
    ("Done.\nSCHEDULE_STATUS=COMPLETE", "Done.\n", "SCHEDULE_STATUS=COMPLETE"),
    ("Done.\nSCHEDULE_STATUS=COMPLETE\n\n", "Done.\n", "SCHEDULE_STATUS=COMPLETE\n\n"),
    ("Done.\n  TASK_COMPLETE  ", "Done.\n", "  TASK_COMPLETE  "),
    ("SCHEDULE_STATUS=COMPLETE", "", "SCHEDULE_STATUS=COMPLETE"),
    ("SCHEDULE_STATUS=COMPLETE\nmore to do", "SCHEDULE_STATUS=COMPLETE\nmore to do", ""),
    ("Not yet: SCHEDULE_STATUS=COMPLETE", "Not yet: SCHEDULE_STATUS=COMPLETE", ""),
    ("", "", ""),
], ids=["last line", "trailing blank lines", "legacy marker", "marker only", "not last", "inside a line", "empty"])
def test_the_marker_is_split_off_only_when_it_completes_the_task(reply: str, body: str, tail: str) -> None:
    assert envelope.split_marker(reply) == (body, tail)
    assert envelope.has_marker(reply) == bool(tail)  # the scheduler's rule and the display agree


def _text_events(*chunks: str) -> list[Event]:
    return [Event(id=index + 1, chat_id=1, run_id=5, type="assistant_text", text=chunk)
            for index, chunk in enumerate(chunks)]


def test_a_reply_ending_with_the_marker_shows_without_it_and_is_flagged() -> None:
    rows = merge_events([], _text_events("Demo agent here. ", "Done.", "\nSCHEDULE_STATUS=COMPLETE"))
    assert len(rows) == 1
    assert (rows[0]["text"], rows[0]["marker"]) == ("Demo agent here. Done.\n", "SCHEDULE_STATUS=COMPLETE")


def test_a_streamed_marker_followed_by_more_text_comes_back() -> None:
    rows = merge_events([], _text_events("Done.\nSCHEDULE_STATUS=COMPLETE"))
    assert rows[0]["marker"]
    rows = merge_events(rows, _text_events("\nactually, one more thing"))
    assert (rows[0]["text"], rows[0]["marker"]) == ("Done.\nSCHEDULE_STATUS=COMPLETE\nactually, one more thing", "")


def test_other_events_keep_a_marker_line_as_it_is() -> None:
    event = Event(id=1, chat_id=1, run_id=None, type="user_prompt", text="say\nSCHEDULE_STATUS=COMPLETE")
    row = merge_events([], [event])[0]
    assert (row["text"], row["marker"]) == ("say\nSCHEDULE_STATUS=COMPLETE", "")


# --- the 7-day timeline -----------------------------------------------------------------------

def test_a_dense_schedule_is_aggregated_per_day_with_a_readable_cadence() -> None:
    line = timeline.timeline([task(EVERY_10_MIN, armed_at=NOW, next_run_at=NOW + dt.timedelta(minutes=10))],
                             NOW, "Europe/Paris")
    bands = [m for m in line.markers if m.width]
    assert bands and len(bands) == len(line.markers)  # no dots at all
    assert sum(int(b.count) for b in bands) == 1008 and line.label == "1008 fires"
    # the six whole local days; Sunday 29 March has 23 hours in Paris (summer time begins)
    assert [b.count for b in bands[1:-1]] == ["144", "138", "144", "144", "144", "144"]
    assert line.dense == ["standup: every 10 min · 144/day"]
    assert bands[1].label == "standup · Sat 28 Mar · 144 fires"
    lefts = [float(b.left.rstrip("%")) for b in bands]
    widths = [float(b.width.rstrip("%")) for b in bands]
    assert lefts[0] == 0 and abs(sum(widths) - 100) < 0.01  # the bands tile the week


def test_a_dense_cron_reads_its_even_period() -> None:
    every_30 = task({"kind": "cron", "cron": "*/30 * * * *", "timezone": "UTC"},
                    next_run_at=NOW + dt.timedelta(minutes=30))
    assert timeline.timeline([every_30], NOW, "UTC").dense == ["standup: every 30 min · 48/day"]
    uneven = task({"kind": "cron", "cron": "0,10 * * * *", "timezone": "UTC"},
                  next_run_at=NOW + dt.timedelta(hours=1))
    assert timeline.timeline([uneven], NOW, "UTC").dense == ["standup: 48/day"]  # 336 fires in 7 days


def test_a_sparse_schedule_keeps_one_dot_per_fire() -> None:
    daily = task({"kind": "cron", "cron": "0 9 * * *", "timezone": "Europe/Paris"},
                 next_run_at=dt.datetime(2026, 3, 28, 8, tzinfo=dt.UTC))
    line = timeline.timeline([daily], NOW, "Europe/Paris")
    assert len(line.markers) == 7 and not any(m.width for m in line.markers) and line.dense == []


def test_the_dot_threshold_is_the_boundary() -> None:
    every = 7 * 86400 // timeline.DOTS_PER_TASK
    at_limit = task({"kind": "interval", "every_seconds": every}, next_run_at=NOW + dt.timedelta(seconds=every))
    assert not any(m.width for m in timeline.timeline([at_limit], NOW, "UTC").markers)
    over = task({"kind": "interval", "every_seconds": every - 600}, next_run_at=NOW + dt.timedelta(seconds=every))
    assert all(m.width for m in timeline.timeline([over], NOW, "UTC").markers)


@pytest.mark.parametrize(("seconds", "text"), [(600, "10 min"), (7200, "2 h"), (90, "90 s"), (5400, "90 min")])
def test_period_text(seconds: int, text: str) -> None:
    assert timeline.period_text(seconds) == text


# --- the Schedules button's counts ------------------------------------------------------------

def test_the_button_counts_tasks_in_play_and_drafts_to_arm() -> None:
    statuses = ["active", "draft", "draft", "paused", "error", "completed", "exhausted"]
    assert schedule_views.live_and_drafts([task(EVERY_10_MIN, status) for status in statuses]) == (5, 2)
    assert schedule_views.live_and_drafts([task(EVERY_10_MIN, "completed")]) == (0, 0)
    assert schedule_views.live_and_drafts([]) == (0, 0)


# --- next run and last run --------------------------------------------------------------------

@pytest.mark.parametrize(("next_at", "viewer", "rel", "when"), [
    (NOW + dt.timedelta(hours=13), "Europe/Paris", "in 13 h", "Sat 02:00"),
    (NOW + dt.timedelta(minutes=4), "UTC", "in 4 min", "Fri 12:04"),
    (NOW + dt.timedelta(days=9), "UTC", "in 9 days", "Sun 5 Apr, 12:00"),
], ids=["tomorrow in the viewer's zone", "soon", "beyond a week"])
def test_next_run_shows_its_wall_time_too(next_at: dt.datetime, viewer: str, rel: str, when: str) -> None:
    row = schedule_views.task_row(task(EVERY_10_MIN, next_run_at=next_at), NOW, viewer)
    assert (row.next_rel, row.next_when) == (rel, when)


def test_a_cron_tasks_next_run_is_in_its_own_zone_named_when_not_the_viewers() -> None:
    cron = task({"kind": "cron", "cron": "0 9 * * *", "timezone": "Europe/Paris"},
                next_run_at=dt.datetime(2026, 3, 28, 8, tzinfo=dt.UTC))
    assert schedule_views.task_row(cron, NOW, "Europe/Paris").next_when == "Sat 09:00"
    assert schedule_views.task_row(cron, NOW, "Asia/Tokyo").next_when == "Sat 09:00 CET"


def test_no_next_run_has_no_wall_time() -> None:
    row = schedule_views.task_row(task(EVERY_10_MIN, "paused"), NOW, "UTC")
    assert (row.next_rel, row.next_when) == ("—", "")


@pytest.mark.parametrize(("fields", "rel", "status"), [
    ({}, "never", ""),
    ({"last_run_status": "running", "active_run_id": 3}, "running now", ""),
    ({"last_run_status": "running", "active_run_id": 4, "last_run_at": NOW - dt.timedelta(hours=2)},
     "running now", ""),
    ({"last_run_status": "queued"}, "", "queued"),
    ({"last_run_status": "succeeded", "last_run_at": NOW - dt.timedelta(minutes=2)}, "2 min ago", "succeeded"),
], ids=["never ran", "first fire running", "a later fire running", "first fire queued", "ran"])
def test_the_last_run_cell_reads_plainly(fields: dict, rel: str, status: str) -> None:
    row = schedule_views.task_row(task(EVERY_10_MIN, **fields), NOW, "UTC")
    assert (row.last_rel, row.last_status) == (rel, status)
    assert f"{row.last_rel} {row.last_status}".strip() != "never running"


def test_a_once_task_counts_its_runs_out_of_one() -> None:
    assert schedule_views.task_row(task(ONCE), NOW, "UTC").runs == "0 / 1"
    assert schedule_views.task_row(task(ONCE, run_count=2), NOW, "UTC").runs == "2 / 2"
    assert schedule_views.task_row(task(EVERY_10_MIN), NOW, "UTC").runs == "0 / ∞"


def test_a_midnight_at_the_very_end_of_the_week_keeps_its_line_but_not_its_label() -> None:
    late = dt.datetime(2026, 3, 27, 22, 30, tzinfo=dt.UTC)  # 23:30 in Paris; summer time starts on the 29th
    ticks = timeline.day_ticks(late, schedule_views.zone_of("Europe/Paris"))
    assert [t.label for t in ticks] == ["Sat 28", "Sun 29", "Mon 30", "Tue 31", "Wed 1", "Thu 2", "Fri 3", ""]
    assert ticks[-1].left == "99.702%"  # Saturday's midnight, 30 min before the window ends: no room for "Sat 4"
