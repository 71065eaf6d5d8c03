"""Quiet fires in the transcript (SPEC §19): a fire that told nobody because its agent reported
``no_change`` (the task's ``notify_on``) shows as one folded "Nothing new" line that opens to the
whole turn.

Which runs are such fires is read once per batch of events, for the batch's finished runs (the
fire's record is settled in the transaction that writes its ``run_finished``): one query, not one
per row. :func:`fold` marks the rows of those runs: the run's first row ``quiet="head"`` (the page
draws the folded line there), the others ``quiet="body"``; each carries the agent's summary.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping

import sqlalchemy as sa

from app.core.db import Database
from app.core.models import Event, EventType, Run
from app.schedules.model import Outcome, RunOutcome, TaskRun

HEAD, BODY = "head", "body"


def quiet_runs(db: Database, run_ids: Iterable[int]) -> dict[int, str]:
    """Run id → the agent's summary ("" when none) for the runs among ``run_ids`` that are quiet
    ``no_change`` fires."""
    ids = sorted(set(run_ids))
    if not ids:
        return {}
    query = (sa.select(Run.id, TaskRun.summary).join(TaskRun, TaskRun.id == Run.task_run_id)
             .where(Run.id.in_(ids), TaskRun.quiet.is_(True), TaskRun.outcome == Outcome.NO_CHANGE.value,
                    TaskRun.status == RunOutcome.SUCCEEDED.value))  # a superseded fire is quiet, not "nothing new"
    with db.read() as s:
        return {run_id: summary or "" for run_id, summary in s.exec(query).all()}


async def for_events(db: Database, events: Iterable[Event]) -> dict[int, str]:
    """Quiet fires among the runs that finished in ``events`` (no query when none finished)."""
    ids = [event.run_id for event in events
           if event.type == EventType.RUN_FINISHED.value and event.run_id is not None]
    return await asyncio.to_thread(quiet_runs, db, ids) if ids else {}


def fold(rows: list[dict[str, str]], quiet: Mapping[int, str]) -> list[dict[str, str]]:
    """``rows`` with the rows of ``quiet`` runs marked (a new list; unmarked rows are kept as they are)."""
    if not quiet:
        return rows
    wanted = {str(run_id): summary for run_id, summary in quiet.items()}
    out, headed = [], set()
    for row in rows:
        run = row.get("run_id", "")
        if run in wanted and not row.get("quiet"):
            row = {**row, "quiet": BODY if run in headed else HEAD, "summary": wanted[run]}
        if run in wanted:
            headed.add(run)
        out.append(row)
    return out
