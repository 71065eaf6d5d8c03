"""The egress proxy on real sockets: tunnels, plain HTTP forwarding, refusals and their report."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.agents.egress.policy import AGENT_API_NAME, Policy, parse_allow_hosts
from app.agents.egress.proxy import Listener, Route, proxy
from tests.isolation import free_port


class _Echo(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = f"{self.command} {self.path} host={self.headers.get('Host')} conn={self.headers.get('Connection')}"
        self._send(body)

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length", "0"))
        self._send("posted " + self.rfile.read(length).decode())

    def _send(self, body: str) -> None:
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Keep-Alive", "timeout=5")  # a hop-by-hop header the proxy drops
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def upstream() -> Iterator[int]:
    port = free_port()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield port
    server.shutdown()
    server.server_close()


def _open(tmp_path: Path, route: Route) -> Listener:
    return proxy().open(route, tmp_path)


def _ask(listener: Listener, payload: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX) as conn:
        conn.settimeout(10)
        conn.connect(str(listener.path))
        conn.sendall(payload)
        chunks = []
        while data := conn.recv(65536):
            chunks.append(data)
        return b"".join(chunks)


def test_a_plain_http_request_is_forwarded_in_origin_form_and_the_connection_closes(tmp_path: Path,
                                                                                    upstream: int) -> None:
    listener = _open(tmp_path, Route(Policy.build([], [], parse_allow_hosts(f"127.0.0.1:{upstream}"))))
    try:
        reply = _ask(listener, f"GET http://127.0.0.1:{upstream}/v1/models?x=1 HTTP/1.1\r\n"
                               f"Host: 127.0.0.1:{upstream}\r\nProxy-Connection: keep-alive\r\n\r\n".encode())
        assert reply.startswith(b"HTTP/1.0 200") or reply.startswith(b"HTTP/1.1 200"), reply
        head, _, body = reply.partition(b"\r\n\r\n")
        assert b"Connection: close" in head and b"Keep-Alive" not in head
        assert body == f"GET /v1/models?x=1 host=127.0.0.1:{upstream} conn=close".encode()
        posted = _ask(listener, f"POST http://127.0.0.1:{upstream}/ HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n"
                                "hello".encode())
        assert posted.endswith(b"posted hello"), posted
    finally:
        listener.close()
    assert not listener.path.exists()


def test_connect_opens_a_tunnel(tmp_path: Path, upstream: int) -> None:
    listener = _open(tmp_path, Route(Policy.build([], [], parse_allow_hosts(f"127.0.0.1:{upstream}"))))
    try:
        reply = _ask(listener, f"CONNECT 127.0.0.1:{upstream} HTTP/1.1\r\nHost: 127.0.0.1:{upstream}\r\n\r\n"
                               "GET /through HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".encode())
        assert reply.startswith(b"HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.0 200"), reply
        assert reply.endswith(b"GET /through host=t conn=close")
    finally:
        listener.close()


@pytest.mark.parametrize("request_line", [
    "CONNECT 127.0.0.1:{other} HTTP/1.1",  # another loopback service (a database, another agent's API)
    "GET http://127.0.0.1:{other}/ HTTP/1.1",
    "CONNECT localhost:{port} HTTP/1.1",  # an allowed name resolving to loopback (rebinding)
    "CONNECT 93.184.216.34:443 HTTP/1.1",  # a raw address outside the list
    "CONNECT 169.254.169.254:80 HTTP/1.1",  # the cloud metadata service
    "CONNECT " + AGENT_API_NAME + ":80 HTTP/1.1",  # no agent API given to this agent
])
def test_refusals_answer_403_and_are_reported(tmp_path: Path, upstream: int, request_line: str) -> None:
    heard: list[tuple[str, int]] = []
    done = threading.Event()

    def refused(host: str, port: int) -> None:
        heard.append((host, port))
        done.set()

    other = free_port()
    rules = parse_allow_hosts(f"localhost:{upstream}")  # the name only: its loopback address is not allowed
    listener = _open(tmp_path, Route(Policy.build([], [], rules), on_refused=refused))
    try:
        line = request_line.format(other=other, port=upstream)
        reply = _ask(listener, f"{line}\r\nHost: x\r\n\r\n".encode())
    finally:
        listener.close()
    assert reply.startswith(b"HTTP/1.1 403 Forbidden"), reply
    assert b"refused" in reply
    assert done.wait(10) and len(heard) == 1
    target = line.split(" ")[1].removeprefix("http://").rstrip("/")
    assert f"{heard[0][0]}:{heard[0][1]}" == target


def test_the_reserved_name_reaches_the_agent_api_only_on_its_port(tmp_path: Path, upstream: int) -> None:
    route = Route(Policy.build([], [], ()), api=("127.0.0.1", upstream), api_port=8000)
    listener = _open(tmp_path, route)
    try:
        ok = _ask(listener, f"GET http://{AGENT_API_NAME}:8000/api/agent/x HTTP/1.1\r\n"
                            f"Host: {AGENT_API_NAME}:8000\r\n\r\n".encode())
        wrong = _ask(listener, f"CONNECT {AGENT_API_NAME}:{upstream} HTTP/1.1\r\n\r\n".encode())
    finally:
        listener.close()
    assert ok.endswith(f"GET /api/agent/x host={AGENT_API_NAME}:8000 conn=close".encode()), ok
    assert wrong.startswith(b"HTTP/1.1 403"), wrong


@pytest.mark.parametrize("garbage", [b"HELLO\r\n\r\n", b"GET https://example.com/ HTTP/1.1\r\n\r\n",
                                     b"CONNECT nohost HTTP/1.1\r\n\r\n"])
def test_what_is_not_a_proxy_request_gets_400(tmp_path: Path, garbage: bytes) -> None:
    listener = _open(tmp_path, Route(Policy.build([], [], ())))
    try:
        assert _ask(listener, garbage).startswith(b"HTTP/1.1 400"), garbage
    finally:
        listener.close()
