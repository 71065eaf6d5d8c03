"""The scheduler loop in-process (SPEC §3 "The loop", "Fire", "Completion", "Crash recovery").

A FakeClock core with the real prompt service and the demo provider; the loop is built by the
composition root and ticked by hand after the test moves the clock. Turns are awaited through
their RunHandles, then until their TaskRun has recorded the end: no test sleeps and hopes.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from sqlmodel import select

from app.agents.providers.demo import reply_for
from app.core import chats, projects
from app.core.clock import UTC, FakeClock
from app.core.context import Core
from app.core.models import Event, Membership, Run, RunSource, RunStatus, User
from app.core.turns import RunHandle
from app.schedules.model import RunOutcome, ScheduledTask, SchedulerInstance, TaskRun, TaskStatus
from app.schedules.service import Actor, TaskService
from scheduler import claims
from scheduler.__main__ import build_loop, limits_of
from scheduler.adapters import CoreDirectory
from scheduler.loop import Loop
from tests import store
from tests.integration.apiclient import add_user

T0 = dt.datetime(2026, 1, 5, 9, 0, tzinfo=UTC)  # FakeClock's start
EVERY_MINUTE = {"kind": "interval", "every_seconds": 60}
BUSY = "the chat was busy with another turn"
ABANDONED = "scheduler stopped before the run reported completion"


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def envelope(name: str, prompt: str, fire: str) -> str:
    """SPEC §3 "Fire", written out by hand so that a change of wording fails here."""
    return (f'[scheduled task "{name}", fire {fire}]\n\n{prompt}\n\n'
            "Continue the standing task from earlier in this chat. If the standing goal\n"
            "is complete, end your response with exactly:\n"
            "SCHEDULE_STATUS=COMPLETE\n\n"
            "Otherwise, report the current status and what remains. The backend will\n"
            "manage this schedule.")


@dataclasses.dataclass
class Rig:
    """Alice's project and chat, the task service and a loop named ``sched:test`` on one FakeClock core."""

    core: Core
    clock: FakeClock
    loop: Loop
    tasks: TaskService
    alice: User
    project: int
    chat: int

    def new_chat(self, title: str) -> int:
        return chats.create_chat(self.core.db, self.clock, self.alice, self.project, title).id

    def create(self, chat: int | None = None, **fields: Any) -> int:
        spec = {"name": "Build watch", "prompt": "Check the nightly build.", "schedule": EVERY_MINUTE, **fields}
        task, created = self.tasks.create(Actor(self.alice), chat or self.chat, spec)
        assert created
        return task.id

    def move_to(self, seconds: float) -> None:
        self.clock.set(at(seconds))

    def tick(self) -> None:
        """One loop iteration, then wait until every scheduled turn it started has been reported."""
        self.loop.tick()
        settle(self.core)

    def task(self, task_id: int) -> ScheduledTask:
        with self.core.db.read() as s:
            return s.get(ScheduledTask, task_id)

    def task_runs(self, task_id: int) -> list[TaskRun]:
        with self.core.db.read() as s:
            return list(s.exec(select(TaskRun).where(TaskRun.task_id == task_id).order_by(TaskRun.id)))

    def fired_runs(self, chat: int | None = None) -> list[Run]:
        """Chat runs started by a schedule, oldest first."""
        with self.core.db.read() as s:
            query = select(Run).where(Run.source == RunSource.SCHEDULE.value).order_by(Run.id)
            return list(s.exec(query if chat is None else query.where(Run.chat_id == chat)))

    def events(self, run_id: int) -> list[Event]:
        with self.core.db.read() as s:
            return list(s.exec(select(Event).where(Event.run_id == run_id).order_by(Event.id)))

    def user_turn(self, text: str) -> RunHandle:
        """A user's prompt in the rig's chat, started now."""
        return self.core.prompts.start(self.chat, text, source=RunSource.USER)


def settle(core: Core, timeout: float = 10.0) -> None:
    """Wait for every scheduled turn in flight, then for its TaskRun to leave ``running``.

    A handle leaves ``running()`` just before the scheduler's finish callback records the
    TaskRun, hence the bounded poll on that row after the handles.
    """
    with core.db.read() as s:
        fired = set(s.exec(select(Run.id).where(Run.source == RunSource.SCHEDULE.value,
                                                Run.status == RunStatus.RUNNING.value)))
    for handle in core.prompts.running():
        if handle.run_id in fired:
            assert handle.wait(timeout) is not None, f"turn {handle.run_id} did not finish in {timeout} s"
    deadline = time.monotonic() + timeout
    unreported = (select(TaskRun.id).join(Run, Run.id == TaskRun.run_id)
                  .where(TaskRun.status == RunOutcome.RUNNING.value, Run.status != RunStatus.RUNNING.value))
    while True:
        with core.db.read() as s:
            if not list(s.exec(unreported)):
                return
        assert time.monotonic() < deadline, "a finished turn was never recorded on its TaskRun"
        time.sleep(0.01)


