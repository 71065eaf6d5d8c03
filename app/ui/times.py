"""Times of transcript rows: the instant every event carries and what a fire card says of its start.

The page gets instants as ISO 8601 UTC (``<time datetime="…">``); assets/event_time.js writes the
visible text in the browser's own zone, so the server never needs to know the viewer's zone and a
row formatted before the zone was known cannot go stale. Lateness is plain words worked out here.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Iterable

import sqlalchemy as sa

from app.core.db import Database
from app.core.models import Event, EventType, Run
from app.schedules.model import TaskRun, Trigger

ON_TIME_SECONDS = 1.0  # a start within a second of its occurrence is "on time"


def iso_utc(instant: dt.datetime | None) -> str:
    """``2026-12-02T14:05:09Z`` (whole seconds, UTC; a naive value is taken as UTC); "" for None."""
    if instant is None:
        return ""
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=dt.UTC)
    return instant.astimezone(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def lateness(planned: dt.datetime, started: dt.datetime) -> str:
    """"on time" under a second late (or early), "3 s late", "2 min late", "1 h 5 min late", "2 d 3 h late"."""
    seconds = (started - planned).total_seconds()
    if seconds < ON_TIME_SECONDS:
        return "on time"
    whole = int(seconds)
    if whole < 60:
        return f"{whole} s late"
    minutes = whole // 60
    if minutes < 60:
        return f"{minutes} min late"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min late" if minutes else f"{hours} h late"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h late" if hours else f"{days} d late"


def run_now_words(trigger: str, requested_by: str | None) -> str:
    """"Run now by ann@example.com" / "Run now by the agent" for a run-now fire, "Called through its
    trigger URL" for a trigger call's (SPEC §19), "" for any other."""
    if trigger == Trigger.HOOK.value:
        return "Called through its trigger URL"
    if trigger == Trigger.RUN_NOW_AGENT.value:
        return "Run now by the agent"
    if trigger == Trigger.RUN_NOW_USER.value:
        return f"Run now by {requested_by}" if requested_by else "Run now by a user"
    return ""


def fire_starts(db: Database, run_ids: Iterable[int]) -> dict[int, tuple[str, str, str]]:
    """Run id → (planned start as ISO UTC, lateness words, run-now words) for the runs among ``run_ids``
    that are fires. A run-now or a trigger call has no planned time to be late for: its occurrence and
    lateness are ""."""
    ids = sorted(set(run_ids))
    if not ids:
        return {}
    # The turn's start is the instant its scheduled_prompt event was written (app/core/runs.py).
    # Planned is the occurrence moved by the task's jitter (SPEC §14): lateness counts from there.
    query = (sa.select(Run.id, TaskRun.occurrence_at, TaskRun.planned_at, Run.started_at, TaskRun.trigger,
                       TaskRun.requested_by)
             .join(TaskRun, TaskRun.id == Run.task_run_id).where(Run.id.in_(ids)))
    with db.read() as s:
        rows = s.exec(query).all()
    out = {}
    for run_id, occurrence, planned_at, started, trigger, requested_by in rows:
        forced = run_now_words(trigger, requested_by)
        planned = planned_at or occurrence
        out[run_id] = ("", "", forced) if forced else (iso_utc(planned), lateness(planned, started), "")
    return out


async def for_events(db: Database, events: Iterable[Event]) -> dict[int, tuple[str, str, str]]:
    """Fire starts of the scheduled prompts among ``events`` (no query when there is none)."""
    ids = [event.run_id for event in events
           if event.type == EventType.SCHEDULED_PROMPT.value and event.run_id is not None]
    return await asyncio.to_thread(fire_starts, db, ids) if ids else {}
