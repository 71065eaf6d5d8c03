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
from datetime import UTC, date, datetime, timedelta
from typing import Any

from app.schedules import exclusions as excl
from app.schedules import timing
from app.schedules.cron.zone import load_zone
from app.schedules.exclusions import Exclusions
from app.schedules.spec import CronSchedule, IntervalSchedule, Schedule, parse_schedule

_TINY = timedelta(microseconds=1)
_SKIP_HORIZON = timedelta(days=2922)  # past 8 years of excluded days a schedule is taken as silent
MAX_LISTED_EXCLUDED = 50


def jitter_offset(task_id: int, nominal: datetime, jitter_seconds: int) -> timedelta:
    """The delay of one occurrence: whole milliseconds in ``[0, jitter_seconds)``, the same every time
    for the same task and occurrence, spread evenly across tasks (a hash, not a random draw)."""
    if jitter_seconds <= 0:
        return timedelta(0)
    key = f"chatcron-jitter:{task_id}:{int(nominal.timestamp() * 1_000_000)}".encode()
    draw = int.from_bytes(hashlib.sha256(key).digest()[:8], "big")
    return timedelta(milliseconds=draw % (jitter_seconds * 1000))


@dataclasses.dataclass(frozen=True)
class ExcludedDay:
    """A local day whose occurrences the exclusions skip: the first few, and how many in all."""

    day: date
    reason: str
    listed: tuple[datetime, ...]
    count: int


