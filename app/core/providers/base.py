"""The provider protocol every agent backend implements."""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from app.core.models import EventType


class ProviderError(RuntimeError):
    """The agent failed to produce a turn."""


class Approvals(Protocol):
    """Where a turn asks a person (SPEC §13): app/core/attention/waiting.py. Every method reads or
    writes the database (an event loop calls them through a thread)."""

    timeout_seconds: int

    def ask(self, tool_call_id: str, title: str, raw_input: Any, options: list[dict[str, str]]) -> Any: ...

    def settle(self, approval_id: int) -> Any: ...  # the Approval row, expired first when due

    def listener(self) -> Any: ...  # app.core.attention.hints.Listener

    def close(self) -> int: ...  # the turn ended: its pending approvals are cancelled


@dataclasses.dataclass(frozen=True)
class TurnRequest:
    """Everything a provider may use for one turn."""

    chat_id: int
    run_id: int
    text: str  # the prompt as the agent sees it (a fire's text is the full envelope)
    workspace: Path | None
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)  # SCHEDULE_API_* when enabled
    settings: Mapping[str, object] = dataclasses.field(default_factory=dict)  # per-project settings
    session_id: str | None = None  # the session to continue (the chat's; None for a fresh one)
    history: tuple[tuple[str, str], ...] = ()  # (role, text) of earlier turns, oldest first
    project_id: int | None = None
    previous_run_id: int | None = None  # the chat's latest turn before this one: is a warm session in step?
    fresh_session: bool = False  # a `session: fresh` fire: its session is its own, never the chat's
    approvals: Approvals | None = None  # tool_policy=ask: where the turn asks a person (SPEC §13)


@dataclasses.dataclass(frozen=True)
class Usage:
    """What a turn cost, as the agent reported it (a field is None when it did not say)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None

    def as_json(self) -> dict[str, Any] | None:
        """The ``runs.usage`` object: the known keys only; None when nothing is known."""
        data = {key: value for key, value in dataclasses.asdict(self).items() if value is not None}
        return data or None

    @staticmethod
    def count(value: object) -> int | None:
        """A token count from an agent's JSON: a whole number >= 0, else None."""
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            return None
        return int(value)


Emit = Callable[[str], None]


class TurnStream:
    """What a provider reports during a turn; the prompt service hands one in as ``emit``.

    Calling it streams assistant text (the ``Emit`` of simple providers); ``thought`` streams the
    agent's reasoning; ``event`` writes a ``tool``, ``plan`` or ``status`` event at once, in order
    with the text around it; ``report_usage`` and ``report_session`` leave what the prompt service
    records in the transaction that ends the run (even a failed one).
    """

    def __init__(self, text: Emit, thought: Emit | None = None,
                 event: Callable[[EventType, str], None] | None = None) -> None:
        self._text, self._thought, self._event = text, thought, event
        self.usage: Usage | None = None
        self.session_id: str | None = None

    def __call__(self, text: str) -> None:
        self._text(text)

    def thought(self, text: str) -> None:
        if self._thought is not None:
            self._thought(text)

    def event(self, kind: EventType, text: str) -> None:
        if self._event is not None:
            self._event(kind, text)

    def report_usage(self, usage: Usage) -> None:
        self.usage = usage

    def report_session(self, session_id: str) -> None:
        self.session_id = session_id


def stream_of(emit: Emit) -> TurnStream:
    """``emit`` as a TurnStream: itself when it is one; else one that keeps only the text."""
    return emit if isinstance(emit, TurnStream) else TurnStream(emit)


class Provider(Protocol):
    """Streams one turn's reply through ``emit``; raises ProviderError on failure.

    It must return promptly once ``cancel`` is set (timeout or shutdown).
    """

    name: str

    def run(self, request: TurnRequest, emit: Emit, cancel: threading.Event) -> None: ...
