"""The notification outbox (SPEC §13) on SQLite and PostgreSQL: fan-out, leases, retries and the
real senders against real receivers on loopback (an HTTP endpoint, an aiosmtpd server)."""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from sqlmodel import select

from app.attention.notify import channels, outbox, policy
from app.attention.notify.deliverer import Deliverer, DelivererConfig
from app.attention.notify.destinations import Destinations
from app.attention.notify.senders import send_webhook
from app.core import attention_events as attention
from app.core import chats, projects
from app.core.attention_tables import AttentionKind, Delivery, DeliveryState, NotificationChannel
from app.core.context import Core
from app.core.db import Database
from app.core.models import Chat, Run, User
from tests.conftest import with_settings
from tests.integration.apiclient import add_user
from tests.integration.receivers import smtp_server, wait_until, webhook_receiver

FAST = (0.05, 0.05, 0.05)  # back-off of these tests: four attempts, 50 ms apart


@contextlib.contextmanager
def deliverers(core: Core, count: int = 1, separate_engines: bool = False, backoff: tuple = FAST,
               **senders: Any) -> Iterator[list[Deliverer]]:
    """``count`` running deliverers on the core's store (each on its own engine, like separate
    processes, when ``separate_engines``)."""
    started: list[Deliverer] = []
    engines: list[Database] = []
    for i in range(count):
        db = core.db
        if separate_engines:
            db = Database(core.settings.db_url)
            engines.append(db)
        config = DelivererConfig(owner=f"test:{i}", poll_seconds=0.02, backoff=backoff, workers=4,
                                 destinations=Destinations.of(core.settings))
        started.append(Deliverer(db, core.clock, config, **senders).start())
    try:
        yield started
    finally:
        for d in started:
            d.stop(5.0)
        for db in engines:
            db.dispose()


def chat_of(core: Core, user: User) -> int:
    """The user's loose chat (made on first use): an event reaches a user's channels only from a
    chat they can see."""
    with core.db.read() as s:
        found = s.exec(select(Chat.id).where(Chat.owner_id == user.id, Chat.project_id.is_(None))).first()
    return found or chats.create_chat(core.db, core.clock, user, None, "Watch").id


def add_event(core: Core, user: User, kind: AttentionKind, notify: bool = True, **payload: Any) -> int:
    chat_id = chat_of(core, user)
    with core.db.write() as s:
        attention.record(s.connection(), [attention.row(
            core.clock.now(), kind, user_email=user.email, chat_id=chat_id, project_id=None, notify=notify,
            payload={"task": {"id": 9, "name": "Nightly"}, "run": {"id": None, "outcome": "failed"}, **payload})])
        return s.connection().execute(sa.text("SELECT max(id) FROM attention_events")).scalar_one()


def webhook(core: Core, user: User, url: str, events: list[str] | None = None) -> NotificationChannel:
    return channels.create(core.db, core.clock, core.settings, user, {"kind": "webhook", "url": url,
                                                                      "events": events or []})


def deliveries(core: Core) -> list[Delivery]:
    with core.db.read() as s:
        return list(s.exec(select(Delivery).order_by(Delivery.id)))


def all_settled(core: Core) -> bool:
    """There are deliveries and none waits for another attempt."""
    rows = deliveries(core)
    return bool(rows) and all(d.state != DeliveryState.PENDING.value for d in rows)


