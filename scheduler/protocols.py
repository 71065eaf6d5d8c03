"""What the scheduler needs from the rest of the product, declared here as small protocols.

``scheduler/__main__.py`` (and the web process) plug in adapters built on ``app.core``.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

from sqlmodel import Session

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
class FireRequest:
    task_id: int
    task_run_id: int
    chat_id: int
    owner: str  # email of the task's owner: the turn acts for them
    text: str  # the envelope
    fresh_session: bool
    previous_output: str | None  # seed of a fresh session


class FireHooks(Protocol):
    """What the loop records around the turns an executor starts for it."""

    def started(self, s: Session, started: list[tuple[FireRequest, int]]) -> None:
        """Inside the transaction that began the turns: (request, chat run id) of each."""

    def record(self, s: Session, request: FireRequest, outcome: TurnOutcome) -> None:
        """Inside the transaction that records a turn's end."""

    def finished(self, request: FireRequest, outcome: TurnOutcome) -> None:
        """After that transaction committed (from the turn's thread)."""


class Executor(Protocol):
    """Starts fired turns through the prompt service, several at once.

    Returns, per request, the chat run id or the exception met: ChatBusy, ChatGone, or another
    error that kept the turn from starting (then no hook is called for it).
    """

    def start_many(self, requests: list[FireRequest], hooks: FireHooks) -> list[int | Exception]: ...


AuthKey = tuple[int, int, str]  # chat id, project id, owner email


class Directory(Protocol):
    """Fire-time authorization: chat exists, in the task's project, owner registered with access."""

    def check_many(self, keys: list[AuthKey]) -> dict[AuthKey, tuple[Auth, str]]: ...
