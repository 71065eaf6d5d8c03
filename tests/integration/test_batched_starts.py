"""Turns started in batches: ``PromptService.start_many`` and its hooks, and the scheduler's
``claims.claim_many`` driven through the loop, on both databases.

The demo provider answers; a turn is kept busy either with ``/sleep N`` (cancelled through its
handle) or, for scheduled turns, by a gate wrapped around the provider that the test opens. Every
wait is on a handle, an event or a bounded poll.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlmodel import Session, select

from app.agents.providers.demo import reply_for
from app.core import chats
from app.core.context import Core
from app.core.errors import NotFound, PromptAlreadyRunning
from app.core.models import Chat, Event, Run, RunStatus, User
from app.core.turns import RunHandle, RunResult, TurnSpec
from app.schedules.model import ScheduledTask, TaskRun
from scheduler.loop import CLAIM_BATCH
from tests.integration.apiclient import add_user
from tests.integration.test_scheduler_loop import Rig, at, settle

WAIT = 30.0
MISSING_CHAT = 987_654


def wait_until(condition: Callable[[], bool], timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def finished(handle: RunHandle) -> RunResult:
    result = handle.wait(WAIT)
    assert result is not None, f"turn {handle.run_id} did not finish in {WAIT} s"
    return result


def run_events(core: Core, run_id: int) -> list[Event]:
    with core.db.read() as s:
        return list(s.exec(select(Event).where(Event.run_id == run_id).order_by(Event.id)))


def assert_transcript_in_order(core: Core, run_id: int, prompt: str, reply: str) -> None:
    events = run_events(core, run_id)
    kinds = [e.type for e in events]
    assert kinds[:2] == ["prompt", "run_started"] and kinds[-1] == "run_finished", kinds
    assert set(kinds[2:-1]) == {"assistant_text"}, kinds
    assert events[0].text == prompt and events[-1].text == "succeeded"
    assert "".join(e.text for e in events[2:-1]) == reply


def nothing_written_for(core: Core, text: str) -> bool:
    with core.db.read() as s:
        runs = list(s.exec(select(Run.id).where(Run.prompt == text)))
        events = list(s.exec(select(Event.id).where(Event.text == text)))
    return runs == [] and events == []


def run_status(core: Core, run_id: int) -> str | None:
    with core.db.read() as s:
        run = s.get(Run, run_id)
    return run.status if run else None


def counts(core: Core) -> tuple[int, int]:
    with core.db.read() as s:
        return (s.exec(select(sa.func.count()).select_from(Run)).one(),
                s.exec(select(sa.func.count()).select_from(Event)).one())


@dataclasses.dataclass
class Loose:
    core: Core
    owner: User

    def chat(self, title: str) -> int:
        return chats.create_chat(self.core.db, self.core.clock, self.owner, None, title).id


@pytest.fixture
def loose(core: Core) -> Loose:
    return Loose(core, add_user(core, "owner@example.com"))


# -- PromptService.start_many ------------------------------------------------------------------


def test_start_many_starts_what_it_can_and_refuses_the_rest_with_their_own_errors(core: Core, loose: Loose) -> None:
    good, twice, busy = loose.chat("Good"), loose.chat("Twice"), loose.chat("Busy")
    holder = core.prompts.start(busy, "/sleep 300")  # the busy chat's turn, kept running
    texts = {"good": "Hello from the good chat.", "missing": "Nobody is there.", "first": "First of two.",
             "second": "Second of two.", "busy": "Behind a running turn."}
    specs = [TurnSpec(good, texts["good"]), TurnSpec(MISSING_CHAT, texts["missing"]),
             TurnSpec(twice, texts["first"]), TurnSpec(twice, texts["second"]), TurnSpec(busy, texts["busy"])]
    try:
        results = core.prompts.start_many(specs)
        assert len(results) == len(specs)
        started, missing, first, second, behind = results
        assert isinstance(started, RunHandle) and started.chat_id == good
        assert isinstance(missing, NotFound) and str(missing) == f"no chat with id {MISSING_CHAT}"
        assert isinstance(first, RunHandle) and first.chat_id == twice
        assert isinstance(second, PromptAlreadyRunning)
        assert isinstance(behind, PromptAlreadyRunning)

        for handle, text in ((started, texts["good"]), (first, texts["first"])):
            result = finished(handle)
            assert (result.run_id, result.status, result.error) == (handle.run_id, RunStatus.SUCCEEDED, None)
            assert result.output == reply_for(text)
            assert_transcript_in_order(core, handle.run_id, text, reply_for(text))
        for refused in ("missing", "second", "busy"):
            assert nothing_written_for(core, texts[refused]), f"the refused {refused} spec wrote something"
        assert run_status(core, holder.run_id) == "running"  # the holder was not disturbed
    finally:
        holder.cancel.set()
    held = finished(holder)
    assert (held.status, held.error) == (RunStatus.FAILED, "cancelled while sleeping")


def test_start_many_with_only_refused_specs_starts_nothing(core: Core, loose: Loose) -> None:
    busy = loose.chat("Busy")
    holder = core.prompts.start(busy, "/sleep 300")
    runs_before = counts(core)[0]  # (the holder's events keep coming: only the refused texts are checked)
    hooked: list[list[tuple[TurnSpec, Run]]] = []
    try:
        results = core.prompts.start_many([TurnSpec(MISSING_CHAT, "Refused: no chat."),
                                           TurnSpec(busy, "Refused: busy.")],
                                          started=lambda s, pairs: hooked.append(list(pairs)))
        assert [type(r) for r in results] == [NotFound, PromptAlreadyRunning]
        assert counts(core)[0] == runs_before
        assert nothing_written_for(core, "Refused: no chat.") and nothing_written_for(core, "Refused: busy.")
        assert hooked in ([], [[]])  # at most once, and with no started turn
    finally:
        holder.cancel.set()
    finished(holder)


def test_start_many_of_no_specs_returns_nothing(core: Core) -> None:
    assert core.prompts.start_many([]) == []


def test_a_chat_taken_by_another_process_meanwhile_refuses_only_that_spec(core: Core, loose: Loose) -> None:
    """PostgreSQL: the batch's insert meets the unique run lock of a transaction that committed
    meanwhile; the batch is rolled back and started again one by one."""
    if core.db.sqlite:
        pytest.skip("SQLite serializes writers (BEGIN IMMEDIATE): this race needs PostgreSQL")
    x, y = loose.chat("X"), loose.chat("Y")
    now = core.clock.now()
    hooked: list[list[int]] = []
    outcome: dict[str, Any] = {}
    elsewhere = Session(core.db.engine)  # another process, taking Y's lock without committing yet
    elsewhere.add(Run(chat_id=y, source="user", status="running", prompt="Taken elsewhere.", instance="other",
                      started_at=now, heartbeat_at=now + dt.timedelta(hours=1)))
    elsewhere.flush()
    xid = elsewhere.exec(sa.text("SELECT txid_current() % 4294967296")).one()[0]

    def start() -> None:
        try:
            outcome["results"] = core.prompts.start_many(
                [TurnSpec(x, "Batch turn in X."), TurnSpec(y, "Batch turn in Y.")],
                lambda s, pairs: hooked.append([run.chat_id for _, run in pairs]))
        except BaseException as exc:  # noqa: BLE001 - reported below
            outcome["error"] = exc

    thread = threading.Thread(target=start)
    thread.start()
    try:
        def waiting_on_a_lock() -> bool:
            with core.db.read() as s:
                return s.exec(sa.text("SELECT count(*) FROM pg_locks WHERE locktype = 'transactionid' AND NOT granted"
                                      " AND transactionid::text = :xid").bindparams(xid=str(xid))).one()[0] > 0

        wait_until(waiting_on_a_lock)  # the batch's insert into Y waits for the other transaction
    finally:
        elsewhere.commit()
        elsewhere.close()
    thread.join(WAIT)
    assert not thread.is_alive() and "error" not in outcome, outcome.get("error")
    started, refused = outcome["results"]
    assert isinstance(started, RunHandle) and started.chat_id == x
    assert isinstance(refused, PromptAlreadyRunning)
    assert finished(started).status == RunStatus.SUCCEEDED
    assert_transcript_in_order(core, started.run_id, "Batch turn in X.", reply_for("Batch turn in X."))
    assert nothing_written_for(core, "Batch turn in Y.")
    assert [chats_ for chats_ in hooked if chats_] == [[x]]  # the rolled-back batch's hook call left nothing


def test_started_hook_runs_once_inside_the_transaction_that_begins_the_turns(core: Core, loose: Loose) -> None:
    a, b = loose.chat("A"), loose.chat("B")
    spec_a, spec_b, refused = TurnSpec(a, "Turn in A."), TurnSpec(b, "Turn in B."), TurnSpec(b, "Refused in B.")
    calls: list[dict[str, Any]] = []

    def started(s: Session, pairs: list[tuple[TurnSpec, Run]]) -> None:
        ids = [run.id for _, run in pairs]
        with core.db.read() as other:  # another connection: the begun turns are not committed yet
            seen_outside = list(other.exec(select(Run.id).where(Run.id.in_(ids))))
        seen_inside = list(s.exec(select(Run.id).where(Run.id.in_(ids), Run.status == "running")))
        prompts_inside = list(s.exec(select(Event.run_id).where(Event.run_id.in_(ids), Event.type == "prompt")))
        chat = s.get(Chat, a)
        chat.title = "Marked by the hook"  # the hook's own write commits with the turns
        s.add(chat)
        calls.append({"pairs": list(pairs), "outside": seen_outside, "inside": sorted(seen_inside),
                      "prompts": sorted(prompts_inside)})

    results = core.prompts.start_many([spec_a, spec_b, refused], started)
    handles = [r for r in results if isinstance(r, RunHandle)]
    assert len(handles) == 2 and isinstance(results[2], PromptAlreadyRunning)
    for handle in handles:
        assert finished(handle).status == RunStatus.SUCCEEDED

    [call] = calls
    assert [spec for spec, _ in call["pairs"]] == [spec_a, spec_b]
    assert call["pairs"][0][0] is spec_a and call["pairs"][1][0] is spec_b
    assert [run.id for _, run in call["pairs"]] == [h.run_id for h in handles]
    assert [run.chat_id for _, run in call["pairs"]] == [a, b]
    ids = sorted(h.run_id for h in handles)
    assert call["outside"] == []
    assert call["inside"] == ids and call["prompts"] == ids
    with core.db.read() as s:
        assert s.get(Chat, a).title == "Marked by the hook"


def test_a_started_hook_that_raises_writes_nothing_and_leaves_the_chats_free(core: Core, loose: Loose) -> None:
    a, b = loose.chat("A"), loose.chat("B")
    before = counts(core)

    def started(s: Session, pairs: list[tuple[TurnSpec, Run]]) -> None:
        chat = s.get(Chat, a)
        chat.title = "Never committed"
        s.add(chat)
        raise RuntimeError("the hook failed")

    with pytest.raises(RuntimeError, match="the hook failed"):
        core.prompts.start_many([TurnSpec(a, "Doomed A."), TurnSpec(b, "Doomed B.")], started)
    assert counts(core) == before  # no runs, no events
    assert core.prompts.running() == []
    with core.db.read() as s:
        assert s.get(Chat, a).title == "A"
    handle = core.prompts.start(a, "Afterwards.")  # the chat's lock was never taken
    assert finished(handle).status == RunStatus.SUCCEEDED


def test_record_finish_runs_inside_the_end_transaction_and_on_finish_after_it(core: Core, loose: Loose) -> None:
    a = loose.chat("A")
    order: list[str] = []
    seen: dict[str, Any] = {}

    def record(s: Session, result: RunResult) -> None:
        order.append("record")
        with core.db.read() as other:
            seen["outside"] = other.get(Run, result.run_id).status
        seen["inside"] = s.exec(select(Run.status).where(Run.id == result.run_id)).one()
        seen["record_result"] = result
        chat = s.get(Chat, a)
        chat.title = f"Recorded {result.status.value}"
        s.add(chat)

    def on_finish(result: RunResult) -> None:
        order.append("on_finish")
        with core.db.read() as other:
            seen["after"] = (other.get(Run, result.run_id).status, other.get(Chat, a).title)
        seen["finish_result"] = result

    [handle] = core.prompts.start_many([TurnSpec(a, "Record me.", record_finish=record, on_finish=on_finish)])
    result = finished(handle)
    assert order == ["record", "on_finish"]
    assert seen["outside"] == "running" and seen["inside"] == "succeeded"
    assert seen["after"] == ("succeeded", "Recorded succeeded")
    assert seen["record_result"] == seen["finish_result"] == result
    assert (result.status, result.output) == (RunStatus.SUCCEEDED, reply_for("Record me."))


def test_a_failing_record_finish_still_finishes_the_run_and_calls_on_finish(core: Core, loose: Loose) -> None:
    a = loose.chat("A")
    recorded, on_finish_results = [], []

    def record(s: Session, result: RunResult) -> None:
        recorded.append(result)
        chat = s.get(Chat, a)
        chat.title = "Never committed"
        s.add(chat)
        s.flush()
        raise RuntimeError("record failed")

    [handle] = core.prompts.start_many([TurnSpec(a, "Finish me.", record_finish=record,
                                                 on_finish=on_finish_results.append)])
    result = finished(handle)
    assert recorded, "record_finish was never called"
    assert (result.status, result.output, result.error) == (RunStatus.SUCCEEDED, reply_for("Finish me."), None)
    assert on_finish_results == [result]
    with core.db.read() as s:
        run = s.get(Run, handle.run_id)
        assert (run.status, run.finished_at is not None) == ("succeeded", True)
        assert s.get(Chat, a).title == "A"  # the failing record's write was rolled back
    assert_transcript_in_order(core, handle.run_id, "Finish me.", reply_for("Finish me."))
    again = core.prompts.start(a, "The chat is free again.")
    assert finished(again).status == RunStatus.SUCCEEDED


def test_many_turns_started_together_finish_concurrently_with_their_callbacks(core: Core, loose: Loose) -> None:
    ids = [loose.chat(f"Chat {i}") for i in range(30)]
    finishes: list[int] = []
    lock = threading.Lock()

    def record(s: Session, result: RunResult) -> None:
        s.exec(sa.update(Chat).where(Chat.id == s.exec(select(Run.chat_id).where(Run.id == result.run_id)).one())
               .values(title=f"done {result.run_id}"))

    def on_finish(result: RunResult) -> None:
        with lock:
            finishes.append(result.run_id)

    specs = [TurnSpec(chat, f"Turn {i}.", record_finish=record, on_finish=on_finish) for i, chat in enumerate(ids)]
    handles = core.prompts.start_many(specs)
    assert all(isinstance(h, RunHandle) for h in handles)
    for i, handle in enumerate(handles):
        assert finished(handle).output == reply_for(f"Turn {i}.")
        assert_transcript_in_order(core, handle.run_id, f"Turn {i}.", reply_for(f"Turn {i}."))
    assert sorted(finishes) == sorted(h.run_id for h in handles)
    with core.db.read() as s:
        titles = {c.id: c.title for c in s.exec(select(Chat).where(Chat.id.in_(ids)))}
    assert titles == {h.chat_id: f"done {h.run_id}" for h in handles}


# -- claims.claim_many through the loop --------------------------------------------------------


class Gate:
    """Wraps the core's provider factory: every turn waits for ``open`` before the demo answers."""

    def __init__(self, core: Core) -> None:
        self.open = threading.Event()
        self._lock = threading.Lock()
        self.entered = 0
        self.active = 0
        self.max_active = 0
        inner = core.prompts.providers
        core.prompts.providers = lambda project: _Gated(inner(project), self)

    def arrived(self) -> int:
        with self._lock:
            return self.entered


