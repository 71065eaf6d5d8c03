"""SPEC §3 "Fire", "Completion", failure back-off and "Crash recovery" as pure decisions
(scheduler/decisions.py): decide_finish, has_marker, backoff_seconds, decide_abandoned, envelope.

No database and no clock: "now" is a plain aware UTC instant.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from app.core.envelope import Envelope, has_marker
from app.core.envelope import build as envelope
from app.core.envelope import parse as parse_envelope
from app.schedules.model import Overlap, RunOutcome, TaskStatus, Trigger
from scheduler.decisions import (
    Action,
    Facts,
    Limits,
    TaskView,
    backoff_seconds,
    decide_abandoned,
    decide_claim,
    decide_finish,
)

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
STEP = dt.timedelta(minutes=5)
LIMITS = Limits()
FORCED = [Trigger.RUN_NOW_USER, Trigger.RUN_NOW_AGENT]


def at(clock: str) -> dt.datetime:
    """An aware UTC instant on the test day, from "HH:MM" or "HH:MM:SS"."""
    return dt.datetime.fromisoformat(f"2025-03-10T{clock}+00:00")


def every_5_minutes(after: dt.datetime) -> dt.datetime:
    return EPOCH + ((after - EPOCH) // STEP + 1) * STEP


# A task as it stands while its 10:05 fire is in flight: claimed at 10:05, next deadline 10:10.
RUNNING = TaskView(status=TaskStatus.ACTIVE, kind="cron", overlap=Overlap.QUEUE_ONE, next_run_at=at("10:10"),
                   retry_at=None, pending_run=False, pending_forced=None, pending_occurrence_at=None, run_count=1,
                   max_runs=None, active_run_id=9, consecutive_failures=0, last_fire_started_at=at("10:05"))
NOW = at("10:06")


def task(**fields: object) -> TaskView:
    return dataclasses.replace(RUNNING, **fields)


def applied(view: TaskView, changes: dict[str, object]) -> TaskView:
    names = {f.name for f in dataclasses.fields(TaskView)}
    return dataclasses.replace(view, **{k: v for k, v in changes.items() if k in names})


def succeed(view: TaskView, output: str = "status: 3 of 5 done", trigger: Trigger = Trigger.SCHEDULE,
            limits: Limits = LIMITS) -> dict[str, object]:
    return decide_finish(view, trigger, True, output, None, NOW, limits).changes


def fail(view: TaskView, error: str = "provider timed out", output: str = "", trigger: Trigger = Trigger.SCHEDULE,
         limits: Limits = LIMITS) -> dict[str, object]:
    return decide_finish(view, trigger, False, output, error, NOW, limits).changes


# -- what every finish records ------------------------------------------------------------------

def test_success_records_outcome_time_and_releases_the_claim() -> None:
    result = decide_finish(task(), Trigger.SCHEDULE, True, "all good", None, NOW, LIMITS)
    assert result.outcome == RunOutcome.SUCCEEDED
    assert result.changes["last_run_status"] == RunOutcome.SUCCEEDED
    assert result.changes["last_run_at"] == NOW
    assert result.changes["last_error"] is None
    assert result.changes["active_run_id"] is None
    assert "status" not in result.changes and "next_run_at" not in result.changes


def test_failure_records_outcome_and_error() -> None:
    result = decide_finish(task(), Trigger.SCHEDULE, False, "", "provider timed out", NOW, LIMITS)
    assert result.outcome == RunOutcome.FAILED
    assert result.changes["last_run_status"] == RunOutcome.FAILED
    assert result.changes["last_error"] == "provider timed out"
    assert result.changes["active_run_id"] is None
    assert "status" not in result.changes


# -- completion: marker -------------------------------------------------------------------------

@pytest.mark.parametrize("output", [
    "Checked the build.\nSCHEDULE_STATUS=COMPLETE",
    "Checked the build.\nSCHEDULE_STATUS=COMPLETE\n\n  \n",
    "Checked the build.\r\nSCHEDULE_STATUS=COMPLETE\r\n",
    "SCHEDULE_STATUS=COMPLETE",
    "Checked the build.\nTASK_COMPLETE",
    "Checked the build.\nTASK_COMPLETE\n\n",
], ids=["marker", "trailing-blank-lines", "crlf", "marker-only", "legacy", "legacy-trailing-blank"])
def test_marker_completes(output: str) -> None:
    assert has_marker(output)
    changes = succeed(task(pending_run=True, pending_occurrence_at=at("10:05")), output)
    assert changes["status"] == TaskStatus.COMPLETED
    assert changes["next_run_at"] is None
    assert changes["pending_run"] is False


@pytest.mark.parametrize("output", [
    "SCHEDULE_STATUS=COMPLETE\nbut two items remain",
    "TASK_COMPLETE\nnot yet",
    "The goal is complete: SCHEDULE_STATUS=COMPLETE",
    "SCHEDULE_STATUS=COMPLETE.",
    "`SCHEDULE_STATUS=COMPLETE`",
    "schedule_status=complete",
    "SCHEDULE_STATUS=INCOMPLETE",
    "",
    "\n \n",
], ids=["marker-then-text", "legacy-then-text", "inline", "punctuated", "code-span", "lowercase", "other-value",
        "empty", "blank"])
def test_marker_only_counts_as_the_exact_last_non_empty_line(output: str) -> None:
    assert not has_marker(output)
    assert "status" not in succeed(task(), output)


def test_marker_is_not_honoured_when_the_turn_failed() -> None:
    changes = fail(task(), output="SCHEDULE_STATUS=COMPLETE")
    assert "status" not in changes
    assert changes["last_run_status"] == RunOutcome.FAILED


def test_marker_completes_a_run_now_of_an_active_task() -> None:
    assert succeed(task(), "done\nSCHEDULE_STATUS=COMPLETE", Trigger.RUN_NOW_USER)["status"] == TaskStatus.COMPLETED


# -- completion: explicit, forced runs ----------------------------------------------------------

def test_explicit_completion_kept_when_turn_errors() -> None:
    changes = fail(task(status=TaskStatus.COMPLETED, next_run_at=None), "the provider crashed")
    assert "status" not in changes
    assert changes["last_run_status"] == RunOutcome.FAILED
    assert changes["last_error"] == "the provider crashed"


@pytest.mark.parametrize("status", [TaskStatus.PAUSED, TaskStatus.COMPLETED], ids=str)
@pytest.mark.parametrize("trigger", FORCED, ids=str)
@pytest.mark.parametrize("succeeded", [True, False], ids=["succeeded", "failed"])
def test_run_now_on_paused_or_completed_task_keeps_its_status(status: TaskStatus, trigger: Trigger,
                                                             succeeded: bool) -> None:
    view = task(status=status, next_run_at=at("10:10") if status == TaskStatus.PAUSED else None,
                consecutive_failures=4)
    result = decide_finish(view, trigger, succeeded, "done\nSCHEDULE_STATUS=COMPLETE", "boom", NOW, LIMITS)
    assert "status" not in result.changes and "next_run_at" not in result.changes
    assert result.changes["last_run_at"] == NOW
    assert result.changes["last_run_status"] == (RunOutcome.SUCCEEDED if succeeded else RunOutcome.FAILED)


def test_run_now_on_paused_task_fires_and_keeps_paused() -> None:
    view = task(status=TaskStatus.PAUSED, active_run_id=None, run_count=0, last_fire_started_at=None,
                pending_run=True, pending_forced=Trigger.RUN_NOW_USER, pending_occurrence_at=at("10:06"))
    claim = decide_claim(view, NOW, Facts(chat_busy=False, in_flight=0), LIMITS, every_5_minutes)
    assert claim.action == Action.DISPATCH and claim.due.trigger == Trigger.RUN_NOW_USER
    assert "status" not in claim.changes
    view = dataclasses.replace(applied(view, claim.changes), active_run_id=11)
    changes = succeed(view, "done", Trigger.RUN_NOW_USER)
    assert "status" not in changes
    assert applied(view, changes).status == TaskStatus.PAUSED


# -- completion: bounds -------------------------------------------------------------------------

@pytest.mark.parametrize("trigger", [Trigger.SCHEDULE, Trigger.FOLLOW_UP], ids=str)
def test_once_success_completes(trigger: Trigger) -> None:
    changes = succeed(task(kind="once", next_run_at=None), "sent the reminder", trigger)
    assert changes["status"] == TaskStatus.COMPLETED
    assert changes["next_run_at"] is None


def test_once_failure_sets_error() -> None:
    changes = fail(task(kind="once", next_run_at=None), "provider timed out")
    assert changes["status"] == TaskStatus.ERROR
    assert "provider timed out" in changes["last_error"]
    assert changes["last_run_status"] == RunOutcome.FAILED


@pytest.mark.parametrize("succeeded", [True, False], ids=["succeeded", "failed"])
def test_max_runs_reached_exhausts(succeeded: bool) -> None:
    view = task(run_count=3, max_runs=3, pending_run=True, pending_occurrence_at=at("10:05"))
    changes = decide_finish(view, Trigger.SCHEDULE, succeeded, "ok", "boom", NOW, LIMITS).changes
    assert changes["status"] == TaskStatus.EXHAUSTED
    assert changes["next_run_at"] is None
    assert changes["pending_run"] is False


def test_under_max_runs_stays_active() -> None:
    assert "status" not in succeed(task(run_count=2, max_runs=3))


# -- failure back-off ---------------------------------------------------------------------------

BACKOFF = [(1, 60), (2, 120), (3, 240), (4, 480), (5, 960), (6, 1920), (7, 3600), (8, 3600)]


@pytest.mark.parametrize(("k", "seconds"), BACKOFF, ids=[f"k={k}" for k, _ in BACKOFF])
def test_failure_backoff_doubles_up_to_cap(k: int, seconds: int) -> None:
    assert backoff_seconds(k, 60, 3600) == seconds
    limits = Limits(max_consecutive_failures=0)  # isolate the back-off from the error rule
    changes = fail(task(consecutive_failures=k - 1, next_run_at=NOW + dt.timedelta(seconds=1)), limits=limits)
    assert changes["consecutive_failures"] == k
    assert changes["next_run_at"] == NOW + dt.timedelta(seconds=seconds)


def test_no_backoff_without_failures() -> None:
    assert backoff_seconds(0, 60, 3600) == 0


def test_backoff_never_pulls_a_later_deadline_earlier() -> None:
    assert fail(task(next_run_at=at("11:00")))["next_run_at"] == at("11:00")


def test_success_resets_failure_count() -> None:
    changes = succeed(task(consecutive_failures=3))
    assert changes["consecutive_failures"] == 0
    assert "next_run_at" not in changes


def test_five_consecutive_failures_set_error_with_message() -> None:
    assert "status" not in fail(task(consecutive_failures=3))
    changes = fail(task(consecutive_failures=4, pending_run=True, pending_occurrence_at=at("10:05")))
    assert changes["status"] == TaskStatus.ERROR
    assert changes["last_error"] == "paused after 5 consecutive failures"
    assert changes["consecutive_failures"] == 5
    assert changes["next_run_at"] is None and changes["pending_run"] is False


def test_zero_max_consecutive_failures_disables_the_error_rule() -> None:
    assert "status" not in fail(task(consecutive_failures=40), limits=Limits(max_consecutive_failures=0))


def test_failure_backoff_also_holds_back_a_queued_follow_up() -> None:
    # The 10:05 fire ran past 10:10 and failed; the 10:10 occurrence met its own claim and was queued.
    view = task(next_run_at=at("10:15"), pending_run=True, pending_occurrence_at=at("10:10"))
    failed_at = at("10:11")
    view = applied(view, decide_finish(view, Trigger.SCHEDULE, False, "", "boom", failed_at, LIMITS).changes)

    def claim_at(clock: str) -> Action:
        return decide_claim(view, at(clock), Facts(chat_busy=False, in_flight=0), LIMITS, every_5_minutes).action

    assert claim_at("10:11:30") != Action.DISPATCH  # back-off after 1 failure: 60 s
    assert claim_at("10:12") == Action.DISPATCH


# -- crash recovery -----------------------------------------------------------------------------

ABANDONED = "scheduler stopped before the run reported completion"


def test_abandoned_claim_returns_recurring_task_to_active() -> None:
    changes = decide_abandoned(task(), Trigger.SCHEDULE)
    assert changes.get("status", TaskStatus.ACTIVE) == TaskStatus.ACTIVE
    assert changes["active_run_id"] is None
    assert changes["last_run_status"] == RunOutcome.ABANDONED
    assert changes["last_error"] == ABANDONED
    assert not {"pending_run", "retry_at", "next_run_at", "run_count"} & set(changes)  # nothing re-fired


def test_abandoned_claim_of_once_task_sets_error() -> None:
    changes = decide_abandoned(task(kind="once", next_run_at=None), Trigger.SCHEDULE)
    assert changes["status"] == TaskStatus.ERROR
    assert changes["last_error"] == ABANDONED
    assert changes["next_run_at"] is None


def test_abandoned_claim_at_bounds_exhausts() -> None:
    changes = decide_abandoned(task(run_count=3, max_runs=3), Trigger.FOLLOW_UP)
    assert changes["status"] == TaskStatus.EXHAUSTED
    assert changes["next_run_at"] is None
    assert "status" not in decide_abandoned(task(run_count=2, max_runs=3), Trigger.FOLLOW_UP)


@pytest.mark.parametrize("status", [TaskStatus.PAUSED, TaskStatus.COMPLETED], ids=str)
def test_abandoned_run_now_keeps_paused_or_completed_status(status: TaskStatus) -> None:
    changes = decide_abandoned(task(status=status, kind="once"), Trigger.RUN_NOW_USER)
    assert "status" not in changes
    assert changes["last_run_status"] == RunOutcome.ABANDONED and changes["active_run_id"] is None


# -- the envelope -------------------------------------------------------------------------------

SPEC_ENVELOPE = """\
[scheduled task "Nightly triage", fire 3/12]

