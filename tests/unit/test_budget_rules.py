"""SPEC §15 as pure rules: the claim of a project whose budget is spent or held by fires in flight,
a fire's caps, a day's budget, the values an API or the CLI accepts, and the notice's delivery."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from app.attention.notify import policy
from app.core.errors import InvalidInput
from app.core.ports import Usage
from app.core.spend import Budget, Spend, next_utc_day, tokens_value, usd_value, utc_day
from app.core.turns import FireCaps
from app.schedules.model import RunOutcome, Trigger
from scheduler.decisions import Action, Facts, decide_claim
from tests.unit.test_decisions_claim import LIMITS, at, every_5_minutes, task

SPENT = "project budget spent: 51,000 of 50,000 tokens today (UTC)"
MIDNIGHT = dt.datetime(2025, 3, 11, tzinfo=dt.UTC)


def facts(**changes: object) -> Facts:
    return Facts(chat_busy=False, in_flight=0, **changes)


def test_a_due_fire_of_a_spent_project_waits_for_the_next_utc_day_as_a_deferred_follow_up() -> None:
    claim = decide_claim(task(next_run_at=at("10:05")), at("10:05:01"), facts(budget_spent=SPENT), LIMITS,
                         every_5_minutes)
    assert claim.action == Action.BUDGET and claim.note == SPENT
    assert claim.due.occurrence_at == at("10:05") and claim.due.trigger == Trigger.SCHEDULE
    changes = dict(claim.changes)
    assert changes["pending_run"] and changes["pending_occurrence_at"] == at("10:05")
    assert changes["retry_at"] == MIDNIGHT and changes["next_run_at"] == at("10:10")
    assert changes["last_run_status"] == RunOutcome.DEFERRED and changes["last_error"] == SPENT
    assert "run_count" not in changes  # nothing fired


def test_a_persons_run_now_is_not_held_by_the_budget_an_agents_is() -> None:
    person = task(next_run_at=at("11:00"), pending_run=True, pending_forced=Trigger.RUN_NOW_USER,
                  pending_occurrence_at=at("10:03"))
    assert decide_claim(person, at("10:03"), facts(budget_spent=SPENT, budget_wait=True), LIMITS,
                        every_5_minutes).action == Action.DISPATCH
    agent = task(next_run_at=at("11:00"), pending_run=True, pending_forced=Trigger.RUN_NOW_AGENT,
                 pending_occurrence_at=at("10:03"))
    claim = decide_claim(agent, at("10:03"), facts(budget_spent=SPENT), LIMITS, every_5_minutes)
    assert claim.action == Action.BUDGET and dict(claim.changes)["pending_forced"] == Trigger.RUN_NOW_AGENT


def test_fires_in_flight_that_may_take_the_rest_make_a_due_fire_wait_unrecorded() -> None:
    claim = decide_claim(task(next_run_at=at("10:05")), at("10:05"), facts(budget_wait=True), LIMITS, every_5_minutes)
    assert claim.action == Action.NOTHING and not claim.changes


def test_a_deadline_passing_while_the_follow_up_waits_for_the_budget_folds_into_it() -> None:
    waiting = task(next_run_at=at("10:10"), pending_run=True, pending_occurrence_at=at("10:05"), retry_at=MIDNIGHT)
    claim = decide_claim(waiting, at("10:10"), facts(budget_spent=SPENT), LIMITS, every_5_minutes)
    assert claim.action == Action.QUEUE and dict(claim.changes) == {"next_run_at": at("10:15")}


@pytest.mark.parametrize(("caps", "usage", "error"), [
    (FireCaps(max_tokens=10_000), Usage(input_tokens=9_000, output_tokens=1_000), None),
    (FireCaps(max_tokens=10_000), Usage(input_tokens=9_000, output_tokens=1_001),
     "budget exceeded: 10,001 tokens, over this task's cap of 10,000 per fire"),
    (FireCaps(max_tokens=10), Usage(cost_usd=5.0), None),  # no tokens reported: nothing to judge
    (FireCaps(max_cost_usd=0.5), Usage(input_tokens=10**9, cost_usd=0.51),
     "budget exceeded: $0.5100, over this task's cap of $0.5000 per fire"),
    (FireCaps(), Usage(input_tokens=10**12), None),
])
def test_a_fires_caps(caps: FireCaps, usage: Usage, error: str | None) -> None:
    assert caps.passed_by(usage) == error


def test_a_days_budget_is_spent_at_the_limit_and_whole_again_at_utc_midnight() -> None:
    assert Budget(tokens=100).spent_by(Spend(99, 9.0)) is None
    assert Budget(tokens=100).spent_by(Spend(100)) == "project budget spent: 100 of 100 tokens today (UTC)"
    assert Budget(cost_usd=2.0).spent_by(Spend(0, 2.5)) == "project budget spent: $2.50 of $2.00 today (UTC)"
    assert Budget().spent_by(Spend(10**12, 10**6)) is None and not Budget().any
    paris_evening = dt.datetime(2025, 3, 10, 23, 30, tzinfo=dt.timezone(dt.timedelta(hours=-5)))
    assert utc_day(paris_evening) == dt.date(2025, 3, 11)
    assert next_utc_day(paris_evening) == dt.datetime(2025, 3, 12, tzinfo=dt.UTC)
    assert next_utc_day(MIDNIGHT) == MIDNIGHT + dt.timedelta(days=1)


@pytest.mark.parametrize("value", [0, -1, 1.5, "7", True, 10**12 + 1])
def test_token_values_refused(value: object) -> None:
    with pytest.raises(InvalidInput, match=r"^f: must be a whole number of tokens from 1"):
        tokens_value(value, "f")


@pytest.mark.parametrize("value", [0, -0.01, float("nan"), float("inf"), "1", False, 1_000_000.01])
def test_dollar_values_refused(value: object) -> None:
    with pytest.raises(InvalidInput, match=r"^f: must be an amount in US dollars above 0"):
        usd_value(value, "f")


def test_accepted_values() -> None:
    assert tokens_value(None, "f") is None and tokens_value(10**12, "f") == 10**12
    assert usd_value(None, "f") is None and usd_value(1, "f") == 1.0 and usd_value(0.0001, "f") == 0.0001


def test_the_notice_reaches_channels_of_task_errors_and_says_why_and_until_when() -> None:
    assert policy.wants(["task.error"], "budget.spent") and policy.wants([], "budget.spent")
    assert not policy.wants(["fire.failed"], "budget.spent")
    body = policy.webhook_body("budget.spent", {"task": {"id": 3, "name": "digest"}, "reason": SPENT,
                                                "until": "2025-03-11 00:00 UTC"}, chat_id=9, at="now")
    assert json.loads(body)["budget"] == {"reason": SPENT, "until": "2025-03-11 00:00 UTC"}
    subject, text = policy.email_text(body)
    assert subject == "[chatcron] Project budget spent: fires wait until tomorrow (UTC): digest"
    assert f"Why: {SPENT}; the project's fires wait until 2025-03-11 00:00 UTC" in text


def test_a_busy_chat_is_decided_before_the_budget_overlap_skip_still_skips() -> None:
    from app.schedules.model import Overlap
    skipping = task(next_run_at=at("10:05"), overlap=Overlap.SKIP)
    busy = Facts(chat_busy=True, in_flight=1, budget_wait=True, budget_spent=SPENT)
    assert decide_claim(skipping, at("10:05"), busy, LIMITS, every_5_minutes).action == Action.SKIP


def test_a_huge_integer_is_refused_not_overflowed() -> None:
    with pytest.raises(InvalidInput):
        usd_value(10**400, "f")
