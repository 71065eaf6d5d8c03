"""The chat's read of its project's daily budget and spend today (SPEC §15): one statement, made
when the chat opens and when a turn of it ends — never on the transcript's polls.

Blocking: the chat state calls :func:`chat_budget` through ``asyncio.to_thread``. The access to the
chat (and so to its project) was checked when the chat was opened.
"""

from __future__ import annotations

import sqlalchemy as sa

from app.core.context import get_core
from app.core.models import Project, UsageDay
from app.core.spend import Budget, Spend, utc_day
from app.ui.budget_views import ChatBudget
from app.ui.budget_views import chat_budget as line_of

_DAYS = UsageDay.__table__


def read(project_id: int) -> tuple[Budget, Spend]:
    """The project's daily budget and what it spent today (UTC): fires and people's turns alike."""
    core = get_core()
    today = utc_day(core.clock.now())
    day = (_DAYS.c.day == today, _DAYS.c.project_id == project_id)
    tokens = sa.select(sa.func.sum(_DAYS.c.tokens)).where(*day).scalar_subquery()
    cost = sa.select(sa.func.sum(_DAYS.c.cost_usd)).where(*day).scalar_subquery()
    query = sa.select(Project.daily_token_budget, Project.daily_cost_budget_usd, tokens, cost) \
        .where(Project.id == project_id)
    with core.db.read() as s:
        row = s.exec(query).first()
    if row is None:
        return Budget(), Spend()
    return Budget(row[0], row[1]), Spend(int(row[2] or 0), float(row[3] or 0.0))


def chat_budget(project_id: int | None) -> ChatBudget:
    """The composer's line for a chat of ``project_id`` (nothing for a loose chat or no budget)."""
    if not project_id:
        return ChatBudget()
    budget, spend = read(project_id)
    return line_of(budget, spend, get_core().clock.now())
