"""A task's occurrences as the scheduler fires them (SPEC §14): its schedule limited to the active
window ``[starts_at, ends_at)``, each occurrence moved by a deterministic jitter.

Pure: nothing here reads a clock or a database. ``timing`` answers for the bare schedule; a
:class:`Plan` adds what belongs to the task — the arming instant (an interval's grid), the window,
the jitter and the task id the jitter is derived from. The scheduler's decisions, the service and
the views all ask a Plan, so the times a user is shown are the times that fire.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Collection
from datetime import UTC, datetime, timedelta
from typing import Any

from app.schedules import timing
from app.schedules.spec import IntervalSchedule, Schedule, parse_schedule

_TINY = timedelta(microseconds=1)


def jitter_offset(task_id: int, nominal: datetime, jitter_seconds: int) -> timedelta:
    """The delay of one occurrence: whole milliseconds in ``[0, jitter_seconds)``, the same every time
    for the same task and occurrence, spread evenly across tasks (a hash, not a random draw)."""
    if jitter_seconds <= 0:
        return timedelta(0)
    key = f"chatcron-jitter:{task_id}:{int(nominal.timestamp() * 1_000_000)}".encode()
    draw = int.from_bytes(hashlib.sha256(key).digest()[:8], "big")
    return timedelta(milliseconds=draw % (jitter_seconds * 1000))


@dataclasses.dataclass(frozen=True)
class Plan:
    """One task's occurrences: ``next_after`` gives nominal instants, ``fire_at`` when each fires."""

    schedule: Schedule
    armed_at: datetime | None = None
    starts_at: datetime | None = None
    ends_at: datetime | None = None
    jitter_seconds: int = 0
    task_id: int = 0

    # -- nominal occurrences ------------------------------------------------------------------
    def _grid_base(self) -> datetime | None:
        """An interval's arming instant: a start still ahead of the arming moves the grid there, so
        the first fire is at ``starts_at`` itself."""
        if isinstance(self.schedule, IntervalSchedule) and self.starts_at is not None and (
                self.armed_at is None or self.starts_at > self.armed_at):
            return self.starts_at - timedelta(seconds=self.schedule.every_seconds)
        return self.armed_at

    def _from(self, after: datetime) -> datetime:
        return max(after, self.starts_at - _TINY) if self.starts_at is not None else after

    def _inside(self, nominal: datetime | None) -> datetime | None:
        return nominal if nominal is not None and (self.ends_at is None or nominal < self.ends_at) else None

    def next_after(self, after: datetime) -> datetime | None:
        """The first occurrence strictly after ``after`` inside the window (nominal), or None."""
        return self._inside(timing.next_occurrence(self.schedule, self._from(after), armed_at=self._grid_base()))

    __call__ = next_after  # a Plan is the scheduler's "next regular occurrence" function

    def upcoming(self, after: datetime, count: int) -> list[datetime]:
        """Up to ``count`` occurrences strictly after ``after`` inside the window (nominal), ascending."""
        found = timing.next_occurrences(self.schedule, self._from(after), count, armed_at=self._grid_base())
        return [x for x in found if self._inside(x) is not None]

    def count(self, after: datetime, until: datetime) -> int:
        """How many occurrences fall in ``(after, until]`` inside the window (counted, not listed)."""
        lo = self._from(after)
        hi = min(until, self.ends_at - _TINY) if self.ends_at is not None else until
        return timing.count_occurrences(self.schedule, lo, hi, armed_at=self._grid_base()) if hi > lo else 0

    def nth_after(self, after: datetime, n: int) -> datetime | None:
        """The ``n``-th occurrence strictly after ``after`` inside the window, or None."""
        return self._inside(timing.nth_occurrence(self.schedule, self._from(after), n, armed_at=self._grid_base()))

    # -- fire instants ------------------------------------------------------------------------
    def fire_at(self, nominal: datetime) -> datetime:
        """When the occurrence at ``nominal`` fires: its jitter added."""
        return (nominal + jitter_offset(self.task_id, nominal, self.jitter_seconds)).astimezone(UTC)

    def next_fire(self, after: datetime, skip: Collection[datetime] = ()) -> tuple[datetime, datetime] | None:
        """(fire instant, nominal) of the first occurrence strictly after ``after`` that is not in
        ``skip`` (occurrences skipped ahead of time), or None."""
        nominal = self.next_after(after)
        for _ in range(len(skip)):
            if nominal is None or nominal not in skip:
                break
            nominal = self.next_after(nominal)
        return None if nominal is None else (self.fire_at(nominal), nominal)

    def rearmed(self, armed_at: datetime) -> Plan:
        """The same plan armed again at ``armed_at`` (a resume: an interval's grid starts there)."""
        return dataclasses.replace(self, armed_at=armed_at)

    def first_on_time(self, first: datetime, cutoff: datetime) -> tuple[int, datetime | None]:
        """Catch-up: occurrences from ``first`` (itself late) whose fire instant is before ``cutoff``
        are missed. Returns (how many, the first occurrence not missed — None when none is left).

        Jitter is below a tenth of any gap, so at most one occurrence lies within the jitter of the
        cutoff: it alone is checked by its fire instant."""
        candidate = self.next_after(cutoff - timedelta(seconds=self.jitter_seconds) - _TINY)
        if candidate is not None and candidate <= first:
            candidate = self.next_after(first)
        if candidate is not None and self.fire_at(candidate) < cutoff:
            candidate = self.next_after(candidate)
        missed = 1 + (self.count(first, candidate - _TINY) if candidate is not None else self.count(first, cutoff))
        return missed, candidate


def plan_of(task: Any) -> Plan:
    """The plan of a ScheduledTask (or a row of its columns)."""
    return Plan(parse_schedule(json.loads(task.schedule)),
                armed_at=task.armed_at, starts_at=task.starts_at, ends_at=task.ends_at,
                jitter_seconds=task.jitter_seconds or 0,
                task_id=task.id or 0)

