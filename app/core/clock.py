"""Injected time: domain code asks a :class:`Clock`, never the host clock directly."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Protocol

UTC = dt.UTC


class Clock(Protocol):
    """Source of the current instant (aware, UTC)."""

    def now(self) -> dt.datetime: ...


class SystemClock:
    """The real wall clock, in UTC."""

    def now(self) -> dt.datetime:
        return dt.datetime.now(UTC)


class FakeClock:
    """A clock tests move by hand; thread-safe so background workers can read it."""

    def __init__(self, start: dt.datetime | None = None) -> None:
        self._now = start or dt.datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
        self._lock = threading.Lock()

    def now(self) -> dt.datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> dt.datetime:
        with self._lock:
            self._now += dt.timedelta(seconds=seconds)
            return self._now

    def set(self, instant: dt.datetime) -> None:
        with self._lock:
            self._now = instant


def as_utc(value: dt.datetime) -> dt.datetime:
    """Return ``value`` in UTC; a naive value is refused (ValueError), never guessed."""
    if value.tzinfo is None:
        raise ValueError("naive datetime: an instant needs a UTC offset")
    return value.astimezone(UTC)


def rfc3339(value: dt.datetime | None) -> str | None:
    """Format an aware instant as RFC 3339 UTC with ``Z`` (milliseconds), or None."""
    if value is None:
        return None
    return as_utc(value).isoformat(timespec="milliseconds").replace("+00:00", "Z")
