"""Which of the agent's options a permission request is answered with (SPEC §11, §13)."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from app.agents.providers.acp_events import ToolCalls
from app.agents.providers.acp_policy import Choice, choose, outcome_of

CLAUDE = [{"option_id": "allow_always", "name": "Always Allow", "kind": "allow_always"},
          {"option_id": "allow", "name": "Allow", "kind": "allow_once"},
          {"option_id": "reject", "name": "Reject", "kind": "reject_once"}]
ONLY_ALWAYS = [{"option_id": "yes", "name": "Yes, always", "kind": "allow_always"},
               {"option_id": "never", "name": "No, never", "kind": "reject_always"}]
NO_REJECT = [{"option_id": "ok", "name": "OK", "kind": "allow_once"}]


@pytest.mark.parametrize(("policy", "options", "remote", "expected"), [
    ("allow", CLAUDE, False, Choice("allowed", "allow", "policy:allow")),  # once, never "always"
    ("allow", ONLY_ALWAYS, False, Choice("allowed", "yes", "policy:allow")),
    ("deny", CLAUDE, False, Choice("rejected", "reject", "policy:deny")),
    ("deny", ONLY_ALWAYS, False, Choice("rejected", "never", "policy:deny")),
    ("deny", NO_REJECT, False, Choice("cancelled", None, "policy:deny")),
    ("ask", CLAUDE, False, Choice("ask", None, "policy:ask")),
    ("ask", CLAUDE, True, Choice("allowed", "allow", "capability")),  # remote-schedule is never asked
    ("deny", CLAUDE, True, Choice("allowed", "allow", "capability")),
], ids=["allow-once", "allow-always-only", "deny", "deny-always-only", "deny-without-reject", "ask",
        "ask-remote-schedule", "deny-remote-schedule"])
def test_the_policy_picks_the_option(policy: str, options: list, remote: bool, expected: Choice) -> None:
    assert choose(policy, options, remote) == expected


@pytest.mark.parametrize(("state", "option", "by", "expected"), [
    ("allowed", "allow_always", "alice@example.com", Choice("allowed", "allow_always", "user:alice@example.com")),
    ("rejected", "reject", "bob@example.com", Choice("rejected", "reject", "user:bob@example.com")),
    ("expired", None, None, Choice("rejected", "reject", "timeout")),
    ("cancelled", None, None, Choice("cancelled", None, "cancelled")),
    (None, None, None, Choice("cancelled", None, "cancelled")),  # the turn was cancelled while waiting
    ("allowed", "not-offered", "alice@example.com", Choice("cancelled", None, "cancelled")),
], ids=["allowed", "rejected", "expired", "cancelled", "turn-cancelled", "unknown-option"])
def test_a_settled_approval_answers_the_agent(state: str | None, option: str | None, by: str | None,
                                              expected: Choice) -> None:
    assert outcome_of(state, option, by, CLAUDE) == expected


def test_a_call_awaiting_approval_carries_its_card_then_the_decision() -> None:
    calls = ToolCalls()
    calls.apply({"toolCallId": "t1", "title": "touch x", "kind": "execute", "status": "pending",
                 "rawInput": {"command": "touch x"}})
    waiting = json.loads(calls.await_approval("t1", {"id": 4, "state": "pending", "options": CLAUDE}))
    assert waiting["status"] == "awaiting_approval" and waiting["approval"]["id"] == 4
    assert waiting["input"] == "touch x"
    calls.approval_state("t1", "allowed")
    at = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)
    allowed = json.loads(calls.decide("t1", "allowed", "allow", "user:alice@example.com", at))
    assert allowed["status"] == "pending" and allowed["approval"]["state"] == "allowed"
    assert allowed["decision"] == {"outcome": "allowed", "option": "allow", "by": "user:alice@example.com",
                                   "at": "2026-01-05T09:00:00Z"}
    calls.await_approval("t2", {"id": 5, "state": "pending", "options": CLAUDE})
    calls.approval_state("t2", "expired")
    expired = json.loads(calls.decide("t2", "rejected", "reject", "timeout", at))
    assert expired["status"] == "failed" and expired["approval"]["state"] == "expired"
