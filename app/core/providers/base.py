"""The provider protocol every agent backend implements."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol


class ProviderError(RuntimeError):
    """The agent failed to produce a turn."""


@dataclasses.dataclass(frozen=True)
class TurnRequest:
    """Everything a provider may use for one turn."""

    chat_id: int
    run_id: int
    text: str  # the prompt as the agent sees it (a fire's text is the full envelope)
    workspace: Path | None
    home: Path | None = None  # the project's agent home (the agent's HOME); None for a loose chat
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)  # SCHEDULE_API_* when enabled
    settings: Mapping[str, object] = dataclasses.field(default_factory=dict)  # per-project settings
    session_id: str | None = None
    history: tuple[tuple[str, str], ...] = ()  # (role, text) of earlier turns, oldest first


Emit = Callable[[str], None]


class Provider(Protocol):
    """Streams one turn's reply through ``emit``; raises ProviderError on failure.

    It must return promptly once ``cancel`` is set (timeout or shutdown).
    """

    name: str

    def run(self, request: TurnRequest, emit: Emit, cancel: threading.Event) -> None: ...
