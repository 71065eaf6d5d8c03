"""The attention room as the core sees it: ``app.core.ports.ApprovalDesk``, wired in by ``app.wiring``."""

from __future__ import annotations

from app.attention.waiting import TurnApprovals
from app.core.clock import Clock
from app.core.db import Database


class Desk:
    def for_turn(self, db: Database, clock: Clock, timeout_seconds: int, chat_id: int, run_id: int,
                 project_id: int | None, task_id: int | None, owner_id: int | None) -> TurnApprovals:
        return TurnApprovals(db, clock, timeout_seconds, chat_id, run_id, project_id, task_id, owner_id)


DESK = Desk()
