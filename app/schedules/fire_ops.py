"""Fires asked for, and what a fire says of itself (SPEC §3 run now, §19): a run now that may name
its own overlap, the agent's report (``remote-schedule report``) and its pacing of the next fire
(``remote-schedule next``).

Part of :class:`app.schedules.service.TaskService` (a mixin: it uses the service's ``get``,
``_mutate``, clock, database and waker).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from sqlmodel import select

from app.core.errors import Conflict, Forbidden, InvalidInput, NotFound
from app.schedules import fire_queue, fire_rules
from app.schedules.fire_queue import Asked
from app.schedules.model import Overlap, RunOutcome, ScheduledTask, TaskRun, TaskStatus, Trigger
from app.schedules.pausing import Actor
from app.schedules.spec import ScheduleError, parse_instant
from app.schedules.waiting import settle_waiting

if TYPE_CHECKING:
    from app.core.clock import Clock
    from app.core.db import Database
    from app.core.wake import Waker


def overlap_of(value: object) -> Overlap | None:
    """A call's own overlap (None: the task's); raises InvalidInput naming ``overlap``."""
    if value is None:
        return None
    try:
        return Overlap(value) if isinstance(value, str) else Overlap("?")
    except ValueError:
        raise InvalidInput("overlap", f"must be one of {', '.join(x.value for x in Overlap)}") from None


class FireOps:
    db: Database
    clock: Clock
    waker: Waker

    if TYPE_CHECKING:
        def get(self, actor: Actor, task_id: int) -> ScheduledTask: ...
        def _mutate(self, task_id: int, change: Any, expect: Any = None) -> ScheduledTask: ...

    def run_now(self, actor: Actor, task_id: int, overlap: object = None) -> ScheduledTask:
        """Ask for one fire as soon as possible, without moving the regular deadline or the status.

        ``overlap`` (SPEC §19): this call's own overlap policy; without it the fire takes the slot
        as a run now always did (a waiting follow-up is the occurrence that fires now)."""
        chosen = overlap_of(overlap)
        task = self.get(actor, task_id)
        if task.status == TaskStatus.DRAFT.value:
            raise Conflict("a draft cannot run; a user must arm it first")
        trigger = Trigger.RUN_NOW_AGENT if actor.is_agent else Trigger.RUN_NOW_USER
        requested_by = None if actor.is_agent else actor.user.email
        if chosen is not None:
            asked, _ = self.ask(task_id, fire_queue.Request(trigger, chosen, None, requested_by))
            if asked == Asked.SKIPPED:
                raise Conflict("the chat is busy: nothing was started (overlap=skip, or the line is full)")
            return self.get(actor, task_id)
        now = self.clock.now()

        def change(row: ScheduledTask) -> None:
            # a waiting follow-up (queued, or deferred by the budget) is the occurrence that fires now:
            # its record is reused rather than left waiting for ever
            waiting = row.pending_occurrence_at if row.pending_run and row.pending_occurrence_at else None
            row.pending_run, row.pending_forced, row.pending_occurrence_at = True, trigger.value, waiting or now
            row.pending_forced_by = requested_by
            row.retry_at = None

        return self._mutate(task_id, change)

    def ask(self, task_id: int, req: fire_queue.Request,
            expect: tuple[TaskStatus, ...] | None = None) -> tuple[Asked, TaskRun]:
        """Record a fire asked for (a trigger call, a run now naming its overlap) in one transaction;
        returns what became of it and its record. ``expect``: the statuses it may be asked in
        (Conflict otherwise)."""
        now = self.clock.now()
        with self.db.write() as s:
            query = select(ScheduledTask).where(ScheduledTask.id == task_id)
            task = s.exec(query if self.db.sqlite else query.with_for_update()).first()
            if task is None:
                raise NotFound(f"no schedule with id {task_id}")
            if expect is not None and task.status not in {e.value for e in expect}:
                raise Conflict(f"the schedule is {task.status}: only an active schedule can be triggered")
            before = (bool(task.pending_run), task.pending_occurrence_at)
            asked, row = fire_queue.ask(s, self.db, task, req, now)
            s.flush()
            settle_waiting(s.connection(), task.id, before, (bool(task.pending_run), task.pending_occurrence_at),
                           task.status, now)
            s.expunge(row)
        self.waker.notify()
        return asked, row

    def _fire_record(self, s: Any, task_id: int, task_run_id: int) -> tuple[ScheduledTask, TaskRun]:
        """The task and the record of the fire a fire's token belongs to; it must still be running."""
        query = select(ScheduledTask).where(ScheduledTask.id == task_id)
        task = s.exec(query if self.db.sqlite else query.with_for_update()).first()
        row = s.get(TaskRun, task_run_id)
        if task is None or row is None or row.task_id != task_id:
            raise NotFound(f"no schedule with id {task_id}")
        if row.status != RunOutcome.RUNNING.value or task.active_run_id != task_run_id:
            raise Conflict("this turn no longer holds the schedule's claim; nothing was changed")
        return task, row

    def report(self, task_id: int, task_run_id: int, outcome: object, summary: object) -> TaskRun:
        """The agent's word on its own fire (``remote-schedule report``): changed, no_change or failed,
        with a summary. The last report of a fire counts."""
        checked, text = fire_rules.report(outcome, summary)
        with self.db.write() as s:
            _, row = self._fire_record(s, task_id, task_run_id)
            row.outcome, row.summary = checked.value, text
            s.add(row)
            s.flush()
            s.expunge(row)
        return row

    def pace_next(self, task_id: int, task_run_id: int, delay: object = None, at: object = None) -> ScheduledTask:
        """Move the task's next fire once, within its pace bounds (``remote-schedule next``); the
        schedule itself is unchanged. ``delay``: seconds from now; ``at``: an RFC 3339 instant."""
        now = self.clock.now()
        target = _target(now, delay, at)
        with self.db.write() as s:
            task, _ = self._fire_record(s, task_id, task_run_id)
            if task.pace_min_seconds is None or task.pace_max_seconds is None:
                raise Forbidden(fire_rules.NOT_PACED)
            if task.status != TaskStatus.ACTIVE.value:
                raise Conflict(f"the schedule is {task.status}: it has no next fire to move")
            fire_rules.paced_instant(now, target, task.pace_min_seconds, task.pace_max_seconds)
            task.next_run_at, task.next_occurrence_at, task.paced_at = target, None, target
            task.updated_at = now
            s.add(task)
            s.flush()
            s.expunge(task)
        self.waker.notify()
        return task


def _target(now: dt.datetime, delay: object, at: object) -> dt.datetime:
    if (delay is None) == (at is None):
        raise InvalidInput("in_seconds", "give in_seconds or at, not both")
    if delay is not None:
        if isinstance(delay, bool) or not isinstance(delay, int) or not 0 < delay <= fire_rules.MAX_PACE_SECONDS:
            raise InvalidInput("in_seconds", f"must be a whole number of seconds from 1 to "
                               f"{fire_rules.MAX_PACE_SECONDS}")
        return now + dt.timedelta(seconds=delay)
    try:
        return parse_instant(at, "at")
    except ScheduleError as exc:
        raise InvalidInput("at", str(exc).removeprefix("at: ")) from None
