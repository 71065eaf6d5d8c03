"""A turn's side of its approvals (SPEC §13): ask, read the answer back, and let go at the end.

The prompt service makes one per turn and hands it to the provider in the TurnRequest; the
provider calls it from its own threads (every method here reads or writes the database, so an
event loop calls them through ``asyncio.to_thread``). Nothing is written unless the turn asks.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from app.attention import approvals, hints
from app.core.attention_tables import Approval
from app.core.clock import Clock
from app.core.db import Database, first_line
from app.core.models import Chat, User

log = logging.getLogger("chatcron.approvals")


@dataclasses.dataclass
class TurnApprovals:
    db: Database
    clock: Clock
    timeout_seconds: int
    chat_id: int
    run_id: int
    project_id: int | None = None
    task_id: int | None = None
    owner_id: int | None = None  # the user the turn acts for; None: the chat's owner
    asked: bool = False

    def ask(self, tool_call_id: str, title: str, raw_input: Any, options: list[dict[str, str]]) -> Approval:
        """A pending approval for this tool call (and its ``approval.requested`` event)."""
        owner_id, owner_email = self._owner()
        request = approvals.Request(chat_id=self.chat_id, project_id=self.project_id, run_id=self.run_id,
                                    task_id=self.task_id, requested_for=owner_email, requested_for_id=owner_id,
                                    tool_call_id=tool_call_id, title=title, input=raw_input, options=options)
        self.asked = True
        return approvals.create(self.db, self.clock.now(), request, self.timeout_seconds)

    def settle(self, approval_id: int) -> Approval | None:
        """The approval as it stands now (expired first when its time is up)."""
        return approvals.settle(self.db, self.clock.now(), approval_id)

    def listener(self) -> hints.Listener:
        return hints.listener(self.db)

    def close(self) -> int:
        """The turn ended: its pending approvals are cancelled (how many)."""
        if not self.asked:
            return 0
        try:
            count = approvals.cancel_for_run(self.db, self.clock.now(), self.run_id)
        except Exception as exc:  # the store is down: the approvals expire on their own
            log.warning("action=approvals_cancel_failed run_id=%s error=%s", self.run_id, first_line(exc))
            return 0
        if count:
            hints.notify(self.db)
        return count

    def _owner(self) -> tuple[int | None, str]:
        """The id and email of the user the turn acts for ((None, "") when they are gone)."""
        with self.db.read() as s:
            user_id = self.owner_id
            if user_id is None:
                chat = s.get(Chat, self.chat_id)
                user_id = chat.owner_id if chat is not None else None
            user = s.get(User, user_id) if user_id is not None else None
            return (user.id, user.email) if user is not None else (None, "")