def build_rig(core: Core, clock: FakeClock) -> Rig:
    alice = add_user(core, "alice@example.com")
    project = projects.create_project(core.db, clock, core.settings.workspaces_dir, "Alice's", alice)
    chat = chats.create_chat(core.db, clock, alice, project.id, "Plans")
    return Rig(core, clock, build_loop(core, "sched:test"), TaskService(core.db, clock, core.settings), alice,
               project.id, chat.id)


# -- firing ------------------------------------------------------------------------------------


def test_due_interval_task_fires_as_a_turn_with_the_exact_envelope(rig_with: Callable[..., Rig]) -> None:
    # words 20 ms apart: the output batcher writes every 50 ms, so the reply arrives in several chunks
    rig = rig_with(demo_word_delay_seconds=0.02)
    task_id = rig.create()
    rig.move_to(59)
    rig.tick()
    assert rig.fired_runs() == [] and rig.task_runs(task_id) == []  # not a second early

    rig.move_to(60)
    rig.tick()
    [run] = rig.fired_runs()
    sent = envelope("Build watch", "Check the nightly build.", "1/∞")
    assert (run.chat_id, run.task_id, run.status, run.prompt) == (rig.chat, task_id, "succeeded", sent)
    events = rig.events(run.id)
    assert events[0].type == "scheduled_prompt" and events[0].text == sent
    assert "prompt" not in [e.type for e in events]
    streamed = [e.text for e in events if e.type == "assistant_text"]
    assert len(streamed) > 1, "the reply is streamed, not written in one piece"
    assert "".join(streamed) == reply_for(sent) == run.output
    assert events[-1].type == "run_finished"
    task = rig.task(task_id)
    assert (task.status, task.run_count, task.last_run_status) == ("active", 1, "succeeded")
    assert (task.last_run_at, task.next_run_at, task.active_run_id) == (at(60), at(120), None)


def test_task_run_records_the_nominal_occurrence_and_the_actual_start(rig: Rig) -> None:
    task_id = rig.create()
    rig.move_to(75)  # fifteen seconds late
    rig.tick()
    [row] = rig.task_runs(task_id)
    [run] = rig.fired_runs()
    assert (row.occurrence_at, row.claimed_at, row.started_at, row.finished_at) == (at(60), at(75), at(75), at(75))
    assert (row.status, row.trigger, row.fire_number, row.attempts, row.run_id) == (
        "succeeded", "schedule", 1, 1, run.id)


def test_after_downtime_an_overdue_task_fires_once_and_next_run_is_after_now(rig: Rig) -> None:
    task_id = rig.create()
    rig.move_to(5 * 60 + 10)  # five occurrences missed while the scheduler was down
    rig.tick()
    rig.tick()
    assert len(rig.fired_runs()) == 1
    [row] = rig.task_runs(task_id)
    assert row.occurrence_at == at(60)
    task = rig.task(task_id)
    assert task.next_run_at == at(6 * 60) and task.next_run_at > rig.clock.now()
    assert task.run_count == 1


# -- a busy chat -------------------------------------------------------------------------------


def test_queue_one_meeting_a_users_turn_is_requeued_and_the_same_task_run_fires_later(rig: Rig) -> None:
    task_id = rig.create(overlap="queue_one")
    rig.move_to(60)
    user = rig.user_turn("/sleep 30")
    rig.tick()
    [queued] = rig.task_runs(task_id)
    assert (queued.status, queued.attempts, queued.occurrence_at, queued.error) == ("queued", 1, at(60), BUSY)
    task = rig.task(task_id)
    assert (task.pending_run, task.retry_at, task.run_count, task.active_run_id) == (True, at(60 + 15), 0, None)
    assert (task.status, task.last_run_status) == ("active", "queued")
    assert rig.fired_runs() == []

    user.cancel.set()
    assert user.wait(10) is not None
    rig.move_to(74)  # the chat is free, but the retry time has not come
    rig.tick()
    assert rig.fired_runs() == [] and rig.task_runs(task_id)[0].status == "queued"

    rig.move_to(75)
    rig.tick()
    [fired] = rig.task_runs(task_id)
    [run] = rig.fired_runs()
    assert fired.id == queued.id
    assert (fired.status, fired.attempts, fired.occurrence_at, fired.started_at, fired.run_id) == (
        "succeeded", 2, at(60), at(75), run.id)
    task = rig.task(task_id)
    assert (task.pending_run, task.retry_at, task.run_count, task.last_run_status) == (False, None, 1, "succeeded")


