""""Test the agent" (SPEC §18): a one-line turn in the project's scratch chat, through the
project's agent as configured now, so an owner sees at once whether the agent answers."""

from __future__ import annotations

import dataclasses

from sqlmodel import select

from app.core import chats
from app.core.context import Core
from app.core.models import Chat, User
from app.projects.roles import require_owner

SCRATCH_TITLE = "Agent test"
PROMPT = "This is a test of the connection: answer with one short line."


@dataclasses.dataclass(frozen=True)
class Started:
    chat_id: int
    run_id: int

    def as_json(self) -> dict[str, int]:
        return {"chat_id": self.chat_id, "run_id": self.run_id}


def test_agent(core: Core, user: User, project_id: int) -> Started:
    """Start the test turn (owners); the caller follows the run (``GET /api/runs/{id}``). The
    scratch chat is the caller's chat titled "Agent test" in the project, made once and reused."""
    with core.db.read() as s:
        require_owner(s, user, project_id)
        chat_id = s.exec(select(Chat.id).where(Chat.project_id == project_id, Chat.owner_id == user.id,
                                               Chat.title == SCRATCH_TITLE).order_by(Chat.id)).first()
    if chat_id is None:
        chat_id = chats.create_chat(core.db, core.clock, user, project_id, SCRATCH_TITLE).id
    handle = core.prompts.start(chat_id, PROMPT, owner_id=user.id)
    return Started(chat_id, handle.run_id)
