"""The egress proxy (SPEC §12.1): a sandboxed agent's only way out of its network namespace.

One proxy per process that starts agents (the web process, the scheduler), on an event loop
thread of its own. Each agent process gets its own unix socket (:meth:`EgressProxy.open`), bound
into its sandbox and reached there through the relay on 127.0.0.1 (``HTTPS_PROXY`` and friends
point at it); the socket a connection arrives on says which agent, so which project's
:class:`Route` decides it.

It speaks the two forms HTTP clients use with a proxy: ``CONNECT host:port`` (a tunnel: TLS, or
anything else) and an absolute-form request (``GET http://host:port/path``, plain HTTP; sent on
with ``Connection: close``). Names are resolved here, never in the sandbox; a refused destination
gets ``403`` and is reported to the route (an event in the turn, a counter in ``/metrics``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ipaddress
import logging
import os
import socket
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from app.agents.egress.policy import AGENT_API_NAME, DEFAULT_PORTS, Address, Policy, normal_host

log = logging.getLogger("chatcron.egress")
SOCKET_NAME = "egress.sock"
HEAD_LIMIT = 64 * 1024
HEAD_SECONDS = 30.0
CONNECT_SECONDS = 30.0
CHUNK = 64 * 1024
_HOP_HEADERS = (b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive")


@dataclasses.dataclass
class Route:
    """What one agent process may reach, and who hears of a refusal.

    ``api`` is the host and port behind :data:`AGENT_API_NAME` (chatcron's own agent API), or None
    when the agent is given none. ``on_refused(host, port)`` runs on a worker thread (it may write
    to the database); it is set by whoever runs the turn and may change between turns.
    """

    policy: Policy
    api: tuple[str, int] | None = None
    api_port: int = 0  # the port the agent names with AGENT_API_NAME
    on_refused: Callable[[str, int], None] | None = None


class Refused(Exception):
    """The destination is not the agent's to reach."""


class Listener:
    """One agent process's socket on the proxy; :meth:`close` stops it and removes the file."""

    def __init__(self, proxy: EgressProxy, path: Path, server: asyncio.AbstractServer) -> None:
        self.proxy, self.path, self._server = proxy, path, server

    def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            self.proxy.call(self.proxy.stop_server(server))
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


class EgressProxy:
    """The process's proxy: its loop runs on a daemon thread started with the first listener."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._connections: set[asyncio.Task] = set()  # on the loop's thread only

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="egress-proxy", daemon=True)
                thread.start()
                self._loop = loop
            return self._loop

    def call(self, coro) -> object:  # a coroutine run on the proxy's loop, waited for
        future: Future = asyncio.run_coroutine_threadsafe(coro, self._ensure_loop())
        return future.result(timeout=30)

    def open(self, route: Route, folder: Path, *, owner: tuple[int, int] | None = None) -> Listener:
        """Listen on ``folder/egress.sock`` for one agent process; ready when this returns.

        ``owner``: the agent's uid and gid, given the socket (mode 0600) when the server switches
        uid (a unix socket is connected to with write permission on it)."""
        path = folder / SOCKET_NAME
        server = self.call(self._start_server(route, path))
        if owner is not None:
            os.chown(path, *owner)
        os.chmod(path, 0o600)
        return Listener(self, path, server)

    async def _start_server(self, route: Route, path: Path) -> asyncio.AbstractServer:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return await asyncio.start_unix_server(lambda r, w: self._hold(_serve(route, r, w)), path=str(path),
                                               limit=HEAD_LIMIT)

    def _hold(self, connection: Coroutine[Any, Any, None]) -> None:
        """Run one connection as a task held until it ends. The loop keeps only a weak reference to
        a task and Python 3.11's start_unix_server none at all: a connection waiting on its streams
        is a reference cycle with nothing outside it, which the garbage collector may destroy
        mid-way ("Task was destroyed but it is pending!"), its upstream socket left half-open."""
        task = asyncio.ensure_future(connection)
        self._connections.add(task)
        task.add_done_callback(self._connections.discard)

    @staticmethod
    async def stop_server(server: asyncio.AbstractServer) -> None:
        server.close()  # open tunnels end with the agent's relay, which ends with the agent


# -- one connection -----------------------------------------------------------------------------------


async def _serve(route: Route, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    upstream: asyncio.StreamWriter | None = None
    try:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_SECONDS)
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            return
        try:
            method, host, port, rest = _parse(head)
        except ValueError as exc:
            await _answer(writer, 400, f"chatcron egress: {exc}")
            return
        try:
            target = await _decide(route, host, port)
        except Refused as exc:
            await _report(route, host, port)  # in the turn's log before the agent hears of it
            await _answer(writer, 403, f"chatcron egress: {host}:{port} refused ({exc})")
            return
        try:
            up_reader, upstream = await asyncio.wait_for(asyncio.open_connection(str(target[0]), target[1]),
                                                         CONNECT_SECONDS)
        except (TimeoutError, OSError) as exc:
            await _answer(writer, 502, f"chatcron egress: {host}:{port} could not be reached: {exc}")
            return
        if method == b"CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
            await _pipe_both(reader, writer, up_reader, upstream)
        else:
            upstream.write(rest)
            await upstream.drain()
            await _pipe_both(reader, writer, up_reader, upstream, response_head=True)
    except ConnectionError:
        pass
    finally:
        for w in (writer, upstream):
            if w is not None:
                w.close()


def _parse(head: bytes) -> tuple[bytes, str, int, bytes]:
    """(method, host, port, what to send upstream) of a proxy request's head."""
    line, _, headers = head.partition(b"\r\n")
    parts = line.split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        raise ValueError("not an HTTP/1.x proxy request")
    method, target, version = parts
    text = target.decode("ascii", "replace")
    if method == b"CONNECT":
        host, sep, raw_port = text.rpartition(":")
        if not sep or not raw_port.isdigit() or not 0 < int(raw_port) < 65536 or not host:
            raise ValueError(f"CONNECT needs host:port, not {text!r}")
        return method, normal_host(host), int(raw_port), b""
    try:
        url = urlsplit(text)
        port = url.port or DEFAULT_PORTS.get(url.scheme)
    except ValueError:
        raise ValueError(f"{text!r} is not a URL") from None
    if url.scheme != "http" or not url.hostname or port is None:
        raise ValueError("only http:// URLs are forwarded; https goes through CONNECT")
    path = url.path or "/"
    if url.query:
        path += "?" + url.query
    out = _closing_head([b"%s %s %s" % (method, path.encode(), version)], headers)
    return method, normal_host(url.hostname), port, out


def _closing_head(first: list[bytes], headers: bytes) -> bytes:
    """A message head: ``first`` line, ``headers`` without their hop-by-hop ones, ``Connection: close``."""
    kept = [h for h in headers.split(b"\r\n") if h and h.split(b":", 1)[0].strip().lower() not in _HOP_HEADERS]
    return b"\r\n".join([*first, *kept, b"Connection: close", b"", b""])


async def _decide(route: Route, host: str, port: int) -> tuple[Address | str, int]:
    """Where to connect for ``host:port``; raises Refused."""
    if host == AGENT_API_NAME:
        if route.api is None or port != route.api_port:
            raise Refused("chatcron's agent API is not given to this agent" if route.api is None
                          else f"chatcron's agent API is at port {route.api_port}")
        return route.api
    if not route.policy.allows_name(host, port):
        raise Refused("not an allowed host")
    try:
        addresses = [ipaddress.ip_address(host)]
    except ValueError:
        try:
            found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise Refused(f"its name does not resolve: {exc}") from None
        addresses = list(dict.fromkeys(ipaddress.ip_address(info[4][0].split("%")[0]) for info in found))
    chosen = route.policy.pick(host, port, addresses)
    if chosen is None:
        raise Refused("it resolves to an address agents may not reach: " + ", ".join(map(str, addresses)))
    return chosen, port


async def _report(route: Route, host: str, port: int) -> None:
    log.info("action=egress_refused host=%s port=%s", host, port)
    callback = route.on_refused
    if callback is None:
        return

    def call() -> None:
        try:
            callback(host, port)
        except Exception:  # a turn that ended meanwhile, a store hiccup: the refusal itself stands
            log.exception("action=egress_refused_report_failed host=%s port=%s", host, port)

    await asyncio.get_running_loop().run_in_executor(None, call)


async def _answer(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
    body = (text + "\n").encode()
    writer.write(b"HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                 % (status, reason.encode(), len(body), body))
    with contextlib.suppress(ConnectionError):
        await writer.drain()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            if writer.can_write_eof():
                writer.write_eof()


async def _response_head(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Forward the upstream response's head saying ``Connection: close`` (this connection ends
    with the response), then the rest as it comes."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        writer.write(exc.partial)
        return
    except asyncio.LimitOverrunError:
        return  # a response head over 64 KiB: the connection ends
    status, _, headers = head.partition(b"\r\n")
    writer.write(_closing_head([status], headers))
    await writer.drain()
    await _pipe(reader, writer)


async def _pipe_both(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, up_reader: asyncio.StreamReader,
                     upstream: asyncio.StreamWriter, *, response_head: bool = False) -> None:
    down = _response_head(up_reader, writer) if response_head else _pipe(up_reader, writer)
    up_task = asyncio.ensure_future(_pipe(reader, upstream))
    try:
        await down
    finally:
        up_task.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConnectionError):
            await up_task


_PROXY = EgressProxy()  # its loop thread starts with the first listener


def proxy() -> EgressProxy:
    """This process's egress proxy."""
    return _PROXY
