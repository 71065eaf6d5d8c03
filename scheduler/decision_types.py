"""The vocabulary of the scheduler's pure decisions (SPEC §3, §14): what they read of a task (a
snapshot), the facts and limits they weigh, and the decision they return. ``decisions`` and
``window`` decide; ``claims`` applies."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum

from app.schedules.abandon import FORCED  # noqa: F401 (the decisions' vocabulary; one owner of the rule)
from app.schedules.model import Overlap, TaskStatus, Trigger
from scheduler.changes import TaskChanges
from scheduler.changes import changes as changes_of


@dataclasses.dataclass(frozen=True)
class TaskView:
    """What the decisions read of a task (a snapshot of its row)."""

    status: TaskStatus
    kind: str  # once | cron | interval
    overlap: Overlap
    next_run_at: dt.datetime | None
    retry_at: dt.datetime | None
    pending_run: bool
    pending_forced: Trigger | None
    pending_occurrence_at: dt.datetime | None
    run_count: int
    max_runs: int | None
    active_run_id: int | None
    consecutive_failures: int
    last_fire_started_at: dt.datetime | None
    # SPEC §14 (defaults: the behaviour before it — no window, no end, no timed pause)
    task_id: int = 0
    next_occurrence_at: dt.datetime | None = None  # nominal instant of next_run_at when jitter moved it
    catchup_window_seconds: int | None = None
    ends_at: dt.datetime | None = None
    paused_until: dt.datetime | None = None
    last_error: str | None = None
    queue_cap: int = 3  # SPEC §19: how many fires may wait in line (overlap=queue_all)

    @property
    def next_nominal(self) -> dt.datetime | None:
        return self.next_occurrence_at or self.next_run_at


@dataclasses.dataclass(frozen=True)
class Limits:
    min_interval_seconds: int = 60
    max_concurrent_runs: int = 4
    busy_retry_seconds: int = 15
    backoff_seconds: int = 60
    backoff_cap_seconds: int = 3600
    max_consecutive_failures: int = 5


class Auth(enum.Enum):
    """Outcome of the fire-time authorization check."""

    OK = "ok"
    PERMANENT = "permanent"  # chat gone, moved, owner gone or lost access → task error
    TRANSIENT = "transient"  # the lookup itself failed → retry later


@dataclasses.dataclass(frozen=True)
class Facts:
    """What the store knows at claim time, besides the task itself."""

    chat_busy: bool  # a task of this chat (this one included) holds a claim in flight
    in_flight: int  # scheduled runs in flight, all chats
    auth: Auth = Auth.OK
    auth_reason: str = ""
    budget_spent: str | None = None  # the project's daily budget is spent: why (SPEC §15)
    budget_wait: bool = False  # the project's fires in flight may spend what is left today
    in_line: int = 0  # this task's fires waiting in line (queued records, SPEC §19)


@dataclasses.dataclass(frozen=True)
class Due:
    occurrence_at: dt.datetime  # the nominal instant
    trigger: Trigger
    coalesce_only: bool = False  # a deadline passed while a follow-up waits for its retry time
    planned_at: dt.datetime | None = None  # when it was to fire (jitter applied); None: occurrence_at

    @property
    def planned(self) -> dt.datetime:
        return self.planned_at or self.occurrence_at


class Action(enum.Enum):
    NOTHING = "nothing"  # not due, or waiting for the chat / the global cap
    DISPATCH = "dispatch"  # claim and start the turn
    QUEUE = "queue"  # keep one follow-up pending
    SKIP = "skip"  # record a skipped TaskRun
    DEFER = "defer"  # keep it pending until retry_at
    EXHAUST = "exhaust"  # bounds reached before it could fire
    ERROR = "error"  # permanent authorization failure
    MISS = "miss"  # more than the catch-up window late: record a missed TaskRun, move on (SPEC §14)
    END = "end"  # the active window ended: the task is completed
    RESUME = "resume"  # a pause's `until` arrived: the task is active again
    BUDGET = "budget"  # the project's daily budget is spent: record `deferred`, wait for the next UTC day
    ENQUEUE = "enqueue"  # overlap=queue_all met a busy chat: the occurrence waits in line with its record
    REPLACE = "replace"  # overlap=replace met the task's own fire: that one is superseded, this one waits for it


@dataclasses.dataclass(frozen=True)
class Claim:
    """The decision for one task: what to do, and the task fields to write (None = unchanged)."""

    action: Action
    due: Due | None = None
    changes: TaskChanges = dataclasses.field(default_factory=TaskChanges)
    missed_count: int | None = None  # MISS: how many occurrences the record stands for
    note: str | None = None  # MISS: the record's error; END / RESUME: the chat's status line

    def __post_init__(self) -> None:  # decisions build their changes as a dict: checked and frozen here
        object.__setattr__(self, "changes", changes_of(self.changes))
