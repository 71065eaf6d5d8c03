"""A turn's usage so far, measured while the ACP turn runs (SPEC §15: per-fire caps).

The prompt service checks every usage a provider reports during a turn against the fire's caps
(``TurnStream.report_usage``: the turn's usage so far, cumulative; the last report wins). An ACP
agent says little mid-turn, so the turn's thread *measures* it: the same arithmetic as the
turn's final usage (:func:`usage_of`), from what is known at that moment —

- cost: the session's cumulative cost from the agent's last ``usage_update`` minus what it was
  when the turn started;
- tokens: the preset's session totals now (``Preset.session_usage``: Claude Code's transcript,
  Codex's rollout file) minus the totals read just before the prompt was sent.

When: the loop side starts the meter (:class:`MeterStart`, once the session and its baselines
are known), then puts a ``("meter", None)`` item on the turn's queue for every ``usage_update``
and every tool-call update of the session; the drain thread (``acp.AcpProvider._drain``) asks
:meth:`Meter.tick` on every pass. A poke is measured at most every ``MIN_GAP`` seconds, and
without one the meter measures every ``INTERVAL`` seconds (agents that send nothing mid-turn), so
a flood of updates costs at most a few file reads per second. Reading a session file is blocking
I/O: it happens in the turn's thread, never on the event loop. Once the turn's final usage (the
prompt's response, or the totals after the prompt returned) has been delivered the meter is
closed: that one is the final word.

What an agent makes measurable mid-turn (the presets' docstrings have the details): Claude Code
writes each model response to its transcript as it ends (tokens; its cost comes only with the
prompt's end); Codex writes a ``token_count`` per model response to its rollout file (tokens;
no cost). Gemini CLI 0.61.0 sends no ``usage_update`` at all and reports a turn's tokens only in
its prompt response (``_meta.quota``); opencode 1.18.33 sends its one ``usage_update`` (cost)
after the prompt has ended. Their presets have no session reader, so their caps are checked only
at the turn's end (the periodic measurement finds nothing to read).
"""

from __future__ import annotations

import dataclasses
import logging
import time
import types
from collections.abc import Callable, Mapping
from typing import Any

from app.core.ports import Usage

log = logging.getLogger("chatcron.acp")
INTERVAL = 1.0  # seconds between measurements when nothing pokes the meter
MIN_GAP = 0.25  # the shortest time between two measurements, however many pokes come

Totals = Mapping[str, int]


def usage_of(response: Any, cost_now: float | None, baseline: float | None,
             tokens: tuple[Totals | None, Totals | None] = (None, None)) -> Usage | None:
    """A turn's usage: the usage the prompt's ``response`` reported, else the difference of the
    session's token totals (before, now); the cost is the session's cost now minus ``baseline``."""
    reported = getattr(response, "usage", None) or _gemini_quota(response)
    cost = None
    if cost_now is not None:
        cost = round(cost_now - baseline if baseline is not None and cost_now >= baseline else cost_now, 6)
    if reported is None and tokens[1] is not None:
        return token_difference(*tokens, cost)
    if reported is None and cost is None:
        return None
    return Usage(input_tokens=Usage.count(getattr(reported, "input_tokens", None)),
                 output_tokens=Usage.count(getattr(reported, "output_tokens", None)),
                 cached_tokens=Usage.count(getattr(reported, "cached_read_tokens", None)), cost_usd=cost)


def _gemini_quota(response: Any) -> Any:
    """Gemini CLI (0.61.0) puts a turn's tokens in the response's ``_meta.quota.token_count``
    (``input_tokens``: its prompt tokens, cached ones included) instead of ``usage``."""
    meta = getattr(response, "field_meta", None)
    quota = meta.get("quota") if isinstance(meta, dict) else None
    counts = quota.get("token_count") if isinstance(quota, dict) else None
    if not isinstance(counts, dict):
        return None
    return types.SimpleNamespace(input_tokens=counts.get("input_tokens"), output_tokens=counts.get("output_tokens"))


def token_difference(before: Totals | None, after: Totals, cost: float | None) -> Usage:
    """A turn's tokens from the session's totals before and after it (a total that went down
    started again from zero, e.g. in a new process: then the later total is the turn's)."""
    counts = {}
    for key in ("input_tokens", "output_tokens", "cached_tokens"):
        now, then = Usage.count(after.get(key)), Usage.count((before or {}).get(key))
        counts[key] = None if now is None else now - then if then is not None and now >= then else now
    return Usage(**counts, cost_usd=cost)


@dataclasses.dataclass(frozen=True)
class MeterStart:
    """What the loop knows when the prompt goes out: the baselines a turn's usage is measured from."""

    session_id: str
    cost_baseline: float | None  # the session's cumulative cost before the turn (None: never reported)
    tokens_before: Totals | None  # the preset's session totals before the turn
    session_tokens: Callable[[str], Totals | None] | None  # the preset's session_usage (home bound)


class Meter:
    """The turn thread's meter (see the module docstring); ``cost`` reads the session's cumulative
    cost as last reported (the sink's, written on the loop)."""

    def __init__(self, cost: Callable[[], float | None], *, interval: float = INTERVAL, min_gap: float = MIN_GAP,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._cost, self.interval, self.min_gap, self._clock = cost, interval, min_gap, clock
        self._start: MeterStart | None = None
        self._last = 0.0  # when it last measured
        self._poked = False
        self._reported: Usage | None = None
        self.closed = False
        self.reads = 0  # measurements made (a test's view of the rate limit)

    def start(self, start: MeterStart) -> None:
        self._start, self._last = start, self._clock()

    def poke(self) -> None:
        """Something changed (a usage update, a tool call): measure at the next allowed moment."""
        self._poked = True

    def close(self) -> None:
        """The turn's final usage was delivered: nothing measured after it may replace it."""
        self.closed = True

    def due(self) -> bool:
        if self._start is None or self.closed:
            return False
        gap = self._clock() - self._last
        return gap >= self.interval or (self._poked and gap >= self.min_gap)

    def tick(self) -> Usage | None:
        """The usage so far when a measurement is due and it differs from the last one reported."""
        if not self.due():
            return None
        usage = self.measure()
        if usage is None or usage == self._reported:
            return None
        self._reported = usage
        return usage

    def measure(self) -> Usage | None:
        """The turn's usage now (blocking: reads the preset's session file)."""
        start = self._start
        if start is None:
            return None
        self._last, self._poked = self._clock(), False
        self.reads += 1
        now = None
        if start.session_tokens is not None:
            try:
                now = start.session_tokens(start.session_id)
            except (OSError, ValueError) as exc:  # a file half-way through a rewrite: the next read
                log.debug("action=meter_read_failed session=%s error=%s", start.session_id, exc)
        return usage_of(None, self._cost(), start.cost_baseline, (start.tokens_before, now))
