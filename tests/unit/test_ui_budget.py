"""What the UI says about spend, caps and budgets (app/ui/budget_views.py) and the dialog's cap
fields (app/ui/schedule_form.py), without a browser or a database (SPEC §15)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json

import pytest

from app.core.errors import InvalidInput
from app.core.spend import Budget, Spend, tokens_value, usd_value
from app.schedules.model import ScheduledTask
from app.ui import budget_views, schedule_form, schedule_views
from app.ui.schedule_form import FormFields

NOW = dt.datetime(2026, 3, 27, 18, 47, 30, tzinfo=dt.UTC)
MIDNIGHT = dt.datetime(2026, 3, 28, tzinfo=dt.UTC)
HOURLY = {"kind": "interval", "every_seconds": 3600}


def task(**fields: object) -> ScheduledTask:
    base = {"id": 7, "chat_id": 1, "project_id": 1, "owner": "ann@example.com", "name": "digest",
            "prompt": "sum up", "schedule": json.dumps(HOURLY), "status": "active",
            "next_run_at": NOW + dt.timedelta(minutes=4), "armed_at": NOW, "created_at": NOW, "updated_at": NOW}
    return ScheduledTask(**{**base, **fields})


@pytest.mark.parametrize(("usd", "text"), [
    (0.0, "$0.00"), (0.41, "$0.41"), (3.1, "$3.10"), (1204.5, "$1,204.50"), (0.0042, "$0.0042"),
    (0.00001, "<$0.0001"),
])
def test_money_reads_as_dollars_and_keeps_a_fraction_of_a_cent(usd: float, text: str) -> None:
    assert budget_views.money(usd) == text


def test_the_spend_line_says_today_and_in_all_with_cost_only_when_known() -> None:
    assert budget_views.spend_line(Spend(12_345, 0.41), Spend(98_000, 3.1)) == \
        "Spent today 12,345 tokens · $0.41 · in all 98,000 tokens · $3.10"
    assert budget_views.spend_line(Spend(500), Spend(1500)) == "Spent today 500 tokens · in all 1,500 tokens"
    assert budget_views.spend_line(Spend(), Spend(1500, 0.2)) == "Nothing spent today · in all 1,500 tokens · $0.20"
    assert budget_views.spend_line(Spend(0, 0.05), Spend(0, 0.05)) == "Spent today $0.05 · in all $0.05"
    assert budget_views.spend_line(Spend(), Spend()) == ""  # nothing spent yet: no line


def test_caps_read_per_fire() -> None:
    assert budget_views.caps_line(10_000, 0.5) == "Cap 10,000 tokens / $0.50 per fire"
    assert budget_views.caps_line(10_000, None) == "Cap 10,000 tokens per fire"
    assert budget_views.caps_line(None, 2.0) == "Cap $2.00 per fire"
    assert budget_views.caps_line(None, None) == ""


def test_a_fire_waiting_for_the_budget_says_until_when() -> None:
    waiting = task(last_run_status="deferred", pending_run=True, retry_at=MIDNIGHT,
                   last_error="project budget spent: 51,000 of 50,000 tokens today (UTC)")
    assert budget_views.budget_wait(waiting, NOW) == \
        "Waits for the project's daily budget until 00:00 UTC (in 5 h 12 min)"
    row = schedule_views.task_row(waiting, NOW, "Europe/Paris")
    assert row.budget_wait.startswith("Waits for the project's daily budget until 00:00 UTC")
    assert row.pending == "waits for budget" and row.last_error.startswith("project budget spent")
    for calm in (task(), task(last_run_status="deferred", pending_run=False, retry_at=MIDNIGHT),
                 task(last_run_status="deferred", pending_run=True, retry_at=NOW - dt.timedelta(seconds=1)),
                 task(status="paused", last_run_status="deferred", pending_run=True, retry_at=MIDNIGHT),
                 task(last_run_status="failed", pending_run=True, retry_at=MIDNIGHT)):
        assert budget_views.budget_wait(calm, NOW) == ""


def test_the_card_row_carries_spend_and_caps() -> None:
    row = schedule_views.task_row(task(max_tokens_per_fire=10_000, max_cost_per_fire_usd=0.5), NOW, "UTC",
                                  spend=(Spend(12_345, 0.41), Spend(98_000, 3.1)))
    assert (row.spend_today, row.spend_all) == ("Spent today 12,345 tokens · $0.41", "in all 98,000 tokens · $3.10")
    assert row.caps == "Cap 10,000 tokens / $0.50 per fire"
    bare = schedule_views.task_row(task(), NOW, "UTC")
    assert (bare.spend_today, bare.spend_all, bare.caps, bare.budget_wait) == ("", "", "", "")


def test_the_chat_line_shows_the_day_against_the_budget_and_when_spent_what_waits() -> None:
    assert budget_views.chat_budget(Budget(), Spend(5_000), NOW) == budget_views.ChatBudget()
    assert budget_views.chat_budget(Budget(50_000), Spend(41_200, 1.2), NOW).text == \
        "Project budget today: 41,200 of 50,000 tokens"
    assert budget_views.chat_budget(Budget(50_000, 5.0), Spend(41_200, 1.2), NOW).text == \
        "Project budget today: 41,200 of 50,000 tokens · $1.20 of $5.00"
    spent = budget_views.chat_budget(Budget(None, 5.0), Spend(90_000, 5.01), NOW)
    assert spent.spent and spent.text == \
        "The project's daily budget is spent: scheduled fires wait until 00:00 UTC; your messages still run."
    assert spent.detail == "Today (UTC): $5.01 of $5.00"


@pytest.mark.parametrize(("typed", "value"), [("", None), ("  ", None), ("12000", 12000), ("12,000", 12000),
                                              ("1 000", 1000), ("-5", -5), ("0", 0)])
def test_typed_tokens(typed: str, value: int | None) -> None:
    assert budget_views.tokens_of(typed) == value


@pytest.mark.parametrize(("typed", "value"), [("", None), ("0.5", 0.5), ("$2", 2.0), (".25", 0.25),
                                              ("1,000.50", 1000.5), ("-1", -1.0), ("1e400", float("inf"))])
def test_typed_cost(typed: str, value: float | None) -> None:
    assert budget_views.cost_of(typed) == value


@pytest.mark.parametrize("typed", ["abc", "12.5", "1e3", "ten", "0x10"])
def test_tokens_that_are_no_whole_number_are_refused_by_name(typed: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        budget_views.tokens_of(typed)
    assert caught.value.field == "max_tokens_per_fire"
    assert schedule_form.explain(caught.value) == \
        "Max tokens per fire: must be a whole number of tokens (leave it empty for no cap)"


@pytest.mark.parametrize("typed", ["lots", "nan", "inf", "$", "1.2.3", "--1"])
def test_a_cost_that_is_no_amount_is_refused_by_name(typed: str) -> None:
    if typed == "$":  # only the sign: an empty field
        assert budget_views.cost_of(typed) is None
        return
    with pytest.raises(InvalidInput) as caught:
        budget_views.cost_of(typed)
    assert caught.value.field == "max_cost_per_fire_usd"
    assert schedule_form.explain(caught.value).startswith("Max cost per fire: must be an amount in US dollars")


@pytest.mark.parametrize(("field", "value"), [("max_tokens_per_fire", -5), ("max_tokens_per_fire", 0),
                                              ("max_tokens_per_fire", 10**13)])
def test_out_of_range_tokens_are_refused_in_the_services_words_as_the_dialog_says_them(field: str,
                                                                                      value: int) -> None:
    with pytest.raises(InvalidInput) as caught:
        tokens_value(value, field)
    assert schedule_form.explain(caught.value) == ("Max tokens per fire: must be a whole number of tokens from 1 to "
                                                   "1,000,000,000,000 (leave it empty for no cap)")


@pytest.mark.parametrize("value", [-1.0, 0.0, 2_000_000.0, float("inf")])
def test_out_of_range_costs_are_refused_by_name(value: float) -> None:
    with pytest.raises(InvalidInput) as caught:
        usd_value(value, "max_cost_per_fire_usd")
    assert schedule_form.explain(caught.value).startswith("Max cost per fire: must be an amount in US dollars above 0")


def test_the_form_sends_caps_and_an_empty_field_clears_one() -> None:
    fields = FormFields(name="digest", prompt="sum up", cap_tokens="10,000", cap_cost="0.50")
    body = schedule_form.body_of(fields)
    assert (body["max_tokens_per_fire"], body["max_cost_per_fire_usd"]) == (10_000, 0.5)
    assert schedule_form.body_of(FormFields(name="x", prompt="y"))["max_tokens_per_fire"] is None


def test_an_edit_shows_the_caps_and_sends_only_a_changed_one() -> None:
    stored = task(max_tokens_per_fire=10_000, max_cost_per_fire_usd=0.5)
    fields = schedule_form.fields_of(stored, "UTC")
    assert (fields.cap_tokens, fields.cap_cost) == ("10000", "0.5")
    assert schedule_form.timing_set(fields)  # the advanced options open on a task with caps
    original = schedule_form.original_of(stored)
    assert schedule_form.patch_of(fields, original) == {}
    cleared = dataclasses.replace(fields, cap_tokens="")
    assert schedule_form.patch_of(cleared, original) == {"max_tokens_per_fire": None}


@pytest.mark.parametrize("value", [0.5, 12.0, 1e-7, 0.1 + 0.2, 999_999.99])
def test_a_stored_cost_shows_as_text_that_reads_back_the_same(value: float) -> None:
    assert budget_views.cost_of(budget_views.cost_input(value)) == value


def test_cap_errors_open_the_advanced_options_and_outline_their_input() -> None:
    assert {"cap_tokens", "cap_cost"} <= schedule_form.ADVANCED
    assert schedule_form.INPUTS["max_tokens_per_fire"] == "cap_tokens"
    assert schedule_form.INPUTS["max_cost_per_fire_usd"] == "cap_cost"
    assert schedule_form.typed("cap_cost", "0.5", 100) == ("cap_cost", "0.5")