def test_skip_meeting_a_users_turn_records_a_failed_task_run(rig: Rig) -> None:
    task_id = rig.create(overlap="skip")
    rig.move_to(60)
    user = rig.user_turn("/sleep 30")
    rig.tick()
    [failed] = rig.task_runs(task_id)
    assert (failed.status, failed.error, failed.occurrence_at, failed.finished_at) == ("failed", BUSY, at(60), at(60))
    task = rig.task(task_id)
    assert (task.status, task.last_run_status, task.pending_run, task.retry_at) == ("active", "failed", False, None)
    assert (task.run_count, task.next_run_at) == (0, at(120))

    user.cancel.set()
    assert user.wait(10) is not None
    rig.move_to(75)
    rig.tick()
    assert rig.fired_runs() == []  # nothing was queued
    rig.move_to(120)
    rig.tick()
    assert [(r.occurrence_at, r.status) for r in rig.task_runs(task_id)] == [(at(60), "failed"), (at(120), "succeeded")]


def test_two_tasks_due_together_in_one_chat_fire_one_after_the_other(rig: Rig) -> None:
    first = rig.create(name="First", prompt="/sleep 1\nFirst job.")  # a turn that takes a second
    rig.move_to(1)
    second = rig.create(name="Second", prompt="Second job.")
    rig.move_to(61)
    rig.loop.tick()
    assert [r.status for r in rig.task_runs(first)] == ["running"]
    assert rig.task_runs(second) == []
    waiting = rig.task(second)
    assert (waiting.pending_run, waiting.last_run_status, waiting.run_count) == (True, "queued", 0)

    settle(rig.core)
    rig.tick()  # the chat is free again: the queued follow-up fires now
    [done] = rig.task_runs(first)
    [follow_up] = rig.task_runs(second)
    assert (follow_up.status, follow_up.occurrence_at, follow_up.trigger) == ("succeeded", at(61), "follow_up")
    runs = rig.fired_runs(rig.chat)
    assert [r.task_id for r in runs] == [first, second]
    assert runs[0].finished_at <= runs[1].started_at
    assert (rig.task(second).pending_run, rig.task(second).run_count) == (False, 1)


def test_global_cap_makes_a_due_task_in_another_chat_wait(rig_with: Callable[..., Rig]) -> None:
    r = rig_with(max_concurrent_runs=1)
    other_chat = r.new_chat("Other")
    first = r.create(name="First", prompt="/sleep 1\nFirst job.")
    r.move_to(1)
    second = r.create(chat=other_chat, name="Second")
    r.move_to(61)
    r.loop.tick()
    assert [x.status for x in r.task_runs(first)] == ["running"]
    assert r.task_runs(second) == [] and r.fired_runs(other_chat) == []
    waiting = r.task(second)
    assert (waiting.next_run_at, waiting.pending_run, waiting.run_count) == (at(61), False, 0)

    settle(r.core)
    r.tick()
    [row] = r.task_runs(second)
    assert (row.status, row.occurrence_at, row.trigger) == ("succeeded", at(61), "schedule")
    assert len(r.fired_runs(other_chat)) == 1


# -- run now, completion, bounds ---------------------------------------------------------------


def test_run_now_on_a_paused_task_fires_once_and_it_stays_paused(rig: Rig) -> None:
    task_id = rig.create(schedule={"kind": "interval", "every_seconds": 3600})
    rig.tasks.pause(Actor(rig.alice), task_id)
    rig.move_to(10)
    rig.tasks.run_now(Actor(rig.alice), task_id)
    rig.tick()
    [row] = rig.task_runs(task_id)
    assert (row.status, row.trigger, row.occurrence_at) == ("succeeded", "run_now_user", at(10))
    assert row.requested_by == rig.alice.email  # the fire card says "Run now by <who>"
    task = rig.task(task_id)
    assert (task.status, task.next_run_at, task.pending_run, task.run_count) == ("paused", at(3600), False, 1)
    rig.move_to(20)
    rig.tick()
    rig.move_to(3600)
    rig.tick()
    assert len(rig.fired_runs()) == 1