class _Gated:
    def __init__(self, inner: Any, gate: Gate) -> None:  # a Provider
        self.inner, self.gate = inner, gate
        self.name = getattr(inner, "name", "gated")

    def run(self, request: Any, emit: Callable[[str], None], cancel: threading.Event) -> None:
        gate = self.gate
        with gate._lock:
            gate.entered += 1
            gate.active += 1
            gate.max_active = max(gate.max_active, gate.active)
        try:
            assert gate.open.wait(WAIT), "the test never opened the gate"
            self.inner.run(request, emit, cancel)
        finally:
            with gate._lock:
                gate.active -= 1


@pytest.fixture
def gate_for(rig_with: Callable[..., Rig]) -> Iterator[Callable[[Rig], Gate]]:
    """Puts a gate in front of a rig's provider; opened at teardown, before the rig's core shuts down."""
    made: list[Gate] = []

    def make(rig: Rig) -> Gate:
        made.append(Gate(rig.core))
        return made[-1]

    yield make
    for gate in made:
        gate.open.set()


def task_runs(rig: Rig) -> list[TaskRun]:
    with rig.core.db.read() as s:
        return list(s.exec(select(TaskRun).order_by(TaskRun.id)))


def test_more_than_a_batch_of_tasks_due_together_each_fire_exactly_once(rig_with: Callable[..., Rig]) -> None:
    n = CLAIM_BATCH + 50
    r = rig_with(max_tasks_per_project=0, max_concurrent_runs=0)
    chat_ids = [r.chat] + [r.new_chat(f"Chat {i}") for i in range(1, n)]
    task_ids = [r.create(chat=chat, name=f"Task {i}") for i, chat in enumerate(chat_ids)]
    r.move_to(60)
    r.loop.tick()
    assert len(task_runs(r)) == n, "every due task was claimed in the one tick, in more than one batch"
    settle(r.core, WAIT)
    r.tick()  # due again at the same instant? nothing more fires

    assert r.loop.stats.fires == n
    rows = task_runs(r)
    assert collections.Counter(row.task_id for row in rows) == {t: 1 for t in task_ids}
    assert {(row.status, row.occurrence_at, row.trigger) for row in rows} == {("succeeded", at(60), "schedule")}
    runs = r.fired_runs()
    assert collections.Counter(run.chat_id for run in runs) == {c: 1 for c in chat_ids}
    assert {run.status for run in runs} == {"succeeded"}
    assert {row.run_id for row in rows} == {run.id for run in runs}
    with r.core.db.read() as s:
        started = collections.Counter(s.exec(select(Event.chat_id).where(Event.type == "run_started")))
        tasks = list(s.exec(select(ScheduledTask)))
    assert started == {c: 1 for c in chat_ids}
    assert {(t.run_count, t.active_run_id, t.last_run_status, t.next_run_at) for t in tasks} == {
        (1, None, "succeeded", at(120))}


