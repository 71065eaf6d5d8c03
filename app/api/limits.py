"""Request-size guard for the JSON APIs: over the limit → 413 before any handler runs."""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.core.envelope import PAYLOAD_MAX_BYTES as HOOK_MAX_BYTES  # a trigger call's payload

API_PREFIXES = ("/api/", "/agent-api/", "/auth/", "/hooks/")
HOOKS_PREFIX = "/hooks/"  # trigger URLs (SPEC §19): anyone may call them, so their own, smaller limit



class BodyLimit:
    """Pure ASGI middleware: counts body bytes (declared and streamed) on API paths."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(API_PREFIXES):
            await self.app(scope, receive, send)
            return
        # one middleware per app: the limit is the path's (trigger URLs are anyone's to call: smaller)
        limit = min(self.max_bytes, HOOK_MAX_BYTES) if scope["path"].startswith(HOOKS_PREFIX) else self.max_bytes
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and not declared.isdigit():
            await self._reject(send, 400, "invalid", "Content-Length: is not a number")
            return
        if declared is not None and int(declared) > limit:
            await self._reject(send, limit=limit)
            return
        if declared is None:
            # A streamed body is read (up to the limit) before any handler runs, so even an endpoint
            # that never reads its body cannot act on an oversized request.
            body, too_large = await _read_limited(receive, limit)
            if too_large:
                await self._reject(send, limit=limit)
                return
            await self.app(scope, _replay(body, receive), send)
            return
        await self.app(scope, receive, send)

    @staticmethod
    async def _reject(send: Send, status: int = 413, code: str = "too_large", message: str = "",
                      limit: int = 0) -> None:
        text = message or f"body: larger than {limit} bytes"
        body = json.dumps({"error": {"code": code, "message": text}}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


async def _read_limited(receive: Receive, limit: int) -> tuple[bytes, bool]:
    chunks, seen = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), False
        chunk = message.get("body", b"")
        seen += len(chunk)
        if seen > limit:
            return b"", True
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), False


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive() that hands out the already-read body once, then defers to the real one."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
