"""The core's ports: what it needs from the rooms above it, declared here, wired in by the
composition roots (docs/ARCHITECTURE.md "Rooms").

- ``Provider`` (and its records): one agent turn; ``app/agents/providers`` implements it.
- ``AgentSide``: the rest of what the core asks of the agents' room — prepare the data dir,
  make the per-project provider factory, create and hand over a project's workspace.
- ``ApprovalDesk``: where a turn asks a person (SPEC §13); ``app/attention`` implements it.

``install`` is called once per process by ``app.wiring.install`` (the web app, the scheduler, the
CLI, the tests); the core reads the installed ports through ``agents()`` and ``desk()``.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from app.core.clock import Clock
from app.core.config import Settings
from app.core.db import Database
from app.core.models import EventType, Project


class ProviderError(RuntimeError):
    """The agent failed to produce a turn."""


class AgentStartError(ProviderError):
    """The agent could not be started — its sandbox, its program, its settings, its ACP handshake.

    The message is the administrator's detail (paths, commands, how to fix it): the prompt service
    logs it and tells the project's owner (``app.core.agent_starts``); the turn's visible error is
    only :class:`app.core.errors.AgentUnavailable`'s sentence.
    """


APPROVAL_RECHECK_SECONDS = 1.0  # the longest a turn waiting on an approval goes without re-reading it


class Approvals(Protocol):
    """Where a turn asks a person (SPEC §13): app/attention/waiting.py. Every method reads or
    writes the database (an event loop calls them through a thread)."""

    timeout_seconds: int

    def ask(self, tool_call_id: str, title: str, raw_input: Any, options: list[dict[str, str]]) -> Any: ...

    def settle(self, approval_id: int) -> Any: ...  # the Approval row, expired first when due

    def listener(self) -> Any: ...  # app.attention.hints.Listener (subscribe / unsubscribe)

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

    @property
    def tokens(self) -> int | None:
        """The tokens a budget counts (SPEC §15): input + output as the agent reported them
        (cached tokens count as far as the agent includes them in its input); None: nothing known."""
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)

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
    records in the transaction that ends the run (even a failed one). ``report_usage`` may be called
    any number of times during the turn, each time with the turn's usage so far (cumulative: the last
    one wins); the prompt service checks each against the fire's caps (SPEC §15, ``on_usage``).
    """

    def __init__(self, text: Emit, thought: Emit | None = None,
                 event: Callable[[EventType, str], None] | None = None,
                 on_usage: Callable[[Usage], None] | None = None) -> None:
        self._text, self._thought, self._event, self._on_usage = text, thought, event, on_usage
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
        if self._on_usage is not None:
            self._on_usage(usage)

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


ProviderFactory = Callable[[Project | None], Provider]


class AgentSide(Protocol):
    """What the core asks of the agents' room besides turns (``app.agents.side``)."""

    def prepare(self, settings: Settings) -> None:
        """Before the database opens: the data dir's modes and the sandbox's log line."""

    def providers(self, settings: Settings) -> ProviderFactory:
        """The provider of a project's turns (or of a loose chat's, for None)."""

    def new_project(self, workspaces: Path, project_id: int) -> None:
        """A new project's workspace, with the agent assets published in it."""

    def workspace(self, settings: Settings, project_id: int, *, tools: bool) -> tuple[Path, list[str]]:
        """A project's workspace handed over to the agent, for one turn; with ``tools`` its assets
        are checked (the paths rewritten are returned)."""

    def skill_text(self) -> str:
        """The skill text appended to a scheduled turn's prompt."""


class ApprovalDesk(Protocol):
    """Where the core's turns ask a person (``app.attention.desk``)."""

    def for_turn(self, db: Database, clock: Clock, timeout_seconds: int, chat_id: int, run_id: int,
                 project_id: int | None, task_id: int | None, owner_id: int | None) -> Approvals: ...


_INSTALLED: dict[str, Any] = {}


def install(agents: AgentSide, desk: ApprovalDesk) -> None:
    """Plug the rooms' implementations into the core (idempotent; composition roots only)."""
    _INSTALLED.update(agents=agents, desk=desk)


def _installed(name: str) -> Any:
    try:
        return _INSTALLED[name]
    except KeyError:
        raise RuntimeError("the core's ports are not wired: call app.wiring.install() in the process's "
                           "composition root") from None


def agents() -> AgentSide:
    return _installed("agents")


def desk() -> ApprovalDesk:
    return _installed("desk")
