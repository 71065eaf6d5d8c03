"""The origin guard in front of a socket.io server with BOTH transports on (SPEC §17).

The web process runs socket.io on the websocket transport only (Reflex's default; with
``transport="polling"`` Reflex even turns engine.io's own origin check off), so
tests/e2e/test_origins.py can show a polling handshake refused but never one accepted. Here the
guard (app/api/origins.py) wraps a python-socketio server that accepts both, served by granian on
a real socket: an allowed origin opens either transport, a foreign one is refused on both.
"""

from __future__ import annotations

import socket
import urllib.parse
from collections.abc import Iterator

import pytest
import socketio

from app.api.origins import OriginGuard
from tests.e2e.origin_probe import WS_ACCEPTED, polling_handshake, websocket_handshake
from tests.integration.apiserver import AsgiServer

OWN = "https://chat.example.com"
FOREIGN = ["https://chat.example.com:8443", "http://chat.example.com", "https://evil.example", "null"]


@pytest.fixture(scope="module")
def server() -> Iterator[AsgiServer]:
    sio = socketio.AsyncServer(async_mode="asgi", transports=["polling", "websocket"], cors_allowed_origins="*")
    served = AsgiServer(OriginGuard(socketio.ASGIApp(sio, socketio_path="_event"), [OWN]))
    yield served
    served.close()


@pytest.mark.parametrize("origin", [OWN, None], ids=["own", "no-origin"])
def test_an_allowed_or_absent_origin_opens_both_transports(server: AsgiServer, origin: str | None) -> None:
    opened = polling_handshake(server.url, origin)
    assert opened.status_code == 200 and opened.text.startswith('0{"sid":'), opened.text  # engine.io OPEN
    assert websocket_handshake(server.url, origin) == WS_ACCEPTED


@pytest.mark.parametrize("origin", FOREIGN)
def test_a_foreign_origin_is_refused_on_both_transports(server: AsgiServer, origin: str) -> None:
    refused = polling_handshake(server.url, origin)
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "forbidden_origin"
    assert origin in refused.json()["error"]["message"]
    assert "access-control-allow-origin" not in refused.headers
    assert websocket_handshake(server.url, origin) == 403


def test_one_foreign_origin_among_several_headers_is_enough_to_refuse(server: AsgiServer) -> None:
    port = urllib.parse.urlsplit(server.url).port
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall((f"GET /_event/?EIO=4&transport=polling HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                      f"Origin: {OWN}\r\nOrigin: https://evil.example\r\nConnection: close\r\n\r\n").encode())
        assert sock.recv(64).startswith(b"HTTP/1.1 403")
