"""The ACP turn's meter (SPEC §15): the usage so far is the difference from the turn's baselines,
measured at most every MIN_GAP however many updates poke it, every INTERVAL without one, never
after the turn's final usage; and the provider's drain reports it to the stream as it goes."""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable, Mapping

from acp.connection import StreamDirection, StreamEvent
from acp.schema import PromptResponse

from app.agents.providers.acp import AcpProvider
from app.agents.providers.acp_client import AgentClient, TurnSink
from app.agents.providers.acp_meter import Meter, MeterStart, token_difference, usage_of
from app.agents.providers.acp_turn import TurnControl
from app.core.ports import Usage


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Totals:
    """A preset's session_usage whose totals the test moves; counts its reads."""

    def __init__(self, **totals: int) -> None:
        self.totals: Mapping[str, int] | None = totals or None
        self.reads = 0
        self.fail: Exception | None = None

    def __call__(self, session_id: str) -> Mapping[str, int] | None:
        self.reads += 1
        if self.fail is not None:
            raise self.fail
        return self.totals


def meter(totals: Totals, *, cost: Callable[[], float | None] = lambda: None, baseline: float | None = None,
          before: Mapping[str, int] | None = None) -> tuple[Meter, Clock]:
    clock = Clock()
    m = Meter(cost, interval=1.0, min_gap=0.25, clock=clock)
    m.start(MeterStart("s", baseline, before, totals))
    return m, clock


def test_usage_so_far_is_the_difference_from_the_turns_baselines() -> None:
    totals = Totals(input_tokens=1_500, output_tokens=300, cached_tokens=700)
    m, clock = meter(totals, cost=lambda: 0.75, baseline=0.5,
                     before={"input_tokens": 1_000, "output_tokens": 100, "cached_tokens": 500})
    clock.now += 1.0
    assert m.tick() == Usage(input_tokens=500, output_tokens=200, cached_tokens=200, cost_usd=0.25)
    assert m.tick() is None  # not due again yet


def test_no_baseline_means_the_totals_are_the_turns_and_a_reset_total_starts_from_zero() -> None:
    assert token_difference(None, {"input_tokens": 9}, None) == Usage(9, None, None)
    assert token_difference({"input_tokens": 900}, {"input_tokens": 50}, None).input_tokens == 50
    assert usage_of(None, 2.0, 3.0) == Usage(cost_usd=2.0)  # a cost that went down: a new process's count
    assert usage_of(None, None, None, (None, None)) is None


def test_a_flood_of_pokes_costs_at_most_one_read_per_min_gap() -> None:
    totals = Totals(input_tokens=10)
    m, clock = meter(totals)
    for _ in range(64):  # four seconds of updates, 16 a second (exact in binary: no rounding)
        clock.now += 0.0625
        m.poke()
        m.tick()
    assert totals.reads == 16  # 4 s / 0.25 s


def test_a_poke_is_measured_once_the_gap_has_passed_and_without_one_every_interval() -> None:
    totals = Totals(input_tokens=10)
    m, clock = meter(totals)
    clock.now += 0.1
    m.poke()
    assert m.tick() is None and totals.reads == 0  # too soon after the start
    clock.now += 0.15
    assert m.tick() == Usage(10, None, None) and totals.reads == 1
    clock.now += 0.9
    assert m.tick() is None and totals.reads == 1  # no poke: waits for the interval
    clock.now += 0.1
    assert m.tick() is None and totals.reads == 2  # measured; the same usage is not reported twice
    totals.totals = {"input_tokens": 30}
    clock.now += 1.0
    assert m.tick() == Usage(30, None, None)


def test_nothing_is_measured_before_the_start_or_after_the_final_usage() -> None:
    totals = Totals(input_tokens=10)
    clock = Clock()
    m = Meter(lambda: None, clock=clock)
    m.poke()
    clock.now += 5
    assert m.tick() is None and m.reads == 0
    m.start(MeterStart("s", None, None, totals))
    m.close()
    clock.now += 5
    assert m.tick() is None and totals.reads == 0


