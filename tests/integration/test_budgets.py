"""Budgets (SPEC §15) in the scheduler loop, on a fake clock, both stores.

A provider that reports its usage as it streams (one report per step, cumulative) stands for the
agent: the model is the only stand-in here; the prompt service, the ledger, the claim and the loop
are the product's. Per-fire caps cancel the turn within one report; a project whose fires spent its
daily budget defers the rest of the day's fires and goes on after 00:00 UTC.
"""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

import pytest
import sqlalchemy as sa
from sqlmodel import select

from app.attention.inbox import inbox
from app.core.clock import UTC
from app.core.models import Event, EventType, Project, Run, RunStatus, UsageDay
from app.core.ports import Emit, ProviderError, TurnRequest, Usage, stream_of
from app.core.spend import Spend, add_spend_in, projects_spent, utc_day
from app.core.wake import NullWaker
from app.schedules.budgets import set_budget
from app.schedules.model import RunOutcome, ScheduledTask, TaskRun, TaskStatus
from app.schedules.service import Actor
from scheduler.budgets import ProjectBudgets
from tests.integration.test_scheduler_loop import Rig, at, settle

EVERY_TEN = {"kind": "interval", "every_seconds": 600}
NEXT_DAY = dt.datetime(2026, 1, 6, 0, 0, tzinfo=UTC)


class Spender:
    """Streams ``steps`` steps; after each reports the turn's usage so far; stops at a cancel."""

    name = "spender"

    def __init__(self, tokens: int, steps: int = 1, cost: float | None = None) -> None:
        self.tokens, self.steps, self.cost = tokens, steps, cost
        self.served = 0
        self._lock = threading.Lock()
        self.gate = threading.Event()  # cleared: each turn waits for it before it ends
        self.gate.set()

    def run(self, request: TurnRequest, emit: Emit, cancel: threading.Event) -> None:
        stream = stream_of(emit)
        for step in range(1, self.steps + 1):
            if cancel.is_set():
                raise ProviderError("cancelled")
            with self._lock:
                self.served += 1
            stream(f"step {step}. ")
            stream.report_usage(Usage(input_tokens=self.tokens * step * 3 // 4, output_tokens=self.tokens * step // 4,
                                      cost_usd=None if self.cost is None else round(self.cost * step, 6)))
        assert self.gate.wait(10), "the test never let the turn end"
        stream("done")


def use(rig: Rig, provider: Any) -> None:
    rig.core.prompts.providers = lambda project: provider


def budget(rig: Rig, tokens: int | None = None, cost: float | None = None) -> None:
    set_budget(rig.core.db, rig.clock, NullWaker(), rig.project, tokens, cost)


def spent_today(rig: Rig) -> int:
    with rig.core.db.read() as s:
        return projects_spent(s.connection(), [rig.project], utc_day(rig.clock.now())).get(rig.project, Spend()).tokens


def statuses(rig: Rig, task_id: int) -> list[str]:
    return [r.status for r in rig.task_runs(task_id)]


# -- per fire --------------------------------------------------------------------------------------


def test_a_fire_past_its_token_cap_is_cancelled_within_one_report_and_backs_off(rig: Rig) -> None:
    spender = Spender(tokens=4_000, steps=10)
    use(rig, spender)
    task_id = rig.create(max_tokens_per_fire=10_000)
    rig.move_to(60)
    rig.tick()
    run = rig.fired_runs()[-1]
    assert run.status == RunStatus.FAILED.value
    assert run.error == "budget exceeded: 12,000 tokens, over this task's cap of 10,000 per fire"
    assert spender.served == 3  # the third report crossed the cap; no fourth step was streamed
    task = rig.task(task_id)
    assert task.last_run_status == RunOutcome.FAILED.value and task.consecutive_failures == 1
    assert task.next_run_at >= at(120)
    assert rig.core.prompts.start(rig.chat, "a person's turn has no cap").wait(30).status == RunStatus.SUCCEEDED


def test_a_fire_past_its_cost_cap_is_cancelled_and_recorded_as_spent(rig: Rig) -> None:
    use(rig, Spender(tokens=10, steps=10, cost=0.3))
    task_id = rig.create(max_cost_per_fire_usd=0.5)
    rig.move_to(60)
    rig.tick()
    run = rig.fired_runs()[-1]
    assert run.error == "budget exceeded: $0.6000, over this task's cap of $0.5000 per fire"
    today, total = rig.tasks.spend([task_id])[task_id]
    assert today.cost_usd == pytest.approx(0.6) and total.tokens == 20


# -- per project, per UTC day ------------------------------------------------------------------------


