"""A task's occurrences as the pure decisions see them, and how they word lateness.

Production passes an ``app.schedules.plan.Plan`` (window and jitter applied); tests may pass a
plain next-occurrence function, taken as a plan without jitter.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from typing import Protocol

NextFn = Callable[[dt.datetime], dt.datetime | None]  # next regular occurrence strictly after an instant


class Occurrences(Protocol):
    """A task's occurrences as decisions need them (``app.schedules.plan.Plan`` in production)."""

    def __call__(self, after: dt.datetime) -> dt.datetime | None: ...  # next nominal occurrence
    def fire_at(self, nominal: dt.datetime) -> dt.datetime: ...  # jitter added
    def rearmed(self, armed_at: dt.datetime) -> Occurrences: ...
    def first_on_time(self, first: dt.datetime, cutoff: dt.datetime) -> tuple[int, dt.datetime | None]: ...


@dataclasses.dataclass(frozen=True)
class _Bare:
    """A plain next-occurrence function as Occurrences: no jitter, counted by walking."""

    next_after: NextFn

    def __call__(self, after: dt.datetime) -> dt.datetime | None:
        return self.next_after(after)

    def fire_at(self, nominal: dt.datetime) -> dt.datetime:
        return nominal

    def rearmed(self, armed_at: dt.datetime) -> _Bare:
        return self

    def first_on_time(self, first: dt.datetime, cutoff: dt.datetime) -> tuple[int, dt.datetime | None]:
        missed, nxt = 1, self.next_after(first)
        while nxt is not None and nxt < cutoff and missed < 100_000:
            missed, nxt = missed + 1, self.next_after(nxt)
        return missed, nxt


def occurrences(next_after: NextFn | Occurrences) -> Occurrences:
    return next_after if hasattr(next_after, "first_on_time") else _Bare(next_after)  # type: ignore[return-value]


def next_fields(plan: Occurrences, after: dt.datetime) -> dict[str, object]:
    """next_run_at (jittered) for the first occurrence after ``after``, with its nominal instant when
    the jitter moved it (left out otherwise: the store clears it with every new next_run_at)."""
    nominal = plan(after)
    fire = plan.fire_at(nominal) if nominal is not None else None
    return {"next_run_at": fire} if fire == nominal else {"next_run_at": fire, "next_occurrence_at": nominal}


def late_text(delta: dt.timedelta) -> str:
    """A lateness for people: "8 h 2 min", "3 min 20 s", "45 s", "2 d 1 h"."""
    seconds = max(0, int(delta.total_seconds()))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    if minutes:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    return f"{secs} s"


def utc_text(instant: dt.datetime) -> str:
    return instant.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
