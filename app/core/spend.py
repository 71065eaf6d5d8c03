"""What turns spend (SPEC §15): the usage ledger and the reads of it.

Every turn that reports usage adds it to ``usage_days`` — by UTC day, project and task — in the
transaction that ends the turn, so a day's spend is one indexed read, and it outlives a chat or a
run deleted later (deleting a chat never gives a budget back). A turn's spend counts on the UTC day
it ended. Tokens are ``Usage.tokens`` (input + output as the agent reported them); a turn that
reported no tokens, or no cost, adds nothing to that count.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session

from app.core.clock import UTC
from app.core.errors import InvalidInput
from app.core.models import UsageDay
from app.core.ports import Usage

_DAYS = UsageDay.__table__


@dataclasses.dataclass(frozen=True)
class Spend:
    """Tokens and dollars spent (0 when nothing was reported)."""

    tokens: int = 0
    cost_usd: float = 0.0

    def as_json(self) -> dict[str, object]:
        return {"tokens": self.tokens, "cost_usd": round(self.cost_usd, 6)}


def utc_day(now: dt.datetime) -> dt.date:
    return now.astimezone(UTC).date()


def next_utc_day(now: dt.datetime) -> dt.datetime:
    """The next UTC midnight after ``now``: when a spent daily budget is whole again."""
    day = utc_day(now) + dt.timedelta(days=1)
    return dt.datetime(day.year, day.month, day.day, tzinfo=UTC)


def add_spend_in(s: Session, now: dt.datetime, project_id: int | None, task_id: int | None,
                 usage: Usage | None) -> None:
    """Inside the transaction that ends a turn: add its usage to the ledger (nothing if none)."""
    if usage is None or (usage.tokens is None and usage.cost_usd is None):
        return
    conn = s.connection()
    tokens, cost = usage.tokens or 0, max(0.0, usage.cost_usd or 0.0)
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    stmt = dialect.insert(_DAYS).values(day=utc_day(now), project_id=project_id or 0, task_id=task_id or 0,
                                        tokens=tokens, cost_usd=cost, turns=1)
    stmt = stmt.on_conflict_do_update(
        index_elements=["day", "project_id", "task_id"],
        set_={"tokens": _DAYS.c.tokens + tokens, "cost_usd": _DAYS.c.cost_usd + cost, "turns": _DAYS.c.turns + 1})
    conn.execute(stmt)


def projects_spent(conn: sa.Connection, project_ids: Iterable[int], day: dt.date) -> dict[int, Spend]:
    """Each project's spend on ``day`` (fires and people's turns alike); absent: nothing spent."""
    ids = sorted(set(project_ids))
    if not ids:
        return {}
    rows = conn.execute(sa.select(_DAYS.c.project_id, sa.func.sum(_DAYS.c.tokens), sa.func.sum(_DAYS.c.cost_usd))
                        .where(_DAYS.c.day == day, _DAYS.c.project_id.in_(ids)).group_by(_DAYS.c.project_id))
    return {pid: Spend(int(tokens or 0), float(cost or 0.0)) for pid, tokens, cost in rows}


def tasks_spent(conn: sa.Connection, task_ids: Iterable[int], day: dt.date) -> dict[int, tuple[Spend, Spend]]:
    """Each task's fires' spend: (on ``day``, in total); a task with none gets zeros."""
    ids = sorted(set(task_ids) - {0})
    if not ids:
        return {}
    today = sa.func.sum(sa.case((_DAYS.c.day == day, _DAYS.c.tokens), else_=0))
    today_cost = sa.func.sum(sa.case((_DAYS.c.day == day, _DAYS.c.cost_usd), else_=0.0))
    rows = conn.execute(sa.select(_DAYS.c.task_id, today, today_cost, sa.func.sum(_DAYS.c.tokens),
                                  sa.func.sum(_DAYS.c.cost_usd))
                        .where(_DAYS.c.task_id.in_(ids)).group_by(_DAYS.c.task_id))
    found = {tid: (Spend(int(t or 0), float(c or 0.0)), Spend(int(tt or 0), float(tc or 0.0)))
             for tid, t, c, tt, tc in rows}
    return {tid: found.get(tid, (Spend(), Spend())) for tid in ids}


def project_spent_by_task(conn: sa.Connection, project_id: int, day: dt.date) -> dict[int, tuple[Spend, Spend]]:
    """The project's spend by task (0: people's turns): (on ``day``, in ``day``'s UTC month)."""
    month = day.replace(day=1)
    today = sa.func.sum(sa.case((_DAYS.c.day == day, _DAYS.c.tokens), else_=0))
    today_cost = sa.func.sum(sa.case((_DAYS.c.day == day, _DAYS.c.cost_usd), else_=0.0))
    rows = conn.execute(sa.select(_DAYS.c.task_id, today, today_cost, sa.func.sum(_DAYS.c.tokens),
                                  sa.func.sum(_DAYS.c.cost_usd))
                        .where(_DAYS.c.project_id == project_id, _DAYS.c.day >= month, _DAYS.c.day <= day)
                        .group_by(_DAYS.c.task_id))
    return {tid: (Spend(int(t or 0), float(c or 0.0)), Spend(int(mt or 0), float(mc or 0.0)))
            for tid, t, c, mt, mc in rows}


@dataclasses.dataclass(frozen=True)
class Budget:
    """A project's daily budget (None: no limit on that count)."""

    tokens: int | None = None
    cost_usd: float | None = None

    @property
    def any(self) -> bool:
        return self.tokens is not None or self.cost_usd is not None

    def spent_by(self, spend: Spend) -> str | None:
        """Why ``spend`` has used this budget up (the deferred record's reason), else None."""
        if self.tokens is not None and spend.tokens >= self.tokens:
            return f"project budget spent: {spend.tokens:,} of {self.tokens:,} tokens today (UTC)"
        if self.cost_usd is not None and spend.cost_usd >= self.cost_usd:
            return f"project budget spent: ${spend.cost_usd:,.2f} of ${self.cost_usd:,.2f} today (UTC)"
        return None


MAX_TOKENS = 10**12  # a trillion tokens: beyond any real day, and far inside a 64-bit column
MAX_USD = 1_000_000.0


def tokens_value(value: object, field: str) -> int | None:
    """A token cap or budget as stored: a whole number from 1 to 10^12, or None (no limit)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TOKENS:
        raise InvalidInput(field, f"must be a whole number of tokens from 1 to {MAX_TOKENS:,} (null: no limit)")
    return value


def usd_value(value: object, field: str) -> float | None:
    """A dollar cap or budget as stored: a finite amount above 0 and at most 1,000,000, or None."""
    if value is None:
        return None
    # the range first: NaN and infinities fail it, and a huge integer is compared exactly (no overflow)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= MAX_USD \
            or not math.isfinite(value):
        raise InvalidInput(field, f"must be an amount in US dollars above 0 and at most {MAX_USD:,.0f} "
                                  "(null: no limit)")
    return float(value)
