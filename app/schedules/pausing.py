"""Pausing with a note and an end, and skipping the next occurrence (SPEC §14).

Part of :class:`app.schedules.service.TaskService` (a mixin: it uses the service's ``get``,
``_mutate``, clock and database). The scheduler resumes a timed pause by itself
(``scheduler/decisions.py``); a user's resume clears the pause (``TaskService._activate``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import IntegrityError

from app.core.errors import Conflict, Forbidden, InvalidInput
from app.core.models import User
from app.schedules import fields
from app.schedules.model import PausedBy, RunOutcome, ScheduledTask, TaskRun, TaskStatus, Trigger
from app.schedules.plan import plan_of

if TYPE_CHECKING:
    from app.core.clock import Clock
    from app.core.db import Database
    from app.core.wake import Waker


@dataclasses.dataclass(frozen=True)
class Actor:
    """Who asks: a user, or an agent acting for a user inside one chat."""

    user: User
    agent_chat_id: int | None = None  # set for agents: fenced to this chat

    @property
    def is_agent(self) -> bool:
        return self.agent_chat_id is not None

    @property
    def words(self) -> str:
        return "the agent" if self.is_agent else self.user.email


def set_next(row: Any, following: tuple[dt.datetime, dt.datetime] | None) -> None:
    """Write a (fire instant, nominal) pair as next_run_at / next_occurrence_at (None: no more)."""
    fire, nominal = following if following is not None else (None, None)
    row.next_run_at = fire
    row.next_occurrence_at = nominal if fire != nominal else None


AGENT_MAY_NOT = "a user paused this schedule; an agent cannot change that pause (its note or when it resumes)"


class PauseOps:
    db: Database
    clock: Clock
    waker: Waker

    if TYPE_CHECKING:
        def get(self, actor: Actor, task_id: int) -> ScheduledTask: ...
        def _mutate(self, task_id: int, change: Any, expect: Any = None) -> ScheduledTask: ...

    def pause(self, actor: Actor, task_id: int, body: dict[str, Any] | None = None) -> ScheduledTask:
        """active / error → paused, with an optional note and an instant it resumes by itself.

        Pausing a paused task again changes what the body sends (nothing sent: nothing changes); an
        agent may change only its own pause. A pending regular follow-up is dropped."""
        body = body or {}
        unknown = sorted(set(body) - {"note", "until"})
        if unknown:
            raise InvalidInput(unknown[0], "unknown field; a pause takes note and until")
        task = self.get(actor, task_id)
        now = self.clock.now()
        note = fields.pause_note(body.get("note"))
        until = fields.pause_until(body.get("until"), now)
        if task.status == TaskStatus.PAUSED.value:
            if not body:
                return task
            if actor.is_agent and task.paused_by != PausedBy.AGENT.value:
                raise Forbidden(AGENT_MAY_NOT)

            def amend(row: ScheduledTask) -> None:
                if actor.is_agent and row.paused_by != PausedBy.AGENT.value:
                    raise Forbidden(AGENT_MAY_NOT)
                if "note" in body:
                    row.pause_note = note
                if "until" in body:
                    row.paused_until = until
                if not actor.is_agent:  # a user's word now: an agent may no longer change it
                    row.paused_by = PausedBy.USER.value

            return self._mutate(task_id, amend, expect=(TaskStatus.PAUSED,))
        allowed = (TaskStatus.ACTIVE, TaskStatus.ERROR)
        if task.status not in {s.value for s in allowed}:
            raise Conflict(f"only an active schedule can be paused; this one is {task.status}")
        if actor.is_agent and until is not None and task.status == TaskStatus.ERROR.value:
            raise Forbidden("this schedule is in error and only a user can bring it back; an agent may pause it "
                            "but not set when it resumes")

        def change(row: ScheduledTask) -> None:
            row.status = TaskStatus.PAUSED.value
            row.pause_note, row.paused_until = note, until
            row.paused_by = (PausedBy.AGENT if actor.is_agent else PausedBy.USER).value
            if row.pending_forced in (None, Trigger.HOOK.value):  # a person's or agent's run now still fires
                row.pending_run, row.pending_occurrence_at, row.retry_at = False, None, None
                row.pending_forced = None

        return self._mutate(task_id, change, expect=allowed)

    def skip_next(self, actor: Actor, task_id: int) -> ScheduledTask:
        """Skip the next regular occurrence: it is recorded ``skipped`` and the one after is next."""
        task = self.get(actor, task_id)
        if task.status != TaskStatus.ACTIVE.value:
            raise Conflict(f"only an active schedule can skip its next occurrence; this one is {task.status}")
        if task.schedule_dict().get("kind") == "once":
            raise Conflict("a once schedule has a single occurrence; pause or delete it instead")
        now = self.clock.now()

        def change(row: ScheduledTask) -> None:
            nominal = row.next_occurrence_at or row.next_run_at
            if nominal is None:
                raise Conflict("it has no next occurrence to skip")
            skipped = TaskRun(task_id=row.id, occurrence_at=nominal, planned_at=row.next_run_at,
                                   trigger=Trigger.SCHEDULE.value, status=RunOutcome.SKIPPED.value, fire_number=0,
                                   attempts=0, claimed_at=now, finished_at=now, error=f"skipped by {actor.words}")
            set_next(row, plan_of(row).next_fire(nominal))
            return [skipped]  # (task, occurrence) is unique: a fire of it that won the race refuses this

        try:
            return self._mutate(task_id, change, expect=(TaskStatus.ACTIVE,))
        except IntegrityError:
            raise Conflict("its next occurrence is firing now; try again when it has") from None


