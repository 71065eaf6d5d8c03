"""SPEC §19 quiet fires and self-pacing through the loop, in-process on a FakeClock, on SQLite and
PostgreSQL: ten ``no_change`` fires under ``notify_on: changes`` tell nobody (no attention event,
no delivery) and are recorded quiet; a failing fire tells once; an agent moves the next fire
within the bounds a user allowed, outside them it is refused naming the bound, and a task that
does not allow pacing answers 403."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from sqlmodel import select

from app.attention.notify import channels
from app.attention.notify.deliverer import Deliverer, DelivererConfig
from app.attention.notify.destinations import Destinations
from app.core.attention_tables import AttentionEvent, AttentionKind
from app.core.errors import Conflict, Forbidden, InvalidInput
from app.schedules.model import RunOutcome, TaskRun
from tests.integration.apiclient import bearer, client_for
from tests.integration.receivers import smtp_server, wait_until, webhook_receiver
from tests.integration.test_notify_outbox import deliveries
from tests.integration.test_scheduler_loop import settle
from tests.store import issue_grant

HOURLY = {"kind": "interval", "every_seconds": 3600}


def running_record(rig: Any, task_id: int) -> TaskRun:
    [record] = [r for r in rig.task_runs(task_id) if r.status == RunOutcome.RUNNING.value]
    return record


def fire_and_report(rig: Any, task_id: int, outcome: str | None, summary: str | None = None) -> TaskRun:
    """One fire of the task at its next deadline; the agent reports while it runs."""
    rig.clock.set(rig.task(task_id).next_run_at)
    rig.loop.tick()
    record = running_record(rig, task_id)
    if outcome is not None:
        rig.tasks.report(task_id, record.id, outcome, summary)
    settle(rig.core)
    return next(r for r in rig.task_runs(task_id) if r.id == record.id)


def attention_kinds(rig: Any, task_id: int) -> list[str]:
    with rig.core.db.read() as s:
        return list(s.exec(select(AttentionEvent.kind).where(AttentionEvent.task_id == task_id)
                           .order_by(AttentionEvent.id)))


def test_ten_no_change_fires_tell_nobody_and_a_failure_tells_once(rig_with: Any) -> None:
    with webhook_receiver() as receiver, smtp_server() as (port, mails):
        rig = rig_with(smtp_url=f"smtp://127.0.0.1:{port}", smtp_from="cron@example.com")
        settings = rig.core.settings
        channels.create(rig.core.db, rig.clock, settings, rig.alice, {"kind": "webhook", "url": receiver.url})
        channels.create(rig.core.db, rig.clock, settings, rig.alice, {"kind": "email", "address": rig.alice.email})
        deliverer = Deliverer.for_settings(rig.core.db, rig.clock, settings, "test")
        deliverer.config = DelivererConfig(owner="test:quiet", poll_seconds=0.02,
                                           destinations=Destinations.of(settings))
        deliverer.start()
        try:
            task = rig.create(notify="always", notify_on="changes", prompt="/sleep 0.05\nWatch the prices.")
            records = [fire_and_report(rig, task, "no_change", f"prices unchanged ({i})") for i in range(10)]
            assert [(r.status, r.outcome, r.quiet) for r in records] == [("succeeded", "no_change", True)] * 10
            assert records[3].summary == "prices unchanged (3)"
            assert attention_kinds(rig, task) == []
            changed = fire_and_report(rig, task, "changed", "one price moved")
            unreported = fire_and_report(rig, task, None)
            assert (changed.quiet, unreported.quiet, unreported.outcome) == (False, False, None)
            assert attention_kinds(rig, task) == [AttentionKind.FIRE_FINISHED.value] * 2
            rig.tasks.update(_actor(rig), task, {"prompt": "/sleep 0.05\n/fail"})
            failed = fire_and_report(rig, task, "no_change", "said no change, then failed")
            assert (failed.status, failed.quiet) == ("failed", False)
            assert attention_kinds(rig, task)[2:] == [AttentionKind.FIRE_FAILED.value]
            # the outbox keeps order: had a quiet fire been told, it would have arrived before these
            got = receiver.wait_for(3)
            wait_until(lambda: len(deliveries(rig.core)) == 6 and all(d.state == "delivered"
                                                                      for d in deliveries(rig.core)))
        finally:
            deliverer.stop()
    events = [json.loads(r.body)["event"] for r in got]
    assert events == ["fire.finished", "fire.finished", "fire.failed"] and len(receiver.got) == 3
    assert len(mails) == 3  # notify=always: one email per told fire, none for the ten quiet ones


@pytest.mark.parametrize("notify_on", ["failures"])
def test_notify_on_failures_keeps_every_success_quiet(rig: Any, notify_on: str) -> None:
    task = rig.create(notify="always", notify_on=notify_on, prompt="/sleep 0.05\nWatch.")
    told = fire_and_report(rig, task, "changed", "something")
    reported_failed = fire_and_report(rig, task, "failed", "the site was down")
    assert (told.quiet, reported_failed.quiet) == (True, False)
    assert attention_kinds(rig, task) == [AttentionKind.FIRE_FAILED.value]


def _actor(rig: Any) -> Any:
    from app.schedules.service import Actor

    return Actor(rig.alice)


def test_a_report_outside_a_running_fire_is_refused(rig: Any) -> None:
    task = rig.create(prompt="/sleep 0.05\nWatch.")
    record = fire_and_report(rig, task, None)
    with pytest.raises(Conflict):
        rig.tasks.report(task, record.id, "no_change", None)
    rig.clock.set(rig.task(task).next_run_at)
    rig.loop.tick()
    running = running_record(rig, task)
    with pytest.raises(InvalidInput, match="^outcome:"):
        rig.tasks.report(task, running.id, "nothing", None)
    with pytest.raises(InvalidInput, match="^summary:"):
        rig.tasks.report(task, running.id, "changed", "x" * 2001)
    settle(rig.core)


def test_an_agent_paces_its_next_fire_within_the_bounds(rig: Any) -> None:
    task = rig.create(schedule=HOURLY, pace_min_seconds=600, pace_max_seconds=4 * 3600, prompt="/sleep 1\nLook.")
    rig.clock.set(rig.task(task).next_run_at)
    regular_after = rig.task(task).next_run_at + dt.timedelta(hours=1)
    rig.loop.tick()
    record = running_record(rig, task)
    token, _ = issue_grant(rig.core.db, rig.clock, 3600, "complete-self", rig.alice.id, rig.chat, rig.project,
                           task, record.id)
    with client_for(rig.core) as client:
        for sent, bound in (({"in_seconds": 60}, "pace_min_seconds"), ({"in_seconds": 5 * 3600}, "pace_max_seconds")):
            refused = client.post("/agent-api/schedules/current/next", json=sent, headers=bearer(token))
            assert refused.status_code == 400 and refused.json()["error"]["message"].startswith(f"{bound}:")
        assert rig.task(task).next_run_at == regular_after and not rig.task(task).next_paced
        both = client.post("/agent-api/schedules/current/next", json={"in_seconds": 900, "at": "2026-01-01T00:00:00Z"},
                           headers=bearer(token))
        assert both.status_code == 400
        paced = client.post("/agent-api/schedules/current/next", json={"in_seconds": 3 * 3600}, headers=bearer(token))
        assert paced.status_code == 200, paced.text
        assert paced.json()["next_paced"] is True
    target = rig.clock.now() + dt.timedelta(hours=3)
    settle(rig.core)
    assert rig.task(task).next_run_at == target and rig.task(task).next_paced  # the fire's end kept it
    rig.clock.set(target)
    rig.loop.tick()
    settle(rig.core)
    after = rig.task(task)
    assert [r.status for r in rig.task_runs(task)] == ["succeeded", "succeeded"]
    assert not after.next_paced and after.next_run_at > target  # the schedule is unchanged: it goes on from there
    assert after.schedule_dict() == {"kind": "interval", "every_seconds": 3600}


def test_a_task_that_does_not_allow_pacing_answers_403(rig: Any) -> None:
    task = rig.create(schedule=HOURLY, prompt="/sleep 0.5\nLook.")
    rig.clock.set(rig.task(task).next_run_at)
    rig.loop.tick()
    record = running_record(rig, task)
    with pytest.raises(Forbidden):
        rig.tasks.pace_next(task, record.id, 900, None)
    token, _ = issue_grant(rig.core.db, rig.clock, 3600, "complete-self", rig.alice.id, rig.chat, rig.project,
                           task, record.id)
    with client_for(rig.core) as client:
        response = client.post("/agent-api/schedules/current/next", json={"in_seconds": 900}, headers=bearer(token))
        assert response.status_code == 403
        outside = issue_grant(rig.core.db, rig.clock, 3600, "manage", rig.alice.id, rig.chat, rig.project)[0]
        assert client.post("/agent-api/schedules/current/report", json={"outcome": "changed"},
                           headers=bearer(outside)).status_code == 403
    settle(rig.core)


def test_only_a_user_allows_pacing(rig: Any) -> None:
    from app.schedules.service import Actor

    with pytest.raises(Forbidden):
        rig.tasks.create(Actor(rig.alice, agent_chat_id=rig.chat), rig.chat,
                         {"name": "x", "prompt": "y", "schedule": HOURLY, "pace_min_seconds": 600,
                          "pace_max_seconds": 900})
    for fields, named in (({"pace_min_seconds": 600}, "pace_max_seconds"),
                          ({"pace_min_seconds": 10, "pace_max_seconds": 900}, "pace_min_seconds"),
                          ({"pace_min_seconds": 900, "pace_max_seconds": 600}, "pace_max_seconds"),
                          ({"notify_on": "sometimes"}, "notify_on"), ({"queue_cap": 0}, "queue_cap")):
        with pytest.raises(InvalidInput, match=f"^{named}:"):
            rig.create(schedule=HOURLY, **fields)
