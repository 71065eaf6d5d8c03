"""Refuse browsers on other origins (SPEC §17), on every route and both socket.io transports.

A browser names the page that makes a request in the ``Origin`` header: always on a websocket
handshake and on cross-origin requests, and on same-origin ones except plain GETs. A request that
names an origin outside ``CHATCRON_ALLOWED_ORIGINS`` is refused before it reaches Reflex or the
APIs: HTTP gets a 403 (socket.io's polling transport is plain HTTP), a websocket handshake is
closed before it is accepted, which the server answers with a 403. A request without the header
(curl, the CLI, a same-origin GET) is not a browser page on another origin and passes.

CORS headers are Reflex's (its CORS middleware, configured from the same list in rxconfig.py):
only allowed origins get ``Access-Control-Allow-Origin``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger("chatcron.origins")


class OriginGuard:
    """ASGI middleware: a request whose Origin header is not allowed never reaches ``app``."""

    def __init__(self, app: ASGIApp, allowed: Iterable[str]) -> None:
        self.app = app
        self.allowed = frozenset(allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            origin = next((o for o in _origins(scope) if o not in self.allowed), None)
            if origin is not None:
                log.warning("action=origin_refused origin=%s path=%s", origin[:200], scope.get("path", ""))
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})  # before accept: an HTTP 403
                else:
                    await _forbidden(send, origin)
                return
        await self.app(scope, receive, send)


def _origins(scope: Scope) -> list[str]:
    """Every Origin header of the request, as sent (none: not a cross-origin browser request)."""
    return [value.decode("latin-1").strip() for name, value in scope.get("headers", ()) if name == b"origin"]


async def _forbidden(send: Send, origin: str) -> None:
    message = (f"requests from {origin[:200]} are not accepted: "
               "only the origins in CHATCRON_ALLOWED_ORIGINS may use this server from a browser")
    body = json.dumps({"error": {"code": "forbidden_origin", "message": message}}).encode()
    await send({"type": "http.response.start", "status": 403,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
