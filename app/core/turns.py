"""What a turn is to its callers: the spec to start one, its handle, its result, its output cap.

The prompt service (``app/core/prompt.py``) starts and drives turns; these are the values it
hands in and out.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import socket
import threading
from collections.abc import Callable

from sqlmodel import Session

from app.core.models import Run, RunSource, RunStatus
from app.core.ports import Usage


def instance_id() -> str:
    """Identifies this process in run rows and logs: host:pid:nonce."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


@dataclasses.dataclass(frozen=True)
class RunResult:
    run_id: int
    status: RunStatus
    output: str
    error: str | None
    usage: dict | None = None  # runs.usage as recorded (SPEC §11)
    session_id: str | None = None  # the agent session the turn ran in, when the provider reported one


@dataclasses.dataclass(frozen=True)
class FireCaps:
    """What one fire may spend (SPEC §15: a task's ``max_tokens_per_fire`` / ``max_cost_per_fire_usd``);
    None: no cap on that count."""

    max_tokens: int | None = None
    max_cost_usd: float | None = None

    def passed_by(self, usage: Usage) -> str | None:
        """The run's error when ``usage`` (the turn's so far) passes a cap, else None."""
        tokens = usage.tokens
        if self.max_tokens is not None and tokens is not None and tokens > self.max_tokens:
            return f"budget exceeded: {tokens:,} tokens, over this task's cap of {self.max_tokens:,} per fire"
        cost = usage.cost_usd
        if self.max_cost_usd is not None and cost is not None and cost > self.max_cost_usd:
            return f"budget exceeded: ${cost:,.4f}, over this task's cap of ${self.max_cost_usd:,.4f} per fire"
        return None


@dataclasses.dataclass
class TurnSpec:
    """A turn to start. ``task_run_id`` is the scheduler's claim (TaskRun id) for a fire; ``shown_prompt``
    is what the transcript shows when it differs from what the agent receives; ``owner_id`` is the
    user the turn acts for (default: the chat's owner); ``fresh_session`` starts a new provider
    session. When the turn ends, ``record_finish(session, result)`` runs inside the transaction
    that records the end, then ``on_finish(result)`` runs after it committed (the run's thread).
    ``record_finish`` must only write through its session: when a group commit is retried it may
    run more than once, and only one of those runs commits."""

    chat_id: int
    text: str
    source: RunSource = RunSource.USER
    task_id: int | None = None
    task_run_id: int | None = None
    owner_id: int | None = None
    shown_prompt: str | None = None
    fresh_session: bool = False
    caps: FireCaps | None = None  # a fire's spending caps, checked on every usage the agent reports
    on_finish: Callable[[RunResult], None] | None = None
    record_finish: Callable[[Session, RunResult], None] | None = None


Started = Callable[[Session, list[tuple[TurnSpec, Run]]], None]  # runs in the transaction that begins turns


class OutputCap:
    """CHATCRON_RUN_OUTPUT_MAX_BYTES for one run: text past the cap is dropped, the cut noted once,
    so a flooding agent costs bounded memory and storage."""

    def __init__(self, cap: int) -> None:
        self.cap, self.left = cap, cap  # left: bytes still allowed; -1 once the cut has been noted

    def clip(self, text: str) -> str:
        if self.left < 0 or not text:
            return ""
        data = text.encode("utf-8", "replace")
        if len(data) > self.left:
            text = data[:self.left].decode("utf-8", "ignore") + f"\n[output truncated at {self.cap} bytes]"
            self.left = -1
        else:
            self.left -= len(data)
        return text


class RunHandle:
    """A started turn; ``wait`` blocks until it has finished and returns its result."""

    def __init__(self, run: Run, spec: TurnSpec | None = None, cap: int = 1 << 20) -> None:
        self.run_id: int = run.id
        self.chat_id: int = run.chat_id
        self._done = threading.Event()
        self._result: RunResult | None = None
        self.cancel = threading.Event()
        self.stopped_by: str | None = None  # a user's stop request (their email), see app/core/stops.py
        self.caps = spec.caps if spec else None
        self.over_budget: str | None = None  # the error once the usage passed a cap (the turn is cancelled)
        self.project_id: int | None = None  # whose spend the turn is (the usage ledger, SPEC §15)
        self.task_id = spec.task_id if spec else None
        self.on_finish = spec.on_finish if spec else None
        self.record_finish = spec.record_finish if spec else None
        self.grant_id: int | None = None
        self.fresh_session = spec.fresh_session if spec else False
        self.usage: Usage | None = None  # what the provider reported, recorded when the run ends
        self.session_id: str | None = None
        self.cap = OutputCap(cap)

    def metered(self, usage: Usage) -> None:
        """A usage the agent reported during the turn: past a cap, the turn is cancelled (once)."""
        if self.caps is None or self.over_budget is not None:
            return
        error = self.caps.passed_by(usage)
        if error is not None:
            self.over_budget = error
            self.cancel.set()

    def _set(self, result: RunResult) -> None:
        self._result = result
        self._done.set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> RunResult | None:
        self._done.wait(timeout)
        return self._result
