"""The chat's read of its project's daily budget and spend today (SPEC §15): two indexed reads, made
when the chat opens and when a turn of it ends — never on the transcript's polls.

Blocking: the chat state calls :func:`chat_budget` through ``asyncio.to_thread``. The access to the
chat (and so to its project) was checked when the chat was opened.
"""

from __future__ import annotations

import sqlalchemy as sa

from app.core.context import get_core
from app.core.models import Project
from app.core.spend import Budget, Spend, projects_spent, utc_day
from app.ui.budget_views import ChatBudget
from app.ui.budget_views import chat_budget as line_of


def read(project_id: int) -> tuple[Budget, Spend]:
    """The project's daily budget and what it spent today (UTC): fires and people's turns alike."""
    core = get_core()
    with core.db.read() as s:
        row = s.exec(sa.select(Project.daily_token_budget, Project.daily_cost_budget_usd)
                     .where(Project.id == project_id)).first()
        if row is None or (row[0] is None and row[1] is None):
            return Budget(), Spend()  # no budget: nothing is shown, the ledger is not read
        spent = projects_spent(s.connection(), [project_id], utc_day(core.clock.now()))
    return Budget(row[0], row[1]), spent.get(project_id, Spend())


def chat_budget(project_id: int | None) -> ChatBudget:
    """The composer's line for a chat of ``project_id`` (nothing for a loose chat or no budget)."""
    if not project_id:
        return ChatBudget()
    budget, spend = read(project_id)
    return line_of(budget, spend, get_core().clock.now())
