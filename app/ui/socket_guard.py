"""The websocket's first gate: a frame that does not name an event this app registered is dropped
before Reflex parses, queues or logs it (SPEC §17).

Reflex logs a frame it cannot route in full, its connection's headers (cookies) included, and
runs an unknown name up to a KeyError with a traceback. :class:`GuardedNamespace` takes Reflex's
event namespace's place (:func:`install`) and lets through only frames that are an object naming a
registered handler, from a socket linked to a tab; everything else is counted and, at most
:data:`REPORTS_PER_WINDOW` times a minute per worker, reported in one short line that carries
neither the frame nor the headers. Frontend error reports (``handle_frontend_exception``) are
capped per socket and per worker too: they are written to the log, and an anonymous socket may
send them.

Everything that passes then meets :class:`app.ui.guard.EventGuard` (targets, arguments, session).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from reflex.app import EventNamespace
from reflex.state import FrontendEventExceptionState
from reflex_base.registry import RegistrationContext

log = logging.getLogger("chatcron.ui")
WINDOW_SECONDS = 60.0
REPORTS_PER_WINDOW = 10  # log lines about dropped frames per worker per window
ERROR_REPORTS_PER_SOCKET = 3  # frontend error reports one socket may have logged
ERROR_REPORTS_PER_WINDOW = 20  # ... and all sockets of this worker together, per window
_NAME_CHARS = 200


class _Window:
    """A count per fixed time window (one worker; the clock is monotonic)."""

    def __init__(self, limit: int) -> None:
        self.limit, self.started, self.count = limit, time.monotonic(), 0

    def take(self) -> bool:
        now = time.monotonic()
        if now - self.started >= WINDOW_SECONDS:
            self.started, self.count = now, 0
        self.count += 1
        return self.count <= self.limit


class GuardedNamespace(EventNamespace):
    """Reflex's event namespace, with frames checked before Reflex reads them."""

    _dropped = 0
    _reports = _Window(REPORTS_PER_WINDOW)
    _error_reports = _Window(ERROR_REPORTS_PER_WINDOW)

    async def on_event(self, sid: str, data: Any) -> None:
        reason = self._refusal(sid, data)
        if reason is not None:
            self._drop(reason)
            return
        await super().on_event(sid, data)

    def _refusal(self, sid: str, data: Any) -> str | None:
        """Why the frame is dropped, or None when Reflex may have it."""
        if sid not in self.sid_to_token:
            return "socket without a tab"
        if not isinstance(data, dict):
            return "not an object"
        name = data.get("name")
        if not isinstance(name, str) or len(name) > _NAME_CHARS:
            return "no event name"
        if RegistrationContext.get().event_handlers.get(name) is None:
            return "unknown event"
        if name == _frontend_exception() and not self._may_report(sid):
            return "too many frontend error reports"
        return None

    def _may_report(self, sid: str) -> bool:
        counts = self.__dict__.setdefault("_reports_by_sid", {})
        counts[sid] = counts.get(sid, 0) + 1
        return counts[sid] <= ERROR_REPORTS_PER_SOCKET and self._error_reports.take()

    def _drop(self, reason: str) -> None:
        GuardedNamespace._dropped += 1
        if self._reports.take():
            log.warning("action=ws_frame_dropped reason=%r dropped_total=%d", reason, GuardedNamespace._dropped)

    def on_disconnect(self, sid: str) -> Any:
        self.__dict__.get("_reports_by_sid", {}).pop(sid, None)
        return super().on_disconnect(sid)


def _frontend_exception() -> str:
    return f"{FrontendEventExceptionState.get_full_name()}.handle_frontend_exception"


def install(namespace: EventNamespace | None) -> None:
    """Put the guard in front of the app's event namespace (the instance socket.io already holds)."""
    if namespace is None:
        raise RuntimeError("the app has no event namespace: state is not enabled")
    if not isinstance(namespace, GuardedNamespace):
        namespace.__class__ = GuardedNamespace
