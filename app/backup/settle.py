"""A restored store made ready to run (SPEC §21): its schema brought to this code's head, and what was
in flight at the snapshot closed, at once and in one transaction.

In flight at the snapshot means: a fire claimed but not finished (its TaskRun ``running``), a turn
running (its chat Run ``running``, a user's or a fire's), a scheduler beating. None of them runs
here — their processes belong to the server the backup was taken of — so the fires and runs are
recorded ``abandoned`` (:data:`REASON`) by the rule the scheduler applies to a dead scheduler's
claims (``app.schedules.abandon``) and the one the prompt service applies to a dead turn
(``app.core.runs``): never fired again; a once task whose fire it was goes to ``error``. The
scheduler instances of the snapshot are recorded stopped. Nothing is sent to anyone (no
notification: the server the backup came from may well have finished those fires since).

What was finished before the snapshot keeps its TaskRun, and ``(task_id, occurrence_at)`` is unique,
so no scheduler on the restored store fires it again; what fell due since is the catch-up rules'
(SPEC §14), which a scheduler applies from its first iteration.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

import sqlalchemy as sa

from app.core.db import Database
from app.core.migrate import upgrade
from app.core.runs import abandon_running_in
from app.schedules.abandon import abandon_fires_in
from app.schedules.model import SchedulerInstance

REASON = "abandoned: running when the backup was taken"


@dataclasses.dataclass(frozen=True)
class Settled:
    task_runs: list[int]  # the TaskRuns recorded abandoned
    runs: list[int]  # the chat Runs recorded abandoned
    instances: int  # scheduler instances recorded stopped


def settle(db: Database, now: dt.datetime, migrate: bool) -> Settled:
    """Upgrade the schema when ``migrate``, then close what was in flight at the snapshot (above)."""
    if migrate:
        upgrade(db)
    with db.write() as s:
        task_runs = abandon_fires_in(s, now, REASON)
        runs = [run.id for run in abandon_running_in(s, now, REASON)]
        stopped = s.exec(sa.update(SchedulerInstance).where(SchedulerInstance.stopped_at.is_(None))
                         .values(stopped_at=now))
    return Settled(task_runs=task_runs, runs=runs, instances=stopped.rowcount or 0)
