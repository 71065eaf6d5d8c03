"""Outgoing webhooks, second round (SPEC §19), on SQLite and PostgreSQL: Standard Webhooks headers
that a receiver's library verifies, no way into the server's own network (refused when a channel
is added, and at delivery on every redirect), and a delivery log that shows nothing of a
receiver's answer but its status code. All traffic stays on loopback."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import socketserver
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from app.attention.notify import channels, policy
from app.attention.notify.destinations import STRICT, Destinations
from app.attention.notify.senders import MAX_REDIRECTS, send_webhook
from app.core import auth
from app.core.attention_tables import AttentionKind
from app.core.context import Core
from tests.conftest import database_core, with_settings
from tests.integration.apiclient import add_user, bearer, client_for, table_contents
from tests.integration.receivers import Receiver, wait_until, webhook_receiver
from tests.integration.test_notify_outbox import add_event, all_settled, deliverers, deliveries, webhook


@dataclasses.dataclass
class World:
    core: Core
    strict: TestClient  # CHATCRON_WEBHOOK_ALLOW_PRIVATE unset: the default
    single_host: TestClient  # CHATCRON_WEBHOOK_ALLOW_PRIVATE=1
    alice: dict[str, str]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with database_core(request, tmp_path_factory, "notify-destinations", webhook_allow_private=False) as core:
        alice = add_user(core, "alice@example.com")
        single_host = dataclasses.replace(core, settings=with_settings(core.settings, webhook_allow_private=True))
        yield World(core, client_for(core, raise_server_exceptions=False),
                    client_for(single_host, raise_server_exceptions=False),
                    bearer(auth.create_api_token(core.db, core.clock, alice.id)))


INTO_THE_SERVER = {
    "loopback-postgres-port": "http://127.0.0.1:5432/",
    "loopback-v6": "http://[::1]/",
    "localhost": "http://localhost:8080/x",
    "private": "http://10.0.0.5/",
    "metadata": "http://169.254.169.254/latest",
    "mapped-v6-loopback": "http://[::ffff:127.0.0.1]:8080/",
    "decimal-loopback": "http://2130706433/",
    "metadata-name": "https://metadata.google.internal/computeMetadata/v1/",
}


def listed(w: World) -> list[dict[str, Any]]:
    return w.strict.get("/api/notification-channels", headers=w.alice).json()["channels"]


@pytest.mark.parametrize("url", list(INTO_THE_SERVER.values()), ids=list(INTO_THE_SERVER))
def test_a_webhook_into_the_servers_own_network_is_a_400_naming_url_and_writes_nothing(world: World,
                                                                                       url: str) -> None:
    before, channels_before = table_contents(world.core), listed(world)
    answer = world.strict.post("/api/notification-channels", json={"kind": "webhook", "url": url},
                               headers=world.alice)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["message"].startswith("url:"), answer.text
    assert table_contents(world.core) == before and listed(world) == channels_before


def test_with_the_setting_on_a_loopback_webhook_is_accepted(world: World) -> None:
    answer = world.single_host.post("/api/notification-channels", headers=world.alice,
                                    json={"kind": "webhook", "url": "http://127.0.0.1:5432/"})
    assert answer.status_code == 201, answer.text
    assert answer.json()["id"] in [c["id"] for c in listed(world)]


def test_a_public_webhook_is_accepted_without_the_setting(world: World) -> None:
    answer = world.strict.post("/api/notification-channels", headers=world.alice,
                               json={"kind": "webhook", "url": "https://hooks.example.com/chatcron"})
    assert answer.status_code == 201, answer.text


def port_of(receiver: Receiver) -> int:
    return receiver.server.server_address[1]


def only(*receivers: Receiver) -> Destinations:
    """The production fence, with exactly these loopback receivers let through."""
    return Destinations(exempt=frozenset(("127.0.0.1", port_of(r)) for r in receivers))


def sender(guard: Destinations) -> Any:
    return functools.partial(send_webhook, timeout=5.0, guard=guard)


def test_standard_webhooks_headers_verify_as_a_receiver_would_and_a_retry_keeps_its_id(core: Core) -> None:
    alice = add_user(core, "alice@example.com")
    with webhook_receiver() as receiver:
        receiver.script = [503]  # the first attempt fails: the retry is the same delivery
        channel = webhook(core, alice, receiver.url)
        with deliverers(core):  # the tests' settings: loopback allowed
            add_event(core, alice, AttentionKind.FIRE_FAILED)
            receiver.wait_for(1)
            wait_until(lambda: all_settled(core), what="the delivery settled")
    [row] = deliveries(core)
    assert (row.state, row.attempts) == ("delivered", 2)
    first, retry = receiver.every
    assert first.headers["webhook-id"] == retry.headers["webhook-id"] == str(row.id)
    for request in (first, retry):
        assert abs(int(request.headers["webhook-timestamp"]) - request.wall) <= 2
        event = Webhook(channel.secret.encode()).verify(request.body, request.headers)
        assert event["event"] == "fire.failed"
        assert policy.verify(channel.secret, request.body, request.headers["X-Chatcron-Signature"])
    seen: set[str] = set()  # what a receiver keeps to refuse replays
    fresh = [not (r.headers["webhook-id"] in seen or seen.add(r.headers["webhook-id"])) for r in receiver.every]
    assert fresh == [True, False]
    forged = {**retry.headers, "webhook-id": str(row.id + 1)}  # a replay under another id does not verify
    with pytest.raises(WebhookVerificationError):
        Webhook(channel.secret.encode()).verify(retry.body, forged)


def test_a_redirect_to_a_loopback_port_not_allowed_fails_the_delivery(core: Core) -> None:
    alice = add_user(core, "alice@example.com")
    with webhook_receiver() as inside, webhook_receiver() as front:
        front.status, front.location = 302, inside.url
        webhook(core, alice, front.url)
        with deliverers(core, webhook=sender(only(front))):
            add_event(core, alice, AttentionKind.FIRE_FAILED)
            wait_until(lambda: all_settled(core), what="the delivery settled")
    [row] = deliveries(core)
    assert (row.state, row.attempts, row.last_status, row.last_error) == \
        ("failed", 1, None, "destination not allowed")  # at once: a refused destination is not retried
    assert len(front.every) == 1 and inside.every == []


def test_an_allowed_redirect_is_followed_with_the_same_body_and_headers(core: Core) -> None:
    alice = add_user(core, "alice@example.com")
    with webhook_receiver() as moved, webhook_receiver() as front:
        front.status, front.location = 308, moved.url + "/new?x=1"
        channel = webhook(core, alice, front.url)
        with deliverers(core, webhook=sender(only(front, moved))):
            add_event(core, alice, AttentionKind.FIRE_FAILED)
            [request] = moved.wait_for(1)
            wait_until(lambda: all_settled(core), what="the delivery settled")
    [row] = deliveries(core)
    assert (row.state, row.attempts, row.last_status) == ("delivered", 1, 200)
    [hop] = front.every
    assert request.path == "/hook/new?x=1" and request.body == hop.body
    assert {k: request.headers[k] for k in ("webhook-id", "webhook-timestamp", "webhook-signature")} == \
        {k: hop.headers[k] for k in ("webhook-id", "webhook-timestamp", "webhook-signature")}
    assert Webhook(channel.secret.encode()).verify(request.body, request.headers)


def test_a_redirect_loop_ends_after_the_last_hop(core: Core) -> None:
    alice = add_user(core, "alice@example.com")
    with webhook_receiver() as looping:
        looping.status, looping.location = 307, looping.url
        webhook(core, alice, looping.url)
        with deliverers(core, backoff=(), webhook=sender(only(looping))):
            add_event(core, alice, AttentionKind.FIRE_FAILED)
            wait_until(lambda: all_settled(core), what="the delivery settled")
    [row] = deliveries(core)
    assert (row.state, row.last_status, row.last_error) == \
        ("failed", 307, f"HTTP 307: more than {MAX_REDIRECTS} redirects")
    assert len(looping.every) == MAX_REDIRECTS + 1


def test_a_loopback_receiver_gets_nothing_without_the_setting(core: Core) -> None:
    alice = add_user(core, "alice@example.com")
    with webhook_receiver() as receiver:
        webhook(core, alice, receiver.url)  # added while the setting was on
        with deliverers(core, webhook=sender(STRICT)):
            add_event(core, alice, AttentionKind.FIRE_FAILED)
            wait_until(lambda: all_settled(core), what="the delivery settled")
    [row] = deliveries(core)
    assert (row.state, row.attempts, row.last_error) == ("failed", 1, "destination not allowed")
    assert receiver.every == []


@contextlib.contextmanager
def banner_server(banner: bytes) -> Iterator[str]:
    """Something that is not a webhook receiver: it greets every connection with ``banner``."""

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            self.request.sendall(banner)
            time.sleep(0.05)

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="banner", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_the_delivery_log_shows_a_status_code_and_nothing_of_the_answer(core: Core) -> None:
    alice = add_user(core, "alice@example.com")
    with webhook_receiver() as receiver, banner_server(b"SSH-2.0-OpenSSH_9.6 db-internal-01\r\n") as ssh:
        receiver.status = 500  # its status line says "Internal Server Error"
        failing, banner = webhook(core, alice, receiver.url), webhook(core, alice, ssh)
        with deliverers(core, backoff=()):
            add_event(core, alice, AttentionKind.FIRE_FAILED)
            wait_until(lambda: len(deliveries(core)) == 2 and all_settled(core), what="both deliveries settled")
    # each channel's log as the API (GET .../deliveries) and the page show it
    [five_hundred] = [channels.delivery_view(d) for d in channels.deliveries(core.db, alice, failing.id)]
    [not_http] = [channels.delivery_view(d) for d in channels.deliveries(core.db, alice, banner.id)]
    assert (five_hundred["last_status"], five_hundred["last_error"]) == (500, "HTTP 500")
    assert (not_http["last_status"], not_http["last_error"]) == (None, "not an HTTP answer")
