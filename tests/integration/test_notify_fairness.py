"""One slow webhook must not stall everyone's notifications (SPEC §13), on SQLite and PostgreSQL.

A receiver on loopback that sends a status line and then one header line every half second never
trips a per-read socket timeout; the attempt's own time limit ends it. Meanwhile the deliverer
leases at most one delivery per channel and ``outbox.PER_USER`` per user, so another user's
event goes out at once. The deliverer runs its own loop on a FakeClock that stands still: a
failed attempt's back-off never runs out during the test, and leases never expire by themselves.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import socket
import threading
import time

from sqlmodel import select

from app.attention.notify import channels, deliverer, outbox
from app.attention.notify.deliverer import Deliverer, DelivererConfig
from app.attention.notify.destinations import Destinations
from app.attention.notify.senders import Mailer, send_webhook
from app.core import attention_events as attention
from app.core import chats
from app.core.attention_tables import AttentionKind, Delivery, DeliveryState, NotificationChannel
from app.core.config import SmtpServer
from app.core.context import Core
from app.core.models import User
from tests.integration.apiclient import add_user
from tests.integration.receivers import trickle_receiver, wait_until, webhook_receiver

BOUND = 4.0  # seconds one attempt may take, connect to last byte
TRICKLE = 0.5  # seconds between the slow receiver's header lines: far below any per-read timeout
QUEUED = 4  # events waiting for each of the slow user's channels
PER_USER = 2  # attempts in flight at once for one user (outbox.PER_USER), one per channel


def event(core: Core, user: User, chat_id: int) -> int:
    with core.db.write() as s:
        attention.record(s.connection(), [attention.row(
            core.clock.now(), AttentionKind.FIRE_FAILED, user_email=user.email, chat_id=chat_id,
            project_id=None, payload={"task": {"id": 9, "name": "Nightly"}, "run": {"outcome": "failed"}})])
    deliverer.kick_local()
    return chat_id


def loose_chat(core: Core, user: User) -> int:
    return chats.create_chat(core.db, core.clock, user, None, "Watch").id


def webhook(core: Core, user: User, url: str) -> NotificationChannel:
    return channels.create(core.db, core.clock, core.settings, user, {"kind": "webhook", "url": url})


def of_channel(core: Core, channel_id: int) -> list[Delivery]:
    with core.db.read() as s:
        return list(s.exec(select(Delivery).where(Delivery.channel_id == channel_id).order_by(Delivery.id)))


def test_a_hung_webhook_holds_one_deliverer_and_another_users_event_goes_out_at_once(clocked_core: Core) -> None:
    core = clocked_core
    slow, quick = add_user(core, "slow@example.com"), add_user(core, "quick@example.com")
    slow_chat, quick_chat = loose_chat(core, slow), loose_chat(core, quick)
    with trickle_receiver(TRICKLE) as trickler, webhook_receiver() as receiver:
        hung = [webhook(core, slow, f"{trickler.url}/{i}") for i in range(3)]
        answering = webhook(core, quick, receiver.url)
        for _ in range(QUEUED):
            event(core, slow, slow_chat)
        # The attempt's limit is the sender's: on a per-read timeout alone the trickle never ends.
        config = DelivererConfig(owner="test:fair", poll_seconds=0.02, workers=4, backoff=(60.0,))
        running = Deliverer(core.db, core.clock, config, webhook=functools.partial(
            send_webhook, timeout=BOUND, guard=Destinations.of(core.settings))).start()
        try:
            trickler.wait(lambda t: t.open_now >= PER_USER, 10, "the slow user's attempts began")
            asked = time.monotonic()
            event(core, quick, quick_chat)
            [got] = receiver.wait_for(1, timeout=BOUND)
            assert got.at - asked < BOUND and not trickler.lasted  # while the slow attempts still hang
            assert json.loads(got.body)["chat_id"] == quick_chat
            wait_until(lambda: [d.state for d in of_channel(core, answering.id)] == ["delivered"], timeout=BOUND,
                       what="the answered delivery was recorded")
            assert not trickler.lasted
            # each hung attempt ends at the limit, failed, and waits for its retry (the clock stands still)
            trickler.wait(lambda t: len(t.lasted) >= PER_USER, BOUND + 10, "the hung attempts ended")
            failed = wait_until(lambda: [d for c in hung for d in of_channel(core, c.id) if d.attempts],
                                timeout=10, what="a hung attempt was recorded")
        finally:
            running.stop(2.0)
    assert trickler.most_open == PER_USER  # one per channel, two of the user's three channels
    assert all(BOUND - 0.2 < lasted < BOUND + 2.0 for lasted in trickler.lasted[:PER_USER]), trickler.lasted
    for row in failed:
        assert (row.state, row.attempts, row.last_status) == (DeliveryState.PENDING.value, 1, None)
        assert row.last_error == f"no complete answer within {BOUND:g} s (the attempt's time limit)"
        assert row.next_attempt_at == core.clock.now() + dt.timedelta(seconds=60)


def test_a_channel_never_has_two_attempts_in_flight_across_deliverers(clocked_core: Core) -> None:
    core = clocked_core
    slow = add_user(core, "slow@example.com")
    chat = loose_chat(core, slow)
    with trickle_receiver(TRICKLE) as trickler:
        channel = webhook(core, slow, trickler.url)
        for _ in range(QUEUED):
            event(core, slow, chat)
        outbox.fan_out(core.db, core.clock.now())
        now = core.clock.now()
        first = outbox.claim_due(core.db, now, "node-1", 60.0, 4)
        assert [job.channel_id for job in first] == [channel.id]  # one of the four, not four
        assert outbox.claim_due(core.db, now, "node-2", 60.0, 4) == []  # another node: the channel is busy
        later = core.clock.advance(61)  # the first lease ran out (its deliverer died): the channel is free
        [again] = outbox.claim_due(core.db, later, "node-2", 60.0, 4)
        assert again.id == first[0].id


def test_an_smtp_server_that_trickles_its_greeting_fails_the_attempt_at_its_limit() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def greet_forever() -> None:
        conn, _ = listener.accept()
        give_up = time.monotonic() + 20  # without a limit of its own, the client would wait this long
        with conn:
            while not stop.wait(TRICKLE) and time.monotonic() < give_up:
                conn.sendall(b"220-still warming up\r\n")

    threading.Thread(target=greet_forever, daemon=True).start()
    job = outbox.Job(id=1, kind="test", body=json.dumps({"event": "test"}), attempts=0, channel_id=1,
                     channel_kind="email", target="a@example.com", secret=None, channel_deleted=False)
    started = time.monotonic()
    try:
        outcome = Mailer(SmtpServer("127.0.0.1", listener.getsockname()[1]), "cron@example.com", timeout=2.0).send(job)
    finally:
        stop.set()
        listener.close()
    assert 1.8 < time.monotonic() - started < 4.0
    assert (outcome.ok, outcome.status, outcome.error) == (False, None,
                                                           "no complete answer within 2 s (the attempt's time limit)")
