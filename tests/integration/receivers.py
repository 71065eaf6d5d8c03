"""Real receivers on loopback for the notification tests: an HTTP webhook endpoint and an SMTP
server (aiosmtpd), each in its own thread, recording what arrived."""

from __future__ import annotations

import contextlib
import dataclasses
import select
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.isolation import free_port


@dataclasses.dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float  # time.monotonic() when it arrived
    wall: float  # time.time() when it arrived (to compare with instants other processes wrote)


class Receiver:
    """A webhook endpoint: answers ``status`` (or the next of ``script``), after ``hang`` seconds;
    a 3xx answer carries ``Location: location`` when it is set. ``got`` holds the requests it
    accepted (a 2xx answer), ``every`` all of them."""

    def __init__(self) -> None:
        self.got: list[Received] = []
        self.every: list[Received] = []
        self.location: str | None = None
        self.script: list[int] = []  # statuses for the next requests, then ``status``
        self.status = 200
        self.hang = 0.0
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    status = receiver.script.pop(0) if receiver.script else receiver.status
                    hang, location = receiver.hang, receiver.location
                    request = Received(self.path, dict(self.headers.items()), body, time.monotonic(), time.time())
                    receiver.every.append(request)
                    if status < 300:
                        receiver.got.append(request)
                        receiver.arrived.notify_all()
                time.sleep(hang)
                self.send_response(status)
                if location is not None and 300 <= status < 400:
                    self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, name="webhook-receiver", daemon=True)

    def wait_for(self, count: int, timeout: float = 15.0) -> list[Received]:
        """Block until ``count`` deliveries were accepted; returns them."""
        deadline = time.monotonic() + timeout
        with self.arrived:
            while len(self.got) < count:
                left = deadline - time.monotonic()
                assert left > 0, f"only {len(self.got)} of {count} deliveries arrived in {timeout} s"
                self.arrived.wait(left)
            return list(self.got)


@contextlib.contextmanager
def webhook_receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    receiver.thread.start()
    try:
        yield receiver
    finally:
        receiver.hang = 0.0
        receiver.server.shutdown()
        receiver.server.server_close()


class Trickler:
    """A webhook endpoint that never finishes answering: it reads the request, sends the status line,
    then one header line every ``interval`` seconds for as long as the client stays. Counts the
    connections open now, the most open at once, and how long each one lasted."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.open_now = 0
        self.most_open = 0
        self.accepted = 0
        self.lasted: list[float] = []  # seconds from accept to the client hanging up, per connection
        self.stopping = threading.Event()
        self.conns: list[socket.socket] = []
        trickler = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                started = time.monotonic()
                with trickler.changed:
                    trickler.conns.append(self.request)
                    trickler.accepted += 1
                    trickler.open_now += 1
                    trickler.most_open = max(trickler.most_open, trickler.open_now)
                    trickler.changed.notify_all()
                try:
                    trickler.serve(self.request)
                finally:
                    with trickler.changed:
                        trickler.conns.remove(self.request)
                        trickler.open_now -= 1
                        trickler.lasted.append(time.monotonic() - started)
                        trickler.changed.notify_all()

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/slow"
        self.thread = threading.Thread(target=self.server.serve_forever, name="trickler", daemon=True)

    def serve(self, conn: socket.socket) -> None:
        conn.settimeout(5.0)
        head = b""
        try:
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                head += chunk
            conn.sendall(b"HTTP/1.1 200 OK\r\n")
            line = 0
            while not self.stopping.is_set():
                if select.select([conn], [], [], self.interval)[0]:
                    if not conn.recv(4096):
                        return  # the client hung up
                    continue
                line += 1
                conn.sendall(b"X-Still-Thinking: %d\r\n" % line)
        except OSError:
            return

    def close(self) -> None:
        """Stop serving and hang up on every client still waiting."""
        self.stopping.set()
        with self.lock:
            for conn in self.conns:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
        self.server.shutdown()
        self.server.server_close()

    def wait(self, check: Callable[[Trickler], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        with self.changed:
            while not check(self):
                left = deadline - time.monotonic()
                assert left > 0, f"{what} did not happen within {timeout} s"
                self.changed.wait(left)


@contextlib.contextmanager
def trickle_receiver(interval: float) -> Iterator[Trickler]:
    trickler = Trickler(interval)
    trickler.thread.start()
    try:
        yield trickler
    finally:
        trickler.close()


@contextlib.contextmanager
def smtp_server() -> Iterator[tuple[int, list[Any]]]:
    """aiosmtpd on a free loopback port; yields (port, the envelopes received)."""
    from aiosmtpd.controller import Controller

    got: list[Any] = []

    class Handler:
        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 - aiosmtpd's name
            got.append(envelope)
            return "250 OK"

    port = free_port()  # aiosmtpd's start-up check cannot follow port 0: pick a free one
    controller = Controller(Handler(), hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield port, got
    finally:
        controller.stop()


def wait_until(check: Callable[[], Any], timeout: float = 15.0, what: str = "the condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"{what} did not hold within {timeout} s"
        time.sleep(0.02)
