"""One hung webhook's effect on another user's delivery (SPEC §13): goal, delivered within 15 s.

One user's webhook receiver on loopback sends a status line and then one header line every 5 s,
never finishing its answer (a per-read socket timeout never trips); 20 of that user's events wait
for it. Once the deliverer is busy with them, another user's event is recorded; each sample is the
time from that moment to the arrival of the event at the other user's receiver (an ordinary one).
The deliverer is the product's own, built as the web process builds it
(``Deliverer.for_settings``: 4 workers, ``CHATCRON_NOTIFY_ATTEMPT_SECONDS`` at its default of
10 s), kicked the way the web process kicks its own; each repeat on a fresh database, the figure
is the median. A sample that does not arrive within ``CAP_S`` counts as ``CAP_S``.
``python -m tests.perf.bench_hung_webhook [--quick]``.
"""

from __future__ import annotations

import dataclasses
import time

from app.attention.notify import channels, deliverer
from app.attention.notify.deliverer import Deliverer
from app.core import attention_events as attention
from app.core import auth, chats
from app.core.attention_tables import AttentionKind
from app.core.context import Core
from app.core.models import User
from tests.integration.receivers import trickle_receiver, webhook_receiver
from tests.perf.common import emit, main_for, median, prepared

TARGET_MS = 15000.0
CAP_S = 60.0  # a sample still waiting after this long is recorded as this long
TRICKLE_S = 5.0  # one header line every 5 s, as the report had it
QUEUED = 20  # the hung user's events waiting for their receiver


@dataclasses.dataclass(frozen=True)
class Sizes:
    repeats: int


FULL = Sizes(repeats=5)
QUICK = Sizes(repeats=2)


def _event(core: Core, user: User, chat_id: int) -> None:
    with core.db.write() as s:
        attention.record(s.connection(), [attention.row(
            core.clock.now(), AttentionKind.FIRE_FAILED, user_email=user.email, chat_id=chat_id, project_id=None,
            payload={"task": {"id": 1, "name": "bench"}, "run": {"outcome": "failed"}})])
    deliverer.kick_local()


def _once(kind: str) -> tuple[float, int]:
    """(ms from the other user's event to its arrival, most hung connections open at once)."""
    with prepared(kind, "bench-hung-webhook-", webhook_allow_private=True) as b, \
            trickle_receiver(TRICKLE_S) as trickler, \
            webhook_receiver() as receiver:
        core = b.core
        other = auth.create_user(core.db, core.clock, "other@example.com", "password-1")
        hung_chat = chats.create_chat(core.db, core.clock, b.user, None, "hung").id
        other_chat = chats.create_chat(core.db, core.clock, other, None, "other").id
        channels.create(core.db, core.clock, core.settings, b.user, {"kind": "webhook", "url": trickler.url})
        channels.create(core.db, core.clock, core.settings, other, {"kind": "webhook", "url": receiver.url})
        running = Deliverer.for_settings(core.db, core.clock, core.settings, "bench").start()
        try:
            for _ in range(QUEUED):
                _event(core, b.user, hung_chat)
            trickler.wait(lambda t: t.open_now >= 1, 30, "the hung receiver got its first request")
            time.sleep(0.5)  # every free worker has had its chance to take a hung delivery
            asked = time.monotonic()
            _event(core, other, other_chat)
            try:
                [got] = receiver.wait_for(1, timeout=CAP_S)
                took = got.at - asked
            except AssertionError:
                took = CAP_S
            most_open = trickler.most_open
        finally:
            trickler.close()  # the hung attempts end now and are recorded before the database goes
            trickler.wait(lambda t: t.open_now == 0, 10, "the hung attempts ended")
            running.stop(2.0)
    return took * 1000, most_open


def bench(kind: str, sizes: Sizes) -> list[float]:
    """Emit ``hung_webhook_other_user_delivery_ms`` (median) and the hung connections at once."""
    samples, held = [], []
    for _ in range(sizes.repeats):
        took, most_open = _once(kind)
        samples.append(took)
        held.append(most_open)
    emit("hung_webhook_other_user_delivery_ms", median(samples), "ms", TARGET_MS, kind)
    emit("hung_webhook_connections_at_once", max(held), "connections", None, kind)
    return samples


if __name__ == "__main__":
    main_for(__doc__, bench, FULL, QUICK)
