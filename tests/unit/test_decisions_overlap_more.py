"""SPEC §19's overlap policies as pure decisions (scheduler/decisions.py): ``queue_all`` gives every
regular deadline its own place in line (beyond ``queue_cap``: skipped, "queue full"), also while a
follow-up waits; ``replace`` supersedes the task's own fire in flight and waits like ``queue_one``
behind anyone else's turn; neither ever turns a busy chat into a skip or a failure; a superseded
fire is neither a failure nor a success of its task."""

from __future__ import annotations

import dataclasses

import pytest

from app.schedules.model import Overlap, RunOutcome, TaskStatus, Trigger
from scheduler.decisions import QUEUE_FULL, Action, Facts, decide_busy, decide_superseded
from tests.unit.test_decisions_claim import BUSY, LIMITS, at, claim, claimed, task


def busy_with(in_line: int) -> Facts:
    return dataclasses.replace(BUSY, in_line=in_line)


@pytest.mark.parametrize(("in_line", "action", "note"), [(0, Action.ENQUEUE, None), (2, Action.ENQUEUE, None),
                                                         (3, Action.SKIP, QUEUE_FULL)],
                         ids=["empty line", "two waiting", "line full"])
def test_queue_all_gives_a_deadline_its_own_place_in_line(in_line: int, action: Action, note: str | None) -> None:
    c = claim(task(overlap=Overlap.QUEUE_ALL, queue_cap=3, active_run_id=7), at("10:05:01"), busy_with(in_line))
    assert (c.action, c.note, c.due.occurrence_at, c.due.trigger) == (action, note, at("10:05"), Trigger.SCHEDULE)
    assert c.changes["next_run_at"] == at("10:10")  # the deadline is consumed either way


def test_queue_all_deadline_is_not_folded_into_a_waiting_follow_up() -> None:
    waiting = task(overlap=Overlap.QUEUE_ALL, pending_run=True, pending_occurrence_at=at("10:01"),
                   pending_forced=Trigger.HOOK, active_run_id=7)
    c = claim(waiting, at("10:05:01"), busy_with(1))
    assert (c.action, c.due.occurrence_at) == (Action.ENQUEUE, at("10:05"))
    retrying = dataclasses.replace(waiting, retry_at=at("10:30"), active_run_id=None)
    c = claim(retrying, at("10:05:01"), busy_with(1))
    assert (c.action, c.due.occurrence_at) == (Action.ENQUEUE, at("10:05"))


def test_replace_supersedes_only_its_own_fire() -> None:
    own = claim(task(overlap=Overlap.REPLACE, active_run_id=7), at("10:05:01"), BUSY)
    assert own.action == Action.REPLACE and own.due.occurrence_at == at("10:05")
    theirs = claim(task(overlap=Overlap.REPLACE, kind="once"), at("10:05:01"), BUSY)
    assert theirs.action == Action.QUEUE and theirs.changes["pending_run"] is True
    assert "status" not in theirs.changes  # never the once task's "skipped" error


@pytest.mark.parametrize("overlap", [Overlap.REPLACE, Overlap.QUEUE_ALL])
def test_a_person_s_turn_requeues_replace_and_queue_all_fires(overlap: Overlap) -> None:
    view, due = claimed(task(overlap=overlap, kind="once", run_count=1), at("10:05"))
    outcome, changes = decide_busy(view, due, at("10:05:01"), LIMITS)
    assert outcome == RunOutcome.QUEUED and changes["pending_run"] is True
    assert changes.get("status") is None


def test_a_superseded_fire_changes_nothing_but_its_claim() -> None:
    view = task(kind="once", active_run_id=7, consecutive_failures=2, next_run_at=None)
    finish = decide_superseded(view, at("10:06"))
    assert finish.outcome == RunOutcome.SUPERSEDED
    assert dict(finish.changes.columns()) == {"active_run_id": None, "last_run_status": "superseded",
                                              "last_run_at": at("10:06")}
    assert TaskStatus.ACTIVE == view.status
