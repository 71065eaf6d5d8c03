"""A project's daily budget at claim time (SPEC §15): what it has spent today, what its fires in
flight may still spend, and the once-a-day notice that it is spent.

Read in the claim's transaction. On PostgreSQL the budgeted projects' rows are locked (``FOR NO
KEY UPDATE``: new chats and tasks, which only take a key share, are not blocked), so claims of one
budgeted project are serialized across schedulers: each sees the fires the other started, and
spend lands in the ledger in the same transaction that ends a fire's record, so no fire is ever
counted neither as spent nor as in flight.

**The bound.** A fire starts only while the project's spend today plus what its fires in flight
may still spend — each one's per-fire cap, or everything left when it has none — is below the
budget. So at most one fire in flight can take the project past its budget, and only by what that
one fire spends: up to its own cap (plus the usage of one report, SPEC §15's cancel comes after
the report that crossed), or without a cap, its whole turn. People's turns are never blocked; they
count towards the day's spend and can take it past the budget by themselves.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable

import sqlalchemy as sa
from sqlmodel import Session, select

from app.core import attention_events as attention
from app.core.attention_tables import AttentionKind
from app.core.models import Project
from app.core.spend import Budget, Spend, next_utc_day, projects_spent, utc_day
from app.schedules.model import RunOutcome, ScheduledTask, TaskRun


@dataclasses.dataclass
class _Reserved:
    tokens: int = 0
    cost_usd: float = 0.0
    open_tokens: bool = False  # a fire in flight has no token cap: it may take all that is left
    open_cost: bool = False
    fires: int = 0

    def add(self, max_tokens: int | None, max_cost: float | None) -> None:
        self.fires += 1
        if max_tokens is None:
            self.open_tokens = True
        else:
            self.tokens += max_tokens
        if max_cost is None:
            self.open_cost = True
        else:
            self.cost_usd += max_cost


class ProjectBudgets:
    """The claim's view of the budgets of the projects in one batch."""

    def __init__(self, budgets: dict[int, Budget], spent: dict[int, Spend], reserved: dict[int, _Reserved]) -> None:
        self.budgets, self.spent_today, self.reserved = budgets, spent, reserved

    @classmethod
    def read(cls, s: Session, sqlite: bool, tasks: Iterable[ScheduledTask], now: dt.datetime) -> ProjectBudgets:
        ids = sorted({task.project_id for task in tasks})
        query = select(Project.id, Project.daily_token_budget, Project.daily_cost_budget_usd).where(
            Project.id.in_(ids), sa.or_(Project.daily_token_budget.is_not(None),
                                        Project.daily_cost_budget_usd.is_not(None))).order_by(Project.id)
        if not sqlite:
            query = query.with_for_update(key_share=True)
        budgets = {pid: Budget(tokens, cost) for pid, tokens, cost in s.exec(query)} if ids else {}
        if not budgets:
            return cls({}, {}, {})
        # the fires in flight before the spend: a fire that ends between the two reads is counted
        # twice (held and spent), never neither; each holds the caps it was claimed with
        reserved = {pid: _Reserved() for pid in budgets}
        flying = select(ScheduledTask.project_id, TaskRun.max_tokens, TaskRun.max_cost_usd).join(
            TaskRun, TaskRun.task_id == ScheduledTask.id).where(
            TaskRun.status == RunOutcome.RUNNING.value, ScheduledTask.project_id.in_(list(budgets)))
        for pid, max_tokens, max_cost in s.exec(flying):
            reserved[pid].add(max_tokens, max_cost)
        spent = projects_spent(s.connection(), budgets, utc_day(now))
        return cls(budgets, spent, reserved)

    def spent(self, task: ScheduledTask) -> str | None:
        """Why the task's project can start no fire until the next UTC day, else None."""
        budget = self.budgets.get(task.project_id)
        return budget.spent_by(self.spent_today.get(task.project_id, Spend())) if budget else None

    def must_wait(self, task: ScheduledTask) -> bool:
        """The project's fires in flight may still spend what is left today: wait for them to end."""
        budget, held = self.budgets.get(task.project_id), self.reserved.get(task.project_id)
        if budget is None or held is None or not held.fires:
            return False
        spend = self.spent_today.get(task.project_id, Spend())
        if budget.tokens is not None and (held.open_tokens or spend.tokens + held.tokens >= budget.tokens):
            return True
        return budget.cost_usd is not None and (held.open_cost or spend.cost_usd + held.cost_usd >= budget.cost_usd)

    def admit(self, task: ScheduledTask) -> None:
        """A fire of the task was claimed in this batch: it is in flight for the tasks after it."""
        if task.project_id in self.reserved:
            self.reserved[task.project_id].add(task.max_tokens_per_fire, task.max_cost_per_fire_usd)


_PROJECTS = Project.__table__


def notice_in(s: Session, task: ScheduledTask, reason: str, now: dt.datetime) -> bool:
    """Once per UTC day and project: the inbox and the ``task.error``-class notifications say the
    budget is spent (the first deferred fire's owner is told; the project's members see it in their
    inboxes). Returns whether this call gave it."""
    today = utc_day(now)
    conn = s.connection()
    marked = conn.execute(_PROJECTS.update().where(
        _PROJECTS.c.id == task.project_id,
        sa.or_(_PROJECTS.c.budget_noticed_on.is_(None), _PROJECTS.c.budget_noticed_on != today))
        .values(budget_noticed_on=today))
    if not marked.rowcount:
        return False
    until = next_utc_day(now).strftime("%Y-%m-%d 00:00 UTC")
    payload = {"task": attention.task_payload(task), "reason": reason, "until": until}
    attention.record(conn, [attention.row(now, AttentionKind.BUDGET_SPENT, user_email=task.owner,
                                          chat_id=task.chat_id, project_id=task.project_id, task_id=task.id,
                                          payload=payload, notify=attention.pushes(task.notify,
                                                                                  AttentionKind.BUDGET_SPENT))])
    return True
