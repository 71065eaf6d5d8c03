"""The world of the hostile-agent tests: a core whose `command` agent is tests/integration/hostile_agent.py,
the agent API on a real loopback socket, Alice's project (the agent's) and Bob's (with canaries)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlmodel import select

from app.agents.workspace import agent_home, workspace_path
from app.core import chats, projects
from app.core.chats import SCHEDULED_TASKS
from app.core.context import Core
from app.core.models import Run, User
from app.core.turns import RunHandle, RunResult
from app.schedules.model import RunOutcome, ScheduledTask, TaskRun
from app.schedules.service import Actor, TaskService
from tests.integration.apiclient import add_user, table_contents
from tests.integration.apiserver import ApiServer

HOSTILE = Path(__file__).with_name("hostile_agent.py")
WAIT = 60.0
CANARY = b"the other project's secret notes\n"
HOUR = {"kind": "interval", "every_seconds": 3600}
# tables a turn writes on its own behalf (its run, its events, its grant): everything else must not move
TURN_TABLES = {"runs", "events", "grants", "usage_days"}  # usage_days: what the turn spent (SPEC §15)


def digest_tree(folder: Path) -> dict[str, str]:
    """relative path → sha256 (or 'link' / 'dir') of everything under ``folder``, links not followed."""
    out: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        key = str(path.relative_to(folder))
        if path.is_symlink():
            out[key] = "link"
        elif path.is_dir():
            out[key] = "dir"
        elif path.is_socket():  # a running agent's egress socket
            out[key] = "socket"
        else:
            out[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@dataclasses.dataclass
class Fenced:
    core: Core
    server: ApiServer
    alice: User
    bob: User
    project: int
    other_project: int
    marker: str  # on the agent's command line: finds its processes on the host

    @property
    def workspace(self) -> Path:
        return workspace_path(self.core.settings.workspaces_dir, self.project)

    @property
    def home(self) -> Path:
        return agent_home(self.core.settings, self.project)

    @property
    def tasks(self) -> TaskService:
        return TaskService(self.core.db, self.core.clock, self.core.settings)

    def chat(self, skill: bool = False) -> int:
        chat = chats.create_chat(self.core.db, self.core.clock, self.alice, self.project, "Hostile")
        if skill:
            chats.update_chat(self.core.db, self.core.clock, self.alice, chat.id, skills=[SCHEDULED_TASKS])
        return chat.id

    def start(self, mode: str, args: dict[str, Any] | None = None, *, chat: int | None = None,
              **start: Any) -> RunHandle:  # PromptService.start's keywords
        text = f"hostile:{mode} {json.dumps(args or {})}"
        return self.core.prompts.start(chat or self.chat(), text, **start)

    def finished(self, handle: RunHandle) -> RunResult:
        result = handle.wait(WAIT)
        assert result is not None, f"turn {handle.run_id} did not finish in {WAIT} s"
        return result

    def held(self, handle: RunHandle) -> dict[str, Any]:
        """Wait until the agent says HOLD; what it reported with it."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            with self.core.db.read() as s:
                output = s.exec(select(Run.output).where(Run.id == handle.run_id)).one()
            if "HOLD " in output:
                return json.loads(output.split("HOLD ", 1)[1].splitlines()[0])
            assert not handle.done, f"the agent ended before holding: {handle.wait(0)}"
            time.sleep(0.05)  # polling a row the turn is writing, under a deadline
        raise AssertionError(f"the agent did not hold within {WAIT} s")

    def release(self) -> None:
        (self.workspace / "release").touch()

    def snapshot(self) -> dict[str, Any]:
        """What the agent must not change: every table but its turn's own, the rest of the data dir."""
        data = self.core.settings.data_dir
        tables = {k: v for k, v in table_contents(self.core).items() if k not in TURN_TABLES}
        files = {k: v for k, v in digest_tree(data).items()
                 if not k.startswith((f"workspaces/{self.project}", f"agent-homes/{self.project}", "chatcron.db",
                                      "tmp/", "agent-tokens/", "egress/"))}  # egress/: the proxy's sockets
        return {"tables": tables, "files": files}

    def fire_target(self) -> tuple[int, int, int]:
        """Alice's armed task in a chat of its own with a fire in flight, and another armed task:
        (chat, task, claim) of the first; the second's id is returned by :meth:`other_task`."""
        chat = self.chat()
        task, _ = self.tasks.create(Actor(self.alice), chat, {"name": "Watch CI", "prompt": "Check CI.",
                                                              "schedule": HOUR})
        now = self.core.clock.now()
        with self.core.db.write() as s:
            claim = TaskRun(task_id=task.id, occurrence_at=now, status=RunOutcome.RUNNING.value, fire_number=1,
                            claimed_at=now, started_at=now)
            s.add(claim)
            s.flush()
            row = s.get(ScheduledTask, task.id)
            row.active_run_id, row.run_count, row.last_run_status = claim.id, 1, RunOutcome.RUNNING.value
            s.add(row)
            return chat, task.id, claim.id

    def other_task(self) -> int:
        task, _ = self.tasks.create(Actor(self.alice), self.chat(), {"name": "Other", "prompt": "p",
                                                                     "schedule": HOUR})
        return task.id


def build(core: Core, server: ApiServer, alice: User | None = None, project: int | None = None) -> Fenced:
    """Alice's project (made here unless given) is the agent's; Bob's holds canaries it must not read."""
    alice = alice or add_user(core, "alice@example.com")
    bob = add_user(core, "bob@example.com")
    if project is None:
        project = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, "Alice's", alice).id
    other = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, "Bob's", bob).id
    for folder in (workspace_path(core.settings.workspaces_dir, other), agent_home(core.settings, other)):
        (folder / "canary.txt").write_bytes(CANARY)
    (core.settings.data_dir / "canary.txt").write_bytes(CANARY)
    return Fenced(core, server, alice, bob, project, other, marker())


def marker() -> str:
    return "hostile-" + secrets.token_hex(6)


def host_processes(marker: str) -> Iterator[tuple[int, dict[str, str]]]:
    """(pid, /proc/<pid>/status fields) of live host processes whose command line holds ``marker``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() not in (entry / "cmdline").read_bytes():
                continue
            status = dict(line.split(":\t", 1) for line in (entry / "status").read_text().splitlines()
                          if ":\t" in line)
        except OSError:
            continue
        if not status.get("State", "").startswith("Z"):
            yield int(entry.name), {k: v.strip() for k, v in status.items()}


def left_behind(marker: str, within: float = 15.0) -> list[tuple[int, dict[str, str]]]:
    """The agent's host processes still alive ``within`` seconds after its turn ended ([] as soon as
    there are none). A killed sandbox's processes die when the kernel delivers the kill and are
    reaped after: on a busy machine that takes a moment, so the check waits for it, not a fixed time."""
    deadline = time.monotonic() + within
    while (alive := list(host_processes(marker))) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def namespace_mates(pid: int) -> dict[int, dict[str, str]]:
    """/proc/<pid>/status of every host process in the PID namespace of ``pid`` (its sandbox)."""
    ns = os.readlink(f"/proc/{pid}/ns/pid")
    mates: dict[int, dict[str, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "ns" / "pid") != ns:
                continue
            status = dict(line.split(":\t", 1) for line in (entry / "status").read_text().splitlines()
                          if ":\t" in line)
            status["cmdline"] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        mates[int(entry.name)] = {k: v.strip() for k, v in status.items()}
    return mates
