"""Where a webhook may go (SPEC §19): the address rule, the Standard Webhooks signature as a
receiver's library checks it, and the delivery log's words for a failed connection."""

from __future__ import annotations

import base64
import errno
import http.client
import socket
import ssl
import time

import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from app.attention.notify import policy
from app.attention.notify.destinations import DestinationRefused, Destinations, host_refused, literal
from app.attention.notify.senders import failure_words
from app.core.config import ConfigError, load_settings

REFUSED = {
    "loopback": "127.0.0.1",
    "loopback-anywhere-in-8": "127.8.9.10",
    "loopback-v6": "::1",
    "loopback-v6-bracketed": "[::1]",
    "localhost": "localhost",
    "localhost-upper-trailing-dot": "LOCALHOST.",
    "sub-localhost": "hooks.localhost",
    "private-10": "10.0.0.5",
    "private-172-16": "172.16.0.1",
    "private-172-31": "172.31.255.255",
    "private-192-168": "192.168.1.1",
    "unique-local-v6": "fd12:3456::1",
    "unique-local-v6-fc": "fc00::1",
    "cgnat-low": "100.64.0.1",
    "cgnat-high": "100.127.255.254",
    "link-local": "169.254.1.1",
    "link-local-v6": "fe80::1",
    "link-local-v6-with-zone": "fe80::1%eth0",
    "unspecified": "0.0.0.0",
    "unspecified-v6": "::",
    "multicast": "224.0.0.1",
    "multicast-v6": "ff02::1",
    "reserved": "240.0.0.1",
    "broadcast": "255.255.255.255",
    "metadata-aws-gcp-azure": "169.254.169.254",
    "metadata-aws-v6": "fd00:ec2::254",
    "metadata-alibaba": "100.100.100.200",
    "metadata-google-name": "metadata.google.internal",
    "mapped-loopback": "::ffff:127.0.0.1",
    "mapped-loopback-hex": "::ffff:7f00:1",
    "mapped-private": "::ffff:10.0.0.5",
    "mapped-metadata": "::ffff:169.254.169.254",
    "nat64-loopback": "64:ff9b::7f00:1",
    "6to4-private": "2002:c0a8:101::1",
    "short-form-loopback": "127.1",
    "decimal-loopback": "2130706433",
    "hex-loopback": "0x7f.0.0.1",
    "octal-loopback": "0177.0.0.1",
    "zero": "0",
}
ALLOWED = {
    "public-v4": "93.184.215.14",
    "public-dns": "8.8.8.8",
    "public-v6": "2606:4700:4700::1111",
    "mapped-public": "::ffff:8.8.8.8",
    "name": "hooks.example.com",
    "name-mentioning-localhost": "localhost.example.com",
    "name-ending-in-localhost": "mylocalhost",
    "next-to-172-16-12": "172.32.0.1",
    "next-to-cgnat": "100.128.0.1",
    "next-to-192-168": "192.169.0.1",
    "next-to-10": "11.0.0.1",
}


@pytest.mark.parametrize("host", list(REFUSED.values()), ids=list(REFUSED))
def test_a_host_into_the_servers_own_network_is_refused(host: str) -> None:
    assert host_refused(host)
    assert not Destinations().allows_host(host)
    assert Destinations(allow_private=True).allows_host(host)  # CHATCRON_WEBHOOK_ALLOW_PRIVATE=1


@pytest.mark.parametrize("host", list(ALLOWED.values()), ids=list(ALLOWED))
def test_a_public_host_is_allowed(host: str) -> None:
    assert not host_refused(host)
    assert Destinations().allows_host(host)


def test_legacy_literal_forms_are_read_as_the_resolver_reads_them() -> None:
    assert str(literal("127.1")) == str(literal("2130706433")) == str(literal("0x7f.0.0.1")) == "127.0.0.1"
    assert literal("hooks.example.com") is None and str(literal("[::1]")) == "::1"


def fake_resolver(monkeypatch: pytest.MonkeyPatch, answers: dict[str, list[str]]) -> None:
    def getaddrinfo(host: str, port: int, *args: object, **kwargs: object) -> list[tuple]:
        return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "",
                 (a, port, 0, 0) if ":" in a else (a, port)) for a in answers[host]]
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.mark.parametrize(("addresses", "refused"), [
    (["93.184.215.14"], False),
    (["93.184.215.14", "2606:4700:4700::1111"], False),
    (["93.184.215.14", "10.0.0.5"], True),  # one private address among public ones is enough
    (["::ffff:127.0.0.1"], True),
    (["169.254.169.254"], True),
], ids=["public", "public-both-families", "one-private-among-public", "mapped-loopback", "metadata"])
def test_at_delivery_every_address_a_name_resolves_to_must_pass(monkeypatch: pytest.MonkeyPatch,
                                                                addresses: list[str], refused: bool) -> None:
    fake_resolver(monkeypatch, {"hooks.example.com": addresses})
    if refused:
        with pytest.raises(DestinationRefused, match="^destination not allowed$"):
            Destinations().resolve("hooks.example.com", 443)
        assert Destinations(allow_private=True).resolve("hooks.example.com", 443)
    else:
        assert [info[4][0] for info in Destinations().resolve("hooks.example.com", 443)] == addresses


