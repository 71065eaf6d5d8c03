"""Bridges between task rows and the pure code: decision snapshots and schedule evaluation."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from app.schedules import timing
from app.schedules.model import Overlap, ScheduledTask, TaskStatus, Trigger
from app.schedules.spec import parse_schedule
from scheduler.decisions import NextFn, TaskView


def load_schedule(task: ScheduledTask) -> Any:
    """The parsed schedule of a stored task."""
    return parse_schedule(json.loads(task.schedule))


def next_after_fn(task: ScheduledTask) -> NextFn:
    """next regular occurrence strictly after an instant, for this task's schedule."""
    schedule = load_schedule(task)

    def next_after(after: dt.datetime) -> dt.datetime | None:
        return timing.next_occurrence(schedule, after, armed_at=task.armed_at)

    return next_after


def task_view(task: ScheduledTask) -> TaskView:
    return TaskView(
        status=TaskStatus(task.status),
        kind=json.loads(task.schedule)["kind"],
        overlap=Overlap(task.overlap),
        next_run_at=task.next_run_at,
        retry_at=task.retry_at,
        pending_run=bool(task.pending_run),
        pending_forced=Trigger(task.pending_forced) if task.pending_forced else None,
        pending_occurrence_at=task.pending_occurrence_at,
        run_count=task.run_count,
        max_runs=task.max_runs,
        active_run_id=task.active_run_id,
        consecutive_failures=task.consecutive_failures,
        last_fire_started_at=task.last_fire_started_at,
    )
