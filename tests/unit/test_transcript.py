"""Merging the event log into transcript rows (app/ui/transcript.py), without a database."""

from __future__ import annotations

import copy

from app.core.models import Event, EventType
from app.ui.transcript import merge_events

_ids = iter(range(1, 10_000))


def ev(kind: EventType, text: str = "", run: int | None = 1) -> Event:
    return Event(id=next(_ids), chat_id=7, run_id=run, type=kind.value, text=text)


def texts(rows: list[dict[str, str]]) -> list[tuple[str, str]]:
    return [(r["type"], r["text"]) for r in rows]


def turn(run: int, prompt: str, *chunks: str) -> list[Event]:
    return [ev(EventType.PROMPT, prompt, run), ev(EventType.RUN_STARTED, "user", run),
            *[ev(EventType.ASSISTANT_TEXT, c, run) for c in chunks], ev(EventType.RUN_FINISHED, "succeeded", run)]


def test_consecutive_assistant_text_of_one_run_is_one_row() -> None:
    rows = merge_events([], turn(1, "hi", "Hello ", "there ", "friend"))
    assert texts(rows) == [("prompt", "hi"), ("assistant_text", "Hello there friend")]


def test_merged_row_keeps_the_first_chunk_id_and_the_run() -> None:
    events = turn(1, "hi", "a", "b")
    rows = merge_events([], events)
    assert rows[1]["id"] == str(events[2].id)
    assert rows[1]["run_id"] == "1"


def test_separate_runs_stay_separate() -> None:
    events = [ev(EventType.ASSISTANT_TEXT, "first", 1), ev(EventType.ASSISTANT_TEXT, "second", 2)]
    rows = merge_events([], events)
    assert texts(rows) == [("assistant_text", "first"), ("assistant_text", "second")]
    assert [r["run_id"] for r in rows] == ["1", "2"]


def test_two_turns_with_hidden_markers_between_stay_separate() -> None:
    rows = merge_events([], turn(1, "one", "A", "B") + turn(2, "two", "C", "D"))
    assert texts(rows) == [("prompt", "one"), ("assistant_text", "AB"), ("prompt", "two"), ("assistant_text", "CD")]


def test_run_started_and_run_finished_are_hidden() -> None:
    rows = merge_events([], [ev(EventType.RUN_STARTED, "user"), ev(EventType.RUN_FINISHED, "failed")])
    assert rows == []


def test_other_event_types_are_shown_and_break_a_text_run() -> None:
    events = [ev(EventType.ASSISTANT_TEXT, "a"), ev(EventType.TOOL, "ls"), ev(EventType.ASSISTANT_TEXT, "b"),
              ev(EventType.ERROR, "boom")]
    rows = merge_events([], events)
    assert texts(rows) == [("assistant_text", "a"), ("tool", "ls"), ("assistant_text", "b"), ("error", "boom")]


def test_merging_in_pages_equals_merging_at_once() -> None:
    events = turn(1, "q", "x", "y", "z") + turn(2, "r", "u", "v")
    whole = merge_events([], events)
    for cut in range(len(events) + 1):
        assert merge_events(merge_events([], events[:cut]), events[cut:]) == whole, cut


def test_input_rows_are_not_mutated() -> None:
    rows = merge_events([], turn(1, "q", "partial "))
    before = copy.deepcopy(rows)
    out = merge_events(rows, [ev(EventType.ASSISTANT_TEXT, "answer", 1)])
    assert rows == before
    assert out is not rows
    assert out[-1]["text"] == "partial answer"


def test_open_runs_follow_started_and_finished_events() -> None:
    from app.core.models import Event
    from app.ui.transcript import open_runs

    def ev(i: int, kind: str, run: int | None) -> Event:
        return Event(id=i, chat_id=1, run_id=run, type=kind, text="")

    assert open_runs([], [ev(1, "prompt", 7), ev(2, "run_started", 7)]) == [7]
    assert open_runs([7], [ev(3, "assistant_text", 7)]) == [7]
    assert open_runs([7], [ev(4, "run_finished", 7)]) == []
    assert open_runs([], [ev(5, "run_finished", 9), ev(6, "status", None)]) == []
