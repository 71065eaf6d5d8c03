"""What the scheduler needs from the rest of the product, declared here as small protocols.

``scheduler/__main__.py`` (and the web process) plug in adapters built on ``app.core``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Protocol

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


class Executor(Protocol):
    """Starts a fired turn through the prompt service; returns the chat run id.

    Raises ChatBusy or ChatGone; calls ``on_done`` from another thread when the turn ends.
    """

    def start(self, request: FireRequest, on_done: Callable[[TurnOutcome], None]) -> int: ...


class Directory(Protocol):
    """Fire-time authorization: chat exists, in the task's project, owner registered with access."""

    def check(self, chat_id: int, project_id: int, owner: str) -> tuple[Auth, str]: ...


class Waker(Protocol):
    """Cross-process wake-up hint for the loop; carries no data (the database is the truth)."""

    def notify(self) -> None: ...


class NullWaker:
    def notify(self) -> None:
        return None