def test_racing_deliverers_deliver_each_event_to_each_channel_exactly_once(core: Core) -> None:
    alice, bob = add_user(core, "alice@example.com"), add_user(core, "bob@example.com")
    with webhook_receiver() as receiver:
        every = webhook(core, alice, receiver.url + "/every")
        failures = webhook(core, alice, receiver.url + "/failures", ["fire.failed"])
        gone = webhook(core, alice, receiver.url + "/gone")
        channels.delete(core.db, core.clock, alice, gone.id)
        webhook(core, bob, receiver.url + "/bob")
        with deliverers(core, count=3, separate_engines=True):
            ids = [add_event(core, alice, AttentionKind.FIRE_FAILED if i % 2 else AttentionKind.FIRE_FINISHED,
                             notify=i % 6 != 0) for i in range(60)]
            pushed = [(i, n) for n, i in enumerate(ids) if n % 6 != 0]
            want = len(pushed) + sum(1 for _, n in pushed if n % 2)
            got = receiver.wait_for(want)
            wait_until(lambda: all_settled(core), what="every delivery settled")
    secrets = {"/hook/every": every.secret, "/hook/failures": failures.secret}
    seen = Counter()
    for request in got:
        assert policy.verify(secrets[request.path], request.body, request.headers["X-Chatcron-Signature"])
        body = json.loads(request.body)
        assert request.headers["X-Chatcron-Event"] == body["event"] and request.headers["User-Agent"] == "chatcron"
        assert request.headers["Content-Type"] == "application/json"
        seen[(request.path, request.headers["X-Chatcron-Delivery"])] += 1
    assert set(seen.values()) == {1} and len(seen) == want  # no delivery twice
    rows = deliveries(core)
    assert len(rows) == want and {r.state for r in rows} == {"delivered"} and {r.attempts for r in rows} == {1}
    assert Counter(r.channel_id for r in rows) == {every.id: len(pushed), failures.id: want - len(pushed)}
    assert {r.event_id for r in rows} == {i for i, _ in pushed}
    with core.db.read() as s:  # every event was fanned out once, notify=False ones to nobody
        assert s.execute(sa.text("SELECT count(*) FROM attention_events WHERE fanned_out_at IS NULL")).scalar() == 0


def test_a_receiver_that_is_down_gets_the_event_after_retries(core: Core) -> None:
    alice = add_user(core, "alice@example.com")
    with webhook_receiver() as receiver:
        receiver.script = [503, 500]  # down twice, then up
        channel = webhook(core, alice, receiver.url)
        with deliverers(core):
            add_event(core, alice, AttentionKind.TASK_ERROR)
            [request] = receiver.wait_for(1)
            wait_until(lambda: all_settled(core), what="the delivery settled")
    [row] = deliveries(core)
    assert (row.channel_id, row.state, row.attempts, row.last_status, row.last_error) == \
        (channel.id, "delivered", 3, 200, None)
    assert json.loads(request.body)["event"] == "task.error"


def test_a_receiver_that_never_answers_well_fails_after_the_last_retry(core: Core) -> None:
    alice = add_user(core, "alice@example.com")
    with webhook_receiver() as receiver:
        receiver.status = 410
        webhook(core, alice, receiver.url)
        with deliverers(core):
            add_event(core, alice, AttentionKind.FIRE_FAILED)
            wait_until(lambda: all_settled(core), what="the delivery gave up")
    [row] = deliveries(core)
    assert (row.state, row.attempts, row.last_status, row.delivered_at) == ("failed", len(FAST) + 1, 410, None)
    assert row.last_error == "HTTP 410"  # the status code only: never the receiver's words


def test_a_dead_address_is_an_error_in_the_log_not_a_crash(core: Core) -> None:
    alice = add_user(core, "alice@example.com")
    with webhook_receiver() as receiver:
        url = receiver.url
    webhook(core, alice, url)  # nothing listens there any more
    with deliverers(core, backoff=()):
        add_event(core, alice, AttentionKind.FIRE_FAILED)
        wait_until(lambda: all_settled(core), what="the delivery gave up")
    [row] = deliveries(core)
    assert row.state == "failed" and row.last_status is None and row.last_error == "connection refused"


def test_an_expired_lease_is_taken_over_and_a_stale_owner_cannot_record(core: Core) -> None:
    alice = add_user(core, "alice@example.com")
    webhook(core, alice, "http://127.0.0.1:9/never")
    add_event(core, alice, AttentionKind.FIRE_FAILED)
    now = core.clock.now()
    outbox.fan_out(core.db, now)
    [job] = outbox.claim_due(core.db, now, "first", lease_seconds=0.0, limit=5)
    assert outbox.claim_due(core.db, now, "second", 30.0, 5) == []  # not expired yet at the same instant
    later = core.clock.now()
    [again] = outbox.claim_due(core.db, later, "second", 30.0, 5)
    assert again.id == job.id
    ok = policy.after_attempt(0, policy.Outcome(True, 200), later)
    assert not outbox.record(core.db, job, "first", ok)  # lost its lease: its result is not written
    assert outbox.record(core.db, again, "second", ok)
    assert [d.state for d in deliveries(core)] == ["delivered"]