def test_a_spent_budget_defers_the_days_fires_once_tells_people_and_resumes_after_midnight(rig: Rig) -> None:
    spender = Spender(tokens=6_000)
    use(rig, spender)
    budget(rig, tokens=10_000)
    task_id = rig.create(schedule=EVERY_TEN, catchup_window_seconds=None)
    other = rig.create(rig.new_chat("Other"), name="Digest", schedule=EVERY_TEN, catchup_window_seconds=3600)
    rig.move_to(600)
    spender.gate.clear()  # the first fire stays in flight until the loop has decided the second
    rig.loop.tick()  # the first fire has no cap: while it is in flight it may take all that is left
    assert statuses(rig, task_id) == ["running"] and statuses(rig, other) == []
    spender.gate.set()
    settle(rig.core)
    assert statuses(rig, task_id) == ["succeeded"] and statuses(rig, other) == []
    rig.tick()  # 6,000 of 10,000 spent, nothing in flight: the second fires and takes it past the line
    assert statuses(rig, other) == ["succeeded"] and spent_today(rig) == 12_000
    rig.move_to(1200)
    rig.tick()
    for tid in (task_id, other):
        assert statuses(rig, tid) == ["succeeded", "deferred"]
        task = rig.task(tid)
        assert task.last_run_status == "deferred" and task.pending_run and task.retry_at == NEXT_DAY
        assert task.last_error == "project budget spent: 12,000 of 10,000 tokens today (UTC)"
        deferred = rig.task_runs(tid)[-1]
        assert deferred.error == task.last_error and deferred.finished_at is None
    for seconds in (1800, 2400, 6 * 3600):  # later deadlines wait in the same follow-up: no new record
        rig.move_to(seconds)
        rig.tick()
    assert statuses(rig, task_id) == ["succeeded", "deferred"] and len(rig.fired_runs()) == 2
    notices = [i for i in inbox(rig.core.db, rig.alice)["items"] if i["kind"] == "budget.spent"]
    assert len(notices) == 1 and notices[0]["error"].startswith("project budget spent")
    with rig.core.db.read() as s:
        lines = list(s.exec(select(Event.text).where(Event.type == EventType.STATUS.value,
                                                     Event.text.like("%waits: project budget spent%"))))
    assert len(lines) == 1

    rig.clock.set(NEXT_DAY)
    rig.tick()
    rig.tick()
    runs = rig.task_runs(task_id)
    assert [r.status for r in runs] == ["succeeded", "succeeded"]  # the deferred record fired (no catch-up limit)
    assert runs[-1].occurrence_at == at(1200) and runs[-1].started_at == NEXT_DAY
    late = {r.occurrence_at: r for r in rig.task_runs(other)}  # a catch-up window of an hour
    assert late[at(1200)].status == "missed"  # fifteen hours late: missed, not fired
    assert any(r.status == "succeeded" and r.started_at == NEXT_DAY for r in late.values())  # on time again


def test_a_persons_run_now_is_not_deferred_and_a_raised_budget_frees_waiting_fires(rig: Rig) -> None:
    use(rig, Spender(tokens=6_000))
    budget(rig, tokens=5_000)
    task_id = rig.create(schedule=EVERY_TEN)
    rig.core.prompts.start(rig.chat, "a person's turn").wait(30)  # people's turns count and are never blocked
    assert spent_today(rig) == 6_000
    rig.move_to(600)
    rig.tick()
    assert statuses(rig, task_id) == ["deferred"]
    rig.tasks.run_now(Actor(rig.alice), task_id)
    rig.tick()  # a person asked: it fires, as the waiting occurrence (its record is reused)
    runs = rig.task_runs(task_id)
    assert [(r.status, r.trigger, r.occurrence_at) for r in runs] == [("succeeded", "run_now_user", at(600))]
    rig.move_to(1200)
    rig.tick()
    assert statuses(rig, task_id) == ["succeeded", "deferred"]

    state = set_budget(rig.core.db, rig.clock, NullWaker(), rig.project, tokens=100_000)
    assert state.freed == 1 and state.spent_today.tokens == 12_000
    rig.tick()
    assert statuses(rig, task_id) == ["succeeded", "succeeded"]  # the deferred record fired now
    with rig.core.db.read() as s:
        assert s.get(Project, rig.project).budget_noticed_on is None


