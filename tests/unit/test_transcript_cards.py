"""Tool cards, thoughts, plans, status notes and usage rows of the transcript (app/ui/transcript.py)."""

from __future__ import annotations

import json

import pytest

from app.core.models import Event, EventType
from app.ui.transcript import CUT_NOTE, OUTPUT_MAX_CHARS, merge_events

_ids = iter(range(1, 100_000))


def ev(kind: EventType, text: str = "", run: int | None = 1) -> Event:
    return Event(id=next(_ids), chat_id=7, run_id=run, type=kind.value, text=text)


def tool(call_id: str, status: str, run: int = 1, **fields: object) -> Event:
    return ev(EventType.TOOL, json.dumps({"id": call_id, "title": f"Run {call_id}", "kind": "execute",
                                          "status": status, **fields}), run)


def plan(run: int, *entries: tuple[str, str]) -> Event:
    return ev(EventType.PLAN, json.dumps({"entries": [{"content": c, "status": s, "priority": "medium"}
                                                      for c, s in entries]}), run)


def cards(rows: list[dict[str, str]]) -> list[tuple[str, str]]:
    return [(r["key"], r["status"]) for r in rows if r["type"] == "tool"]


def test_a_tool_update_replaces_its_card_in_place() -> None:
    events = [ev(EventType.ASSISTANT_TEXT, "Let me look."), tool("t1", "pending", input="ls -la"),
              ev(EventType.ASSISTANT_TEXT, "Running it. "), tool("t1", "in_progress"),
              ev(EventType.ASSISTANT_TEXT, "Still going."),
              tool("t1", "completed", input="ls -la", output="a.txt\nb.txt")]
    rows = merge_events([], events)
    assert [r["type"] for r in rows] == ["assistant_text", "tool", "assistant_text"]
    card = rows[1]
    assert (card["key"], card["status"], card["status_label"]) == ("t1", "completed", "completed")
    assert (card["input"], card["output"], card["kind"], card["title"]) == ("ls -la", "a.txt\nb.txt", "execute",
                                                                            "Run t1")
    assert card["id"] == str(events[1].id)  # the card keeps its place and identity
    assert rows[2]["text"] == "Running it. Still going."  # text around an update still joins


def test_each_call_id_has_its_own_card_and_runs_do_not_share_ids() -> None:
    rows = merge_events([], [tool("a", "pending"), tool("b", "pending"), tool("a", "failed"),
                             tool("a", "pending", run=2)])
    assert cards(rows) == [("a", "failed"), ("b", "pending"), ("a", "pending")]
    assert [r["run_id"] for r in rows] == ["1", "1", "2"]


def test_an_update_read_in_a_later_page_still_folds() -> None:
    events = [tool("t1", "pending"), ev(EventType.ASSISTANT_TEXT, "x"), tool("t1", "completed", output="ok"),
              ev(EventType.ASSISTANT_TEXT, "y")]
    whole = merge_events([], events)
    for cut in range(len(events) + 1):
        assert merge_events(merge_events([], events[:cut]), events[cut:]) == whole, cut


def test_a_stale_update_does_not_undo_a_finished_call() -> None:
    rows = merge_events([], [tool("t1", "pending"), tool("t1", "completed", output="done"),
                             tool("t1", "in_progress", output="partial")])
    assert cards(rows) == [("t1", "completed")]
    assert rows[0]["output"] == "done"


def test_an_update_without_input_keeps_the_input_shown() -> None:
    rows = merge_events([], [tool("t1", "pending", input="rm -rf build"), tool("t1", "completed", output="")])
    assert rows[0]["input"] == "rm -rf build"


def test_statuses_have_plain_labels() -> None:
    labels = {s: merge_events([], [tool("x", s)])[0]["status_label"]
              for s in ("pending", "in_progress", "completed", "failed", "awaiting_approval", "exploded")}
    assert labels == {"pending": "pending", "in_progress": "running", "completed": "completed",
                      "failed": "failed", "awaiting_approval": "awaiting approval", "exploded": "unknown"}


