"""Believe ``X-Forwarded-Proto`` / ``X-Forwarded-For`` only from trusted proxy addresses."""

from __future__ import annotations

import ipaddress

from starlette.types import ASGIApp, Receive, Scope, Send


class ProxyHeaders:
    """Pure ASGI middleware: for a request from a trusted proxy, take the scheme and client address
    it forwarded, so a TLS-terminating proxy yields ``https`` (a Secure session cookie) and the
    real client address (login limits per address)."""

    def __init__(self, app: ASGIApp, trusted: tuple[str, ...]) -> None:
        self.app = app
        self.trusted = {_normal(t) for t in trusted}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = scope.get("client")
        if scope["type"] in ("http", "websocket") and client and _normal(client[0]) in self.trusted:
            headers = dict(scope.get("headers") or [])
            proto = headers.get(b"x-forwarded-proto", b"").decode("latin-1").split(",")[0].strip().lower()
            forwarded = headers.get(b"x-forwarded-for", b"").decode("latin-1").split(",")[0].strip()
            scope = dict(scope)
            if proto in ("http", "https", "ws", "wss"):
                scope["scheme"] = proto
            if forwarded:
                scope["client"] = (forwarded, 0)
        await self.app(scope, receive, send)


def _normal(host: str) -> str:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host
