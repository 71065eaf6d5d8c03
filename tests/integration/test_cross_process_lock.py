"""The run lock across processes (SPEC §2): a held run blocks every process; a killed holder is abandoned.

A child process takes the run through ``tests.store.begin_run`` (the product's ``begin_runs``) and keeps
renewing its heartbeat until it is killed with SIGKILL; the lease is short and the clock is real.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

import app
from app.core import auth, chats, projects, runs
from app.core.clock import FakeClock, SystemClock
from app.core.context import Core
from app.core.errors import PromptAlreadyRunning
from app.core.models import Chat, Run, RunSource, RunStatus
from tests import store

pytestmark = pytest.mark.slow  # real scheduler processes: left out of `make check`

ROOT = Path(app.__file__).resolve().parent.parent
LEASE = 2  # seconds
RENEW_EVERY = 0.2  # the child's heartbeat period: ten beats per lease

HOLDER = textwrap.dedent("""
    import sys, time
    from app.core import runs
    from app.core.clock import SystemClock
    from app.core.db import Database
    from app.core.models import RunSource
    from tests import store

    url, chat_id, lease, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    db, clock = Database(url), SystemClock()
    run = store.begin_run(db, clock, chat_id, "held by the child", source=RunSource.USER,
                         lease_seconds=lease, instance="child")
    while True:
        if runs.renew_heartbeats(db, clock, [run.id]) != {run.id}:
            sys.exit("lost the run")
        time.sleep(every)
""")

T = TypeVar("T")


def eventually(probe: Callable[[], T | None], timeout: float, what: str, child: subprocess.Popen | None = None) -> T:
    """Poll ``probe`` until it returns something truthy; fail after ``timeout`` s (or if the child died)."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if child is not None and child.poll() is not None:
            pytest.fail(f"child exited ({child.returncode}) while waiting for {what}: {child.stderr.read()}")
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


@pytest.fixture
def chat(core: Core) -> Chat:
    user = auth.create_user(core.db, core.clock, "owner@example.com", "password-1")
    project = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, "P", user)
    return chats.create_chat(core.db, core.clock, user, project.id, "C")


@pytest.fixture
def holder(core: Core, chat: Chat) -> Iterator[subprocess.Popen]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", HOLDER, core.db.url, str(chat.id), str(LEASE), str(RENEW_EVERY)],
                             cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        yield child
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(10)
        child.stderr.close()


def begin(core: Core, chat_id: int, clock: object = None) -> Run:
    return store.begin_run(core.db, clock or SystemClock(), chat_id, "parent", source=RunSource.USER,
                          lease_seconds=LEASE, instance="parent")


def test_lock_held_by_another_process_then_freed_when_it_dies(core: Core, chat: Chat,
                                                              holder: subprocess.Popen) -> None:
    clock = SystemClock()
    held = eventually(lambda: runs.live_run(core.db, clock, chat.id, LEASE), 30, "the child to take the run", holder)
    assert held.instance == "child"

    with pytest.raises(PromptAlreadyRunning):
        begin(core, chat.id)

    # a live holder keeps the run past its lease by renewing the heartbeat
    eventually(lambda: clock.now() - held.started_at > dt.timedelta(seconds=LEASE + 0.5), 10, "one lease to pass")
    assert runs.abandon_stale_runs(core.db, clock, LEASE) == []
    with pytest.raises(PromptAlreadyRunning):
        begin(core, chat.id)
    assert runs.get_run(core.db, held.id).heartbeat_at > held.started_at + dt.timedelta(seconds=LEASE)

    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(10)
    last_beat = runs.get_run(core.db, held.id).heartbeat_at
    assert runs.get_run(core.db, held.id).status == RunStatus.RUNNING

    # within the lease of its last heartbeat the dead holder still owns the chat (deterministic: a pinned clock)
    almost = FakeClock(last_beat + dt.timedelta(seconds=LEASE - 0.1))
    assert runs.abandon_stale_runs(core.db, almost, LEASE) == []
    with pytest.raises(PromptAlreadyRunning):
        begin(core, chat.id, almost)

    # after the lease, on the real clock, it is abandoned with an error event and the chat is free again
    abandoned = eventually(lambda: runs.abandon_stale_runs(core.db, clock, LEASE), LEASE + 10,
                           "the dead run to be abandoned")
    assert clock.now() - last_beat >= dt.timedelta(seconds=LEASE)
    assert [r.id for r in abandoned] == [held.id]
    row = runs.get_run(core.db, held.id)
    assert row.status == RunStatus.ABANDONED and row.error == runs.ABANDONED_REASON
    assert row.finished_at is not None
    tail = [(e.type, e.text) for e in runs.list_events(core.db, chat.id) if e.run_id == held.id][-2:]
    assert tail == [("error", runs.ABANDONED_REASON), ("run_finished", "abandoned")]

    again = begin(core, chat.id)
    assert again.status == RunStatus.RUNNING
    assert store.finish_run(core.db, clock, again, RunStatus.SUCCEEDED)