def test_marker_at_the_end_of_the_reply_completes_the_task(rig: Rig) -> None:
    task_id = rig.create(prompt="/marker")
    rig.move_to(60)
    rig.tick()
    [run] = rig.fired_runs()
    assert run.output.splitlines()[-1] == "SCHEDULE_STATUS=COMPLETE"
    task = rig.task(task_id)
    assert (task.status, task.last_run_status, task.next_run_at) == ("completed", "succeeded", None)
    rig.move_to(120)
    rig.tick()
    assert len(rig.fired_runs()) == 1


def test_max_runs_two_is_exhausted_after_two_fires(rig: Rig) -> None:
    task_id = rig.create(max_runs=2)
    rig.move_to(60)
    rig.tick()
    assert rig.task(task_id).status == "active"
    rig.move_to(120)
    rig.tick()
    task = rig.task(task_id)  # exhausted as soon as the second fire ends, not at the next deadline
    assert (task.status, task.run_count, task.next_run_at, task.last_run_status) == ("exhausted", 2, None, "succeeded")
    for seconds in (180, 240):
        rig.move_to(seconds)
        rig.tick()
    runs = rig.fired_runs()
    assert [rig.events(r.id)[0].text.splitlines()[0] for r in runs] == [
        '[scheduled task "Build watch", fire 1/2]', '[scheduled task "Build watch", fire 2/2]']


def test_once_task_is_completed_after_its_fire(rig: Rig) -> None:
    task_id = rig.create(schedule={"kind": "once", "at": "2026-01-05T09:00:30Z"})
    rig.move_to(29)
    rig.tick()
    assert rig.fired_runs() == []
    rig.move_to(30)
    rig.tick()
    [row] = rig.task_runs(task_id)
    assert (row.status, row.occurrence_at) == ("succeeded", at(30))
    task = rig.task(task_id)
    assert (task.status, task.next_run_at, task.run_count) == ("completed", None, 1)
    [run] = rig.fired_runs()
    assert run.prompt == envelope("Build watch", "Check the nightly build.", "1/1")  # SPEC §16: a once task


def test_a_once_task_run_early_fires_again_on_time_and_says_so(rig: Rig) -> None:
    task_id = rig.create(schedule={"kind": "once", "at": "2026-01-05T09:00:30Z"})
    rig.move_to(5)
    rig.tasks.run_now(Actor(rig.alice), task_id)
    rig.tick()
    assert rig.task(task_id).status == "active"  # a forced run is an extra: the scheduled one still comes
    rig.move_to(65)  # the minimum interval (60 s) counts from the forced fire
    rig.tick()
    prompts = [run.prompt.splitlines()[0] for run in rig.fired_runs()]
    assert prompts == ['[scheduled task "Build watch", fire 1/1]', '[scheduled task "Build watch", fire 2/2]']
    assert rig.task(task_id).status == "completed"


def test_failing_fires_back_off_and_five_in_a_row_put_the_task_in_error(rig_with: Callable[..., Rig]) -> None:
    r = rig_with(failure_backoff_seconds=100, failure_backoff_cap_seconds=250)
    task_id = r.create(prompt="/fail")
    gaps = []
    r.move_to(60)
    for fire in range(1, 6):
        r.tick()
        assert [x.status for x in r.task_runs(task_id)] == ["failed"] * fire
        task = r.task(task_id)
        if task.status != TaskStatus.ACTIVE.value:
            break
        gaps.append((task.next_run_at - r.clock.now()).total_seconds())
        if fire == 1:
            r.move_to(120)  # the regular occurrence falls inside the back-off: it waits
            r.tick()
            assert len(r.task_runs(task_id)) == 1
        r.clock.set(task.next_run_at)
    assert fire == 5
    assert gaps == [100, 200, 250, 250]  # min(base·2^(k-1), cap)
    task = r.task(task_id)
    assert (task.status, task.last_error, task.last_run_status) == (
        "error", "paused after 5 consecutive failures", "failed")
    assert task.next_run_at is None
    assert {x.error for x in r.task_runs(task_id)} == {"demo failure requested with /fail"}


def test_fresh_session_fire_is_seeded_with_the_previous_fires_output(rig: Rig) -> None:
    rig.create(session="fresh", prompt="Summarise the inbox.")
    for seconds in (60, 120):
        rig.move_to(seconds)
        rig.tick()
    first, second = rig.fired_runs()
    assert first.status == second.status == "succeeded"
    assert rig.events(second.id)[0].text == envelope("Build watch", "Summarise the inbox.", "2/∞")
    assert second.prompt.startswith(rig.events(second.id)[0].text)
    assert first.output in second.prompt


# -- fire-time authorization, crash recovery, history, delete ----------------------------------


