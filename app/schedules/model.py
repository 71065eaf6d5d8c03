"""Tables and enums of scheduled tasks (SPEC §3): ScheduledTask, TaskRun, SchedulerInstance."""

from __future__ import annotations

import datetime as dt
import enum
import json
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from app.core.attention_tables import Notify
from app.core.models import instant
from app.schedules.spec import Schedule, parse_schedule


class TaskStatus(enum.StrEnum):
    """Life of a scheduled task."""

    DRAFT = "draft"  # created by an agent; waits for a user to arm it
    ACTIVE = "active"  # fires on its schedule
    PAUSED = "paused"  # stopped by a user or agent; keeps its definition
    COMPLETED = "completed"  # its goal was reached (complete-current, marker, or a once task ran)
    EXHAUSTED = "exhausted"  # max_runs reached
    ERROR = "error"  # paused by the system; last_error says why


class RunOutcome(enum.StrEnum):
    """Outcome of one fire attempt (TaskRun.status, ScheduledTask.last_run_status)."""

    RUNNING = "running"  # claimed, the turn is in flight
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"  # overlap=skip met a busy chat
    QUEUED = "queued"  # the chat was busy; a follow-up will fire when it frees up
    ABANDONED = "abandoned"  # the scheduler holding the claim died
    MISSED = "missed"  # found more than the catch-up window late: not fired (SPEC §14)
    DEFERRED = "deferred"  # due, but waits (a project's budget is spent, SPEC §15)
    SUPERSEDED = "superseded"  # cancelled for a newer fire of its task (overlap=replace, SPEC §19)


class Overlap(enum.StrEnum):
    """What a due occurrence does when the chat already has a claim in flight."""

    QUEUE_ONE = "queue_one"  # coalesce into one follow-up fired when the chat frees up
    SKIP = "skip"  # record a skipped run and wait for the next occurrence
    REPLACE = "replace"  # cancel the task's fire in flight (its run ends superseded) and fire the new one
    QUEUE_ALL = "queue_all"  # every occurrence waits its turn, up to queue_cap; beyond it: skipped "queue full"


class NotifyOn(enum.StrEnum):
    """Which fires tell people (SPEC §19): the chat shows every fire; these decide pushes and the inbox."""

    ALWAYS = "always"  # every fire
    CHANGES = "changes"  # not a fire the agent reported ``no_change``
    FAILURES = "failures"  # only fires that fail (or end without a reply)


class Outcome(enum.StrEnum):
    """What the agent reported of its fire (``remote-schedule report``); no report counts as CHANGED."""

    CHANGED = "changed"
    NO_CHANGE = "no_change"
    FAILED = "failed"


class SessionMode(enum.StrEnum):
    """Which provider session a fire continues."""

    RESUME = "resume"  # continue the chat's session
    FRESH = "fresh"  # new session seeded with the envelope and the previous fire's output


# What a new task gets for the fields a create request leaves out (both APIs, the dialog, the service).
TASK_DEFAULTS: dict[str, object] = {"overlap": Overlap.QUEUE_ONE.value, "session": SessionMode.RESUME.value,
                                    "max_runs": None, "notify": Notify.FAILURES.value,
                                    "catchup_window_seconds": 3600, "jitter_seconds": 0,
                                    "starts_at": None, "ends_at": None, "notify_on": "always", "queue_cap": 3,
                                    "pace_min_seconds": None, "pace_max_seconds": None,
                                    "exclude_dates": [], "holidays": None}
DEFAULT_CATCHUP_SECONDS = 3600


class PausedBy(enum.StrEnum):
    """Who made a pause (an agent may not change a user's pause, SPEC §14)."""

    USER = "user"
    AGENT = "agent"


class CreatedBy(enum.StrEnum):
    USER = "user"
    AGENT = "agent"


class Trigger(enum.StrEnum):
    """Why a claim was made."""

    SCHEDULE = "schedule"  # a regular deadline
    FOLLOW_UP = "follow_up"  # a queued follow-up (coalesced occurrences, busy retry)
    RUN_NOW_USER = "run_now_user"  # a user's run-now: bypasses the min-interval floor
    RUN_NOW_AGENT = "run_now_agent"  # an agent's run-now: respects the floor
    HOOK = "hook"  # a call of the task's trigger URL (SPEC §19), with its payload


