"""Exactly one deliverer per event across nodes: two OS processes, each running a deliverer on
the same database (SQLite file or PostgreSQL schema), race for 80 events; a real receiver on
loopback must get each (event, channel) once, signed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections import Counter

import pytest

from app.attention.notify import policy
from app.core.attention_tables import AttentionKind
from app.core.context import Core
from tests.integration.apiclient import add_user
from tests.integration.procs import ROOT
from tests.integration.receivers import wait_until, webhook_receiver
from tests.integration.test_notify_outbox import add_event, all_settled, deliveries, webhook

pytestmark = pytest.mark.slow  # real scheduler processes delivering: left out of `make check`

CHILD = textwrap.dedent("""
    import signal, sys, threading
    from app.core.clock import SystemClock
    from app.core.db import Database
    from app.attention.notify.deliverer import Deliverer, DelivererConfig
    from app.attention.notify.destinations import Destinations
    db = Database(sys.argv[1])
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    config = DelivererConfig(owner=sys.argv[2], poll_seconds=0.01, workers=4,
                             destinations=Destinations(allow_private=True))  # the receiver is on loopback
    d = Deliverer(db, SystemClock(), config).start()
    print("ready", flush=True)
    stop.wait(60)
    d.stop(5.0)
""")


def test_two_processes_deliver_each_event_once(core: Core) -> None:
    alice = add_user(core, "alice@example.com")
    with webhook_receiver() as receiver:
        channel = webhook(core, alice, receiver.url)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        children = [subprocess.Popen([sys.executable, "-c", CHILD, core.settings.db_url, f"node-{i}"], cwd=ROOT,
                                     env=env, stdout=subprocess.PIPE, text=True) for i in range(2)]
        try:
            for child in children:
                assert child.stdout.readline().strip() == "ready"
            ids = [add_event(core, alice, AttentionKind.FIRE_FAILED) for _ in range(80)]
            got = receiver.wait_for(len(ids), timeout=60)
            wait_until(lambda: all_settled(core), what="every delivery settled")
        finally:
            for child in children:
                child.send_signal(signal.SIGTERM)
            for child in children:
                child.wait(20)
    assert all(policy.verify(channel.secret, r.body, r.headers["X-Chatcron-Signature"]) for r in got)
    assert Counter(r.headers["X-Chatcron-Delivery"] for r in got).most_common(1)[0][1] == 1
    assert len(got) == len(ids)
    rows = deliveries(core)
    assert sorted(r.event_id for r in rows) == ids and {r.state for r in rows} == {"delivered"}
    assert Counter(json.loads(r.body)["event"] for r in rows) == {"fire.failed": len(ids)}