@pytest.mark.parametrize(("decision", "shown"), [
    ({"outcome": "allowed", "option": "allow", "by": "policy:allow"}, "allowed by policy"),
    ({"outcome": "rejected", "option": "reject", "by": "policy:deny"}, "rejected by policy"),
    ({"outcome": "allowed", "option": "allow", "by": "capability"}, "allowed: capability-scoped schedule tool"),
    ({"outcome": "rejected", "by": "ann@example.com"}, "rejected by ann@example.com"),
    ({"outcome": "allowed", "by": "ann@example.com"}, "allowed by ann@example.com"),
    ({"outcome": "rejected", "by": "timeout"}, "rejected: no answer in time"),
    ({"outcome": "allowed", "by": "user:ann@example.com"}, "allowed by ann@example.com"),
    ({"outcome": "cancelled", "by": "cancelled"}, "cancelled: the turn ended before an answer"),
    ("allowed", ""),
])
def test_the_decision_says_what_and_by_whom(decision: object, shown: str) -> None:
    assert merge_events([], [tool("t", "completed", decision=decision)])[0]["decision"] == shown


@pytest.mark.parametrize("text", ["ls", "{not json", "[1, 2]", "null", '"a string"', "{}", json.dumps({"id": 5}),
                                  "[" * 100_000 + "]" * 100_000,
                                  json.dumps({"id": "t", "title": ["x"], "output": {"a": 1}, "status": 3})])
def test_a_malformed_tool_event_is_a_safe_card(text: str) -> None:
    rows = merge_events([], [ev(EventType.TOOL, text)])
    assert len(rows) == 1 and rows[0]["type"] == "tool"
    assert all(isinstance(value, str) for value in rows[0].values())
    assert rows[0]["title"] and rows[0]["status_label"]


def test_an_unreadable_tool_event_shows_its_text_and_folds_nothing() -> None:
    rows = merge_events([], [tool("t1", "pending"), ev(EventType.TOOL, "{broken"), tool("t1", "completed")])
    assert cards(rows) == [("t1", "completed"), ("", "unknown")]
    assert rows[1]["output"] == "{broken" and rows[1]["title"] == "Tool call (unreadable update)"


def test_a_huge_output_is_cut_with_a_note() -> None:
    rows = merge_events([], [tool("t1", "completed", output="x" * (OUTPUT_MAX_CHARS + 50))])
    assert rows[0]["output"] == "x" * OUTPUT_MAX_CHARS + CUT_NOTE


def test_thought_chunks_of_a_run_join_and_text_breaks_them() -> None:
    events = [ev(EventType.THOUGHT, "I should "), ev(EventType.THOUGHT, "list files."),
              ev(EventType.ASSISTANT_TEXT, "Listing."), ev(EventType.THOUGHT, "Done."),
              ev(EventType.THOUGHT, "Next run", run=2)]
    rows = merge_events([], events)
    assert [(r["type"], r["text"], r["run_id"]) for r in rows] == [
        ("thought", "I should list files.", "1"), ("assistant_text", "Listing.", "1"), ("thought", "Done.", "1"),
        ("thought", "Next run", "2")]


def test_the_latest_plan_of_a_run_replaces_the_earlier_in_place() -> None:
    events = [plan(1, ("Read", "in_progress"), ("Write", "pending")), ev(EventType.ASSISTANT_TEXT, "ok"),
              plan(1, ("Read", "completed"), ("Write", "in_progress"), ("Test", "pending")),
              plan(2, ("Other", "pending"))]
    rows = merge_events([], events)
    assert [r["type"] for r in rows] == ["plan", "assistant_text", "plan"]
    assert rows[0]["body"] == "✓ Read\n▸ Write\n○ Test"
    assert rows[0]["title"] == "Plan · 1 of 3 done"
    assert rows[0]["id"] == str(events[0].id)
    assert rows[2]["body"] == "○ Other" and rows[2]["run_id"] == "2"


@pytest.mark.parametrize("text", ["step one, then two", "[1]", '{"entries": 3}', "{" * 50_000])
def test_an_unreadable_plan_shows_its_text(text: str) -> None:
    rows = merge_events([], [ev(EventType.PLAN, text)])
    assert (rows[0]["title"], rows[0]["body"]) == ("Plan", text)


def test_a_status_event_is_its_own_row() -> None:
    note = "The agent could not continue this chat's earlier session; a new session started."
    rows = merge_events([], [ev(EventType.ASSISTANT_TEXT, "a"), ev(EventType.STATUS, note),
                             ev(EventType.ASSISTANT_TEXT, "b")])
    assert [(r["type"], r["text"]) for r in rows] == [("assistant_text", "a"), ("status", note),
                                                      ("assistant_text", "b")]


