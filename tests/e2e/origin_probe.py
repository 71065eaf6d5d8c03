"""Raw probes of a web server's origin checks: socket.io handshakes on both transports and CORS.

Plain sockets and httpx, so the test controls every header a browser would send (Origin above all)
and sees the server's first answer unaltered.
"""

from __future__ import annotations

import base64
import os
import socket
import urllib.parse

import httpx

WS_ACCEPTED = 101


def websocket_handshake(base_url: str, origin: str | None, path: str = "/_event/?EIO=4&transport=websocket") -> int:
    """The HTTP status a websocket upgrade of ``path`` gets (101: accepted), sent with ``origin``."""
    parts = urllib.parse.urlsplit(base_url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}:{port}", "Upgrade: websocket", "Connection: Upgrade",
             f"Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}", "Sec-WebSocket-Version: 13"]
    if origin is not None:
        lines.append(f"Origin: {origin}")
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = b""
        while b"\r\n" not in head:
            chunk = sock.recv(4096)
            if not chunk:
                break
            head += chunk
    status_line = head.split(b"\r\n", 1)[0].decode("latin-1")
    assert status_line.startswith("HTTP/1.1 "), f"not an HTTP answer: {head[:200]!r}"
    return int(status_line.split()[1])


def polling_handshake(base_url: str, origin: str | None,
                      path: str = "/_event/?EIO=4&transport=polling") -> httpx.Response:
    headers = {"Origin": origin} if origin is not None else {}
    return httpx.get(base_url + path, headers=headers, timeout=10)


def preflight(base_url: str, path: str, origin: str) -> httpx.Response:
    return httpx.options(base_url + path, timeout=10, headers={
        "Origin": origin, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type"})
