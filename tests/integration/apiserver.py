"""The web process's FastAPI app (or any ASGI app) served on a real loopback socket (granian's
embedded server).

Tests whose subprocesses (the remote-schedule CLI, an agent script) must reach the agent API
over HTTP start one of these.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest
from granian.constants import Interfaces
from granian.server.embed import Server
from starlette.types import ASGIApp

from app.api import create_api
from app.core.context import Core
from tests.isolation import free_port


class AsgiServer:
    """An ASGI app on 127.0.0.1:``port``, served by granian's embedded server in a thread."""

    def __init__(self, app: ASGIApp, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.app = app
        self.loop = asyncio.new_event_loop()
        self.server: Server | None = None
        self.failure: BaseException | None = None
        self.thread = threading.Thread(target=self._serve, name="granian", daemon=True)
        self.thread.start()
        self._wait_until_listening()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.server = Server(self.app, address="127.0.0.1", port=self.port, interface=Interfaces.ASGINL,
                                 log_enabled=False)
            self.loop.run_until_complete(self.server.serve())
            # e.g. the app's own timers: end them, not drop them. On this thread: the browser tests'
            # Playwright keeps a loop marked as running on the main thread for the whole session.
            self.loop.run_until_complete(_cancel_the_rest())
        except BaseException as exc:  # surfaced by _wait_until_listening
            self.failure = exc
        finally:
            self.loop.close()

    def _wait_until_listening(self) -> None:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.failure is not None:
                pytest.fail(f"granian did not start: {self.failure!r}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.02)  # polling a socket that is coming up, not waiting for a result
        pytest.fail(f"granian is not listening on port {self.port} after 15 s")

    def close(self) -> None:
        if self.server is not None and self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.server.stop)
        self.thread.join(15)
        assert not self.thread.is_alive(), "granian did not stop"


async def _cancel_the_rest() -> None:
    left = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in left:
        task.cancel()
    await asyncio.gather(*left, return_exceptions=True)


class ApiServer(AsgiServer):
    """The web process's FastAPI app on 127.0.0.1:``port``."""

    def __init__(self, core: Core, port: int | None = None) -> None:
        super().__init__(create_api(lambda: core, core.settings.request_max_bytes), port)