def test_a_finished_run_with_usage_gets_a_usage_row() -> None:
    events = [ev(EventType.RUN_STARTED, "user", 1), ev(EventType.ASSISTANT_TEXT, "hi", 1),
              ev(EventType.RUN_FINISHED, "succeeded", 1), ev(EventType.RUN_FINISHED, "succeeded", 2)]
    rows = merge_events([], events, {1: "10 in · 2 out"})
    assert [(r["type"], r["text"], r["run_id"]) for r in rows] == [
        ("assistant_text", "hi", "1"), ("run_usage", "10 in · 2 out", "1")]


def test_every_row_has_the_same_string_keys() -> None:
    events = [ev(EventType.PROMPT, "q"), ev(EventType.ASSISTANT_TEXT, "a"), tool("t", "pending"),
              ev(EventType.THOUGHT, "t"), plan(1, ("x", "pending")), ev(EventType.STATUS, "s"),
              ev(EventType.ERROR, "e"), ev(EventType.RUN_FINISHED, "succeeded")]
    rows = merge_events([], events, {1: "1 in"})
    assert len({tuple(sorted(r)) for r in rows}) == 1
    assert all(isinstance(v, str) for r in rows for v in r.values())


OPTIONS = [{"option_id": "allow_always", "name": "Always Allow", "kind": "allow_always"},
           {"option_id": "allow", "name": "Allow", "kind": "allow_once"},
           {"option_id": "reject", "name": "Reject", "kind": "reject_once"}]


def approval(state: str, timeout: int = 900) -> dict[str, object]:
    return {"id": 12, "state": state, "options": OPTIONS, "timeout_seconds": timeout}


def test_a_call_awaiting_approval_has_a_card_with_the_agents_options() -> None:
    [row] = merge_events([], [tool("t", "awaiting_approval", input="touch x", approval=approval("pending"))])
    assert (row["approval_id"], row["approval_state"], row["approval_note"]) == ("12", "pending", "")
    # the one-time allow first, whatever order the agent listed them in; each line says its kind
    assert row["approval_options"].split("\n") == [
        "allow\tAllow\tallow_once", "allow_always\tAlways Allow\tallow_always", "reject\tReject\treject_once"]
    assert row["status_label"] == "awaiting approval" and row["input"] == "touch x"


@pytest.mark.parametrize(("state", "decision", "timeout", "note"), [
    ("allowed", {"outcome": "allowed", "option": "allow", "by": "user:alice@example.com"}, 900,
     "Allowed once by alice@example.com"),
    ("allowed", {"outcome": "allowed", "option": "allow_always", "by": "user:alice@example.com"}, 900,
     "Always allowed by alice@example.com"),
    ("rejected", {"outcome": "rejected", "option": "reject", "by": "user:bob@example.com"}, 900,
     "Rejected by bob@example.com"),
    ("expired", {"outcome": "rejected", "option": "reject", "by": "timeout"}, 900,
     "Rejected — nobody answered within 15 minutes"),
    ("expired", {"outcome": "rejected", "option": "reject", "by": "timeout"}, 1,
     "Rejected — nobody answered within 1 second"),
    ("expired", {"outcome": "rejected", "option": "reject", "by": "timeout"}, 7200,
     "Rejected — nobody answered within 2 hours"),
    ("cancelled", {"outcome": "cancelled", "by": "cancelled"}, 900, "Cancelled — the turn ended before an answer"),
], ids=["allowed-once", "always", "rejected", "expired", "expired-1s", "expired-2h", "cancelled"])
def test_a_decided_card_says_who_decided(state: str, decision: dict, timeout: int, note: str) -> None:
    rows = merge_events([], [tool("t", "awaiting_approval", approval=approval("pending")),
                             tool("t", "pending", approval=approval(state, timeout), decision=decision)])
    [row] = rows
    assert (row["approval_state"], row["approval_note"]) == (state, note)


def test_a_refused_connection_is_a_finished_network_card() -> None:
    from app.agents.egress import refusal_reporter

    written: list[str] = []
    refusal_reporter(written.append)("127.0.0.1", 5432)
    rows = merge_events([], [ev(EventType.TOOL, written[0])])
    card = rows[0]
    assert (card["title"], card["kind"], card["status"], card["status_label"]) == (
        "network: 127.0.0.1:5432 refused", "network", "refused", "refused")
