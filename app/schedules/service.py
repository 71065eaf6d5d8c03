"""Task lifecycle: create, update, arm, pause, resume, run-now, delete, complete (SPEC §3, §5).

Every function validates everything first and then writes in one transaction, so refused input
changes nothing. Callers pass an :class:`Actor`; agents are fenced to their grant's chat.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, func, select

from app.core import attention_events as attention
from app.core import chats as chat_service
from app.core import quotas
from app.core.attention_tables import AttentionKind, Notify
from app.core.clock import Clock
from app.core.config import Settings
from app.core.db import Database
from app.core.errors import Conflict, Forbidden, InvalidInput, NotFound, QuotaExceeded
from app.core.models import Event, EventType, Project
from app.core.spend import Spend, tasks_spent, tokens_value, usd_value, utc_day
from app.core.text import clean_name, clean_prompt, storable
from app.core.wake import NullWaker, Waker
from app.schedules import exclusions, fields, fire_rules, timing
from app.schedules.fire_ops import FireOps
from app.schedules.hooks import forget_hooks
from app.schedules.model import (
    DEFAULT_CATCHUP_SECONDS,
    TASK_DEFAULTS,
    CreatedBy,
    Overlap,
    ScheduledTask,
    SessionMode,
    TaskRun,
    TaskStatus,
)
from app.schedules.pausing import Actor, PauseOps, set_next
from app.schedules.plan import plan_of
from app.schedules.spec import ScheduleError, format_instant, parse_schedule, schedule_to_dict
from app.schedules.waiting import settle_waiting

MAX_KEY = 200
CAPS = ("max_tokens_per_fire", "max_cost_per_fire_usd")  # SPEC §15
EDITABLE = ("name", "prompt", "schedule", "overlap", "max_runs", "session", "notify", *fields.TIMING_FIELDS, *CAPS,
            *fire_rules.RULE_FIELDS)


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """A validated definition, ready to store."""

    name: str
    prompt: str
    schedule: Any
    schedule_json: str
    overlap: Overlap
    session: SessionMode
    max_runs: int | None
    notify: Notify = Notify.FAILURES
    timing: fields.Timing = fields.Timing(DEFAULT_CATCHUP_SECONDS, 0, None, None)
    max_tokens_per_fire: int | None = None
    max_cost_per_fire_usd: float | None = None
    rules: fire_rules.FireRules = fire_rules.FireRules()


class TaskService(PauseOps, FireOps):
    def __init__(self, db: Database, clock: Clock, settings: Settings, waker: Waker | None = None) -> None:
        self.db = db
        self.clock = clock
        self.settings = settings
        self.waker = waker or NullWaker()

    # -- validation --------------------------------------------------------------------------
    def validate(self, body: dict[str, Any], partial_of: ScheduledTask | None = None) -> TaskSpec:
        """Check a create body (or a PATCH merged onto ``partial_of``); raises InvalidInput naming the field."""
        merged = dict(body)
        if partial_of is not None:
            current = {"name": partial_of.name, "prompt": partial_of.prompt,
                       "schedule": partial_of.schedule_dict(), "overlap": partial_of.overlap,
                       "max_runs": partial_of.max_runs, "session": partial_of.session, "notify": partial_of.notify,
                       "catchup_window_seconds": partial_of.catchup_window_seconds,
                       "jitter_seconds": partial_of.jitter_seconds,
                       "starts_at": partial_of.starts_at and format_instant(partial_of.starts_at),
                       "ends_at": partial_of.ends_at and format_instant(partial_of.ends_at),
                       **exclusions.of_task(partial_of).as_json(),
                       "max_tokens_per_fire": partial_of.max_tokens_per_fire,
                       "max_cost_per_fire_usd": partial_of.max_cost_per_fire_usd,
                       **fire_rules.current(partial_of)}
            merged = {**current, **body}
        name = clean_name(merged.get("name"))
        prompt = clean_prompt(merged.get("prompt"), "prompt", self.settings.prompt_max_bytes, strip=False)
        raw = merged.get("schedule")
        if not isinstance(raw, dict):
            raise InvalidInput("schedule", "must be an object with a kind (once, cron or interval)")
        try:
            checked = partial_of is None or "schedule" in body
            schedule = parse_schedule(raw, min_every_seconds=self.settings.min_interval_seconds if checked else 1)
            if checked:
                self._check_timing(schedule)
        except ScheduleError as exc:
            raise InvalidInput(exc.field, str(exc).removeprefix(f"{exc.field}: ")) from None
        changed = set(body) if partial_of is not None else {"schedule", *fields.TIMING_FIELDS}
        window = fields.check(merged, schedule, self.clock.now(), changed=changed)
        return TaskSpec(name=name, prompt=prompt, schedule=schedule, timing=window,
                        schedule_json=json.dumps(schedule_to_dict(schedule), sort_keys=True),
                        overlap=_enum(Overlap, merged.get("overlap", TASK_DEFAULTS["overlap"]), "overlap"),
                        session=_enum(SessionMode, merged.get("session", TASK_DEFAULTS["session"]), "session"),
                        max_runs=_max_runs(merged.get("max_runs")),
                        max_tokens_per_fire=tokens_value(merged.get("max_tokens_per_fire"), "max_tokens_per_fire"),
                        max_cost_per_fire_usd=usd_value(merged.get("max_cost_per_fire_usd"), "max_cost_per_fire_usd"),
                        notify=_enum(Notify, merged.get("notify", TASK_DEFAULTS["notify"]), "notify"),
                        rules=fire_rules.check(merged, schedule.kind, self.settings.min_interval_seconds))

    def _check_timing(self, schedule: Any) -> None:
        now = self.clock.now()
        if schedule.kind == "once" and schedule.at <= now:
            raise ScheduleError("schedule.at", "must be in the future")
        timing.validate_min_interval(schedule, self.settings.min_interval_seconds, now=now)
        if schedule.kind == "cron":
            timing.next_occurrence(schedule, now)  # raises for a never-firing expression

    # -- reads -------------------------------------------------------------------------------
    def _chat_for(self, actor: Actor, chat_id: int) -> Any:
        if actor.is_agent and actor.agent_chat_id != chat_id:
            raise NotFound(f"no chat with id {chat_id}")
        return chat_service.get_chat(self.db, actor.user, chat_id)

    def get(self, actor: Actor, task_id: int) -> ScheduledTask:
        """The task if the actor can see its chat (agents: only their own chat); NotFound otherwise."""
        with self.db.read() as s:
            task = s.get(ScheduledTask, task_id)
        if task is None:
            raise NotFound(f"no schedule with id {task_id}")
        try:
            self._chat_for(actor, task.chat_id)
        except NotFound:
            raise NotFound(f"no schedule with id {task_id}") from None
        return task

    def spend(self, task_ids: list[int]) -> dict[int, tuple[Spend, Spend]]:
        """What each task's fires spent (today in UTC, in total), SPEC §15; one read."""
        with self.db.read() as s:
            return tasks_spent(s.connection(), task_ids, utc_day(self.clock.now()))

    def list(self, actor: Actor, chat_id: int) -> list[ScheduledTask]:
        self._chat_for(actor, chat_id)
        with self.db.read() as s:
            return list(s.exec(select(ScheduledTask).where(ScheduledTask.chat_id == chat_id)
                               .order_by(ScheduledTask.id)))

    def runs(self, actor: Actor, task_id: int, limit: int = 50) -> list[TaskRun]:
        self.get(actor, task_id)
        with self.db.read() as s:
            return list(s.exec(select(TaskRun).where(TaskRun.task_id == task_id)
                               .order_by(TaskRun.id.desc()).limit(max(1, min(limit, 500)))))

    # -- writes ------------------------------------------------------------------------------
    def create(self, actor: Actor, chat_id: int, body: dict[str, Any]) -> tuple[ScheduledTask, bool]:
        """Create a task (user: active, agent: draft); returns (task, created). A repeated
        idempotency_key in the same chat returns the existing task with created=False."""
        chat = self._chat_for(actor, chat_id)
        if chat.project_id is None:
            raise InvalidInput("chat_id", "loose chats cannot have schedules; move the chat into a project")
        key = body.get("idempotency_key")
        if key is not None:
            key = clean_name(key, "idempotency_key", MAX_KEY)
            existing = self._by_key(chat_id, key)
            if existing is not None:
                return existing, False
        if actor.is_agent and any(body.get(name) is not None for name in fire_rules.PACE_FIELDS):
            raise Forbidden("only a user may let a task pace itself (pace_min_seconds / pace_max_seconds)")
        spec = self.validate({k: v for k, v in body.items() if k != "idempotency_key"})
        now = self.clock.now()
        status = TaskStatus.DRAFT if actor.is_agent else TaskStatus.ACTIVE
        task = ScheduledTask(
            chat_id=chat_id, project_id=chat.project_id, owner=actor.user.email, name=spec.name, prompt=spec.prompt,
            schedule=spec.schedule_json, overlap=spec.overlap.value, session=spec.session.value,
            max_runs=spec.max_runs, notify=spec.notify.value, status=status.value, idempotency_key=key,
            max_tokens_per_fire=spec.max_tokens_per_fire, max_cost_per_fire_usd=spec.max_cost_per_fire_usd,
            created_by=(CreatedBy.AGENT if actor.is_agent else CreatedBy.USER).value,
            armed_at=None if actor.is_agent else now, created_at=now, updated_at=now,
            **dataclasses.asdict(spec.timing), **dataclasses.asdict(spec.rules),
        )
        try:
            with self.db.write() as s:
                self._check_quotas(s, chat.project_id)
                s.add(task)
                s.flush()  # the id: the jitter is derived from it
                if not actor.is_agent:
                    set_next(task, plan_of(task).next_fire(now))
                if status == TaskStatus.DRAFT:
                    attention.record(s.connection(), [attention.row(
                        now, AttentionKind.DRAFT_CREATED, user_email=task.owner, user_id=actor.user.id, chat_id=chat_id,
                        project_id=chat.project_id, task_id=task.id, payload={"task": attention.task_payload(task)})])
        except IntegrityError:
            existing = self._by_key(chat_id, key) if key else None
            if existing is None:
                raise
            return existing, False
        self.waker.notify()
        return task, True

    def _by_key(self, chat_id: int, key: str) -> ScheduledTask | None:
        with self.db.read() as s:
            return s.exec(select(ScheduledTask).where(ScheduledTask.chat_id == chat_id,
                                                      ScheduledTask.idempotency_key == key)).first()

    def _check_quotas(self, s: Session, project_id: int, adding: int = 1) -> None:
        """The per-project and per-user schedule limits, counted after locking the project's owner
        (app/core/quotas.py), so concurrent creations in this transaction's place wait their turn."""
        owner_id = quotas.project_owner(s, self.db, project_id)
        limit = self.settings.max_tasks_per_project
        if limit:
            count = s.exec(select(func.count()).select_from(ScheduledTask)
                           .where(ScheduledTask.project_id == project_id)).one()
            if count + adding > limit:
                raise QuotaExceeded(f"the project already has {count} schedules (limit {limit}, "
                                    f"{quotas.PROJECT_TASKS_SETTING}); delete some first")
        limit = self.settings.max_tasks_per_user
        if limit:
            count = s.exec(select(func.count()).select_from(ScheduledTask)
                           .join(Project, Project.id == ScheduledTask.project_id)
                           .where(Project.owner_id == owner_id)).one()
            if count + adding > limit:
                raise QuotaExceeded(f"the project's owner already has {count} schedules across their projects "
                                    f"(limit {limit}, {quotas.TASKS_SETTING}); delete some first")

    def update(self, actor: Actor, task_id: int, body: dict[str, Any]) -> ScheduledTask:
        """Edit the definition (users only; agents may rename). A new schedule recomputes next_run_at from now."""
        unknown = sorted(set(body) - set(EDITABLE))
        if unknown:
            raise InvalidInput(unknown[0], "unknown field")
        task = self.get(actor, task_id)  # 404 before 403 for a schedule the agent cannot see
        if actor.is_agent and set(body) - {"name"}:
            raise Forbidden("an agent may only rename a schedule; a user must change its definition")
        spec = self.validate(body, partial_of=task)
        now = self.clock.now()
        skipped = self._recorded_after(task_id, now) if set(body) & fields.MOVES_NEXT else frozenset()

        def change(row: ScheduledTask) -> None:
            row.name, row.prompt, row.overlap, row.session = spec.name, spec.prompt, spec.overlap.value, \
                spec.session.value
            row.max_runs, row.notify = spec.max_runs, spec.notify.value
            row.max_tokens_per_fire, row.max_cost_per_fire_usd = spec.max_tokens_per_fire, spec.max_cost_per_fire_usd
            for key, value in (dataclasses.asdict(spec.timing) | dataclasses.asdict(spec.rules)).items():
                setattr(row, key, getattr(value, "value", value))
            if "schedule" in body:
                row.schedule = spec.schedule_json
            if set(body) & fields.MOVES_NEXT and row.status == TaskStatus.ACTIVE.value:
                if set(body) & fields.REARMS:  # a new grid; jitter or an end keeps the old one
                    row.armed_at = now
                set_next(row, plan_of(row).next_fire(now, skip=skipped))

        return self._mutate(task_id, change)

    def arm(self, actor: Actor, task_id: int) -> ScheduledTask:
        """draft → active; only a user may arm."""
        if actor.is_agent:
            raise Forbidden("only a user can arm or resume a schedule")
        task = self.get(actor, task_id)
        if task.status != TaskStatus.DRAFT.value:
            raise Conflict(f"only a draft can be armed; this schedule is {task.status}")
        skipped = self._recorded_after(task_id, self.clock.now())
        return self._mutate(task_id, lambda row: self._activate(row, skipped), expect=(TaskStatus.DRAFT,))

    def resume(self, actor: Actor, task_id: int) -> ScheduledTask:
        """paused / error / exhausted → active, next occurrence from now (nothing replayed); users only."""
        if actor.is_agent:
            raise Forbidden("only a user can arm or resume a schedule")
        task = self.get(actor, task_id)
        allowed = (TaskStatus.PAUSED, TaskStatus.ERROR, TaskStatus.EXHAUSTED)
        if task.status not in {s.value for s in allowed}:
            raise Conflict(f"only a paused, error or exhausted schedule can be resumed; this one is {task.status}")
        if task.max_runs is not None and task.run_count >= task.max_runs:
            raise Conflict(f"it has used all {task.max_runs} runs; raise max_runs first")
        skipped = self._recorded_after(task_id, self.clock.now())
        return self._mutate(task_id, lambda row: self._activate(row, skipped), expect=allowed)

    def _recorded_after(self, task_id: int, now: dt.datetime) -> frozenset[dt.datetime]:
        """Occurrences still ahead that already have a record (skip-next): never shown as next."""
        with self.db.read() as s:
            return frozenset(s.exec(select(TaskRun.occurrence_at).where(TaskRun.task_id == task_id,
                                                                        TaskRun.occurrence_at > now)))

    def _activate(self, row: ScheduledTask, skipped: frozenset[dt.datetime] = frozenset()) -> None:
        now = self.clock.now()
        following = plan_of(row).rearmed(now).next_fire(now, skip=skipped)
        if following is None:
            if row.ends_at is not None and row.ends_at <= now:
                raise Conflict(f"its active window ended at {format_instant(row.ends_at)}; change ends_at first")
            raise Conflict("its time has passed; edit the schedule first")
        row.status, row.armed_at = TaskStatus.ACTIVE.value, now
        set_next(row, following)
        row.consecutive_failures, row.retry_at = 0, None
        row.pause_note, row.paused_until, row.paused_by = None, None, None

    def delete(self, actor: Actor, task_id: int) -> None:
        """Delete the task and its history; a pending fire is cancelled, a running turn finishes."""
        self.get(actor, task_id)
        with self.db.write() as s:
            s.exec(sa.delete(TaskRun).where(TaskRun.task_id == task_id))
            forget_hooks(s, select(ScheduledTask.id).where(ScheduledTask.id == task_id))
            s.exec(sa.delete(ScheduledTask).where(ScheduledTask.id == task_id))
        self.waker.notify()

    def complete(self, task_id: int, task_run_id: int, reason: str | None = None) -> ScheduledTask:
        """Claim-checked completion from inside a fired turn: the run must be the task's active claim."""
        with self.db.write() as s:
            row = s.get(ScheduledTask, task_id)
            if row is None:
                raise NotFound(f"no schedule with id {task_id}")
            if row.active_run_id is None or row.active_run_id != task_run_id:
                raise Conflict("this turn no longer holds the schedule's claim; nothing was completed")
            now = self.clock.now()
            row.status = TaskStatus.COMPLETED.value
            row.next_run_at, row.pending_run, row.pending_forced, row.retry_at = None, False, None, None
            row.next_occurrence_at = None
            row.last_error = None
            row.updated_at = now
            s.add(row)
            note = f'scheduled task "{row.name}" marked complete by the agent'
            if isinstance(reason, str) and reason.strip():
                note += f": {storable(reason.strip()[:500], 'reason')}"
            s.add(Event(chat_id=row.chat_id, type=EventType.STATUS.value, text=note, created_at=now))
            s.flush()
        self.waker.notify()
        return row

    def _mutate(self, task_id: int, change, expect: tuple[TaskStatus, ...] | None = None) -> ScheduledTask:
        with self.db.write() as s:
            row = s.exec(select(ScheduledTask).where(ScheduledTask.id == task_id)
                         .with_for_update() if not self.db.sqlite else
                         select(ScheduledTask).where(ScheduledTask.id == task_id)).first()
            if row is None:
                raise NotFound(f"no schedule with id {task_id}")
            if expect is not None and row.status not in {e.value for e in expect}:
                raise Conflict(f"the schedule changed meanwhile; it is now {row.status}")
            before = (bool(row.pending_run), row.pending_occurrence_at)
            extra = change(row)  # a change may return rows to insert with it
            row.updated_at = self.clock.now()
            s.add(row)
            s.add_all(extra or [])
            s.flush()
            settle_waiting(s.connection(), row.id, before, (bool(row.pending_run), row.pending_occurrence_at),
                           row.status, row.updated_at)
        self.waker.notify()
        return row




def _enum(cls, value: object, field: str):
    try:
        return cls(value)
    except ValueError:
        raise InvalidInput(field, f"must be one of {', '.join(m.value for m in cls)}") from None


def _max_runs(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1_000_000:
        raise InvalidInput("max_runs", "must be a whole number from 1 to 1000000 (leave it empty for no limit)")
    return value


def forget_chats(s: Session, chat_ids: Sequence[int]) -> None:
    """Inside the caller's transaction: delete the schedules of chats that are being deleted, with
    their history (``accounts.delete_user``); raises Conflict while one of them has a fire in flight."""
    tasks = select(ScheduledTask.id).where(ScheduledTask.chat_id.in_(chat_ids))
    busy = s.exec(tasks.where(ScheduledTask.active_run_id.is_not(None))).first()
    if busy is not None:
        raise Conflict(f"schedule {busy} has a fire in flight in a chat that would be deleted; "
                       "try again when it has finished")
    s.exec(sa.delete(TaskRun).where(TaskRun.task_id.in_(tasks)).execution_options(synchronize_session=False))
    forget_hooks(s, tasks)
    s.exec(sa.delete(ScheduledTask).where(ScheduledTask.chat_id.in_(chat_ids))
           .execution_options(synchronize_session=False))
