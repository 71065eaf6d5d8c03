"""Bridges between task rows and the pure code: decision snapshots and schedule evaluation."""

from __future__ import annotations

import json

import sqlalchemy as sa

from app.schedules.model import Overlap, ScheduledTask, TaskStatus, Trigger
from app.schedules.plan import Plan, plan_of
from scheduler.decisions import TaskView


def next_after_fn(task: ScheduledTask) -> Plan:
    """The task's occurrences (window and jitter applied): called, the next one strictly after an instant."""
    return plan_of(task)


def task_view(task: ScheduledTask | sa.Row) -> TaskView:
    """The decision snapshot of a task, or of a plain row of its columns (``claims.finish_in`` reads
    rows without the ORM on the hot path)."""
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
        task_id=task.id or 0,
        next_occurrence_at=task.next_occurrence_at,
        catchup_window_seconds=task.catchup_window_seconds,
        ends_at=task.ends_at,
        paused_until=task.paused_until,
        last_error=task.last_error,
        queue_cap=task.queue_cap,
    )
