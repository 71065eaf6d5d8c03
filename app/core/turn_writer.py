"""A turn's writes to the event log: what the prompt service hands a provider as its ``emit``.

Assistant text and thoughts go through their own :class:`Batcher`; switching from one to the
other, or writing a discrete event (tool, plan, status), first flushes what is buffered, so the
log keeps the order the agent produced. Text counts against the run's output cap and goes to
``Run.output``; thoughts and events count against a cap of the same size of their own.
"""

from __future__ import annotations

import threading

from app.core.batching import Batcher
from app.core.clock import Clock
from app.core.db import Database
from app.core.models import EventType, Run
from app.core.ports import ProviderError, TurnStream
from app.core.runs import append_event, append_output
from app.core.turns import OutputCap, RunHandle


class TurnWriter:
    """Thread-safe; raises ProviderError from a write once the run has been ended elsewhere
    (after setting the run's cancel), as the plain text ``emit`` always did."""

    def __init__(self, db: Database, clock: Clock, run: Run, handle: RunHandle) -> None:
        self.db, self.clock, self.run, self.handle = db, clock, run, handle
        self._side_cap = OutputCap(handle.cap.cap)
        self._lock = threading.Lock()  # one writer at a time keeps the order across the two batchers
        self.text = Batcher(self._write_text)
        self.thoughts = Batcher(self._write_thought)
        self.stream = TurnStream(self._on_text, self._on_thought, self._on_event, on_usage=handle.metered)

    def _write_text(self, text: str) -> bool:
        clipped = self.handle.cap.clip(text)
        return append_output(self.db, self.clock, self.run, clipped) if clipped else True

    def _write_thought(self, text: str) -> bool:
        clipped = self._side_cap.clip(text)
        return append_event(self.db, self.clock, self.run, EventType.THOUGHT, clipped) if clipped else True

    def _check(self) -> None:
        if self.text.ended or self.thoughts.ended:
            self.handle.cancel.set()  # someone else ended this run (abandoned it)
            raise ProviderError("the run was ended elsewhere")

    def _on_text(self, chunk: str) -> None:
        with self._lock:
            self.thoughts.flush()
            self.text.add(chunk)
        self._check()

    def _on_thought(self, chunk: str) -> None:
        with self._lock:
            self.text.flush()
            self.thoughts.add(chunk)
        self._check()

    def _on_event(self, kind: EventType, text: str) -> None:
        with self._lock:
            self.text.flush()
            self.thoughts.flush()
            if self.text.ended or self.thoughts.ended:
                ok = False
            else:  # a tool's JSON is kept whole (it is bounded by the provider), never cut mid-object
                ok = append_event(self.db, self.clock, self.run, kind, text)
        if not ok:
            self.thoughts.ended = True
        self._check()

    def take(self) -> str:
        """End batching: buffered thoughts are written now, buffered text is returned (the end
        transaction writes it)."""
        with self._lock:
            self.thoughts.flush()
            self.thoughts.take()
            return self.text.take()
