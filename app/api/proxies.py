"""Believe ``X-Forwarded-Proto`` / ``X-Forwarded-For`` only from trusted proxy addresses."""

from __future__ import annotations

import ipaddress

from starlette.types import ASGIApp, Receive, Scope, Send


class ProxyHeaders:
    """Pure ASGI middleware: for a request from a trusted proxy, take the scheme and client address
    it forwarded, so a TLS-terminating proxy yields ``https`` (a Secure session cookie) and the
    real client address (login limits per address, on the login page's websocket too: its
    handshake passes here, and the login state counts the address this leaves in the scope)."""

    def __init__(self, app: ASGIApp, trusted: tuple[str, ...]) -> None:
        self.app = app
        self.trusted = {_normal(t) for t in trusted}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = scope.get("client")
        if scope["type"] in ("http", "websocket") and client and _normal(client[0]) in self.trusted:
            headers = dict(scope.get("headers") or [])
            proto = headers.get(b"x-forwarded-proto", b"").decode("latin-1").split(",")[0].strip().lower()
            forwarded = client_address(headers.get(b"x-forwarded-for", b"").decode("latin-1"), self.trusted)
            scope = dict(scope)
            if proto in ("http", "https", "ws", "wss"):
                scope["scheme"] = proto
            if forwarded:
                scope["client"] = (forwarded, 0)
        await self.app(scope, receive, send)


def client_address(forwarded_for: str, trusted: set[str]) -> str:
    """The client a trusted proxy forwarded for: the rightmost ``X-Forwarded-For`` entry that is not
    itself a trusted proxy. Entries left of it were written by the client and prove nothing (a
    proxy that appends keeps them), so they never choose the address the login limits count.
    "" when that entry is not an IP address (the peer's own address is kept then)."""
    for item in reversed([x.strip() for x in forwarded_for.split(",")]):
        address = _normal(item)
        if address not in trusted:
            return address if _is_ip(address) else ""
    return ""


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _normal(host: str) -> str:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host
