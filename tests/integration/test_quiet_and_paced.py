"""SPEC §19 quiet fires and self-pacing through the loop, in-process on a FakeClock, on SQLite and
PostgreSQL, the agent's side the real one: the demo agent's ``/report`` and ``/next`` directives
run the workspace's ``remote-schedule`` in the sandbox with the fire's own token, against the API
served on loopback.

Ten ``no_change`` fires under ``notify_on: changes`` tell nobody (no attention event, no webhook
post, no email) and are recorded quiet; a changed, an unreported and a failing fire tell. An agent
moves its next fire within the bounds a user allowed; outside them the CLI exits 2 naming the
bound; a task that does not allow pacing answers 403."""

from __future__ import annotations

import datetime as dt
import email
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlmodel import select

from app.attention.notify import channels
from app.attention.notify.deliverer import Deliverer, DelivererConfig
from app.attention.notify.destinations import Destinations
from app.core import chats
from app.core.attention_tables import AttentionEvent, AttentionKind
from app.core.chats import SCHEDULED_TASKS
from app.core.errors import Conflict, Forbidden, InvalidInput
from app.schedules.model import TaskRun
from app.schedules.service import Actor
from tests.integration.apiserver import ApiServer
from tests.integration.receivers import smtp_server, wait_until, webhook_receiver
from tests.integration.test_notify_outbox import deliveries
from tests.isolation import free_port

HOURLY = {"kind": "interval", "every_seconds": 3600}


@pytest.fixture
def served(rig_with: Callable[..., Any]) -> Iterator[Callable[..., Any]]:
    """Builds a scheduler rig whose chat has the schedule tools on and whose API is served, so a fire's
    ``remote-schedule`` reaches it (settings: the rig's changes)."""
    servers: list[ApiServer] = []

    def build(**changes: Any) -> Any:
        port = free_port()
        rig = rig_with(api_url=f"http://127.0.0.1:{port}", **changes)
        servers.append(ApiServer(rig.core, port))
        chats.update_chat(rig.core.db, rig.clock, rig.alice, rig.chat, skills=[SCHEDULED_TASKS])
        return rig

    yield build
    for server in servers:
        server.close()


def fire(rig: Any, task_id: int) -> TaskRun:
    """One fire of the task at its next deadline, awaited; its record."""
    rig.clock.set(rig.task(task_id).next_run_at)
    rig.tick()
    return rig.task_runs(task_id)[-1]


def reply_of(rig: Any, record: TaskRun) -> str:
    return next(r.output for r in rig.fired_runs() if r.id == record.run_id)


def _header(mail: Any, name: str) -> str:
    """A header of an email the SMTP server received."""
    return email.message_from_bytes(mail.content).get(name, "")


def attention_kinds(rig: Any, task_id: int) -> list[str]:
    with rig.core.db.read() as s:
        return list(s.exec(select(AttentionEvent.kind).where(AttentionEvent.task_id == task_id)
                           .order_by(AttentionEvent.id)))


def test_ten_no_change_fires_tell_nobody_and_a_failure_tells_once(served: Callable[..., Any]) -> None:
    with webhook_receiver() as receiver, smtp_server() as (port, mails):
        rig = served(smtp_url=f"smtp://127.0.0.1:{port}", smtp_from="cron@example.com")
        settings = rig.core.settings
        channels.create(rig.core.db, rig.clock, settings, rig.alice, {"kind": "webhook", "url": receiver.url})
        channels.create(rig.core.db, rig.clock, settings, rig.alice, {"kind": "email", "address": rig.alice.email})
        deliverer = Deliverer.for_settings(rig.core.db, rig.clock, settings, "test")
        deliverer.config = DelivererConfig(owner="test:quiet", poll_seconds=0.02,
                                           destinations=Destinations.of(settings))
        deliverer.start()
        try:
            task = rig.create(notify="always", notify_on="changes",
                              prompt="Watch the prices.\n/report no_change prices unchanged")
            records = [fire(rig, task) for _ in range(10)]
            assert [(r.status, r.outcome, r.quiet) for r in records] == [("succeeded", "no_change", True)] * 10
            assert records[3].summary == "prices unchanged" and "(exit 0)" in reply_of(rig, records[3])
            assert attention_kinds(rig, task) == []
            rig.tasks.update(Actor(rig.alice), task, {"prompt": "Watch.\n/report changed one price moved"})
            changed = fire(rig, task)
            rig.tasks.update(Actor(rig.alice), task, {"prompt": "Watch."})
            unreported = fire(rig, task)
            assert (changed.quiet, changed.summary, unreported.quiet, unreported.outcome) == (
                False, "one price moved", False, None)
            assert attention_kinds(rig, task) == [AttentionKind.FIRE_FINISHED.value] * 2
            rig.tasks.update(Actor(rig.alice), task, {"prompt": "Watch.\n/report no_change all quiet\n/fail"})
            failed = fire(rig, task)
            assert (failed.status, failed.outcome, failed.quiet) == ("failed", "no_change", False)
            assert attention_kinds(rig, task)[2:] == [AttentionKind.FIRE_FAILED.value]
            # the outbox keeps order: had a quiet fire been told, it would have arrived before these
            receiver.wait_for(3)
            wait_until(lambda: len(deliveries(rig.core)) == 6 and all(d.state == "delivered"
                                                                      for d in deliveries(rig.core)))
        finally:
            deliverer.stop()
    # deliveries are at least once (a retry after a lost answer may repeat one): count them by their id
    posts = {r.headers["webhook-id"]: json.loads(r.body)["event"] for r in receiver.got}
    assert sorted(posts.values()) == ["fire.failed", "fire.finished", "fire.finished"]
    mailed = {_header(m, "X-Chatcron-Delivery"): _header(m, "X-Chatcron-Event") for m in mails}
    assert sorted(mailed.values()) == ["fire.failed", "fire.finished", "fire.finished"]  # none for a quiet fire


