"""What the UI computes for SPEC §19, without a browser: the dialog's notify/queue/pace fields, the
drawer's trigger URL words, "paced by the agent", the run history's reports and the transcript's
folded "Nothing new" fires."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json

import pytest

from app.core.errors import InvalidInput
from app.schedules.model import ScheduledTask, TaskRun
from app.ui import fire_rules_form, outcomes, quiet_fires, schedule_form, schedule_notes, schedule_views, trigger_views
from app.ui.schedule_form import FormFields

NOW = dt.datetime(2026, 3, 27, 12, 0, tzinfo=dt.UTC)
HOURLY = {"kind": "interval", "every_seconds": 3600}


def task(**fields: object) -> ScheduledTask:
    base = {"id": 7, "chat_id": 1, "project_id": 1, "owner": "ann@example.com", "name": "standup",
            "prompt": "collect the news", "schedule": json.dumps(HOURLY), "status": "active",
            "next_run_at": NOW + dt.timedelta(minutes=4), "armed_at": NOW, "created_at": NOW, "updated_at": NOW}
    return ScheduledTask(**{**base, **fields})


def form(**changes: str) -> FormFields:
    return dataclasses.replace(FormFields(name="standup", prompt="collect the news"), **changes)


@pytest.mark.parametrize(("typed", "seconds"), [
    ("", None), ("  ", None), ("90", 90), ("90s", 90), ("30m", 1800), ("30 min", 1800), ("4h", 14400),
    ("1d", 86400), ("2h30m", 9000), ("2H 30M", 9000),
], ids=lambda v: repr(v))
def test_a_pace_bound_is_typed_as_a_duration(typed: str, seconds: int | None) -> None:
    assert fire_rules_form.span_of(typed, "pace_min_seconds") == seconds
    if seconds is not None:
        assert fire_rules_form.span_of(fire_rules_form.span_input(seconds), "pace_min_seconds") == seconds


@pytest.mark.parametrize("typed", ["soon", "0", "0m", "-5", "3w", "1.5h"])
def test_an_unreadable_pace_bound_is_refused_by_its_field(typed: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        fire_rules_form.span_of(typed, "pace_max_seconds")
    assert caught.value.field == "pace_max_seconds"


def test_stored_bounds_read_back_short() -> None:
    assert [fire_rules_form.span_input(s) for s in (None, 90, 1800, 14400, 9000, 86400 + 60)] == \
        ["", "1m30s", "30m", "4h", "2h30m", "1d1m"]


def test_the_body_carries_the_rules_and_the_cap_only_with_queue_all() -> None:
    body = schedule_form.body_of(form(notify_on="changes", pace_min="30m", pace_max="4h"))
    assert (body["notify_on"], body["pace_min_seconds"], body["pace_max_seconds"]) == ("changes", 1800, 14400)
    assert "queue_cap" not in body  # hidden unless every fire is queued: a stale text there blocks nothing
    assert schedule_form.body_of(form(overlap="queue_all", queue_cap="5"))["queue_cap"] == 5
    with pytest.raises(InvalidInput) as caught:
        schedule_form.body_of(form(overlap="queue_all", queue_cap="many"))
    assert caught.value.field == "queue_cap"
    assert schedule_form.explain(caught.value).startswith("Queue up to: ")
    once = schedule_form.body_of(form(kind="once", at="2030-01-01T09:00", pace_min="30m", pace_max="4h"))
    assert (once["pace_min_seconds"], once["pace_max_seconds"]) == (None, None)  # a once task is not paced


def test_a_stored_tasks_rules_fill_the_dialog_and_an_untouched_edit_sends_nothing() -> None:
    stored = task(overlap="queue_all", queue_cap=5, notify_on="changes", pace_min_seconds=1800,
                  pace_max_seconds=14400)
    shown = schedule_form.fields_of(stored, "UTC")
    assert (shown.overlap, shown.queue_cap, shown.notify_on, shown.pace_min, shown.pace_max) == \
        ("queue_all", "5", "changes", "30m", "4h")
    assert schedule_form.timing_set(shown)  # pacing is in the advanced options: they open
    original = schedule_form.original_of(stored)
    assert schedule_form.patch_of(shown, original) == {}
    assert schedule_form.patch_of(dataclasses.replace(shown, queue_cap="8", pace_max=""), original) == \
        {"queue_cap": 8, "pace_max_seconds": None}


def test_the_dialog_offers_every_overlap_and_notify_choice() -> None:
    assert [v for v, _ in fire_rules_form.OVERLAPS] == ["queue_one", "skip", "replace", "queue_all"]
    assert dict(fire_rules_form.NOTIFY_ON) == {"always": "Tell me about every fire",
                                               "changes": "Only when something changed", "failures": "Only failures"}
    assert schedule_form.typed("notify_on", "changes", 100) == ("notify_on", "changes")
    with pytest.raises(InvalidInput):
        schedule_form.typed("notify_on", "sometimes", 100)


def test_the_services_pace_words_read_as_the_dialogs() -> None:
    said = fire_rules_form.dialog_words("give both pace bounds, or neither (null: the agent may not pace this task)")
    assert said == "fill in both, or neither (leave both empty: the agent may not pace this task)"
    assert fire_rules_form.dialog_words("must be at least 60 (the server's minimum interval between fires)") == \
        "must be at least 1 min (the server's minimum interval between fires)"
    assert fire_rules_form.dialog_words("must not be less than pace_min_seconds") == \
        "must not be sooner than the soonest"


@pytest.mark.parametrize(("url", "origin"), [
    ("http://127.0.0.1:3000/chat/4", "http://127.0.0.1:3000"), ("https://cron.example.com", "https://cron.example.com"),
    ("https://cron.example.com?x=1", "https://cron.example.com"), ("javascript:alert(1)", ""),
    ("https://evil.example.com\" onload=\"x/", ""), (None, ""), ("", ""),
], ids=["port", "bare", "query", "script", "quote", "none", "empty"])
def test_only_an_http_origin_is_taken_from_the_page(url: object, origin: str) -> None:
    assert trigger_views.origin_of(url) == origin


def test_a_trigger_row_shows_the_real_url_and_a_curl_line_never_the_secret() -> None:
    row = schedule_views.task_row(task(), NOW, "UTC")
    view = {"path": "/hooks/tasks/abc_DEF", "created_at": "2026-03-27T11:55:00Z", "created_by": "ann@example.com"}
    trigger_views.apply([row], {7: view}, "https://cron.example.com", NOW)
    assert row.trigger_url == "https://cron.example.com/hooks/tasks/abc_DEF"
    assert row.trigger_curl.startswith("curl -X POST https://cron.example.com/hooks/tasks/abc_DEF ")
    assert "Authorization: Bearer <secret>" in row.trigger_curl
    assert row.trigger_since == "made 5 min ago by ann@example.com"
    other = schedule_views.task_row(task(id=8), NOW, "UTC")
    trigger_views.apply([other], {7: view}, "https://cron.example.com", NOW)
    assert (other.trigger_url, other.trigger_curl) == ("", "")


def test_a_paced_next_run_says_so_and_a_scheduled_one_does_not() -> None:
    at = NOW + dt.timedelta(minutes=40)
    assert schedule_views.task_row(task(next_run_at=at, paced_at=at), NOW, "UTC").paced
    assert not schedule_views.task_row(task(next_run_at=at), NOW, "UTC").paced
    assert not schedule_views.task_row(task(next_run_at=at, paced_at=at - dt.timedelta(hours=1)), NOW, "UTC").paced
    assert not schedule_views.task_row(task(next_run_at=at, paced_at=at, status="paused"), NOW, "UTC").paced


def test_rules_that_are_not_the_defaults_are_one_quiet_line() -> None:
    assert schedule_notes.rules(task()) == ""
    assert schedule_notes.rules(task(notify_on="changes", overlap="queue_all", queue_cap=5, pace_min_seconds=1800,
                                     pace_max_seconds=14400)) == \
        "tells you only when something changed · queues up to 5 fires · the agent may pace it within 30 min – 4 h"
    assert schedule_notes.rules(task(overlap="replace", notify_on="failures")) == \
        "tells you only of failures · a new fire replaces a running one"


def run(**fields: object) -> TaskRun:
    base = {"id": 1, "task_id": 7, "occurrence_at": NOW, "claimed_at": NOW, "started_at": NOW,
            "finished_at": NOW + dt.timedelta(seconds=3), "status": "succeeded", "fire_number": 3, "run_id": 41,
            "trigger": "schedule"}
    return TaskRun(**{**base, **fields})


def test_the_history_tells_reports_trigger_calls_and_superseded_fires() -> None:
    zone = schedule_views.zone_of("UTC")
    quiet = schedule_views.run_row(run(outcome="no_change", summary="no new issues", quiet=True), zone)
    assert (quiet.label, quiet.color, quiet.summary, quiet.told) == ("nothing new", "gray", "no new issues",
                                                                      "told nobody")
    changed = schedule_views.run_row(run(outcome="changed", summary="2 new issues"), zone)
    assert (changed.label, changed.summary, changed.told) == ("succeeded", "2 new issues", "")
    hook = schedule_views.run_row(run(trigger="hook"), zone)
    assert hook.trigger == "trigger URL"
    replaced = schedule_views.run_row(run(status="superseded", quiet=True, error="superseded by fire 9"), zone)
    assert (replaced.label, replaced.color, replaced.error_color, replaced.told) == ("superseded", "gray", "gray", "")
    assert outcomes.report_label("failed", "no_change") == "failed"  # a failure is never "nothing new"


def rows(*specs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"id": str(i), "type": kind, "run_id": run_id, "quiet": "", "summary": ""}
            for i, (kind, run_id) in enumerate(specs)]


def test_a_quiet_fire_folds_under_its_first_row() -> None:
    shown = rows(("prompt", "40"), ("scheduled_prompt", "41"), ("assistant_text", "41"), ("run_usage", "41"),
                 ("scheduled_prompt", "42"), ("assistant_text", "42"))
    folded = quiet_fires.fold(shown, {41: "no new issues"})
    assert [(r["quiet"], r["summary"]) for r in folded] == [
        ("", ""), ("head", "no new issues"), ("body", "no new issues"), ("body", "no new issues"), ("", ""), ("", "")]
    assert shown[1]["quiet"] == ""  # a new list: the rows before are left as they were
    assert quiet_fires.fold(folded, {41: "no new issues"}) == folded  # folding again changes nothing
    assert quiet_fires.fold(shown, {}) is shown
