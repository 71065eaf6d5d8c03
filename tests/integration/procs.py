"""Spawning and stopping real scheduler processes (``python -m scheduler``) for integration tests.

Each process runs in its own session (so teardown can kill its whole process group), logs to a
file in the test's temp folder, and is found in the database by its ``SchedulerInstance`` row
(whose id embeds the pid). ``wait_for`` is the one polling primitive: it re-evaluates a probe
against the database until it holds, failing with the schedulers' log tails after a timeout or
as soon as a scheduler that should be alive has exited.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from sqlmodel import select

import app
from app.core import auth, chats, projects
from app.core.context import Core
from app.core.db import Database
from app.core.models import Chat, User
from app.schedules.model import ScheduledTask, SchedulerInstance

ROOT = Path(app.__file__).resolve().parent.parent
T = TypeVar("T")


@dataclasses.dataclass
class SchedulerProc:
    """One ``python -m scheduler`` child."""

    popen: subprocess.Popen
    log_path: Path
    expect_alive: bool = True  # False once the test kills or stops it on purpose

    @property
    def pid(self) -> int:
        return self.popen.pid

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def instance(self, db: Database) -> SchedulerInstance | None:
        """This process's heartbeat row (its id is ``sched:<host>:<pid>:<nonce>``)."""
        with db.read() as s:
            rows = s.exec(select(SchedulerInstance)).all()
        return next((r for r in rows if r.id.split(":")[2:3] == [str(self.pid)]), None)

    def kill(self, sig: signal.Signals = signal.SIGKILL) -> None:
        """Send ``sig`` to the scheduler itself (not its group): the test means this one."""
        self.expect_alive = False
        os.kill(self.pid, sig)

    def wait_exit(self, timeout: float) -> int:
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"scheduler pid {self.pid} did not exit within {timeout} s\n{self.log_tail()}")

    def teardown(self) -> None:
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)  # its own session: pgid == pid
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(10)


class Schedulers:
    """Starts schedulers on one database; ``close`` kills whatever is left."""

    def __init__(self, db_url: str, data_dir: Path, log_dir: Path) -> None:
        self.db_url, self.data_dir, self.log_dir = db_url, data_dir, log_dir
        self.procs: list[SchedulerProc] = []

    def start(self, db: Database, *, ready_timeout: float = 30.0, **env: object) -> SchedulerProc:
        """Spawn a scheduler (``env``: CHATCRON_* overrides) and wait for its first heartbeat row."""
        proc = self.spawn(**env)
        wait_ready(db, [proc], ready_timeout)
        return proc

    def spawn(self, **env: object) -> SchedulerProc:
        """Spawn a scheduler without waiting for it (see ``wait_ready``)."""
        variables = {k: v for k, v in os.environ.items() if not k.startswith("CHATCRON_")}
        variables.update({
            "CHATCRON_DATA_DIR": str(self.data_dir), "CHATCRON_DATABASE_URL": self.db_url,
            "CHATCRON_DEMO_WORD_DELAY_SECONDS": "0", "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1",
        })
        variables.update({k: str(v) for k, v in env.items()})
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.log_dir / f"scheduler-{len(self.procs) + 1}.log"
        with open(log_path, "wb") as log:
            popen = subprocess.Popen([sys.executable, "-m", "scheduler"], cwd=ROOT, env=variables,
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        proc = SchedulerProc(popen, log_path)
        self.procs.append(proc)
        return proc

    def close(self) -> None:
        for proc in self.procs:
            proc.teardown()


def wait_ready(db: Database, procs: list[SchedulerProc], timeout: float = 30.0) -> None:
    """Wait until every scheduler has written its first heartbeat (its wake listener is open by then)."""
    for proc in procs:
        wait_for(lambda p=proc: p.instance(db), timeout, f"scheduler pid {proc.pid} to write its heartbeat", procs)


@contextlib.contextmanager
def schedulers(db_url: str, data_dir: Path, log_dir: Path) -> Iterator[Schedulers]:
    group = Schedulers(db_url, data_dir, log_dir)
    try:
        yield group
    finally:
        group.close()


def wait_for(probe: Callable[[], T | None], timeout: float, what: str,
             watch: Iterable[SchedulerProc] = (), every: float = 0.05) -> T:
    """Poll ``probe`` until it returns something truthy and return it.

    Fails after ``timeout`` seconds, or at once when a watched scheduler expected to be alive
    has exited; the message carries the watched schedulers' log tails.
    """
    watched = list(watch)
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        dead = [p for p in watched if p.expect_alive and p.popen.poll() is not None]
        if dead:
            pytest.fail(f"scheduler pid {dead[0].pid} exited ({dead[0].popen.returncode}) while waiting for "
                        f"{what}\n{dead[0].log_tail()}")
        if time.monotonic() > deadline:
            tails = "\n".join(f"--- scheduler pid {p.pid} ---\n{p.log_tail()}" for p in watched)
            pytest.fail(f"timed out after {timeout} s waiting for {what}\n{tails}")
        time.sleep(every)


def new_owner(core: Core) -> tuple[User, int]:
    """A registered user and a project they own: what every scheduled task needs."""
    user = auth.create_user(core.db, core.clock, "owner@example.com", "password-1")
    project = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, "P", user)
    return user, project.id


def new_chat(core: Core, user: User, project_id: int, title: str = "C") -> Chat:
    return chats.create_chat(core.db, core.clock, user, project_id, title)


def clone_tasks(core: Core, template: ScheduledTask, n: int) -> list[int]:
    """``template`` (a task made by the service in a chat of its project) and ``n - 1`` copies of it,
    each in a chat of its own, written in one transaction: many tasks without ``n`` validations."""
    now = core.clock.now()
    with core.db.write() as s:
        rooms = [Chat(project_id=template.project_id, owner_id=_owner_id(s, template), title=f"C{i}",
                      created_at=now, updated_at=now) for i in range(1, n)]
        s.add_all(rooms)
        s.flush()
        fields = template.model_dump(exclude={"id", "chat_id", "name"})
        clones = [ScheduledTask(**fields, chat_id=room.id, name=f"task in {room.title}") for room in rooms]
        s.add_all(clones)
        s.flush()
        return [template.id, *(task.id for task in clones)]


def _owner_id(s, template: ScheduledTask) -> int:
    return s.exec(select(Chat.owner_id).where(Chat.id == template.chat_id)).one()
