"""Adapters from the scheduler's protocols to ``app.core`` (used by the composition root)."""

from __future__ import annotations

import sqlalchemy as sa
from sqlmodel import Session, select

from app.core.db import STORE_FAILURES, Database
from app.core.errors import NotFound, PromptAlreadyRunning
from app.core.models import Chat, Run, RunSource, RunStatus, User
from app.core.projects import has_access
from app.core.prompt import PromptService
from app.core.turns import FireCaps, RunResult, TurnSpec
from app.schedules.model import TaskRun
from scheduler.decisions import Auth
from scheduler.protocols import AuthKey, ChatBusy, ChatGone, Fire, FireHooks, TurnOutcome


class PromptExecutor:
    """Starts fires through the same prompt service as a user's message."""

    def __init__(self, prompts: PromptService) -> None:
        self.prompts = prompts

    def _owner_ids(self, emails: set[str]) -> dict[str, int]:
        with self.prompts.db.read() as s:
            return {email: uid for uid, email in s.exec(select(User.id, User.email).where(User.email.in_(emails)))}

    def start_many(self, requests: list[Fire], hooks: FireHooks) -> list[int | Exception]:
        owners = self._owner_ids({request.owner for request in requests})
        by_run: dict[int, Fire] = {}  # task_run_id → request

        def started(s: Session, pairs: list[tuple[TurnSpec, Run]]) -> None:
            hooks.started(s, [(by_run[spec.task_run_id], run.id) for spec, run in pairs])

        specs = []
        for request in requests:
            by_run[request.task_run_id] = request
            text = request.text
            if request.fresh_session and request.previous_output:
                text += f"\n\nOutput of the previous fire:\n{request.previous_output}"
            specs.append(TurnSpec(request.chat_id, text, RunSource.SCHEDULE, task_id=request.task_id,
                                  task_run_id=request.task_run_id, owner_id=owners.get(request.owner),
                                  shown_prompt=request.text, fresh_session=request.fresh_session,
                                  caps=FireCaps(request.max_tokens, request.max_cost_usd)
                                  if request.max_tokens is not None or request.max_cost_usd is not None else None,
                                  on_finish=_after(hooks, request), record_finish=_record(hooks, request)))
        results: list[int | Exception] = []
        for outcome in self.prompts.start_many(specs, started):
            if isinstance(outcome, PromptAlreadyRunning):
                results.append(ChatBusy())
            elif isinstance(outcome, NotFound):
                results.append(ChatGone(str(outcome)))
            elif isinstance(outcome, Exception):
                results.append(outcome)
            else:
                results.append(outcome.run_id)
        return results


def _outcome(result: RunResult) -> TurnOutcome:
    return TurnOutcome(result.status == RunStatus.SUCCEEDED, result.output, result.error)


_TASK_RUNS = TaskRun.__table__
_SESSION = _TASK_RUNS.update().where(_TASK_RUNS.c.id == sa.bindparam("b_id")).values(
    provider_session_id=sa.bindparam("b_session"))


def _record(hooks: FireHooks, request: Fire):  # a TurnSpec.record_finish
    def record(s: Session, result: RunResult) -> None:
        hooks.record(s, request, _outcome(result))
        if request.fresh_session and result.session_id:  # a fresh fire's session is its own (SPEC §11)
            s.connection().execute(_SESSION, {"b_id": request.task_run_id, "b_session": result.session_id})

    return record


def _after(hooks: FireHooks, request: Fire):  # a TurnSpec.on_finish
    return lambda result: hooks.finished(request, _outcome(result))


class CoreDirectory:
    """Fire-time authorization against the accounts and chats tables."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def check_many(self, keys: list[AuthKey]) -> dict[AuthKey, tuple[Auth, str]]:
        try:
            with self.db.read() as s:
                chats = {c.id: c for c in s.exec(select(Chat).where(Chat.id.in_({k[0] for k in keys})))}
                users = {u.email: u for u in s.exec(select(User).where(User.email.in_({k[2] for k in keys})))}
                access: dict[tuple[str, int], bool] = {}
                verdicts = {}
                for chat_id, project_id, owner in keys:
                    user = users.get(owner)
                    if user is not None and (owner, project_id) not in access:
                        access[(owner, project_id)] = has_access(s, user, project_id)
                    verdicts[(chat_id, project_id, owner)] = _verdict(chats.get(chat_id), project_id, owner, user,
                                                                     access.get((owner, project_id), False))
                return verdicts
        except STORE_FAILURES as exc:
            return {key: (Auth.TRANSIENT, f"could not check access: {type(exc).__name__}") for key in keys}


def _verdict(chat: Chat | None, project_id: int, owner: str, user: User | None, allowed: bool) -> tuple[Auth, str]:
    if chat is None:
        return Auth.PERMANENT, "the chat no longer exists"
    if chat.project_id != project_id:
        return Auth.PERMANENT, "the chat no longer belongs to the schedule's project"
    if user is None:
        return Auth.PERMANENT, f"the owner {owner} is no longer registered"
    if not allowed:
        return Auth.PERMANENT, f"the owner {owner} no longer has access to the project"
    return Auth.OK, ""