def test_a_local_name_is_refused_before_any_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_resolver(monkeypatch, {})  # a lookup would fail with KeyError
    with pytest.raises(DestinationRefused):
        Destinations().resolve("metadata.google.internal", 80)


def test_an_exempt_address_and_port_pass_and_nothing_else_on_that_address() -> None:
    guard = Destinations(exempt=frozenset({("127.0.0.1", 8080)}))
    assert guard.resolve("127.0.0.1", 8080)
    with pytest.raises(DestinationRefused):
        guard.resolve("127.0.0.1", 8081)


SECRET = "9f" * 32  # a channel secret as chatcron makes them: 64 hex characters
BODY = b'{"event":"fire.failed","task":{"id":7}}'


def headers_for(secret: str, delivery_id: int = 41, body: bytes = BODY) -> dict[str, str]:
    return policy.webhook_headers(delivery_id, "fire.failed", secret, body, int(time.time()))


@pytest.mark.parametrize("receivers_secret", [SECRET.encode(), "whsec_" + base64.b64encode(SECRET.encode()).decode()],
                         ids=["secret-bytes", "whsec-form"])
def test_standard_webhooks_headers_verify_with_the_standard_library(receivers_secret: str | bytes) -> None:
    headers = headers_for(SECRET)
    assert (headers["webhook-id"], headers["X-Chatcron-Delivery"]) == ("41", "41")
    assert headers["webhook-signature"].startswith("v1,")
    assert Webhook(receivers_secret).verify(BODY, headers) == {"event": "fire.failed", "task": {"id": 7}}
    assert policy.verify(SECRET, BODY, headers[policy.SIGNATURE_HEADER])  # the old header is unchanged


@pytest.mark.parametrize("change", ["body", "id", "secret"])
def test_a_forged_or_altered_delivery_does_not_verify(change: str) -> None:
    headers = headers_for(SECRET)
    body, secret = BODY, SECRET.encode()
    if change == "body":
        body = BODY.replace(b"7", b"8")
    elif change == "id":
        headers["webhook-id"] = "42"
    else:
        secret = ("0" * 64).encode()
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(body, headers)


def test_a_whsec_secret_is_keyed_with_the_bytes_its_base64_stands_for() -> None:
    secret = "whsec_" + base64.b64encode(b"k" * 24).decode()
    assert Webhook(secret).verify(BODY, headers_for(secret))


EXCEPTIONS = {
    "refused": (ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"), "connection refused"),
    "timeout": (TimeoutError("timed out reading from db-internal:5432"), "timed out"),
    "no-name": (socket.gaierror(-2, "Name or service not known"), "name not resolved"),
    "certificate": (ssl.SSLCertVerificationError("hostname 'vault.internal' doesn't match"),
                    "TLS certificate not accepted"),
    "tls": (ssl.SSLError("WRONG_VERSION_NUMBER"), "TLS failed"),
    "banner": (http.client.BadStatusLine("SSH-2.0-OpenSSH_9.6 db-internal-01"), "not an HTTP answer"),
    "closed": (http.client.RemoteDisconnected("Remote end closed connection"), "connection closed"),
    "reset": (ConnectionResetError(errno.ECONNRESET, "reset by redis-internal"), "connection closed"),
    "unreachable": (OSError(errno.EHOSTUNREACH, "No route to host"), "unreachable"),
    "other": (OSError("something internal"), "connection failed"),
}


@pytest.mark.parametrize(("exc", "words"), list(EXCEPTIONS.values()), ids=list(EXCEPTIONS))
def test_a_failed_connection_is_told_in_fixed_words(exc: BaseException, words: str) -> None:
    assert failure_words(exc) == words


@pytest.mark.parametrize(("raw", "value"), [("1", True), ("true", True), (" on ", True), ("0", False),
                                            ("false", False)], ids=["1", "true", "on", "0", "false"])
def test_the_allow_private_setting_is_a_flag(raw: str, value: bool) -> None:
    assert load_settings({"CHATCRON_WEBHOOK_ALLOW_PRIVATE": raw}).webhook_allow_private is value


def test_the_allow_private_setting_is_off_by_default_and_a_bad_value_is_named() -> None:
    assert load_settings({}).webhook_allow_private is False
    with pytest.raises(ConfigError, match="^CHATCRON_WEBHOOK_ALLOW_PRIVATE:"):
        load_settings({"CHATCRON_WEBHOOK_ALLOW_PRIVATE": "maybe"})
