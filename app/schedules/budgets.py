"""A project's daily budget, set by an admin (SPEC §15, ``python -m app.manage set-budget``).

Setting or clearing a budget takes effect at once: the notice of a spent budget may be given again
the same day, and the fires that wait for the next UTC day are looked at again now (a raised or
removed budget frees them; one still spent defers them again, with no second record).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable

import sqlalchemy as sa
from sqlmodel import Session, select

from app.core.clock import Clock
from app.core.db import Database
from app.core.errors import NotFound
from app.core.models import Project
from app.core.spend import Budget, Spend, projects_spent, utc_day
from app.core.wake import Waker
from app.schedules.model import RunOutcome, ScheduledTask, TaskRun

UNCHANGED = object()


@dataclasses.dataclass(frozen=True)
class BudgetState:
    project_id: int
    budget: Budget
    spent_today: Spend
    freed: int = 0  # waiting tasks looked at again

    def sentence(self) -> str:
        limits = [f"{self.budget.tokens:,} tokens" if self.budget.tokens is not None else None,
                  f"${self.budget.cost_usd:,.2f}" if self.budget.cost_usd is not None else None]
        shown = " and ".join(x for x in limits if x) or "none (fires are not limited)"
        text = (f"project {self.project_id}: daily budget {shown}; spent today (UTC) "
                f"{self.spent_today.tokens:,} tokens, ${self.spent_today.cost_usd:,.2f}")
        if self.freed:
            text += f"; {self.freed} waiting schedule(s) looked at again"
        return text


def set_budget(db: Database, clock: Clock, waker: Waker, project_id: int, tokens: object = UNCHANGED,
               cost_usd: object = UNCHANGED, also: Callable[[Session], None] | None = None) -> BudgetState:
    """Set (a value), clear (None) or keep (UNCHANGED) each limit; values are checked by the caller
    (``app.core.spend.tokens_value`` / ``usd_value``). ``also`` runs in the same transaction when a
    limit changes (the settings page's audit record). Raises NotFound for an unknown project."""
    now = clock.now()
    freed = 0
    changing = tokens is not UNCHANGED or cost_usd is not UNCHANGED
    with db.write() as s:
        if s.exec(select(Project.id).where(Project.id == project_id)).first() is None:
            raise NotFound(f"no project with id {project_id}")
        if changing:
            # the tasks first, then the project: the order a claim locks them in (no deadlock)
            freed = _free(s, project_id, now)
            values: dict[str, object] = {"budget_noticed_on": None}
            if tokens is not UNCHANGED:
                values["daily_token_budget"] = tokens
            if cost_usd is not UNCHANGED:
                values["daily_cost_budget_usd"] = cost_usd
            s.exec(sa.update(Project).where(Project.id == project_id).values(**values))
            if also is not None:
                also(s)
        project = s.get(Project, project_id, populate_existing=True)
        budget = Budget(project.daily_token_budget, project.daily_cost_budget_usd)
        spent = projects_spent(s.connection(), [project_id], utc_day(now)).get(project_id, Spend())
    if changing:
        with db.write() as s:  # a claim that read the old budget meanwhile may have deferred one more
            freed += _free(s, project_id, now)
        waker.notify()  # fires held back by fires in flight may start now too
    return BudgetState(project_id, budget, spent, freed)


def _free(s: Session, project_id: int, now: dt.datetime) -> int:
    """Make the project's tasks whose follow-up waits for the budget ready now; returns how many."""
    runs, tasks = TaskRun.__table__, ScheduledTask.__table__
    deferred = sa.exists().where(runs.c.task_id == tasks.c.id, runs.c.occurrence_at == tasks.c.pending_occurrence_at,
                                 runs.c.status == RunOutcome.DEFERRED.value)
    return s.exec(sa.update(ScheduledTask).where(
        ScheduledTask.project_id == project_id, ScheduledTask.pending_run, ScheduledTask.retry_at > now,
        deferred).values(retry_at=now)).rowcount or 0