def test_owner_without_access_at_fire_time_puts_the_task_in_error(rig: Rig) -> None:
    task_id = rig.create()
    with rig.core.db.write() as s:
        s.exec(sa.delete(Membership).where(Membership.user_id == rig.alice.id, Membership.project_id == rig.project))
    rig.move_to(60)
    rig.tick()
    task = rig.task(task_id)
    assert task.status == "error"
    assert task.last_error == "the owner alice@example.com no longer has access to the project"
    rig.move_to(120)
    rig.tick()
    assert rig.fired_runs() == []


def test_claims_of_a_dead_scheduler_are_abandoned_and_nothing_is_refired(rig: Rig) -> None:
    recurring = rig.create(name="Recurring")
    once = rig.create(chat=rig.new_chat("Once"), name="Once", schedule={"kind": "once", "at": "2026-01-05T09:00:30Z"})
    bounded = rig.create(chat=rig.new_chat("Bounded"), name="Bounded", max_runs=1)
    alive = rig.create(chat=rig.new_chat("Alive"), name="Held by a live scheduler")
    rig.move_to(60)
    with rig.core.db.write() as s:
        for instance in ("sched:dead", "sched:alive"):
            s.add(SchedulerInstance(id=instance, started_at=at(0), heartbeat_at=at(60)))
    limits, directory = limits_of(rig.core.settings), CoreDirectory(rig.core.db)
    held = {}
    for task_id in (recurring, once, bounded, alive):  # claimed, then the process died before starting them
        instance = "sched:alive" if task_id == alive else "sched:dead"
        held[task_id] = store.claim(rig.core.db, at(60), task_id, instance, directory, limits).task_run_id
    rig.move_to(70)  # the dead instance's lease (5 s) has run out; the live one beats again
    with rig.core.db.write() as s:
        s.exec(sa.update(SchedulerInstance).where(SchedulerInstance.id == "sched:alive").values(heartbeat_at=at(70)))

    abandoned = claims.recover(rig.core.db, at(70), rig.core.settings.run_lease_seconds)
    assert sorted(abandoned) == sorted(held[t] for t in (recurring, once, bounded))
    for task_id in (recurring, once, bounded):
        [row] = rig.task_runs(task_id)
        assert (row.status, row.error, row.finished_at) == ("abandoned", ABANDONED, at(70))
    statuses = {t: (rig.task(t).status, rig.task(t).active_run_id, rig.task(t).last_run_status)
                for t in (recurring, once, bounded)}
    assert statuses == {recurring: ("active", None, "abandoned"), once: ("error", None, "abandoned"),
                        bounded: ("exhausted", None, "abandoned")}
    assert rig.task(recurring).next_run_at == at(120)
    assert [r.status for r in rig.task_runs(alive)] == ["running"] and rig.task(alive).active_run_id == held[alive]

    rig.tick()
    assert rig.fired_runs() == []
    assert [r.status for t in (recurring, once, bounded) for r in rig.task_runs(t)] == ["abandoned"] * 3
    rig.move_to(120)  # the recurring task carries on with its next occurrence
    rig.tick()
    assert [(r.occurrence_at, r.status) for r in rig.task_runs(recurring)] == [
        (at(60), "abandoned"), (at(120), "succeeded")]


def test_history_keeps_the_newest_task_runs(rig_with: Callable[..., Rig]) -> None:
    r = rig_with(run_history_limit=3)
    task_id = r.create()
    for fire in range(1, 6):
        r.move_to(60 * fire)
        r.tick()
    rows = r.task_runs(task_id)
    assert [(x.occurrence_at, x.fire_number) for x in rows] == [(at(180), 3), (at(240), 4), (at(300), 5)]
    assert r.task(task_id).run_count == 5 and len(r.fired_runs()) == 5


@pytest.mark.parametrize("pending", ["queued-behind-a-users-turn", "run-now"])
def test_delete_cancels_a_pending_fire(rig: Rig, pending: str) -> None:
    task_id = rig.create()
    if pending == "run-now":
        rig.move_to(10)
        rig.tasks.run_now(Actor(rig.alice), task_id)
    else:
        rig.move_to(60)
        user = rig.user_turn("/sleep 30")
        rig.tick()
        assert [r.status for r in rig.task_runs(task_id)] == ["queued"]
        user.cancel.set()
        assert user.wait(10) is not None
    assert rig.task(task_id).pending_run
    rig.tasks.delete(Actor(rig.alice), task_id)
    rig.tick()
    for seconds in (75, 120):
        rig.move_to(seconds)
        rig.tick()
    assert rig.fired_runs() == [] and rig.task_runs(task_id) == [] and rig.task(task_id) is None
