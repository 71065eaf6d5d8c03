"""A fire a user stopped (SPEC §16): a failed run that is not the agent's failure — it neither counts
towards the consecutive failures that pause a task nor delays the next fire (scheduler/decisions.py)."""

from __future__ import annotations

import dataclasses

from app.schedules.model import RunOutcome, TaskStatus, Trigger
from scheduler.decisions import Limits, decide_finish
from tests.unit.test_decisions_finish import NOW, RUNNING, at

STOPPED = "stopped by someone@example.com"


def test_a_stopped_fire_is_failed_without_counting_or_back_off() -> None:
    task = dataclasses.replace(RUNNING, consecutive_failures=4)  # one more agent failure would pause it
    result = decide_finish(task, Trigger.SCHEDULE, False, "", STOPPED, NOW, Limits(max_consecutive_failures=5))
    assert result.outcome == RunOutcome.FAILED
    assert result.changes["consecutive_failures"] == 4 and result.changes["last_error"] == STOPPED
    assert "status" not in result.changes and "next_run_at" not in result.changes  # no pause, no back-off


def test_an_agent_failure_still_counts_and_backs_off() -> None:
    task = dataclasses.replace(RUNNING, consecutive_failures=4)
    result = decide_finish(task, Trigger.SCHEDULE, False, "", "exit 1", NOW, Limits(max_consecutive_failures=5))
    assert result.changes["consecutive_failures"] == 5 and result.changes["status"] == TaskStatus.ERROR


def test_a_stopped_once_task_ends_in_error_as_any_failed_single_run() -> None:
    task = dataclasses.replace(RUNNING, kind="once", next_run_at=None)
    result = decide_finish(task, Trigger.SCHEDULE, False, "", STOPPED, at("10:06"), Limits())
    assert result.changes["status"] == TaskStatus.ERROR
    assert result.changes["last_error"] == f"the single run failed: {STOPPED}"
