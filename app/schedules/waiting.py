"""Records of occurrences that wait (``queued`` for a busy chat, ``deferred`` for a spent budget):
when a task stops waiting for one without firing it — paused, completed, ended, exhausted, in
error — its record is closed ``skipped`` with the reason, never left waiting for ever (waiting
records are not pruned)."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

from app.schedules.model import RunOutcome, TaskRun, TaskStatus

WAITING = (RunOutcome.QUEUED.value, RunOutcome.DEFERRED.value)
_RUNS = TaskRun.__table__


def settle_waiting(conn: sa.Connection, task_id: int, before: tuple[bool, dt.datetime | None],
                   after: tuple[bool, dt.datetime | None], status: str, now: dt.datetime) -> None:
    """``before`` / ``after``: the task's (pending_run, pending_occurrence_at) around a change. A
    record that already fired or was marked missed is not waiting any more and is left alone."""
    if status != TaskStatus.ACTIVE.value:  # fires waiting in line (SPEC §19) wait for an active task only
        keep = after[1] if after[0] else None
        conn.execute(_RUNS.update().where(_RUNS.c.task_id == task_id, _RUNS.c.status == RunOutcome.QUEUED.value,
                                          _RUNS.c.occurrence_at != keep if keep is not None else sa.true(),
                                          _RUNS.c.occurrence_at != before[1] if before[1] is not None else sa.true())
                     .values(status=RunOutcome.SKIPPED.value, finished_at=now,
                             error=f"not fired: the task stopped waiting for it (it is {status} now)"))
    pending, occurrence = before
    if not pending or occurrence is None or (after[0] and after[1] == occurrence):
        return
    reason = "not fired: the task stopped waiting for it" + (f" (it is {status} now)"
                                                             if status != TaskStatus.ACTIVE.value else "")
    conn.execute(_RUNS.update().where(_RUNS.c.task_id == task_id, _RUNS.c.occurrence_at == occurrence,
                                      _RUNS.c.status.in_(WAITING))
                 .values(status=RunOutcome.SKIPPED.value, error=reason, finished_at=now))
