"""Pure parts of the inbox UI (SPEC §13): feed items as the page shows them, the feed's page
bounds, where the "New since your last visit" divider goes, and the change mark's sharing."""

from __future__ import annotations

import pytest

from app.attention.inbox import MAX_LIMIT, Page
from app.core.errors import InvalidInput
from app.ui import inbox as views


def _item(**changes: object) -> dict:
    base = {"id": 9, "kind": "fire.finished", "created_at": "2026-12-02T07:00:00.000Z", "unread": True,
            "user_email": "alice@example.com", "chat_id": 3, "chat_title": "Ops", "project_id": 1, "task_id": 4,
            "task_name": "standup", "run_id": 5, "task_run_id": 6, "approval_id": None, "outcome": "succeeded",
            "first_line": "All green", "error": "", "title": "", "notify": True,
            "usage": {"input_tokens": 1200, "output_tokens": 30, "cost_usd": 0.0123}}
    return {**base, **changes}


@pytest.mark.parametrize(("changes", "label", "line"), [
    ({}, "Fire finished", "All green"),
    ({"kind": "fire.failed", "first_line": "", "error": "timed out"}, "Fire failed", "timed out"),
    ({"kind": "approval.requested", "first_line": "", "title": "Run: ls"}, "Approval asked", "Run: ls"),
    ({"kind": "something.new"}, "something.new", "All green"),
], ids=["finished", "failed", "approval", "unknown-kind"])
def test_a_feed_item_says_what_happened(changes: dict, label: str, line: str) -> None:
    item = views.feed_item(_item(**changes))
    assert (item.label, item.line, item.chat_title, item.task_name) == (label, line, "Ops", "standup")


def test_a_feed_item_shows_its_usage_as_one_line() -> None:
    assert views.feed_item(_item()).usage == "1,200 in · 30 out · $0.0123"
    assert views.feed_item(_item(usage=None)).usage == ""
    # an approval asked mid-turn (or a draft) is not the turn: its tokens show on the fire's item only
    assert views.feed_item(_item(kind="approval.requested")).usage == ""
    assert views.feed_item(_item(kind="draft.created")).usage == ""


@pytest.mark.parametrize(("kind", "resolved", "label"), [
    ("draft.created", "", "Draft to arm"), ("draft.created", "armed", "Draft armed"),
    ("draft.created", "deleted", "Draft deleted"), ("approval.requested", "", "Approval asked"),
    ("approval.requested", "allowed", "Approval: allowed"), ("approval.requested", "expired", "Approval expired"),
])
def test_a_settled_draft_or_approval_says_so(kind: str, resolved: str, label: str) -> None:
    item = views.feed_item(_item(kind=kind, resolved=resolved))
    assert (item.label, item.resolved) == (label, resolved)


@pytest.mark.parametrize(("before", "limit", "field"), [
    (0, 10, "before"), (-3, 10, "before"), ("5", 10, "before"), (True, 10, "before"), (2**64, 10, "before"),
    (None, 0, "limit"), (None, MAX_LIMIT + 1, "limit"), (None, "10", "limit"),
], ids=lambda v: repr(v)[:20])
def test_a_page_outside_its_bounds_is_refused_naming_the_field(before: object, limit: object, field: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        Page(before, limit)  # type: ignore[arg-type]
    assert refused.value.field == field


@pytest.mark.parametrize(("row_id", "event_id"), [("42", 42), ("usage-43", 43), ("", 0), ("x-y", 0)])
def test_a_rows_event_id(row_id: str, event_id: int) -> None:
    assert views.row_event_id({"id": row_id}) == event_id


@pytest.mark.parametrize(("seen", "ids", "expected"), [
    (10, ["5", "9", "11", "usage-12"], "11"),  # above the first row newer than the visit
    (10, ["5", "usage-12"], "usage-12"),
    (12, ["5", "9", "usage-12"], ""),  # nothing new
    (-1, ["5", "9"], ""),  # never opened: no divider
    (0, ["5"], "5"),  # opened when it was empty
], ids=["newer-row", "usage-row", "nothing-new", "first-visit", "was-empty"])
def test_the_divider_stands_above_the_first_row_newer_than_the_visit(seen: int, ids: list[str],
                                                                      expected: str) -> None:
    assert views.divider_row(seen, [{"id": i} for i in ids]) == expected


def test_the_change_mark_is_read_once_per_worker_within_its_age(monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[int] = []

    def fake(_db: object) -> tuple[int, int, int]:
        reads.append(1)
        return (len(reads), 0, 0)

    monkeypatch.setattr(views.reads, "change_mark", fake)
    monkeypatch.setattr(views, "get_core", lambda: type("Core", (), {"db": None})())
    monkeypatch.setattr(views, "CHANGES", views.SharedMark(views.CHANGES._read, views.MARK_MAX_AGE))
    first = views.change_mark(max_age=60)
    assert views.change_mark(max_age=60) == first and len(reads) == 1
    assert views.change_mark(max_age=0) != first and len(reads) == 2


def test_an_approvals_one_time_allow_comes_first() -> None:
    card = views._approval({"id": 1, "title": "rm -rf build", "chat_id": 3, "chat_title": "Ops",
                            "requested_for": "alice@example.com", "options": [
                                {"option_id": "always", "name": "Always Allow", "kind": "allow_always"},
                                {"option_id": "no", "name": "Reject", "kind": "reject_once"},
                                {"option_id": "yes", "name": "Allow", "kind": "allow_once"}]})
    assert [o.option_id for o in card.options] == ["yes", "always", "no"]