def test_two_tasks_of_one_chat_due_at_the_same_instant_fire_one_after_the_other(
        rig_with: Callable[..., Rig], gate_for: Callable[[Rig], Gate]) -> None:
    r = rig_with()
    gate = gate_for(r)
    both = [r.create(name="One", prompt="First job.", overlap="queue_one"),
            r.create(name="Two", prompt="Second job.", overlap="queue_one")]
    r.move_to(60)
    r.loop.tick()
    wait_until(lambda: gate.arrived() == 1)
    [running] = task_runs(r)
    assert running.status == "running" and running.task_id in both
    first = running.task_id
    [second] = [t for t in both if t != first]
    waiting = r.task(second)
    assert (waiting.pending_run, waiting.last_run_status, waiting.run_count, waiting.active_run_id) == (
        True, "queued", 0, None)
    r.loop.tick()  # the chat is still busy: nothing more fires
    assert len(task_runs(r)) == 1 and gate.arrived() == 1

    gate.open.set()
    settle(r.core, WAIT)
    r.tick()  # the chat is free: the queued one fires now
    rows = {row.task_id: row for row in task_runs(r)}
    assert set(rows) == {first, second}
    assert (rows[first].status, rows[first].trigger, rows[first].occurrence_at) == ("succeeded", "schedule", at(60))
    assert (rows[second].status, rows[second].trigger, rows[second].occurrence_at) == (
        "succeeded", "follow_up", at(60))
    runs = r.fired_runs(r.chat)
    assert [run.task_id for run in runs] == [first, second]
    assert runs[0].finished_at <= runs[1].started_at
    assert {t: (r.task(t).run_count, r.task(t).pending_run) for t in both} == {first: (1, False), second: (1, False)}