def test_a_read_that_fails_leaves_the_cost_and_the_next_read_counts_again() -> None:
    totals = Totals(input_tokens=10)
    totals.fail = OSError("gone for a moment")
    m, clock = meter(totals, cost=lambda: 0.25)
    clock.now += 1
    assert m.tick() == Usage(cost_usd=0.25)
    totals.fail = None
    clock.now += 1
    assert m.tick() == Usage(10, None, None, 0.25)


def test_usage_updates_and_tool_calls_poke_the_meter_of_their_turn_only() -> None:
    client, sink = AgentClient(), TurnSink(session_id="s", policy="allow", workspace=None)
    client.turns["s"] = sink

    def frame(session: str, cost: object) -> StreamEvent:
        return StreamEvent(StreamDirection.INCOMING, {"method": "session/update", "params": {
            "sessionId": session, "update": {"sessionUpdate": "usage_update", "used": None, "size": 1, "cost": cost}}})

    client.observe(frame("s", {"amount": 0.5, "currency": "USD"}))
    client.observe(frame("other", {"amount": 9.0, "currency": "USD"}))
    client.observe(frame("s", {"amount": float("nan"), "currency": "USD"}))
    assert sink.cost == 0.5
    assert [sink.items.get_nowait() for _ in range(sink.items.qsize())] == [("meter", None), ("meter", None)]


class Pool:
    def __init__(self) -> None:
        self.called: list[Callable[[], object]] = []

    def call_soon(self, fn: Callable[[], object]) -> None:
        self.called.append(fn)


class Stream:
    """A TurnStream's report_usage as the prompt service uses it: past the cap, the run's cancel."""

    def __init__(self, cancel: threading.Event, cap: int) -> None:
        self.cancel, self.cap, self.reported = cancel, cap, []

    def report_usage(self, usage: Usage) -> None:
        self.reported.append(usage)
        if (usage.tokens or 0) > self.cap:
            self.cancel.set()


def test_the_drain_reports_the_usage_so_far_cancels_past_a_cap_and_ends_with_the_final_usage() -> None:
    pool, cancel = Pool(), threading.Event()
    provider = AcpProvider.__new__(AcpProvider)
    provider.pool = pool
    control = TurnControl(sink=TurnSink(session_id="s", policy="allow", workspace=None))
    totals = Totals(input_tokens=100, output_tokens=10)
    stream = Stream(cancel, cap=5_000)
    future: concurrent.futures.Future = concurrent.futures.Future()
    sink = control.sink
    sink.put("meter_start", MeterStart("s", None, {"input_tokens": 100, "output_tokens": 10}, totals))

    def agent() -> None:  # the loop's side: two responses, then the final usage and the end
        for total in (3_000, 6_000):
            cancel.wait(0.4)
            totals.totals = {"input_tokens": total + 100, "output_tokens": 10}
            sink.put("meter", None)
        assert cancel.wait(5), "the drain never reported the usage that passed the cap"
        sink.put("usage", Usage(input_tokens=7_000, output_tokens=0))
        future.set_result(None)

    thread = threading.Thread(target=agent)
    thread.start()
    provider._drain(future, control, stream, cancel)  # type: ignore[arg-type]
    thread.join()
    assert [u.tokens for u in stream.reported] == [3_000, 6_000, 7_000]
    assert len(pool.called) == 1  # the cancel went to the loop once


def test_gemini_clis_tokens_come_from_its_responses_meta() -> None:
    response = PromptResponse.model_validate({"stopReason": "end_turn", "_meta": {"quota": {
        "token_count": {"input_tokens": 1_200, "output_tokens": 80}, "model_usage": []}}})
    assert usage_of(response, None, None) == Usage(input_tokens=1_200, output_tokens=80)
    assert usage_of(PromptResponse(stop_reason="end_turn"), None, None) is None
