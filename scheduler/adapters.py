"""Adapters from the scheduler's protocols to ``app.core`` (used by the composition root)."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import select

from app.core.db import Database
from app.core.errors import NotFound, PromptAlreadyRunning
from app.core.models import Chat, RunSource, RunStatus, User
from app.core.projects import has_access
from app.core.prompt import PromptService, RunResult
from scheduler.decisions import Auth
from scheduler.protocols import ChatBusy, ChatGone, FireRequest, TurnOutcome


class PromptExecutor:
    """Starts a fire through the same prompt service as a user's message."""

    def __init__(self, prompts: PromptService) -> None:
        self.prompts = prompts

    def _owner_id(self, email: str) -> int | None:
        with self.prompts.db.read() as s:
            return s.exec(select(User.id).where(User.email == email)).first()

    def start(self, request: FireRequest, on_done: Callable[[TurnOutcome], None]) -> int:
        def finished(result: RunResult) -> None:
            on_done(TurnOutcome(result.status == RunStatus.SUCCEEDED, result.output, result.error))

        text = request.text
        if request.fresh_session and request.previous_output:
            text += f"\n\nOutput of the previous fire:\n{request.previous_output}"
        try:
            handle = self.prompts.start(request.chat_id, text, source=RunSource.SCHEDULE, task_id=request.task_id,
                                        run_id=request.task_run_id, owner_id=self._owner_id(request.owner),
                                        shown_prompt=request.text,
                                        fresh_session=request.fresh_session, on_finish=finished)
        except PromptAlreadyRunning:
            raise ChatBusy() from None
        except NotFound as exc:
            raise ChatGone(str(exc)) from None
        return handle.run_id


class CoreDirectory:
    """Fire-time authorization against the accounts and chats tables."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def check(self, chat_id: int, project_id: int, owner: str) -> tuple[Auth, str]:
        try:
            with self.db.read() as s:
                chat = s.get(Chat, chat_id)
                if chat is None:
                    return Auth.PERMANENT, "the chat no longer exists"
                if chat.project_id != project_id:
                    return Auth.PERMANENT, "the chat no longer belongs to the schedule's project"
                user = s.exec(select(User).where(User.email == owner)).first()
                if user is None:
                    return Auth.PERMANENT, f"the owner {owner} is no longer registered"
                if not has_access(s, user, project_id):
                    return Auth.PERMANENT, f"the owner {owner} no longer has access to the project"
        except SQLAlchemyError as exc:
            return Auth.TRANSIENT, f"could not check access: {type(exc).__name__}"
        return Auth.OK, ""