def test_the_global_cap_limits_the_turns_one_tick_starts(rig_with: Callable[..., Rig],
                                                         gate_for: Callable[[Rig], Gate]) -> None:
    r = rig_with(max_concurrent_runs=3)
    gate = gate_for(r)
    chat_ids = [r.chat] + [r.new_chat(f"Chat {i}") for i in range(1, 10)]
    task_ids = [r.create(chat=chat, name=f"Task {i}") for i, chat in enumerate(chat_ids)]
    r.move_to(60)
    r.loop.tick()
    wait_until(lambda: gate.arrived() == 3)
    rows = task_runs(r)
    assert [row.status for row in rows] == ["running"] * 3
    assert len(r.loop.in_flight()) == 3 and len(r.fired_runs()) == 3
    fired = {row.task_id for row in rows}
    for task_id in set(task_ids) - fired:  # the others wait for a slot, still due at their occurrence
        task = r.task(task_id)
        assert (task.next_run_at, task.run_count, task.active_run_id, task.pending_run) == (at(60), 0, None, False)
    r.loop.tick()
    assert len(task_runs(r)) == 3 and gate.arrived() == 3  # no slot is free yet

    gate.open.set()
    for _ in range(len(task_ids)):  # each round frees slots; the waiting tasks fire in later rounds
        settle(r.core, WAIT)
        if len(task_runs(r)) == len(task_ids):
            break
        r.tick()
    settle(r.core, WAIT)
    rows = task_runs(r)
    assert collections.Counter(row.task_id for row in rows) == {t: 1 for t in task_ids}
    assert {(row.status, row.occurrence_at) for row in rows} == {("succeeded", at(60))}
    assert gate.max_active <= 3
    assert r.loop.stats.fires == len(task_ids)


