"""Fault injection (SPEC §3 "Crash recovery", "The loop"; §4 providers): nothing lost, nothing doubled.

Each test provokes one fault against real processes or the real loop and then counts rows:
every expected fire happened or is recorded abandoned/failed (nothing lost), and no occurrence
has more than one TaskRun, no turn more than one Run (nothing doubled).

- kill -9 of a scheduler with 50 turns in flight;
- kill -9 of the web process (``reflex run --env prod --backend-only``) during a user turn;
- the store stops accepting writes: SQLite on a small tmpfs filled to the last byte (SQLITE_FULL),
  PostgreSQL switched to a read-only database;
- a provider that hangs, a provider that floods its output;
- the clock jumping forward three days and back two hours.

Faults that cannot be produced here skip with the reason printed (``pytest -rs``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlmodel import select

from app.core import auth, chats, projects
from app.core.clock import UTC, FakeClock
from app.core.config import Settings
from app.core.context import Core
from app.core.db import normalize_url
from app.core.models import Chat, Run, RunSource, RunStatus, User
from app.core.wake import DatabaseWaker
from scheduler.__main__ import build_loop
from scheduler.decisions import ABANDONED_REASON
from scheduler.model import RunOutcome, ScheduledTask, TaskRun
from scheduler.service import Actor, TaskService
from tests.conftest import make_core, pg_base_url, with_settings
from tests.integration.procs import ROOT, SchedulerProc, Schedulers, schedulers, wait_for
from tests.integration.test_scheduler_loop import settle

LEASE = 3
HOUR = 3600


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return with_settings(settings, run_lease_seconds=LEASE, max_tasks_per_project=0, max_concurrent_runs=0)


@pytest.fixture
def procs(settings: Settings, tmp_path: Path) -> Iterator[Schedulers]:
    with schedulers(settings.db_url, settings.data_dir, tmp_path / "logs") as group:
        yield group


# -- helpers --------------------------------------------------------------------------------------
def _owner(core: Core) -> tuple[User, int]:
    user = auth.create_user(core.db, core.clock, "owner@example.com", "password-1")
    project = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, "P", user)
    return user, project.id


def _chat(core: Core, user: User, project_id: int, title: str = "C") -> Chat:
    return chats.create_chat(core.db, core.clock, user, project_id, title)


def _service(core: Core) -> TaskService:
    return TaskService(core.db, core.clock, core.settings, DatabaseWaker(core.db))


def _create(svc: TaskService, user: User, chat: Chat, prompt: str = "hello", **schedule: object) -> ScheduledTask:
    body = {"name": f"task in {chat.title}", "prompt": prompt,
            "schedule": schedule or {"kind": "interval", "every_seconds": HOUR}}
    task, created = svc.create(Actor(user), chat.id, body)
    assert created
    return task


def _make_due(core: Core, task_ids: list[int], when: dt.datetime) -> None:
    with core.db.write() as s:
        s.exec(sa.update(ScheduledTask).where(ScheduledTask.id.in_(task_ids)).values(next_run_at=when))


def _rows(core: Core, model: type, *where: object) -> list:
    with core.db.read() as s:
        return list(s.exec(select(model).where(*where).order_by(model.id)))


def _assert_no_double(core: Core) -> None:
    """Nothing doubled: one TaskRun per (task, occurrence), one Run per TaskRun."""
    runs = _rows(core, TaskRun)
    per_occurrence = Counter((r.task_id, r.occurrence_at) for r in runs)
    assert max(per_occurrence.values(), default=1) == 1, per_occurrence
    per_claim = Counter(r.task_run_id for r in _rows(core, Run, Run.task_run_id.is_not(None)))
    assert max(per_claim.values(), default=1) == 1, per_claim


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _status_kib(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def _free_chat(core: Core, chat_id: int) -> bool:
    result = core.prompts.start(chat_id, "hello again").wait(15)
    return result is not None and result.status == RunStatus.SUCCEEDED


# -- 1. kill -9 the scheduler with 50 turns in flight ----------------------------------------------
def test_kill_9_with_50_turns_in_flight_abandons_50_and_refires_none(core: Core, procs: Schedulers) -> None:
    user, project_id = _owner(core)
    svc = _service(core)
    chat_list = [_chat(core, user, project_id, f"C{i}") for i in range(50)]
    tasks = [_create(svc, user, c, prompt="/sleep 120") for c in chat_list]
    ids = [t.id for t in tasks]
    due = core.clock.now().replace(microsecond=0) - dt.timedelta(seconds=1)
    _make_due(core, ids, due)
    first = procs.start(core.db, CHATCRON_RUN_LEASE_SECONDS=LEASE, CHATCRON_MAX_CONCURRENT_RUNS=0)

    def all_started() -> bool:
        rows = _rows(core, TaskRun, TaskRun.status == RunOutcome.RUNNING.value, TaskRun.started_at.is_not(None))
        return len(rows) == 50

    t0 = time.monotonic()
    wait_for(all_started, 60, "50 turns in flight", [first])
    print(f"\n50 fires started in {time.monotonic() - t0:.1f} s ({core.db.engine.dialect.name})")
    running = _rows(core, TaskRun)
    first.kill(signal.SIGKILL)
    first.wait_exit(10)
    second = procs.start(core.db, CHATCRON_RUN_LEASE_SECONDS=LEASE, CHATCRON_MAX_CONCURRENT_RUNS=0)
    t1 = time.monotonic()

    def all_abandoned() -> list | None:
        rows = _rows(core, TaskRun, TaskRun.status == RunOutcome.ABANDONED.value)
        return rows if len(rows) == 50 else None

    abandoned = wait_for(all_abandoned, 4 * LEASE + 10, "50 abandoned TaskRuns", [second])
    print(f"50 abandoned {time.monotonic() - t1:.1f} s after the second scheduler started")
    assert {r.id for r in abandoned} == {r.id for r in running}
    assert {r.error for r in abandoned} == {ABANDONED_REASON}
    wait_for(lambda: not _rows(core, Run, Run.status == RunStatus.RUNNING.value), 3 * LEASE,
             "the dead turns' Runs to be abandoned", [second])

    # Nothing re-fired: another lease passes with the survivor beating, and no new TaskRun appears.
    t_done = core.clock.now()
    wait_for(lambda: (row := second.instance(core.db)) and row.heartbeat_at > t_done + dt.timedelta(seconds=LEASE + 1),
             4 * LEASE, "the survivor to beat for another lease", [second])
    assert len(_rows(core, TaskRun)) == 50
    after = _rows(core, ScheduledTask)
    assert all(t.status == "active" and t.active_run_id is None and not t.pending_run for t in after)
    assert all(t.next_run_at > t_done for t in after), "an abandoned fire must not be re-fired"
    runs = _rows(core, Run)
    assert len(runs) == 50 and {r.status for r in runs} == {RunStatus.ABANDONED.value}
    _assert_no_double(core)
    # Every chat is free after the lease.
    handles = [core.prompts.start(c.id, "hello again") for c in chat_list]
    results = [h.wait(30) for h in handles]
    assert all(r is not None and r.status == RunStatus.SUCCEEDED for r in results)