class ScheduledTask(SQLModel, table=True):
    __tablename__ = "scheduled_tasks"
    # ids never given again (SQLite AUTOINCREMENT): the spend ledger keys a task's spend by its id
    __table_args__ = (sa.UniqueConstraint("chat_id", "idempotency_key", name="uq_task_chat_idempotency"),
                      {"sqlite_autoincrement": True})

    id: int | None = Field(default=None, primary_key=True)
    chat_id: int = Field(foreign_key="chats.id", index=True)
    project_id: int = Field(foreign_key="projects.id", index=True)
    owner: str  # the owner's email
    name: str = Field(max_length=120)
    prompt: str
    schedule: str  # normalized schedule as JSON (kind once/cron/interval)
    overlap: str = str(TASK_DEFAULTS["overlap"])
    session: str = str(TASK_DEFAULTS["session"])
    max_runs: int | None = None
    run_count: int = 0
    status: str = Field(default=TaskStatus.ACTIVE.value, index=True)
    next_run_at: dt.datetime | None = instant(nullable=True, index=True)  # when it fires next (jittered)
    # the nominal instant of that fire when jitter moves it (None: next_run_at is the nominal instant)
    next_occurrence_at: dt.datetime | None = instant(nullable=True)
    last_run_at: dt.datetime | None = instant(nullable=True)
    last_run_status: str | None = None
    last_error: str | None = None
    pending_run: bool = Field(default=False, index=True)
    pending_forced: str | None = None  # the Trigger of a queued run-now, None for a regular follow-up
    # the user whose run-now is queued (None for an agent's): the fire's record copies it
    pending_forced_by: str | None = Field(default=None, sa_column=sa.Column(sa.String(320), nullable=True))
    pending_occurrence_at: dt.datetime | None = instant(nullable=True)
    retry_at: dt.datetime | None = instant(nullable=True, index=True)
    active_run_id: int | None = Field(default=None, index=True)  # TaskRun id of the claim in flight
    consecutive_failures: int = 0
    last_fire_started_at: dt.datetime | None = instant(nullable=True)
    armed_at: dt.datetime | None = instant(nullable=True)
    created_by: str = CreatedBy.USER.value
    idempotency_key: str | None = Field(default=None, max_length=200)
    notify: str = str(TASK_DEFAULTS["notify"])  # Notify: which of its events reach the owner's channels (SPEC §13)
    # SPEC §14: how late an occurrence may still fire (None: however late), the spread of fire
    # instants, the active window [starts_at, ends_at), and a pause's note and end
    # (no server default here: an explicit None must be written as NULL; the migration gives existing rows 3600)
    catchup_window_seconds: int | None = Field(default=DEFAULT_CATCHUP_SECONDS,
                                               sa_column=sa.Column(sa.Integer, nullable=True))
    jitter_seconds: int = Field(default=0, sa_column=sa.Column(sa.Integer, nullable=False, server_default="0"))
    starts_at: dt.datetime | None = instant(nullable=True)
    ends_at: dt.datetime | None = instant(nullable=True, index=True)
    pause_note: str | None = Field(default=None, sa_column=sa.Column(sa.String(500), nullable=True))
    paused_until: dt.datetime | None = instant(nullable=True, index=True)
    paused_by: str | None = Field(default=None, sa_column=sa.Column(sa.String(16), nullable=True))  # PausedBy
    # SPEC §15: what one fire may spend before it is cancelled ("budget exceeded"); None: no cap
    max_tokens_per_fire: int | None = Field(default=None, sa_column=sa.Column(sa.BigInteger, nullable=True))
    max_cost_per_fire_usd: float | None = Field(default=None, sa_column=sa.Column(sa.Float, nullable=True))
    # SPEC §19: which fires tell people, how many fires may wait (overlap=queue_all), the bounds an
    # agent may pace the next fire within (both None: it may not), and the instant it paced it to
    notify_on: str = Field(default="always", sa_column=sa.Column(sa.String(16), nullable=False,
                                                                 server_default="always"))
    queue_cap: int = Field(default=3, sa_column=sa.Column(sa.Integer, nullable=False, server_default="3"))
    pace_min_seconds: int | None = Field(default=None, sa_column=sa.Column(sa.Integer, nullable=True))
    pace_max_seconds: int | None = Field(default=None, sa_column=sa.Column(sa.Integer, nullable=True))
    paced_at: dt.datetime | None = instant(nullable=True)
    # SPEC §20: local dates whose occurrences are not occurrences (JSON list of YYYY-MM-DD) and a
    # country's public holidays ({"country", "subdivision"} JSON, None: none) — app/schedules/exclusions.py
    exclude_dates: str = Field(default="[]", sa_column=sa.Column(sa.Text, nullable=False, server_default="[]"))
    holidays: str | None = Field(default=None, sa_column=sa.Column(sa.String(200), nullable=True))
    created_at: dt.datetime = instant(nullable=False)
    updated_at: dt.datetime = instant(nullable=False)

    @property
    def next_paced(self) -> bool:
        """Whether the next fire is where the agent paced it (SPEC §19), not where the schedule put it."""
        return self.paced_at is not None and self.next_run_at is not None and self.paced_at == self.next_run_at

    def schedule_dict(self) -> dict[str, Any]:
        """The stored (normalized) schedule as the API shows it: ``{"kind": ..., ...}``."""
        return json.loads(self.schedule)

    def parsed_schedule(self) -> Schedule:
        """The stored schedule as a value the timing code evaluates."""
        return parse_schedule(self.schedule_dict())


