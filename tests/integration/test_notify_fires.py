"""A fire's end reaches a webhook through the real scheduler path (loop → claim → demo turn →
finish → attention event → outbox → HTTP), on SQLite and PostgreSQL; a webhook that hangs never
slows a fire."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from typing import Any

from app.attention.notify import channels, policy
from app.attention.notify.deliverer import Deliverer, DelivererConfig
from app.attention.notify.destinations import Destinations
from app.attention.notify.senders import send_webhook
from tests.integration.receivers import wait_until, webhook_receiver
from tests.integration.test_notify_outbox import deliveries


def test_a_failed_fire_reaches_the_owners_webhook_and_a_quiet_success_does_not(rig_with: Callable[..., Any]) -> None:
    rig = rig_with()
    with webhook_receiver() as receiver:
        channel = channels.create(rig.core.db, rig.clock, rig.core.settings, rig.alice,
                                  {"kind": "webhook", "url": receiver.url})
        config = DelivererConfig(owner="test:fires", poll_seconds=0.02, destinations=Destinations.of(rig.core.settings))
        deliverer = Deliverer(rig.core.db, rig.clock, config).start()
        try:
            quiet = rig.create(name="Quiet")  # notify=failures: its success stays in the inbox
            loud = rig.create(rig.new_chat("Loud"), name="Loud", notify="always")
            failing = rig.create(rig.new_chat("Failing"), name="Failing", prompt="Check.\n/fail")
            rig.move_to(60)
            rig.tick()
            got = receiver.wait_for(2)
            wait_until(lambda: len(deliveries(rig.core)) == 2 and all(d.state == "delivered"
                                                                      for d in deliveries(rig.core)))
        finally:
            deliverer.stop()
    bodies = {json.loads(r.body)["task"]["id"]: (json.loads(r.body), r) for r in got}
    assert set(bodies) == {loud, failing} and quiet not in bodies
    finished, request = bodies[loud]
    assert finished["event"] == "fire.finished" and finished["run"]["outcome"] == "succeeded"
    assert finished["task"]["name"] == "Loud" and finished["chat_id"] == rig.task(loud).chat_id
    assert finished["run"]["first_line"] and finished["run"]["id"] == rig.task_runs(loud)[0].run_id
    assert policy.verify(channel.secret, request.body, request.headers["X-Chatcron-Signature"])
    failed, _ = bodies[failing]
    assert failed["event"] == "fire.failed" and failed["run"]["outcome"] == "failed"
    assert "demo failure requested" in failed["run"]["error"]


def test_a_hanging_webhook_does_not_slow_a_fire(rig_with: Callable[..., Any]) -> None:
    rig = rig_with()
    with webhook_receiver() as receiver:
        receiver.hang = 4.0  # answers only after 4 s, past the sender's 2 s timeout below
        channels.create(rig.core.db, rig.clock, rig.core.settings, rig.alice, {"kind": "webhook", "url": receiver.url})
        sender = functools.partial(send_webhook, timeout=2.0, guard=Destinations.of(rig.core.settings))
        deliverer = Deliverer(rig.core.db, rig.clock, DelivererConfig(owner="test:hang", poll_seconds=0.02),
                              webhook=sender).start()
        try:
            task = rig.create(notify="always")
            rig.move_to(60)
            rig.tick()
            wait_until(lambda: any(d.lease_owner for d in deliveries(rig.core)), what="the first attempt began")
            started = time.monotonic()
            rig.move_to(120)
            rig.tick()  # the second fire: claimed, run and recorded while the first POST still hangs
            took = time.monotonic() - started
            [first, *_] = deliveries(rig.core)
            assert first.lease_owner == "test:hang" and first.attempts == 0, "the first attempt was still going"
            wait_until(lambda: deliveries(rig.core)[0].attempts == 1, what="the hanging attempt timed out")
            assert deliveries(rig.core)[0].last_error == "no complete answer within 2 s (the attempt's time limit)"
        finally:
            deliverer.stop(0.1)
    assert took < 1.5, f"a fire took {took:.2f} s while a webhook hung"
    assert [r.status for r in rig.task_runs(task)] == ["succeeded", "succeeded"]