Triage new issues.
Label them and list the urgent ones.

Continue the standing task from earlier in this chat. If the standing goal
is complete, end your response with exactly:
SCHEDULE_STATUS=COMPLETE

Otherwise, report the current status and what remains. The backend will
manage this schedule."""


def test_envelope_exact_text() -> None:
    text = envelope("Nightly triage", "Triage new issues.\nLabel them and list the urgent ones.", 3, 12)
    assert text == SPEC_ENVELOPE


def test_envelope_of_unbounded_task_shows_infinity() -> None:
    text = envelope("Watch the deploy", "Check the deploy.", 1, None)
    assert text.splitlines()[0] == '[scheduled task "Watch the deploy", fire 1/∞]'
    assert text.splitlines()[2] == "Check the deploy."
    assert text.endswith(SPEC_ENVELOPE.split("Label them and list the urgent ones.\n", 1)[1])


@pytest.mark.parametrize("name, prompt, number, bound", [
    ("Nightly triage", "Triage new issues.\nLabel them.", 3, 12),
    ('say "hi" ] now', "x\n\nwith a blank line", 1, None),
    ("t", "Continue the standing task from earlier in this chat.", 7, 7),
], ids=["bounded", "quotes-and-blank-lines", "prompt-quoting-the-tail"])
def test_an_envelope_parses_back_to_what_built_it(name: str, prompt: str, number: int, bound: int | None) -> None:
    parsed = parse_envelope(envelope(name, prompt, number, bound))
    assert parsed == Envelope(name, number, bound, prompt)
    assert parsed.text() == envelope(name, prompt, number, bound)


@pytest.mark.parametrize("text", ["a plain prompt", '[scheduled task "x", fire 1/2]\n\nno tail', ""])
def test_other_prompts_are_not_envelopes(text: str) -> None:
    assert parse_envelope(text) is None