def test_email_goes_out_over_smtp_to_a_real_server(core: Core) -> None:
    alice = add_user(core, "alice@example.com")
    with smtp_server() as (port, got):
        settings = with_settings(core.settings, smtp_url=f"smtp://127.0.0.1:{port}", smtp_from="cron@example.com")
        channels.create(core.db, core.clock, settings, alice, {"kind": "email", "address": "alice@example.com"})
        deliverer = Deliverer.for_settings(core.db, core.clock, settings, "test")
        deliverer.config = DelivererConfig(owner="test:mail", poll_seconds=0.02)
        deliverer.start()
        try:
            add_event(core, alice, AttentionKind.FIRE_FAILED,
                      run={"id": None, "outcome": "failed", "error": "the agent crashed"})
            wait_until(lambda: got, what="an email arrived")
            wait_until(lambda: all_settled(core), what="the delivery settled")
        finally:
            deliverer.stop()
    [envelope] = got
    assert (envelope.mail_from, envelope.rcpt_tos) == ("cron@example.com", ["alice@example.com"])
    text = envelope.content.decode()
    assert "Subject: [chatcron] Fire failed: Nightly" in text and "Error: the agent crashed" in text
    [row] = deliveries(core)
    assert (row.state, row.last_status) == ("delivered", 250)


def test_a_test_delivery_goes_through_the_same_outbox(core: Core) -> None:
    alice = add_user(core, "alice@example.com")
    with webhook_receiver() as receiver:
        channel = webhook(core, alice, receiver.url)
        with deliverers(core, webhook=functools.partial(send_webhook, timeout=5,
                                                        guard=Destinations.of(core.settings))):
            channels.send_test(core.db, core.clock, alice, channel.id)
            [request] = receiver.wait_for(1)
    body = json.loads(request.body)
    assert body["event"] == "test" and body["channel_id"] == channel.id
    assert policy.verify(channel.secret, request.body, request.headers["X-Chatcron-Signature"])


def test_a_deleted_channel_fails_its_pending_deliveries_at_once(core: Core) -> None:
    alice = add_user(core, "alice@example.com")
    channel = webhook(core, alice, "http://127.0.0.1:9/never")
    add_event(core, alice, AttentionKind.FIRE_FAILED)
    outbox.fan_out(core.db, core.clock.now())
    channels.delete(core.db, core.clock, alice, channel.id)
    with deliverers(core):
        wait_until(lambda: all_settled(core), what="the delivery failed")
    [row] = deliveries(core)
    assert (row.state, row.attempts, row.last_error) == ("failed", 1, "the channel was deleted")


def test_the_body_carries_the_runs_usage(core: Core) -> None:
    alice = add_user(core, "alice@example.com")
    project = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, "Ops", alice)
    chat = chats.create_chat(core.db, core.clock, alice, project.id, "Watch")
    usage = {"input_tokens": 1200, "output_tokens": 80, "cached_tokens": 0, "cost_usd": 0.01}
    with core.db.write() as s:
        run = Run(chat_id=chat.id, status="failed", usage=json.dumps(usage), started_at=core.clock.now(),
                  heartbeat_at=core.clock.now())
        s.add(run)
        s.flush()
        attention.record(s.connection(), [attention.row(
            core.clock.now(), AttentionKind.FIRE_FAILED, user_email=alice.email, chat_id=chat.id,
            project_id=project.id, run_id=run.id, payload={"task": {"id": 1}, "run": {"id": run.id}})])
    webhook(core, alice, "http://127.0.0.1:9/never")
    outbox.fan_out(core.db, core.clock.now())
    [row] = deliveries(core)
    assert json.loads(row.body)["run"] == {"id": run.id, "usage": usage}
    assert outbox.fan_out(core.db, core.clock.now()) == 0  # fanned out once


def test_settled_deliveries_are_forgotten_after_thirty_days(core: Core) -> None:
    alice = add_user(core, "alice@example.com")
    channel = webhook(core, alice, "http://127.0.0.1:9/never")
    old = core.clock.now() - dt.timedelta(days=31)
    with core.db.write() as s:
        for state in ("delivered", "failed", "pending"):
            s.add(Delivery(channel_id=channel.id, kind="test", body="{}", state=state, next_attempt_at=old,
                           created_at=old))
        s.add(Delivery(channel_id=channel.id, kind="test", body="{}", state="delivered",
                       next_attempt_at=core.clock.now(), created_at=core.clock.now()))
    assert outbox.prune(core.db, core.clock.now()) == 2
    assert sorted(d.state for d in deliveries(core)) == ["delivered", "pending"]  # the recent one, the unsettled one
