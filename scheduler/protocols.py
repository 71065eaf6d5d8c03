"""What the scheduler needs from the rest of the product, declared here as small protocols.

``scheduler/__main__.py`` (and the web process) plug in adapters built on ``app.core``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Protocol

from sqlmodel import Session

from app.core import envelope
from app.schedules.model import Trigger
from scheduler.decisions import Auth


class ChatBusy(Exception):
    """The chat already has a live turn (a user's prompt, usually)."""


class ChatGone(Exception):
    """The chat of the task no longer exists."""


@dataclasses.dataclass(frozen=True)
class TurnOutcome:
    succeeded: bool
    output: str
    error: str | None


@dataclasses.dataclass(frozen=True)
class Fire:
    """A claim made (``claims``): the turn to start for one occurrence of a task, and what the loop
    and the executor need to start it, record it and report it."""

    task_id: int
    task_run_id: int
    chat_id: int
    owner: str  # email of the task's owner: the turn acts for them
    occurrence_at: dt.datetime
    trigger: Trigger
    fire_number: int
    name: str
    prompt: str
    max_runs: int | None
    fresh_session: bool
    previous_output: str | None = None  # seeds a fresh session: the last fire's reply
    planned_at: dt.datetime | None = None  # when it was to fire (jitter applied); lateness counts from it
    max_tokens: int | None = None  # the task's caps on one fire's spend (SPEC §15)
    max_cost_usd: float | None = None
    payload: str | None = None  # a trigger call's body (SPEC §19): fenced in the text, marked untrusted

    @property
    def text(self) -> str:
        """What the agent receives: the envelope (with a trigger call's payload fenced in it)."""
        return envelope.build(self.name, envelope.with_payload(self.prompt, self.payload), self.fire_number,
                              self.max_runs)


class FireHooks(Protocol):
    """What the loop records around the turns an executor starts for it."""

    def started(self, s: Session, started: list[tuple[Fire, int]]) -> None:
        """Inside the transaction that began the turns: (request, chat run id) of each."""

    def record(self, s: Session, request: Fire, outcome: TurnOutcome) -> None:
        """Inside the transaction that records a turn's end."""

    def finished(self, request: Fire, outcome: TurnOutcome) -> None:
        """After that transaction committed (from the turn's thread)."""


class Executor(Protocol):
    """Starts fired turns through the prompt service, several at once.

    Returns, per request, the chat run id or the exception met: ChatBusy, ChatGone, or another
    error that kept the turn from starting (then no hook is called for it).
    """

    def start_many(self, requests: list[Fire], hooks: FireHooks) -> list[int | Exception]: ...


AuthKey = tuple[int, int, str]  # chat id, project id, owner email


class Directory(Protocol):
    """Fire-time authorization: chat exists, in the task's project, owner registered with access."""

    def check_many(self, keys: list[AuthKey]) -> dict[AuthKey, tuple[Auth, str]]: ...