def test_a_batch_meeting_a_users_turn_starts_the_others_and_requeues_that_one(rig_with: Callable[..., Rig]) -> None:
    r = rig_with(max_concurrent_runs=0)  # no cap: all five are claimed in the one batch
    chat_ids = [r.chat] + [r.new_chat(f"Chat {i}") for i in range(1, 5)]
    task_ids = [r.create(chat=chat, name=f"Task {i}", overlap="queue_one") for i, chat in enumerate(chat_ids)]
    r.move_to(60)
    user = r.user_turn("/sleep 30")  # in r.chat, the first task's chat
    try:
        r.tick()
        rows = {row.task_id: row for row in task_runs(r)}
        assert set(rows) == set(task_ids)
        busy = rows[task_ids[0]]
        assert (busy.status, busy.error, busy.run_id, busy.started_at) == (
            "queued", "the chat was busy with another turn", None, None)
        runs = {run.task_id: run for run in r.fired_runs()}
        assert set(runs) == set(task_ids[1:])
        for task_id in task_ids[1:]:  # the batch's ``started`` hook linked each started turn to its record
            row = rows[task_id]
            assert (row.status, row.run_id, row.started_at) == ("succeeded", runs[task_id].id, at(60))
            assert r.task(task_id).last_fire_started_at == at(60)
        assert r.task(task_ids[0]).pending_run is True
    finally:
        user.cancel.set()
    finished(user)
    r.move_to(60 + r.core.settings.busy_retry_seconds)
    r.tick()
    [row] = r.task_runs(task_ids[0])
    assert (row.id, row.status, row.attempts) == (busy.id, "succeeded", 2)


def test_a_fires_record_is_ended_in_the_transaction_that_ends_its_turn(rig_with: Callable[..., Rig],
                                                                        gate_for: Callable[[Rig], Gate]) -> None:
    r = rig_with()
    gate = gate_for(r)
    task_id = r.create()
    r.move_to(60)
    r.loop.tick()
    wait_until(lambda: gate.arrived() == 1)
    [handle] = r.core.prompts.running()
    [row] = r.task_runs(task_id)
    assert (row.status, row.run_id) == ("running", handle.run_id)
    gate.open.set()
    assert finished(handle).status == RunStatus.SUCCEEDED
    [row] = r.task_runs(task_id)  # no poll: the record was written before the handle reported the end
    assert row.status == "succeeded" and row.finished_at == at(60)
    task = r.task(task_id)
    assert (task.active_run_id, task.run_count, task.last_run_status) == (None, 1, "succeeded")
    assert r.loop.in_flight() == []
