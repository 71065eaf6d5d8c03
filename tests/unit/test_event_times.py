"""Times in the transcript (app/ui/times.py, rows of app/ui/transcript.py) and the login form's
empty submit, with fixed instants."""

from __future__ import annotations

import datetime as dt

import pytest

from app.core import envelope
from app.core.models import Event, EventType
from app.ui.state.login import missing_fields
from app.ui.times import iso_utc, lateness
from app.ui.transcript import merge_events

PLANNED = dt.datetime(2026, 12, 2, 14, 5, tzinfo=dt.UTC)


def test_an_instant_is_iso_utc_in_whole_seconds() -> None:
    paris = dt.timezone(dt.timedelta(hours=1))
    assert iso_utc(dt.datetime(2026, 12, 2, 15, 5, 9, 987_000, tzinfo=paris)) == "2026-12-02T14:05:09Z"
    assert iso_utc(dt.datetime(2026, 12, 2, 14, 5, 9)) == "2026-12-02T14:05:09Z"  # naive: taken as UTC
    assert iso_utc(None) == ""


@pytest.mark.parametrize(("delay", "words"), [
    (dt.timedelta(0), "on time"),
    (dt.timedelta(milliseconds=999), "on time"),
    (dt.timedelta(seconds=-5), "on time"),  # started early (a run-now's occurrence is its request)
    (dt.timedelta(seconds=1), "1 s late"),
    (dt.timedelta(seconds=3, milliseconds=700), "3 s late"),
    (dt.timedelta(seconds=59), "59 s late"),
    (dt.timedelta(seconds=60), "1 min late"),
    (dt.timedelta(minutes=2, seconds=59), "2 min late"),
    (dt.timedelta(hours=1), "1 h late"),
    (dt.timedelta(hours=1, minutes=5), "1 h 5 min late"),
    (dt.timedelta(days=2), "2 d late"),
    (dt.timedelta(days=2, hours=3, minutes=10), "2 d 3 h late"),
])
def test_lateness_in_words(delay: dt.timedelta, words: str) -> None:
    assert lateness(PLANNED, PLANNED + delay) == words


def _event(id_: int, kind: EventType, text: str, at: dt.datetime, run: int | None = 1) -> Event:
    return Event(id=id_, chat_id=7, run_id=run, type=kind.value, text=text, created_at=at)


def test_every_row_carries_its_first_events_instant() -> None:
    first = PLANNED + dt.timedelta(seconds=1)
    rows = merge_events([], [
        _event(1, EventType.PROMPT, "hi", PLANNED),
        _event(2, EventType.ASSISTANT_TEXT, "Hello ", first),
        _event(3, EventType.ASSISTANT_TEXT, "there", first + dt.timedelta(seconds=4)),
    ])
    assert [(r["type"], r["at"]) for r in rows] == [
        ("prompt", "2026-12-02T14:05:00Z"), ("assistant_text", "2026-12-02T14:05:01Z")]


def test_a_tool_card_keeps_the_time_its_call_began() -> None:
    call = '{{"id": "t1", "title": "ls", "status": "{}"}}'
    rows = merge_events([], [_event(1, EventType.TOOL, call.format("in_progress"), PLANNED),
                             _event(2, EventType.TOOL, call.format("completed"), PLANNED + dt.timedelta(minutes=1))])
    assert [(r["status"], r["at"]) for r in rows] == [("completed", "2026-12-02T14:05:00Z")]


def test_a_fire_row_says_when_it_was_planned_and_how_late_it_started() -> None:
    text = envelope.build("standup", "collect the news", 1, 1)
    started = PLANNED + dt.timedelta(minutes=2)
    fires = {4: ("2026-12-02T14:05:00Z", "2 min late", ""), 6: ("", "", "Run now by ann@example.com")}
    [row] = merge_events([], [_event(9, EventType.SCHEDULED_PROMPT, text, started, run=4)], fires=fires)
    assert (row["task"], row["at"], row["fired_at"], row["late"]) == (
        "standup", "2026-12-02T14:07:00Z", "2026-12-02T14:05:00Z", "2 min late")
    [unknown] = merge_events([], [_event(10, EventType.SCHEDULED_PROMPT, text, started, run=5)], fires=fires)
    assert (unknown["fired_at"], unknown["late"]) == ("", "")  # a task deleted since: its claim is gone
    [forced] = merge_events([], [_event(11, EventType.SCHEDULED_PROMPT, text, started, run=6)], fires=fires)
    assert (forced["fired_at"], forced["late"], forced["forced"]) == ("", "", "Run now by ann@example.com")


@pytest.mark.parametrize(("email", "password", "message"), [
    ("", "", "Enter your email and password."),
    ("   ", "secret", "Enter your email."),
    ("ann@example.com", "", "Enter your password."),
    ("ann@example.com", " ", ""),  # a password is taken as typed
])
def test_an_incomplete_login_form_says_what_is_missing(email: str, password: str, message: str) -> None:
    assert missing_fields(email, password) == message
