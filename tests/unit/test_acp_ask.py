"""A permission request under ``tool_policy=ask`` waits on the loop for its approval (SPEC §13).

The agent client's side alone, with an in-memory stand-in for the turn's approvals (the real one
is the database, tested in tests/integration/test_approvals.py and test_acp_approvals.py): the
request becomes an approval and an ``awaiting_approval`` card, waits without blocking the loop,
and answers the agent with what was decided — or "cancelled" when the turn ends first.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import types
from pathlib import Path

from acp.schema import PermissionOption, ToolCallUpdate

from app.agents.providers.acp_client import AgentClient, TurnSink
from tests.conftest import run_async

OPTIONS = [PermissionOption(option_id="allow_always", name="Always Allow", kind="allow_always"),
           PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
           PermissionOption(option_id="reject", name="Reject", kind="reject_once")]
EXPIRES = dt.datetime(2026, 1, 5, 9, 15, tzinfo=dt.UTC)


class FakeListener:
    def __init__(self) -> None:
        self.events: list[asyncio.Event] = []

    def subscribe(self) -> asyncio.Event:
        event = asyncio.Event()
        self.events.append(event)
        return event

    def unsubscribe(self, event: asyncio.Event) -> None:
        self.events.remove(event)

    def hint(self) -> None:
        for event in self.events:
            event.set()


class FakeApprovals:
    """The turn's approvals in memory: ``decide`` is what another process's answer does to the row."""

    timeout_seconds = 900

    def __init__(self, failures: int = 0) -> None:
        self.rows: dict[int, types.SimpleNamespace] = {}
        self.listening = FakeListener()
        self.failures = failures  # settle raises this many times first (the store is away)
        self.reads = 0

    def ask(self, tool_call_id: str, title: str, raw_input: object, options: list[dict[str, str]]):
        row = types.SimpleNamespace(id=len(self.rows) + 1, state="pending", option_id=None, decided_by=None,
                                    expires_at=EXPIRES, title=title, raw_input=raw_input, options=options)
        self.rows[row.id] = row
        return row

    def settle(self, approval_id: int):
        self.reads += 1
        if self.failures:
            self.failures -= 1
            raise ConnectionError("the database is restarting")
        return self.rows[approval_id]

    def listener(self) -> FakeListener:
        return self.listening

    def close(self) -> int:
        return 0

    def decide(self, approval_id: int, state: str, option_id: str | None, by: str | None) -> None:
        self.rows[approval_id].__dict__.update(state=state, option_id=option_id, decided_by=by)


def _sink(approvals: FakeApprovals, policy: str = "ask") -> TurnSink:
    return TurnSink(session_id="s1", policy=policy, workspace=Path("/work/project"), approvals=approvals)


def _request(client: AgentClient, command: str = "touch notes.txt"):
    call = ToolCallUpdate(tool_call_id="t1", title=command, kind="execute", status="pending",
                          raw_input={"command": command})
    return client.request_permission(options=OPTIONS, session_id="s1", tool_call=call)


def _tool_events(sink: TurnSink) -> list[dict]:
    found = []
    while not sink.items.empty():
        kind, payload = sink.items.get()
        if kind == "tool":
            found.append(json.loads(payload))
    return found


async def _until(predicate) -> None:
    for _ in range(1000):
        if predicate():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("condition not reached")


def test_an_answer_reaches_the_agent_and_the_card_says_who() -> None:
    approvals, client = FakeApprovals(), AgentClient()
    sink = client.turns["s1"] = _sink(approvals)

    async def scenario():
        request = asyncio.ensure_future(_request(client))
        await _until(lambda: approvals.rows and approvals.listening.events)
        assert not request.done()  # it waits, and the loop is free meanwhile
        approvals.decide(1, "allowed", "allow_always", "alice@example.com")
        approvals.listening.hint()
        return await asyncio.wait_for(request, 0.5)  # the hint, not the 1 s fallback

    response = run_async(scenario())
    assert response.outcome.outcome == "selected" and response.outcome.option_id == "allow_always"
    [row] = approvals.rows.values()
    assert (row.title, row.raw_input) == ("touch notes.txt", {"command": "touch notes.txt"})
    assert [o["option_id"] for o in row.options] == ["allow_always", "allow", "reject"]
    events = _tool_events(sink)
    waiting = next(e for e in events if e["status"] == "awaiting_approval")
    assert waiting["approval"]["id"] == 1 and waiting["approval"]["state"] == "pending"
    assert waiting["approval"]["expires_at"] == "2026-01-05T09:15:00Z"
    last = events[-1]
    assert last["approval"]["state"] == "allowed" and last["status"] == "pending"
    assert (last["decision"]["outcome"], last["decision"]["by"]) == ("allowed", "user:alice@example.com")


def test_without_a_hint_the_answer_is_found_by_the_fallback_read() -> None:
    approvals, client = FakeApprovals(), AgentClient()
    client.turns["s1"] = _sink(approvals)

    async def scenario():
        request = asyncio.ensure_future(_request(client))
        await _until(lambda: approvals.rows and approvals.listening.events)
        approvals.decide(1, "rejected", "reject", "bob@example.com")  # no hint: a lost one
        return await asyncio.wait_for(request, 3.0)

    response = run_async(scenario())
    assert response.outcome.option_id == "reject"


def test_an_expired_approval_answers_with_the_reject_option() -> None:
    approvals, client = FakeApprovals(), AgentClient()
    sink = client.turns["s1"] = _sink(approvals)

    async def scenario():
        request = asyncio.ensure_future(_request(client))
        await _until(lambda: approvals.rows and approvals.listening.events)
        approvals.decide(1, "expired", None, None)
        approvals.listening.hint()
        return await asyncio.wait_for(request, 0.5)

    response = run_async(scenario())
    assert response.outcome.option_id == "reject"
    last = _tool_events(sink)[-1]
    assert last["status"] == "failed" and last["decision"]["by"] == "timeout"


def test_a_cancelled_turn_answers_cancelled_at_once() -> None:
    approvals, client = FakeApprovals(), AgentClient()
    sink = client.turns["s1"] = _sink(approvals)

    async def scenario():
        request = asyncio.ensure_future(_request(client))
        await _until(lambda: approvals.rows and approvals.listening.events)
        sink.cancel()
        return await asyncio.wait_for(request, 0.5)

    response = run_async(scenario())
    assert response.outcome.outcome == "cancelled"
    last = _tool_events(sink)[-1]
    assert last["approval"]["state"] == "cancelled" and last["decision"]["outcome"] == "cancelled"
    assert approvals.listening.events == []  # it stopped listening


def test_a_failed_read_is_retried_not_fatal() -> None:
    approvals, client = FakeApprovals(failures=1), AgentClient()
    client.turns["s1"] = _sink(approvals)

    async def scenario():
        request = asyncio.ensure_future(_request(client))
        await _until(lambda: approvals.reads >= 1)
        approvals.decide(1, "allowed", "allow", "alice@example.com")
        approvals.listening.hint()
        return await asyncio.wait_for(request, 3.0)

    assert run_async(scenario()).outcome.option_id == "allow"


def test_remote_schedule_and_other_policies_never_ask() -> None:
    for policy, command, expected in (("ask", "scripts/remote-schedule list", "allow"),
                                      ("allow", "touch x", "allow"), ("deny", "touch x", "reject")):
        approvals, client = FakeApprovals(), AgentClient()
        client.turns["s1"] = _sink(approvals, policy)
        response = run_async(_request(client, command))
        assert response.outcome.option_id == expected and approvals.rows == {}, policy
