"""SPEC §14 as pure decisions with a fake clock: the catch-up window, jitter, the active window and
a pause's end (app/schedules/plan.py, scheduler/decisions.py)."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from app.schedules.model import Overlap, RunOutcome, TaskStatus, Trigger
from app.schedules.plan import Plan, jitter_offset
from app.schedules.spec import parse_schedule
from scheduler.decisions import (
    Action,
    Due,
    Facts,
    Limits,
    TaskView,
    decide_claim,
    decide_finish,
)

UTC = dt.UTC
HOURLY = parse_schedule({"kind": "cron", "cron": "0 * * * *", "timezone": "UTC"})
EVERY_10_MIN = parse_schedule({"kind": "interval", "every_seconds": 600})
FREE = Facts(chat_busy=False, in_flight=0)
BUSY = Facts(chat_busy=True, in_flight=1)
LIMITS = Limits(min_interval_seconds=60, max_concurrent_runs=4)


def at(hhmmss: str, day: int = 2) -> dt.datetime:
    h, m, *s = (int(x) for x in hhmmss.split(":"))
    return dt.datetime(2026, 3, day, h, m, s[0] if s else 0, tzinfo=UTC)


HOURLY_PLAN = Plan(HOURLY, armed_at=at("08:30"))
BASE = TaskView(status=TaskStatus.ACTIVE, kind="cron", overlap=Overlap.QUEUE_ONE, next_run_at=at("09:00"),
                retry_at=None, pending_run=False, pending_forced=None, pending_occurrence_at=None, run_count=0,
                max_runs=None, active_run_id=None, consecutive_failures=0, last_fire_started_at=None,
                task_id=7, catchup_window_seconds=3600)


def task(**fields: object) -> TaskView:
    return dataclasses.replace(BASE, **fields)


def claim(view: TaskView, now: dt.datetime, facts: Facts = FREE, plan: Plan = HOURLY_PLAN):
    return decide_claim(view, now, facts, LIMITS, plan)


# -- the catch-up window -------------------------------------------------------------------------


def test_exactly_at_the_window_still_fires_one_second_past_is_missed() -> None:
    assert claim(task(), at("10:00:00")).action == Action.DISPATCH
    c = claim(task(), at("10:00:01"))
    assert c.action == Action.MISS
    assert c.due == Due(at("09:00"), Trigger.SCHEDULE) and c.missed_count == 1
    assert c.note == "missed by 1 h (catch-up window 1 h)"
    # the 10:00 occurrence is 1 s late, inside the window: it is next, and fires at once
    assert c.changes == {"last_run_status": RunOutcome.MISSED, "next_run_at": at("10:00")}


def test_downtime_of_hours_is_one_missed_record_for_every_occurrence_then_the_task_moves_on() -> None:
    c = claim(task(), at("17:20"))
    assert (c.action, c.missed_count) == (Action.MISS, 8)  # 09:00 … 16:00 are more than an hour late
    assert c.note == "8 occurrences missed, the first by 8 h 20 min (catch-up window 1 h)"
    assert c.changes["next_run_at"] == at("17:00")  # 20 min late: inside the window, fires now
    again = claim(task(next_run_at=at("17:00")), at("17:20"))
    assert again.action == Action.DISPATCH and again.changes["next_run_at"] == at("18:00")


def test_unbounded_window_fires_however_late() -> None:
    c = claim(task(catchup_window_seconds=None), at("23:00", day=5))
    assert c.action == Action.DISPATCH and c.due.occurrence_at == at("09:00")


def test_a_once_task_found_too_late_is_an_error_that_says_by_how_much() -> None:
    once = Plan(parse_schedule({"kind": "once", "at": "2026-03-02T09:00:00Z"}))
    c = claim(task(kind="once"), at("17:02:30"), plan=once)
    assert c.action == Action.MISS and c.missed_count == 1
    assert c.changes["status"] == TaskStatus.ERROR and c.changes["next_run_at"] is None
    assert c.changes["last_error"] == "missed by 8 h 2 min (catch-up window 1 h)"


def test_run_now_is_never_missed() -> None:
    view = task(next_run_at=at("12:00"), pending_run=True, pending_forced=Trigger.RUN_NOW_USER,
                pending_occurrence_at=at("09:00"))
    c = claim(view, at("11:30"))
    assert c.action == Action.DISPATCH and c.due.trigger == Trigger.RUN_NOW_USER


def test_a_follow_up_queued_behind_a_long_busy_chat_is_missed_and_dropped() -> None:
    view = task(next_run_at=at("10:00"), pending_run=True, pending_occurrence_at=at("09:00"))
    assert claim(view, at("09:59:59"), BUSY).action == Action.NOTHING  # still queued, inside the window
    c = claim(view, at("10:00:01"), BUSY)
    assert c.action == Action.MISS and c.due.trigger == Trigger.FOLLOW_UP
    assert c.missed_count == 1  # it stood for 09:00; 10:00 is its own deadline, inside the window
    assert c.changes == {"last_run_status": RunOutcome.MISSED, "pending_run": False, "pending_forced": None,
                         "pending_occurrence_at": None, "retry_at": None}


def test_a_missed_follow_up_keeps_the_folded_deadlines_that_are_still_on_time() -> None:
    # 09:00 queued behind a busy chat; 10:00 passed meanwhile and was folded into it (next is 11:00)
    view = task(next_run_at=at("11:00"), pending_run=True, pending_occurrence_at=at("09:00"))
    c = claim(view, at("10:30"), BUSY)
    assert c.action == Action.MISS and c.missed_count == 1
    assert c.changes == {"last_run_status": RunOutcome.MISSED, "pending_occurrence_at": at("10:00"),
                         "retry_at": None}  # still queued, now for 10:00 (30 min late)
    folded_all = task(next_run_at=at("13:00"), pending_run=True, pending_occurrence_at=at("09:00"))
    c = claim(folded_all, at("12:30"), BUSY)
    assert c.changes["pending_occurrence_at"] == at("12:00") and c.missed_count == 3


def test_a_once_task_whose_queued_fire_is_missed_is_an_error_not_left_active() -> None:
    once = Plan(parse_schedule({"kind": "once", "at": "2026-03-02T09:00:00Z"}))
    view = task(kind="once", next_run_at=None, pending_run=True, pending_occurrence_at=at("09:00"))
    c = claim(view, at("10:30"), BUSY, plan=once)
    assert c.action == Action.MISS
    assert (c.changes["status"], c.changes["pending_run"]) == (TaskStatus.ERROR, False)
    assert c.changes["last_error"] == "missed by 1 h 30 min (catch-up window 1 h)"


def test_a_run_in_flight_at_the_windows_end_keeps_the_reason() -> None:
    ended = task(status=TaskStatus.COMPLETED, last_error="active window ended", active_run_id=9, next_run_at=None)
    done = decide_finish(ended, Trigger.SCHEDULE, True, "ok", None, at("14:01"), LIMITS)
    assert "last_error" not in done.changes and "status" not in done.changes


def test_a_window_that_ends_while_the_fire_waits_for_a_free_slot() -> None:
    full = Facts(chat_busy=False, in_flight=4)
    assert claim(task(), at("09:30"), full).action == Action.NOTHING  # waits for the global cap
    assert claim(task(), at("10:00:01"), full).action == Action.MISS  # its window ended in the queue


def test_lateness_counts_from_the_jittered_instant() -> None:
    view = task(next_run_at=at("09:00:20"), next_occurrence_at=at("09:00"))
    assert claim(view, at("10:00:15")).action == Action.DISPATCH  # 3,595 s after its fire instant
    c = claim(view, at("10:00:21"))
    assert c.action == Action.MISS and c.due == Due(at("09:00"), Trigger.SCHEDULE, planned_at=at("09:00:20"))


# -- jitter ----------------------------------------------------------------------------------------


def test_jitter_is_deterministic_bounded_and_spread_across_tasks() -> None:
    offsets = [jitter_offset(task_id, at("09:00"), 30).total_seconds() for task_id in range(1, 1001)]
    assert offsets == [jitter_offset(task_id, at("09:00"), 30).total_seconds() for task_id in range(1, 1001)]
    assert min(offsets) >= 0 and max(offsets) < 30
    buckets = [sum(1 for x in offsets if k * 3 <= x < (k + 1) * 3) for k in range(10)]
    assert min(buckets) > 60, buckets  # about 100 per 3-second slice: spread, not a crowd
    assert jitter_offset(1, at("09:00"), 30) != jitter_offset(1, at("10:00"), 30)  # per occurrence too
    assert jitter_offset(1, at("09:00"), 0) == dt.timedelta(0)


def test_a_jittered_fire_keeps_its_nominal_instant_and_the_next_is_jittered_too() -> None:
    plan = Plan(HOURLY, armed_at=at("08:30"), jitter_seconds=300, task_id=7)
    fire = plan.fire_at(at("09:00"))
    assert at("09:00") <= fire < at("09:05")
    view = task(next_run_at=fire, next_occurrence_at=at("09:00"))
    assert claim(view, fire - dt.timedelta(milliseconds=1), plan=plan).action == Action.NOTHING
    c = claim(view, fire, plan=plan)
    assert c.action == Action.DISPATCH and c.due.occurrence_at == at("09:00") and c.due.planned == fire
    assert c.changes["next_run_at"] == plan.fire_at(at("10:00"))
    assert c.changes["next_occurrence_at"] == at("10:00")


# -- the active window -----------------------------------------------------------------------------


def test_window_bounds_the_occurrences_start_included_end_excluded() -> None:
    plan = Plan(HOURLY, armed_at=at("08:30"), starts_at=at("11:00"), ends_at=at("14:00"))
    assert plan.upcoming(at("08:30"), 10) == [at("11:00"), at("12:00"), at("13:00")]
    assert plan.next_after(at("13:00")) is None
    assert plan.count(at("00:00"), at("23:00")) == 3


def test_an_interval_with_a_future_start_fires_first_at_the_start() -> None:
    plan = Plan(EVERY_10_MIN, armed_at=at("08:03"), starts_at=at("09:00"))
    assert plan.upcoming(at("08:03"), 3) == [at("09:00"), at("09:10"), at("09:20")]
    resumed = plan.rearmed(at("09:25"))  # a start already passed: the grid is the arming instant's
    assert resumed.next_after(at("09:25")) == at("09:35")


def test_the_task_completes_when_its_window_ends() -> None:
    view = task(next_run_at=None, ends_at=at("14:00"))
    assert claim(view, at("13:59:59")).action == Action.NOTHING
    c = claim(view, at("14:00"))
    assert c.action == Action.END
    assert c.changes == {"status": TaskStatus.COMPLETED, "last_error": "active window ended", "next_run_at": None,
                         "pending_run": False, "pending_occurrence_at": None, "retry_at": None}


def test_a_window_that_ends_mid_queue_drops_the_follow_up_but_not_a_run_now() -> None:
    queued = task(next_run_at=None, ends_at=at("14:00"), pending_run=True, pending_occurrence_at=at("13:00"))
    c = claim(queued, at("14:00:05"), BUSY)
    assert c.action == Action.END and c.changes["pending_run"] is False
    forced = dataclasses.replace(queued, pending_forced=Trigger.RUN_NOW_USER)
    c = claim(forced, at("14:00:05"), BUSY)
    assert c.action == Action.END and "pending_run" not in c.changes  # the user's run-now still fires
    after = dataclasses.replace(forced, status=TaskStatus.COMPLETED)
    assert claim(after, at("14:00:06")).action == Action.DISPATCH


def test_an_occurrence_inside_the_window_whose_jitter_passes_the_end_still_fires() -> None:
    view = task(next_run_at=at("14:00:10"), next_occurrence_at=at("13:59:55"), ends_at=at("14:00"))
    assert claim(view, at("14:00:05")).action == Action.NOTHING
    assert claim(view, at("14:00:10")).action == Action.DISPATCH


# -- a pause's end ---------------------------------------------------------------------------------


def test_a_timed_pause_resumes_itself_from_then_without_replaying() -> None:
    view = task(status=TaskStatus.PAUSED, next_run_at=at("09:00"), paused_until=at("12:30"))
    assert claim(view, at("12:29:59")).action == Action.NOTHING
    c = claim(view, at("12:30"))
    assert c.action == Action.RESUME and c.note == "resumed (paused until 2026-03-02 12:30 UTC)"
    assert c.changes == {"status": TaskStatus.ACTIVE, "armed_at": at("12:30"), "paused_until": None,
                         "pause_note": None, "paused_by": None, "consecutive_failures": 0, "retry_at": None,
                         "next_run_at": at("13:00")}


def test_pause_until_while_a_fire_runs_keeps_the_claim_and_the_fire_finishes_normally() -> None:
    running = task(status=TaskStatus.PAUSED, paused_until=at("12:30"), active_run_id=41, run_count=3,
                   next_run_at=at("12:00"))
    c = claim(running, at("12:30"))
    assert c.action == Action.RESUME and "active_run_id" not in c.changes
    resumed = dataclasses.replace(running, status=TaskStatus.ACTIVE, next_run_at=at("13:00"), paused_until=None)
    finish = decide_finish(resumed, Trigger.SCHEDULE, True, "done", None, at("12:31"), LIMITS)
    assert finish.outcome == RunOutcome.SUCCEEDED and "status" not in finish.changes
    assert finish.changes["active_run_id"] is None


def test_a_pause_that_ends_after_the_window_completes_the_task() -> None:
    view = task(status=TaskStatus.PAUSED, paused_until=at("15:00"), ends_at=at("14:00"))
    plan = Plan(HOURLY, armed_at=at("08:30"), ends_at=at("14:00"))
    c = claim(view, at("15:00"), plan=plan)
    assert c.action == Action.RESUME
    assert (c.changes["status"], c.changes["last_error"]) == (TaskStatus.COMPLETED, "active window ended")


@pytest.mark.parametrize(("cutoff", "missed", "first_on_time"), [
    (at("12:00"), 3, at("12:00")),  # exactly at the cutoff: on time
    (at("12:00:01"), 4, at("13:00")),
])
def test_first_on_time_edges(cutoff: dt.datetime, missed: int, first_on_time: dt.datetime) -> None:
    assert HOURLY_PLAN.first_on_time(at("09:00"), cutoff) == (missed, first_on_time)