class TaskRun(SQLModel, table=True):
    """One fire of one occurrence; ``(task_id, occurrence_at)`` is unique, so it fires at most once."""

    __tablename__ = "task_runs"
    __table_args__ = (sa.UniqueConstraint("task_id", "occurrence_at", name="uq_taskrun_occurrence"),)

    id: int | None = Field(default=None, primary_key=True)
    task_id: int = Field(sa_column=sa.Column(sa.Integer, sa.ForeignKey("scheduled_tasks.id", ondelete="CASCADE"),
                                             nullable=False, index=True))
    occurrence_at: dt.datetime = instant(nullable=False)  # the nominal instant
    planned_at: dt.datetime | None = instant(nullable=True)  # when it was to fire (jitter applied)
    missed_count: int | None = None  # a `missed` record: how many occurrences it stands for
    # SPEC §15: the caps the fire was claimed with (what it may spend while in flight)
    max_tokens: int | None = Field(default=None, sa_column=sa.Column(sa.BigInteger, nullable=True))
    max_cost_usd: float | None = Field(default=None, sa_column=sa.Column(sa.Float, nullable=True))
    trigger: str = Trigger.SCHEDULE.value
    requested_by: str | None = Field(default=None, sa_column=sa.Column(sa.String(320), nullable=True))  # run-now by
    status: str = Field(default=RunOutcome.RUNNING.value, index=True)
    fire_number: int = 0
    attempts: int = 1
    run_id: int | None = None  # the chat Run of the turn
    provider_session_id: str | None = None  # a `session: fresh` fire's own agent session (SPEC §11)
    instance: str | None = Field(default=None, index=True)  # scheduler instance holding the claim
    claimed_at: dt.datetime = instant(nullable=False)
    started_at: dt.datetime | None = instant(nullable=True)
    finished_at: dt.datetime | None = instant(nullable=True)
    error: str | None = None
    # SPEC §19: a trigger call's payload (untrusted text, fenced in the prompt), what the agent
    # reported, whether the fire told nobody (notify_on), and the fire that superseded this one
    payload: str | None = Field(default=None, sa_column=sa.Column(sa.Text, nullable=True))
    outcome: str | None = Field(default=None, sa_column=sa.Column(sa.String(16), nullable=True))  # Outcome
    summary: str | None = Field(default=None, sa_column=sa.Column(sa.String(2000), nullable=True))
    quiet: bool = Field(default=False, sa_column=sa.Column(sa.Boolean, nullable=False, server_default=sa.false()))
    superseded_by: int | None = None


class SchedulerInstance(SQLModel, table=True):
    """A scheduler process: its heartbeat is the lease on its claims and what /api/health reports."""

    __tablename__ = "scheduler_instances"

    id: str = Field(primary_key=True, max_length=120)
    started_at: dt.datetime = instant(nullable=False)
    heartbeat_at: dt.datetime = instant(nullable=False, index=True)
    iterations: int = 0  # loop iterations so far, for /metrics
    stopped_at: dt.datetime | None = instant(nullable=True)


class TaskHook(SQLModel, table=True):
    """A task's trigger URL (SPEC §19): ``/hooks/tasks/<id>``, and the secret its callers sign with.

    The secret is kept as given out (an HMAC needs it); a rotation replaces the row's secret, so the
    old one stops working at once; a revocation deletes the row."""

    __tablename__ = "task_hooks"

    id: str = Field(primary_key=True, max_length=64)  # the URL's random part
    task_id: int = Field(sa_column=sa.Column(sa.Integer, sa.ForeignKey("scheduled_tasks.id", ondelete="CASCADE"),
                                             nullable=False, unique=True))
    secret: str = Field(max_length=128)
    created_by: str = Field(max_length=320)
    created_at: dt.datetime = instant(nullable=False)


class HookCall(SQLModel, table=True):
    """One accepted call of a trigger URL: the rate limit counts them, a repeated ``webhook-id`` /
    ``Idempotency-Key`` answers the first call's result (kept 24 h)."""

    __tablename__ = "hook_calls"
    __table_args__ = (sa.UniqueConstraint("hook_id", "call_key", name="uq_hook_call_key"),)

    id: int | None = Field(default=None, primary_key=True)
    hook_id: str = Field(max_length=64, index=True)
    call_key: str | None = Field(default=None, max_length=200)
    received_at: dt.datetime = instant(nullable=False, index=True)
    answer: str = Field(sa_column=sa.Column(sa.Text, nullable=False))  # the 202's JSON body