def test_notify_on_failures_keeps_every_success_quiet(served: Callable[..., Any]) -> None:
    rig = served()
    task = rig.create(notify="always", notify_on="failures", prompt="Watch.\n/report changed something")
    told = fire(rig, task)
    rig.tasks.update(Actor(rig.alice), task, {"prompt": "Watch.\n/report failed the site was down"})
    reported_failed = fire(rig, task)
    assert (told.quiet, reported_failed.status, reported_failed.quiet) == (True, "succeeded", False)
    assert attention_kinds(rig, task) == [AttentionKind.FIRE_FAILED.value]


def test_a_report_outside_a_running_fire_is_refused(served: Callable[..., Any]) -> None:
    rig = served()
    task = rig.create(prompt="Watch.\n/report sideways\n/report changed " + "x" * 2001)
    record = fire(rig, task)
    reply = reply_of(rig, record)
    assert reply.count("(exit 2)") == 2 and record.outcome is None  # argparse: a bad outcome, a long summary
    with pytest.raises(Conflict):
        rig.tasks.report(task, record.id, "no_change", None)
    with pytest.raises(InvalidInput, match="^outcome:"):
        rig.tasks.report(task, record.id, "nothing", None)


def test_an_agent_paces_its_next_fire_within_the_bounds(served: Callable[..., Any]) -> None:
    rig = served()
    task = rig.create(schedule=HOURLY, pace_min_seconds=600, pace_max_seconds=4 * 3600,
                      prompt="Look.\n/next 1m\n/next 5h\n/next 3h")
    first_at = rig.task(task).next_run_at
    record = fire(rig, task)
    reply = reply_of(rig, record)
    assert reply.count("(exit 2)") == 2 and "pace_min_seconds" in reply and "pace_max_seconds" in reply
    assert "(exit 0)" in reply and "paced by the agent" in reply
    paced = rig.task(task)
    assert paced.next_paced and paced.next_run_at == first_at + dt.timedelta(hours=3)  # the fire's end kept it
    rig.tasks.update(Actor(rig.alice), task, {"prompt": "Look."})
    fire(rig, task)
    after = rig.task(task)
    assert [r.status for r in rig.task_runs(task)] == ["succeeded", "succeeded"]
    assert not after.next_paced and after.next_run_at == first_at + dt.timedelta(hours=4)  # the schedule goes on
    assert after.schedule_dict() == HOURLY


def test_a_task_that_does_not_allow_pacing_answers_403(served: Callable[..., Any]) -> None:
    rig = served()
    task = rig.create(schedule=HOURLY, prompt="Look.\n/next 2h")
    before = rig.task(task).next_run_at
    record = fire(rig, task)
    reply = reply_of(rig, record)
    assert "(exit 1)" in reply and "does not let its agent pace it" in reply
    assert rig.task(task).next_run_at == before + dt.timedelta(hours=1) and not rig.task(task).next_paced
    with pytest.raises(Forbidden):
        rig.tasks.create(Actor(rig.alice, agent_chat_id=rig.chat), rig.chat,
                         {"name": "x", "prompt": "y", "schedule": HOURLY, "pace_min_seconds": 600,
                          "pace_max_seconds": 900})


def test_bad_rules_are_refused_naming_the_field(rig: Any) -> None:
    for fields, named in (({"pace_min_seconds": 600}, "pace_max_seconds"),
                          ({"pace_min_seconds": 10, "pace_max_seconds": 900}, "pace_min_seconds"),
                          ({"pace_min_seconds": 900, "pace_max_seconds": 600}, "pace_max_seconds"),
                          ({"schedule": {"kind": "once", "at": "2027-01-01T00:00:00Z"}, "pace_min_seconds": 600,
                            "pace_max_seconds": 900}, "pace_min_seconds"),
                          ({"notify_on": "sometimes"}, "notify_on"), ({"queue_cap": 0}, "queue_cap"),
                          ({"queue_cap": 101}, "queue_cap")):
        with pytest.raises(InvalidInput, match=f"^{named}:"):
            rig.create(**{"schedule": HOURLY, **fields})
