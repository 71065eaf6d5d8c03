"""A fire's token cap cuts a real Claude Code turn short, mid-turn (SPEC §15), offline.

The ACP adapter for Claude Code reports usage only when the prompt ends, so the provider measures
the turn's usage so far from Claude Code's session transcript (the claude preset's
``session_usage``) on every tool-call update and every second (``acp_meter``). The scripted
Anthropic server plays a turn of tool calls, each model response reporting 4,000 tokens
(3,000 in, 1,000 out, plus cache reads a budget does not count); the third one passes a
10,000-token cap, so the turn is cancelled before the model serves more than one further
response. On SQLite: the store does not matter here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from app.core.config import Settings
from app.core.models import RunStatus
from app.core.turns import FireCaps, RunResult
from tests.agents.anthropic_server import AnthropicServer, Reply, bash, costing, text
from tests.agents.rig import AgentRig, build_rig, capped_turn

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)]

WAIT = 180.0
CAP = 10_000
IN, OUT, CACHED = 3_000, 1_000, 5_000  # per response: 4,000 tokens a budget counts
THINK = 1.0  # seconds each response takes: the cancel lands while the next one is on its way
CROSSING = CAP // (IN + OUT) + 1  # the response whose usage passes the cap (the 3rd)


@pytest.fixture
def model() -> Iterator[AnthropicServer]:
    server = AnthropicServer()
    yield server
    server.close()


@pytest.fixture
def rig(settings: Settings, model: AnthropicServer) -> Iterator[AgentRig]:
    r = build_rig(settings, model, skill=False, agent_cancel_grace_seconds=5.0)
    yield r
    r.close()


def response(reply: Reply) -> Reply:
    return costing(reply, IN, OUT, CACHED, delay=THINK)


def capped(rig: AgentRig, prompt: str, caps: FireCaps | None) -> RunResult:
    return capped_turn(rig.core, rig.chat, prompt, caps, WAIT)


def test_a_turn_past_its_token_cap_is_cancelled_within_one_response(rig: AgentRig, model: AnthropicServer) -> None:
    steps = [response(bash(f"echo step {i}", f"Step {i}.")) for i in range(1, 7)]
    model.play(*steps, response(text("All steps done.")))
    result = capped(rig, "Run the steps.", FireCaps(max_tokens=CAP, max_cost_usd=None))

    assert result.status == RunStatus.FAILED, result
    assert result.error and result.error.startswith("budget exceeded"), result.error
    assert CROSSING <= model.served <= CROSSING + 1, f"{model.served} responses served; the cap passed at {CROSSING}"
    recorded = json.loads(rig.run_row(result.run_id).usage)
    assert recorded == result.usage
    assert recorded["input_tokens"] + recorded["output_tokens"] >= CAP, recorded
    assert recorded["input_tokens"] % IN == 0 and recorded["cached_tokens"] == CACHED * recorded["input_tokens"] // IN


def test_the_cap_counts_this_turns_tokens_not_the_sessions(rig: AgentRig, model: AnthropicServer) -> None:
    model.play(response(bash("echo one")), response(text("First turn done.")))
    first = capped(rig, "First.", None)
    assert first.status == RunStatus.SUCCEEDED, first
    assert (first.usage["input_tokens"], first.usage["output_tokens"]) == (2 * IN, 2 * OUT)

    model.play(response(bash("echo two")), response(text("Second turn done.")))
    second = capped(rig, "Second.", FireCaps(max_tokens=CAP, max_cost_usd=None))
    assert second.status == RunStatus.SUCCEEDED, second  # 8,000 this turn; 16,000 in the session
    assert second.session_id == first.session_id
    assert (second.usage["input_tokens"], second.usage["output_tokens"]) == (2 * IN, 2 * OUT)
    assert second.usage["cost_usd"] > 0
