"""A fire's token cap cuts a real Codex turn short, mid-turn (SPEC §15), offline.

codex-acp reports no token counts over ACP (its ``usage_update`` per model response carries only
how full the context window is), so the provider measures the turn's usage so far from Codex's
rollout file (the codex preset's ``session_usage``) on every ``usage_update``, every tool-call
update and every second (``acp_meter``). The scripted Responses server plays a turn of shell
calls, each response reporting 4,000 tokens (3,000 in, of them 1,000 cached, and 1,000 out); the
third passes a 10,000-token cap, so the turn is cancelled before the model serves more than one
further response. On SQLite: the store does not matter here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from app.core.config import Settings
from app.core.models import RunStatus
from app.core.turns import FireCaps, RunResult
from tests.agents.codex_rig import CodexRig, build_codex_rig
from tests.agents.responses_server import Item, ResponsesServer, Step, Text, Usage, shell, step
from tests.agents.rig import capped_turn

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)]

WAIT = 120.0
CAP = 10_000
IN, CACHED, OUT = 3_000, 1_000, 1_000  # per response: 4,000 tokens a budget counts (OpenAI's input includes cached)
THINK = 1.0  # seconds each response takes: the cancel lands while the next one is on its way
CROSSING = CAP // (IN + OUT) + 1  # the response whose usage passes the cap (the 3rd)


@pytest.fixture
def model() -> Iterator[ResponsesServer]:
    with ResponsesServer() as server:
        yield server


@pytest.fixture
def rig(settings: Settings, model: ResponsesServer) -> Iterator[CodexRig]:
    r = build_codex_rig(settings, model, skill=False, agent_cancel_grace_seconds=5.0)
    r.configure(tool_policy="allow")
    yield r
    r.close()


def response(*items: Item) -> Step:
    return step(*items, usage=Usage(input_tokens=IN, output_tokens=OUT, cached_tokens=CACHED), delay=THINK)


def capped(rig: CodexRig, prompt: str, caps: FireCaps | None) -> RunResult:
    return capped_turn(rig.core, rig.chat, prompt, caps, WAIT)


def test_a_turn_past_its_token_cap_is_cancelled_within_one_response(rig: CodexRig, model: ResponsesServer) -> None:
    model.add(*[response(shell(f"echo step {i}")) for i in range(1, 7)], response(Text("All steps done.")))
    result = capped(rig, "Run the steps.", FireCaps(max_tokens=CAP, max_cost_usd=None))

    assert result.status == RunStatus.FAILED, result
    assert result.error and result.error.startswith("budget exceeded"), result.error
    assert CROSSING <= model.served <= CROSSING + 1, f"{model.served} responses served; the cap passed at {CROSSING}"
    recorded = json.loads(rig.run_row(result.run_id).usage)
    assert recorded == result.usage
    assert recorded["input_tokens"] + recorded["output_tokens"] >= CAP, recorded
    assert recorded["cached_tokens"] * IN == recorded["input_tokens"] * CACHED
    assert model.problems == []


def test_the_cap_counts_this_turns_tokens_not_the_sessions(rig: CodexRig, model: ResponsesServer) -> None:
    model.add(response(shell("echo one")), response(Text("First turn done.")))
    first = capped(rig, "First.", None)
    assert first.status == RunStatus.SUCCEEDED, first
    assert (first.usage["input_tokens"], first.usage["output_tokens"]) == (2 * IN, 2 * OUT)

    model.add(response(shell("echo two")), response(Text("Second turn done.")))
    second = capped(rig, "Second.", FireCaps(max_tokens=CAP, max_cost_usd=None))
    assert second.status == RunStatus.SUCCEEDED, second  # 8,000 this turn; 16,000 in the session
    assert second.session_id == first.session_id
    assert (second.usage["input_tokens"], second.usage["output_tokens"]) == (2 * IN, 2 * OUT)
    assert model.problems == []