def test_fires_in_flight_hold_what_they_may_still_spend(rig: Rig) -> None:
    """The bound: a fire starts only while spend + the caps of the fires in flight (everything
    left, for one without a cap) is below the budget."""
    budget(rig, tokens=10_000)
    capped = rig.create(max_tokens_per_fire=4_000)
    open_ended = rig.create(rig.new_chat("Two"), name="Open")
    with rig.core.db.write() as s:
        add_spend_in(s, rig.clock.now(), rig.project, 0, Usage(input_tokens=1_000))
        tasks = {t.id: t for t in s.exec(select(ScheduledTask))}
        view = ProjectBudgets.read(s, rig.core.db.sqlite, tasks.values(), rig.clock.now())
        assert view.spent(tasks[capped]) is None and not view.must_wait(tasks[capped])
        view.admit(tasks[capped])  # 1,000 + 4,000 < 10,000: another may start
        assert not view.must_wait(tasks[open_ended])
        view.admit(tasks[open_ended])  # no cap: it may take all that is left
        assert view.must_wait(tasks[capped])
    with rig.core.db.write() as s:  # two fires in flight, claimed with caps of 4,000 and 4,500
        s.add(TaskRun(task_id=capped, occurrence_at=at(1), status="running", instance="x", claimed_at=at(1),
                      max_tokens=4_000))
        s.add(TaskRun(task_id=open_ended, occurrence_at=at(1), status="running", instance="x", claimed_at=at(1),
                      max_tokens=4_500))
    with rig.core.db.write() as s:
        tasks = {t.id: t for t in s.exec(select(ScheduledTask))}
        view = ProjectBudgets.read(s, rig.core.db.sqlite, tasks.values(), rig.clock.now())
        assert not view.must_wait(tasks[capped])  # 1,000 + 4,000 + 4,500 < 10,000: what they hold fits
        s.exec(sa.update(ScheduledTask).values(max_tokens_per_fire=None))  # an edit: the fires keep their caps
        view = ProjectBudgets.read(s, rig.core.db.sqlite, tasks.values(), rig.clock.now())
        assert not view.must_wait(tasks[capped])
        s.exec(sa.update(TaskRun).where(TaskRun.task_id == capped).values(max_tokens=5_000))
        view = ProjectBudgets.read(s, rig.core.db.sqlite, tasks.values(), rig.clock.now())
        assert view.must_wait(tasks[capped])  # 1,000 + 5,000 + 4,500 ≥ 10,000


def test_spend_outlives_a_deleted_chat_and_counts_by_utc_day(rig: Rig) -> None:
    use(rig, Spender(tokens=2_000))
    chat = rig.new_chat("Scratch")
    rig.core.prompts.start(chat, "spend").wait(30)
    rig.clock.set(dt.datetime(2026, 1, 5, 23, 59, 59, tzinfo=UTC))
    rig.core.prompts.start(chat, "spend again").wait(30)
    with rig.core.db.write() as s:
        s.exec(sa.delete(Event).where(Event.chat_id == chat))
        s.exec(sa.delete(Run).where(Run.chat_id == chat))
    assert spent_today(rig) == 4_000
    rig.clock.set(NEXT_DAY)
    assert spent_today(rig) == 0
    with rig.core.db.read() as s:
        rows = list(s.exec(select(UsageDay)))
    assert [(r.project_id, r.task_id, r.tokens, r.turns) for r in rows] == [(rig.project, 0, 4_000, 2)]


def test_a_task_in_error_is_not_woken_by_a_budget_change(rig: Rig) -> None:
    task_id = rig.create()
    with rig.core.db.write() as s:
        s.exec(sa.update(ScheduledTask).where(ScheduledTask.id == task_id).values(status=TaskStatus.ERROR.value))
    assert set_budget(rig.core.db, rig.clock, NullWaker(), rig.project, tokens=1).freed == 0


def test_a_paused_task_closes_its_deferred_record_and_a_waiting_once_task_run_now_completes(rig: Rig) -> None:
    use(rig, Spender(tokens=6_000))
    budget(rig, tokens=5_000)
    rig.core.prompts.start(rig.chat, "spend it").wait(30)
    task_id = rig.create(schedule=EVERY_TEN)
    once = rig.create(rig.new_chat("Once"), name="Once", schedule={"kind": "once", "at": "2026-01-05T09:05:00Z"})
    rig.move_to(600)
    rig.tick()
    assert statuses(rig, task_id) == ["deferred"] and statuses(rig, once) == ["deferred"]
    rig.tasks.pause(Actor(rig.alice), task_id, {})
    [closed] = rig.task_runs(task_id)
    assert closed.status == "skipped" and closed.finished_at == rig.clock.now()
    assert closed.error == "not fired: the task stopped waiting for it (it is paused now)"
    rig.tasks.run_now(Actor(rig.alice), once)
    rig.tick()
    [fired] = rig.task_runs(once)
    assert (fired.status, fired.trigger) == ("succeeded", "run_now_user")
    assert rig.task(once).status == TaskStatus.COMPLETED.value  # its only occurrence fired: nothing is left


def test_a_new_task_never_inherits_a_deleted_tasks_spend(rig: Rig) -> None:
    first = rig.create()
    with rig.core.db.write() as s:
        add_spend_in(s, rig.clock.now(), rig.project, first, Usage(input_tokens=500))
    rig.tasks.delete(Actor(rig.alice), first)
    second = rig.create()
    assert second != first  # ids are never given again, on SQLite too
    today, total = rig.tasks.spend([second])[second]
    assert (today.tokens, total.tokens) == (0, 0)
    assert spent_today(rig) == 500  # the project's spend stays
