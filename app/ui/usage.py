"""A run's usage as one line ("1,234 in · 567 out · 89 cached · $0.0123"), read from ``runs.usage``.

``runs.usage`` is JSON ``{input_tokens, output_tokens, cached_tokens, cost_usd}`` with the keys the
agent reported (SPEC §11). Only the known parts are shown; a run without usage shows nothing.
The chat page looks it up when it reads a run's ``run_finished`` (:func:`for_events`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Collection, Iterable
from typing import Any

import sqlalchemy as sa

from app.core.db import Database
from app.core.models import Event, EventType, Run

_TOKENS = (("input_tokens", "in"), ("output_tokens", "out"), ("cached_tokens", "cached"))


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    return int(value)


def cost_text(cost: float) -> str:
    """Dollars: four decimals below a dollar (agent turns often cost cents), two from there."""
    return f"${cost:.4f}" if cost < 1 else f"${cost:,.2f}"


def usage_line(raw: str | None) -> str:
    """The line for a ``runs.usage`` value; "" when absent, unreadable or empty."""
    try:
        usage = json.loads(raw) if raw else None
    except (ValueError, RecursionError):
        return ""
    if not isinstance(usage, dict):
        return ""
    parts = [f"{count:,} {label}" for key, label in _TOKENS if (count := _count(usage.get(key))) is not None]
    cost = usage.get("cost_usd")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0:
        parts.append(cost_text(float(cost)))
    return " · ".join(parts)


def usage_lines(db: Database, run_ids: Collection[int]) -> dict[int, str]:
    """Run id → usage line, for the runs among ``run_ids`` that have one (one query)."""
    ids = sorted(set(run_ids))
    if not ids:
        return {}
    with db.read() as s:
        rows = s.exec(sa.select(Run.id, Run.usage).where(Run.id.in_(ids), Run.usage.is_not(None))).all()
    lines = {run_id: usage_line(raw) for run_id, raw in rows}
    return {run_id: line for run_id, line in lines.items() if line}


async def for_events(db: Database, events: Iterable[Event]) -> dict[int, str]:
    """Usage lines of the runs that finish among ``events`` (no query when none does)."""
    ids = [event.run_id for event in events
           if event.type == EventType.RUN_FINISHED.value and event.run_id is not None]
    return await asyncio.to_thread(usage_lines, db, ids) if ids else {}
