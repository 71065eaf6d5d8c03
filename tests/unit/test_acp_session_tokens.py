"""A turn's usage from a preset's session totals (codex: no usage over ACP), around the turn."""

from __future__ import annotations

import types

from app.agents.providers.acp_client import TurnSink
from app.agents.providers.acp_turn import _usage
from app.core.ports import Usage


def sink(cost: float | None = None) -> TurnSink:
    s = TurnSink(session_id="s", policy="allow", workspace=None)
    s.cost = cost
    return s


def test_the_turn_is_the_difference_of_the_totals() -> None:
    got = _usage(None, sink(), None, ({"input_tokens": 100, "output_tokens": 10, "cached_tokens": 40},
                                      {"input_tokens": 350, "output_tokens": 35, "cached_tokens": 90}))
    assert got == Usage(input_tokens=250, output_tokens=25, cached_tokens=50)


def test_a_first_turn_has_no_total_before_it() -> None:
    assert _usage(None, sink(), None, (None, {"input_tokens": 7, "output_tokens": 1})) == Usage(7, 1, None)


def test_a_total_that_went_down_started_again_from_zero() -> None:
    assert _usage(None, sink(), None, ({"input_tokens": 900}, {"input_tokens": 50})).input_tokens == 50


def test_a_reported_usage_wins_and_no_totals_means_none() -> None:
    reported = types.SimpleNamespace(input_tokens=3, output_tokens=4, cached_read_tokens=None)
    assert _usage(types.SimpleNamespace(usage=reported), sink(), None,
                  (None, {"input_tokens": 99})) == Usage(3, 4, None)
    assert _usage(None, sink(), None, (None, None)) is None
    assert _usage(None, sink(cost=0.5), None, (None, {"input_tokens": 2})) == Usage(2, None, None, 0.5)
