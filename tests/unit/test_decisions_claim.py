"""SPEC §3 "The loop": what is due, the claim, overlap, run-now, downtime, guardrails, fire-time
authorization and the busy-chat re-queue — as pure decisions (scheduler/decisions.py).

No database and no clock: "now" is a plain aware UTC instant and the schedule is a fake
``next_after`` that fires every 5 minutes on the 5-minute marks.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from app.schedules.model import Overlap, RunOutcome, TaskStatus, Trigger
from scheduler.decisions import (
    Action,
    Auth,
    Claim,
    Due,
    Facts,
    Limits,
    NextFn,
    TaskView,
    decide_busy,
    decide_claim,
    decide_finish,
    what_is_due,
)

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
STEP = dt.timedelta(minutes=5)
FREE = Facts(chat_busy=False, in_flight=0)
BUSY = Facts(chat_busy=True, in_flight=1)
LIMITS = Limits()


def at(clock: str) -> dt.datetime:
    """An aware UTC instant on the test day, from "HH:MM" or "HH:MM:SS"."""
    return dt.datetime.fromisoformat(f"2025-03-10T{clock}+00:00")


def every_5_minutes(after: dt.datetime) -> dt.datetime:
    """The fake schedule: the next 5-minute mark strictly after ``after``."""
    return EPOCH + ((after - EPOCH) // STEP + 1) * STEP


def no_next_occurrence(after: dt.datetime) -> dt.datetime | None:
    raise AssertionError("a once task has no next occurrence to compute")


BASE = TaskView(status=TaskStatus.ACTIVE, kind="cron", overlap=Overlap.QUEUE_ONE, next_run_at=at("10:05"),
                retry_at=None, pending_run=False, pending_forced=None, pending_occurrence_at=None, run_count=0,
                max_runs=None, active_run_id=None, consecutive_failures=0, last_fire_started_at=None)


def task(**fields: object) -> TaskView:
    return dataclasses.replace(BASE, **fields)


def applied(view: TaskView, changes: dict[str, object], **extra: object) -> TaskView:
    """The task after the store wrote ``changes`` (fields the view does not carry are ignored)."""
    names = {f.name for f in dataclasses.fields(TaskView)}
    return dataclasses.replace(view, **{k: v for k, v in {**changes, **extra}.items() if k in names})


def claim(view: TaskView, now: dt.datetime, facts: Facts = FREE, limits: Limits = LIMITS,
          next_after: NextFn = every_5_minutes) -> Claim:
    return decide_claim(view, now, facts, limits, next_after)


def run_now(view: TaskView, now: dt.datetime, trigger: Trigger = Trigger.RUN_NOW_USER) -> TaskView:
    """What the service writes for a run-now request."""
    return dataclasses.replace(view, pending_run=True, pending_forced=trigger, pending_occurrence_at=now,
                               retry_at=None)


# -- configuration ------------------------------------------------------------------------------

def test_limit_defaults_match_the_spec() -> None:
    assert LIMITS == Limits(min_interval_seconds=60, max_concurrent_runs=4, busy_retry_seconds=15,
                            backoff_seconds=60, backoff_cap_seconds=3600, max_consecutive_failures=5)


def test_fake_schedule_is_aligned_on_five_minute_marks() -> None:
    assert every_5_minutes(at("10:00")) == at("10:05")
    assert every_5_minutes(at("10:04:59")) == at("10:05")
    assert every_5_minutes(at("10:05:00.000001")) == at("10:10")


# -- what is due --------------------------------------------------------------------------------

def test_task_before_its_deadline_is_not_due() -> None:
    assert what_is_due(task(), at("10:04:59")) is None
    assert claim(task(), at("10:04:59")) == Claim(Action.NOTHING)


def test_deadline_reached_is_due_at_its_nominal_instant() -> None:
    assert what_is_due(task(), at("10:05")) == Due(at("10:05"), Trigger.SCHEDULE)
    assert what_is_due(task(), at("10:05:07")) == Due(at("10:05"), Trigger.SCHEDULE)


@pytest.mark.parametrize("status", [TaskStatus.PAUSED, TaskStatus.DRAFT, TaskStatus.COMPLETED,
                                    TaskStatus.EXHAUSTED, TaskStatus.ERROR], ids=str)
def test_paused_task_is_not_due(status: TaskStatus) -> None:
    view = task(status=status, next_run_at=at("09:00"), pending_run=True, pending_occurrence_at=at("09:00"))
    assert what_is_due(view, at("10:05")) is None
    assert claim(view, at("10:05")) == Claim(Action.NOTHING)


def test_pending_follow_up_waits_for_its_retry_time() -> None:
    view = task(pending_run=True, pending_occurrence_at=at("10:00"), retry_at=at("10:01:15"))
    assert what_is_due(view, at("10:01:14")) is None
    assert what_is_due(view, at("10:01:15")) == Due(at("10:00"), Trigger.FOLLOW_UP)


# -- the claim ----------------------------------------------------------------------------------

def test_claim_dispatches_and_advances_deadline_from_now() -> None:
    c = claim(task(run_count=2), at("10:05:07"))
    assert c.action == Action.DISPATCH
    assert c.due == Due(at("10:05"), Trigger.SCHEDULE)
    assert c.changes["run_count"] == 3
    assert c.changes["last_run_status"] == RunOutcome.RUNNING
    assert c.changes["next_run_at"] == at("10:10")
    assert "last_fire_started_at" not in c.changes  # set when the turn really starts (claims.mark_started)


def test_once_task_claim_clears_its_deadline() -> None:
    c = claim(task(kind="once"), at("10:05"), next_after=no_next_occurrence)
    assert c.action == Action.DISPATCH
    assert c.changes["next_run_at"] is None


def test_downtime_fires_once_then_next_from_now() -> None:
    view = task(next_run_at=at("07:00"))  # 3 hours of missed 5-minute occurrences
    c = claim(view, at("10:02:30"))
    assert c.action == Action.DISPATCH
    assert c.due == Due(at("07:00"), Trigger.SCHEDULE)
    assert c.changes["next_run_at"] == at("10:05")
    view = applied(view, c.changes, active_run_id=1)
    view = applied(view, decide_finish(view, Trigger.SCHEDULE, True, "ok", None, at("10:03"), LIMITS).changes)
    assert claim(view, at("10:03")).action == Action.NOTHING  # nothing replayed


def test_max_runs_reached_before_the_claim_exhausts() -> None:
    view = task(run_count=3, max_runs=3, pending_run=True, pending_occurrence_at=at("10:00"))
    c = claim(view, at("10:05"))
    assert c.action == Action.EXHAUST
    assert c.changes["status"] == TaskStatus.EXHAUSTED
    assert c.changes["next_run_at"] is None
    assert c.changes["pending_run"] is False


def test_under_max_runs_dispatches() -> None:
    c = claim(task(run_count=2, max_runs=3), at("10:05"))
    assert c.action == Action.DISPATCH
    assert c.changes["run_count"] == 3


# -- overlap ------------------------------------------------------------------------------------

def test_queue_one_busy_chat_sets_pending_and_advances_deadline() -> None:
    c = claim(task(), at("10:05:01"), BUSY)
    assert c.action == Action.QUEUE
    assert c.changes["pending_run"] is True
    assert c.changes["pending_forced"] is None
    assert c.changes["pending_occurrence_at"] == at("10:05")
    assert c.changes["next_run_at"] == at("10:10")
    assert c.changes["last_run_status"] == RunOutcome.QUEUED
    assert "run_count" not in c.changes


def test_queue_one_behind_its_own_running_claim_keeps_running_status() -> None:
    c = claim(task(active_run_id=7, last_fire_started_at=at("10:00")), at("10:05"), BUSY)
    assert c.action == Action.QUEUE
    assert "last_run_status" not in c.changes


def test_many_missed_occurrences_coalesce_into_one_follow_up() -> None:
    view, actions, dispatched = task(), [], []
    for now, facts in [("10:05", BUSY), ("10:07", BUSY), ("10:10", BUSY), ("10:15", BUSY), ("10:20", BUSY),
                       ("10:25", BUSY), ("10:30", BUSY), ("10:31", FREE), ("10:31:01", FREE)]:
        c = claim(view, at(now), facts)
        view = applied(view, c.changes, active_run_id=9 if c.action == Action.DISPATCH else view.active_run_id)
        actions.append(c.action)
        if c.action == Action.DISPATCH:
            dispatched.append(c.due)
    Q, N = Action.QUEUE, Action.NOTHING
    assert actions == [Q, N, Q, Q, Q, Q, Q, Action.DISPATCH, N]  # 10:07: already queued, nothing to write
    assert dispatched == [Due(at("10:05"), Trigger.FOLLOW_UP)]
    assert view.pending_run is False
    assert view.next_run_at == at("10:35")


def test_follow_up_firing_after_a_deadline_passed_consumes_it() -> None:
    view = task(pending_run=True, pending_occurrence_at=at("10:00"), next_run_at=at("10:05"))
    c = claim(view, at("10:06"))
    assert c.action == Action.DISPATCH
    assert c.due == Due(at("10:00"), Trigger.FOLLOW_UP)
    assert c.changes["next_run_at"] == at("10:10")
    assert c.changes["pending_run"] is False


def test_skip_busy_chat_records_skip_and_advances_deadline() -> None:
    c = claim(task(overlap=Overlap.SKIP), at("10:05:01"), BUSY)
    assert c.action == Action.SKIP
    assert c.due == Due(at("10:05"), Trigger.SCHEDULE)
    assert c.changes == {"next_run_at": at("10:10")}  # no follow-up is queued


def test_deadline_passing_while_follow_up_waits_for_retry_coalesces() -> None:
    view = task(pending_run=True, pending_occurrence_at=at("10:05"), retry_at=at("10:10:30"),
                next_run_at=at("10:10"), run_count=1)
    c = claim(view, at("10:10:05"))
    assert c.action == Action.QUEUE
    assert c.changes["next_run_at"] == at("10:15")
    assert "run_count" not in c.changes and "retry_at" not in c.changes
    view = applied(view, c.changes)
    assert claim(view, at("10:10:29")).action == Action.NOTHING
    c = claim(view, at("10:10:30"))
    assert c.action == Action.DISPATCH and c.due.trigger == Trigger.FOLLOW_UP
    assert c.changes["run_count"] == 2
    assert "next_run_at" not in c.changes  # 10:15 is still ahead


# -- run now ------------------------------------------------------------------------------------

def test_run_now_does_not_move_regular_deadline() -> None:
    c = claim(run_now(task(), at("10:01")), at("10:01"))
    assert c.action == Action.DISPATCH
    assert c.due == Due(at("10:01"), Trigger.RUN_NOW_USER)
    assert "next_run_at" not in c.changes
    assert c.changes["pending_run"] is False and c.changes["pending_forced"] is None


def test_run_now_on_busy_chat_becomes_one_queued_follow_up() -> None:
    view = run_now(task(), at("10:01"))
    c = claim(view, at("10:01"), BUSY)
    assert c.action == Action.QUEUE
    assert c.changes["pending_forced"] == Trigger.RUN_NOW_USER
    assert "next_run_at" not in c.changes
    view = run_now(applied(view, c.changes), at("10:02"))  # asked again: still one follow-up
    view = applied(view, claim(view, at("10:02"), BUSY).changes)
    c = claim(view, at("10:03"))
    assert c.action == Action.DISPATCH and c.due.trigger == Trigger.RUN_NOW_USER
    view = applied(view, c.changes, active_run_id=3)
    assert view.pending_run is False and view.next_run_at == at("10:05")
    assert claim(view, at("10:03"), BUSY).action == Action.NOTHING


@pytest.mark.parametrize("status", [TaskStatus.PAUSED, TaskStatus.COMPLETED], ids=str)
def test_run_now_fires_without_changing_paused_or_completed_status(status: TaskStatus) -> None:
    view = run_now(task(status=status, next_run_at=None), at("10:01"))
    c = claim(view, at("10:01"))
    assert c.action == Action.DISPATCH
    assert "status" not in c.changes and "next_run_at" not in c.changes


def test_deadline_passing_while_run_now_waits_for_busy_chat_coalesces() -> None:
    view = run_now(task(next_run_at=at("10:05")), at("10:01"))
    dispatched = []
    for now, facts in [("10:01", BUSY), ("10:05", BUSY), ("10:07", FREE)]:
        c = claim(view, at(now), facts)
        view = applied(view, c.changes, active_run_id=1 if c.action == Action.DISPATCH else view.active_run_id)
        dispatched += [c.due.trigger] if c.action == Action.DISPATCH else []
    view = applied(view, decide_finish(view, Trigger.RUN_NOW_USER, True, "ok", None, at("10:08"), LIMITS).changes)
    assert claim(view, at("10:08")).action == Action.NOTHING  # the 10:05 occurrence was consumed while busy
    assert dispatched == [Trigger.RUN_NOW_USER]
    assert view.next_run_at == at("10:10")


# -- busy user prompt (PromptAlreadyRunning one layer down) -------------------------------------

def claimed(view: TaskView, now: dt.datetime) -> tuple[TaskView, Due]:
    c = claim(view, now)
    assert c.action == Action.DISPATCH
    return applied(view, c.changes, active_run_id=9), c.due


@pytest.mark.parametrize("retry", [15, 40])
def test_busy_user_prompt_requeues_queue_one_with_retry_after_busy_retry_seconds(retry: int) -> None:
    view, due = claimed(task(run_count=2), at("10:05"))
    outcome, changes = decide_busy(view, due, at("10:05:01"), Limits(busy_retry_seconds=retry))
    assert outcome == RunOutcome.QUEUED
    assert changes["retry_at"] == at("10:05:01") + dt.timedelta(seconds=retry)
    assert changes["pending_run"] is True and changes["pending_occurrence_at"] == at("10:05")
    assert changes["last_run_status"] == RunOutcome.QUEUED
    assert changes["active_run_id"] is None
    assert changes["run_count"] == 2  # nothing ran


def test_busy_user_prompt_fails_skip_task() -> None:
    view, due = claimed(task(overlap=Overlap.SKIP, run_count=2), at("10:05"))
    outcome, changes = decide_busy(view, due, at("10:05:01"), LIMITS)
    assert outcome == RunOutcome.FAILED
    assert changes["last_run_status"] == RunOutcome.FAILED
    assert changes["active_run_id"] is None and changes["run_count"] == 2
    assert not changes.get("pending_run")
    assert claim(applied(view, changes), at("10:05:20")).action == Action.NOTHING  # waits for 10:10


@pytest.mark.parametrize("trigger", [Trigger.RUN_NOW_USER, Trigger.RUN_NOW_AGENT], ids=str)
def test_busy_user_prompt_requeues_run_now_of_skip_task(trigger: Trigger) -> None:
    view, due = claimed(run_now(task(overlap=Overlap.SKIP), at("10:01"), trigger), at("10:01"))
    outcome, changes = decide_busy(view, due, at("10:01"), LIMITS)
    assert outcome == RunOutcome.QUEUED
    assert changes["pending_forced"] == trigger and changes["retry_at"] == at("10:01:15")


def test_busy_retry_fires_after_busy_retry_seconds_despite_floor() -> None:
    view, due = claimed(task(last_fire_started_at=at("09:00")), at("10:05"))
    _, changes = decide_busy(view, due, at("10:05"), LIMITS)
    c = claim(applied(view, changes), at("10:05:15"))
    assert c.action == Action.DISPATCH
    assert c.due == Due(at("10:05"), Trigger.FOLLOW_UP)


def test_busy_user_prompt_fails_once_skip_task_into_error() -> None:
    view, due = claimed(task(kind="once", overlap=Overlap.SKIP), at("10:05"))
    outcome, changes = decide_busy(view, due, at("10:05:01"), LIMITS)
    assert outcome == RunOutcome.FAILED
    assert changes.get("status") == TaskStatus.ERROR


# -- guardrails ---------------------------------------------------------------------------------

def test_global_concurrency_cap_makes_due_tasks_wait() -> None:
    assert claim(task(), at("10:05"), Facts(chat_busy=False, in_flight=4)) == Claim(
        Action.NOTHING, Due(at("10:05"), Trigger.SCHEDULE))  # deadline kept: it fires once a slot frees
    assert claim(task(), at("10:05"), Facts(chat_busy=False, in_flight=3)).action == Action.DISPATCH


def test_zero_concurrency_cap_disables_the_limit() -> None:
    c = claim(task(), at("10:05"), Facts(chat_busy=False, in_flight=1000), Limits(max_concurrent_runs=0))
    assert c.action == Action.DISPATCH


# -- fire-time authorization --------------------------------------------------------------------

@pytest.mark.parametrize("busy", [False, True], ids=["free-chat", "busy-chat"])
def test_permanent_auth_failure_sets_error_with_reason(busy: bool) -> None:
    facts = Facts(chat_busy=busy, in_flight=0, auth=Auth.PERMANENT, auth_reason="the owner lost access")
    c = claim(task(pending_run=True, pending_occurrence_at=at("10:00")), at("10:05"), facts)
    assert c.action == Action.ERROR
    assert c.changes["status"] == TaskStatus.ERROR
    assert c.changes["last_error"] == "the owner lost access"
    assert c.changes["pending_run"] is False


def test_transient_auth_failure_defers_with_retry_at() -> None:
    view = task()
    facts = Facts(chat_busy=False, in_flight=0, auth=Auth.TRANSIENT, auth_reason="directory unavailable")
    c = claim(view, at("10:05"), facts)
    assert c.action == Action.DEFER
    assert "status" not in c.changes
    assert c.changes["retry_at"] > at("10:05")
    assert c.changes["pending_run"] is True and c.changes["pending_occurrence_at"] == at("10:05")
    assert c.changes["last_error"] == "directory unavailable"
    view = applied(view, c.changes)
    assert claim(view, c.changes["retry_at"] - dt.timedelta(seconds=1)).action == Action.NOTHING
    c = claim(view, c.changes["retry_at"])
    assert c.action == Action.DISPATCH and c.due == Due(at("10:05"), Trigger.FOLLOW_UP)


# -- minimum interval at fire time --------------------------------------------------------------

def test_min_interval_floor_defers_to_previous_start_plus_floor() -> None:
    view = task(last_fire_started_at=at("10:04:30"))
    c = claim(view, at("10:05"))
    assert c.action == Action.DEFER
    assert c.changes["retry_at"] == at("10:05:30")
    assert c.changes["pending_occurrence_at"] == at("10:05")
    view = applied(view, c.changes)
    assert claim(view, at("10:05:29")).action == Action.NOTHING
    c = claim(view, at("10:05:30"))
    assert c.action == Action.DISPATCH and c.due == Due(at("10:05"), Trigger.FOLLOW_UP)


def test_fire_exactly_at_the_floor_is_not_deferred() -> None:
    assert claim(task(last_fire_started_at=at("10:04")), at("10:05")).action == Action.DISPATCH


def test_zero_min_interval_disables_the_floor() -> None:
    c = claim(task(last_fire_started_at=at("10:04:59")), at("10:05"), limits=Limits(min_interval_seconds=0))
    assert c.action == Action.DISPATCH


def test_user_run_now_bypasses_floor() -> None:
    c = claim(run_now(task(last_fire_started_at=at("10:00:50")), at("10:01")), at("10:01"))
    assert c.action == Action.DISPATCH


def test_agent_run_now_respects_floor() -> None:
    view = run_now(task(last_fire_started_at=at("10:00:50")), at("10:01"), Trigger.RUN_NOW_AGENT)
    c = claim(view, at("10:01"))
    assert c.action == Action.DEFER
    assert c.changes["retry_at"] == at("10:01:50")
    assert c.changes["pending_forced"] == Trigger.RUN_NOW_AGENT
    assert "next_run_at" not in c.changes
    c = claim(applied(view, c.changes), at("10:01:50"))
    assert c.action == Action.DISPATCH and c.due.trigger == Trigger.RUN_NOW_AGENT
