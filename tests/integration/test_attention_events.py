"""Attention events (SPEC §13) are written in the transaction of what they record: a fire's end,
a task put in error, an agent's draft, an abandoned claim. The inbox reads them and the outbox
fans them out; here only what is recorded, on both databases (the rig's core)."""

from __future__ import annotations

import json
from collections.abc import Callable

import sqlalchemy as sa
from sqlmodel import select

from app.core.attention_tables import AttentionEvent
from app.schedules.model import ScheduledTask, SchedulerInstance
from app.schedules.service import Actor
from scheduler import claims
from scheduler.__main__ import limits_of
from scheduler.adapters import CoreDirectory
from tests import store
from tests.integration.test_scheduler_loop import Rig, at


def _events(rig: Rig, task_id: int | None = None) -> list[AttentionEvent]:
    with rig.core.db.read() as s:
        query = select(AttentionEvent).order_by(AttentionEvent.id)
        return list(s.exec(query if task_id is None else query.where(AttentionEvent.task_id == task_id)))


def _set_notify(rig: Rig, task_id: int, notify: str) -> None:
    with rig.core.db.write() as s:
        s.exec(sa.update(ScheduledTask).where(ScheduledTask.id == task_id).values(notify=notify))


def test_a_successful_fire_records_fire_finished_with_its_first_line_inbox_only_by_default(rig: Rig) -> None:
    task_id = rig.create(prompt="Check the nightly build.")
    rig.move_to(60)
    rig.tick()
    [run] = rig.fired_runs()
    [event] = _events(rig, task_id)
    payload = json.loads(event.payload)
    assert (event.kind, event.user_email, event.chat_id, event.project_id, event.run_id) == (
        "fire.finished", "alice@example.com", rig.chat, rig.project, run.id)
    assert event.notify is False  # notify=failures (the default) keeps a success off the channels
    assert payload["run"]["outcome"] == "succeeded"
    first = next(line.strip() for line in run.output.splitlines() if line.strip())
    assert payload["run"]["first_line"] == first[:200]
    assert payload["task"]["name"] == "Build watch"
    assert event.fanned_out_at == event.created_at  # nothing for a deliverer to do


def test_notify_always_pushes_a_success_and_never_keeps_a_failure_off_the_channels(rig: Rig) -> None:
    loud = rig.create(name="Loud")
    quiet = rig.create(chat=rig.new_chat("Quiet"), name="Quiet", prompt="/fail")
    _set_notify(rig, loud, "always")
    _set_notify(rig, quiet, "never")
    rig.move_to(60)
    rig.tick()
    [ok] = _events(rig, loud)
    [failed] = _events(rig, quiet)
    assert (ok.kind, ok.notify, ok.fanned_out_at) == ("fire.finished", True, None)  # waits for a deliverer
    assert (failed.kind, failed.notify, failed.fanned_out_at) == ("fire.failed", False, failed.created_at)
    assert json.loads(failed.payload)["run"]["error"] == "demo failure requested with /fail"


def test_five_failures_record_five_failed_fires_and_one_task_error(rig_with: Callable[..., Rig]) -> None:
    r = rig_with(failure_backoff_seconds=1, failure_backoff_cap_seconds=1)
    task_id = r.create(prompt="/fail")
    r.move_to(60)
    for _ in range(5):
        r.tick()
        r.clock.set(r.task(task_id).next_run_at or r.clock.now())
    kinds = [e.kind for e in _events(r, task_id)]
    assert kinds == ["fire.failed"] * 5 + ["task.error"]
    error = _events(r, task_id)[-1]
    assert json.loads(error.payload)["task"]["last_error"] == "paused after 5 consecutive failures"
    assert error.notify is True


def test_an_agent_draft_records_draft_created_and_a_users_task_records_nothing(rig: Rig) -> None:
    mine = rig.create(name="Mine")
    draft, _ = rig.tasks.create(Actor(rig.alice, agent_chat_id=rig.chat),
                                rig.chat, {"name": "Agent idea", "prompt": "p", "schedule": {"kind": "interval",
                                                                                            "every_seconds": 3600}})
    assert _events(rig, mine) == []
    [event] = _events(rig, draft.id)
    assert (event.kind, event.notify, json.loads(event.payload)["task"]["status"]) == ("draft.created", True, "draft")


def test_an_abandoned_claim_records_a_failed_fire(rig: Rig) -> None:
    task_id = rig.create()
    rig.move_to(60)
    with rig.core.db.write() as s:
        s.add(SchedulerInstance(id="sched:dead", started_at=at(0), heartbeat_at=at(60)))
    held = store.claim(rig.core.db, at(60), task_id, "sched:dead", CoreDirectory(rig.core.db),
                       limits_of(rig.core.settings))
    rig.move_to(120)
    assert claims.recover(rig.core.db, at(120), rig.core.settings.run_lease_seconds) == [held.task_run_id]
    [event] = _events(rig, task_id)
    assert (event.kind, event.task_run_id, json.loads(event.payload)["run"]["outcome"]) == (
        "fire.failed", held.task_run_id, "abandoned")
