"""SPEC §19 with real scheduler processes (``python -m scheduler``): trigger calls answered as the
web process answers them (``HookService`` over the task service), fired by two schedulers on
PostgreSQL — every call that started or queued a fire fires exactly once, in the order the calls
came, and no chat ever runs two turns at once. Every wait is a bounded poll on a database condition."""

from __future__ import annotations

from collections import Counter

import pytest
from sqlmodel import select

from app.core.config import Settings
from app.core.context import Core
from app.core.models import Run, RunSource
from app.core.wake import DatabaseWaker
from app.schedules.hooks import Call, HookService
from app.schedules.model import RunOutcome, TaskRun
from app.schedules.service import Actor, TaskService
from tests.conftest import with_settings
from tests.integration.procs import Schedulers, wait_for, wait_ready
from tests.integration.procs import new_chat as _chat
from tests.integration.procs import new_owner as _owner

pytestmark = pytest.mark.slow  # real scheduler processes: left out of `make check`

N_TASKS = 12
CALLS = 4  # per task: one starts, three wait in line (queue_all, cap 3)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return with_settings(settings, run_lease_seconds=3, max_tasks_per_project=0, max_concurrent_runs=0)


def test_two_schedulers_never_fire_a_trigger_call_twice(core: Core, procs: Schedulers) -> None:
    if core.db.sqlite:
        reason = "several schedulers on one store need PostgreSQL (SPEC §1); set CHATCRON_TEST_POSTGRES_URL"
        print(f"\nSKIPPED on SQLite: {reason}")
        pytest.skip(reason)
    user, project_id = _owner(core)
    tasks = TaskService(core.db, core.clock, core.settings, DatabaseWaker(core.db))
    hooks = HookService(core.db, core.clock, tasks.ask)
    made = []
    for i in range(N_TASKS):
        room = _chat(core, user, project_id, f"T{i}")
        task, _ = tasks.create(Actor(user), room.id, {"name": f"hook {i}", "prompt": "/sleep 0.2\nLook.",
                                                      "schedule": {"kind": "interval", "every_seconds": 86400},
                                                      "overlap": "queue_all", "queue_cap": 3})
        made.append((task.id, *hooks.make(task.id, user.email)))
    group = [procs.spawn(CHATCRON_RUN_LEASE_SECONDS=3) for _ in range(2)]
    wait_ready(core.db, group, 60)
    answers = Counter()
    for n in range(CALLS):
        for _task_id, hook_id, secret in made:
            call = Call(hook_id, {"authorization": f"Bearer {secret}"}, f"call {n}".encode())
            answers[hooks.call(call, lambda chat_id: f"/chat/{chat_id}")["status"]] += 1
    assert answers["skipped"] == 0 and sum(answers.values()) == N_TASKS * CALLS

    def all_fired() -> list[TaskRun] | None:
        with core.db.read() as s:
            rows = list(s.exec(select(TaskRun).where(TaskRun.trigger == "hook")))
        done = [r for r in rows if r.status == RunOutcome.SUCCEEDED.value]
        return rows if len(done) == N_TASKS * CALLS else None

    rows = wait_for(all_fired, 90, "every trigger call to fire", group)
    with core.db.read() as s:
        fired = list(s.exec(select(Run).where(Run.source == RunSource.SCHEDULE.value)))
    assert len(fired) == N_TASKS * CALLS  # one turn per call, none twice
    assert len({r.run_id for r in rows}) == len(rows)
    instances = {p.instance(core.db).id for p in group}
    assert {r.instance for r in rows} <= instances
    for task_id, _, _ in made:
        mine = sorted((r for r in rows if r.task_id == task_id), key=lambda r: r.started_at)
        assert [r.payload for r in mine] == [f"call {n}" for n in range(CALLS)]
        for earlier, later in zip(mine, mine[1:], strict=False):  # one turn at a time in a chat
            assert earlier.finished_at <= later.started_at
