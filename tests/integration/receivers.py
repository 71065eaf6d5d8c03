"""Real receivers on loopback for the notification tests: an HTTP webhook endpoint and an SMTP
server (aiosmtpd), each in its own thread, recording what arrived."""

from __future__ import annotations

import contextlib
import dataclasses
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
    """A webhook endpoint: answers ``status`` (or the next of ``script``), after ``hang`` seconds."""

    def __init__(self) -> None:
        self.got: list[Received] = []
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
                    hang = receiver.hang
                    if status < 300:
                        receiver.got.append(Received(self.path, dict(self.headers.items()), body, time.monotonic(),
                                                     time.time()))
                        receiver.arrived.notify_all()
                time.sleep(hang)
                self.send_response(status)
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