@dataclasses.dataclass(frozen=True)
class Plan:
    """One task's occurrences: ``next_after`` gives nominal instants, ``fire_at`` when each fires."""

    schedule: Schedule
    armed_at: datetime | None = None
    starts_at: datetime | None = None
    ends_at: datetime | None = None
    jitter_seconds: int = 0
    task_id: int = 0
    exclusions: Exclusions = excl.NONE  # SPEC §20: days whose occurrences are not occurrences (cron only)

    # -- excluded days ------------------------------------------------------------------------
    @property
    def _excluding(self) -> bool:
        return bool(self.exclusions) and isinstance(self.schedule, CronSchedule)

    def _local_day(self, instant: datetime) -> date:
        assert isinstance(self.schedule, CronSchedule)
        return instant.astimezone(load_zone(self.schedule.timezone).zone).date()

    def _day_start(self, day: date) -> datetime:
        """The first instant of a local day (a midnight the clock skips: the instant of the jump)."""
        assert isinstance(self.schedule, CronSchedule)
        zone = load_zone(self.schedule.timezone).zone
        return datetime(day.year, day.month, day.day, tzinfo=zone).astimezone(UTC)

    def _day_span(self, day: date, lo: datetime, hi: datetime) -> tuple[datetime, datetime]:
        """The part ``(start, end]`` of ``(lo, hi]`` whose occurrences fall on local ``day``."""
        return (max(lo, self._day_start(day) - _TINY),
                min(hi, self._day_start(day + timedelta(days=1)) - _TINY))

    def excluded_reason(self, nominal: datetime) -> str | None:
        """Why the occurrence at ``nominal`` is excluded ("Christmas Day", "excluded date"), or None."""
        return self.exclusions.reason(self._local_day(nominal)) if self._excluding else None

    def _past_excluded(self, found: datetime | None) -> datetime | None:
        """``found``, or the first occurrence after it on a day that is not excluded."""
        limit = None if found is None else found + _SKIP_HORIZON
        while found is not None and self.excluded_reason(found) is not None:
            following = self._day_start(self._local_day(found) + timedelta(days=1))
            found = timing.next_occurrence(self.schedule, following - _TINY)
            if found is not None and limit is not None and found > limit:
                return None
        return found

    def excluded_between(self, after: datetime, until: datetime,
                         limit: int = MAX_LISTED_EXCLUDED) -> list[tuple[datetime, str]]:
        """(nominal, reason) of the excluded occurrences in ``(after, until]`` inside the window, at most ``limit``."""
        out: list[tuple[datetime, str]] = []
        for day in self.excluded_days(after, until, per_day=limit):
            out += [(at, day.reason) for at in day.listed[:limit - len(out)]]
            if len(out) >= limit:
                break
        return out

    def excluded_days(self, after: datetime, until: datetime, per_day: int = 3,
                      max_days: int = MAX_LISTED_EXCLUDED) -> list[ExcludedDay]:
        """The excluded days with occurrences in ``(after, until]`` inside the window (at most
        ``max_days``): each with its first ``per_day`` occurrences and how many it has in all."""
        if not self._excluding or until <= after:
            return []
        out: list[ExcludedDay] = []
        last = min(until, self.ends_at - _TINY) if self.ends_at is not None else until
        for day, reason in self.exclusions.days_between(self._local_day(after), self._local_day(until)):
            start, end = self._day_span(day, max(after, self._from(after)), last)
            listed: list[datetime] = []
            found = timing.next_occurrence(self.schedule, start) if end > start else None
            while found is not None and found <= end and len(listed) < per_day:
                listed.append(found)
                found = timing.next_occurrence(self.schedule, found)
            if listed:
                total = len(listed) if found is None or found > end else timing.count_occurrences(
                    self.schedule, start, end)
                out.append(ExcludedDay(day, reason, tuple(listed), total))
                if len(out) >= max_days:
                    break
        return out

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
        found = timing.next_occurrence(self.schedule, self._from(after), armed_at=self._grid_base())
        return self._inside(self._past_excluded(found) if self._excluding else found)

    __call__ = next_after  # a Plan is the scheduler's "next regular occurrence" function

    def upcoming(self, after: datetime, count: int) -> list[datetime]:
        """Up to ``count`` occurrences strictly after ``after`` inside the window (nominal), ascending."""
        if self._excluding:
            out: list[datetime] = []
            while len(out) < count and (found := self.next_after(out[-1] if out else after)) is not None:
                out.append(found)
            return out
        found = timing.next_occurrences(self.schedule, self._from(after), count, armed_at=self._grid_base())
        return [x for x in found if self._inside(x) is not None]

    def count(self, after: datetime, until: datetime) -> int:
        """How many occurrences fall in ``(after, until]`` inside the window (counted, not listed)."""
        lo = self._from(after)
        hi = min(until, self.ends_at - _TINY) if self.ends_at is not None else until
        if hi <= lo:
            return 0
        total = timing.count_occurrences(self.schedule, lo, hi, armed_at=self._grid_base())
        if self._excluding:
            for day, _reason in self.exclusions.days_between(self._local_day(lo), self._local_day(hi)):
                start, end = self._day_span(day, lo, hi)
                total -= timing.count_occurrences(self.schedule, start, end) if end > start else 0
        return total

    def nth_after(self, after: datetime, n: int) -> datetime | None:
        """The ``n``-th occurrence strictly after ``after`` inside the window, or None."""
        if self._excluding:
            return self._nth_excluding(after, n) if n >= 1 else None
        return self._inside(timing.nth_occurrence(self.schedule, self._from(after), n, armed_at=self._grid_base()))

    def _nth_excluding(self, after: datetime, n: int) -> datetime | None:
        """The n-th occurrence that is not excluded, found by counting: jump to the bare schedule's
        (n - found so far)-th occurrence from the last candidate until the count is n — the cost
        grows with the days spanned and the excluded days, not with n."""
        candidate = timing.nth_occurrence(self.schedule, self._from(after), n, armed_at=self._grid_base())
        while candidate is not None and (self.ends_at is None or candidate < self.ends_at):
            have = self.count(after, candidate)
            if have >= n:  # exactly n: nothing in the last jump was excluded, so the candidate is not
                return candidate
            candidate = timing.nth_occurrence(self.schedule, candidate, n - have, armed_at=self._grid_base())
        return None

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
                task_id=task.id or 0, exclusions=excl.of_task(task))

