"""The demo conversation end to end (SPEC §4–§7), with real components, on SQLite and PostgreSQL.

A user asks the demo agent, in a project chat with the scheduled-tasks skill, to schedule a
standing task; the turn runs the workspace's ``remote-schedule`` CLI as a subprocess against the
agent API served over a real socket by granian (``Settings.api_url`` points at it), with the
turn's own grant. The draft it creates is armed by the user, the scheduler loop (built by the
composition root, ticked in-process) fires it on a user's run-now, and the fire's turn ends the
task with ``remote-schedule complete-current`` under its complete-self grant.

Turns are awaited through their RunHandles: every handle the prompt service hands out is kept,
so a turn that ends before the test looks is still awaited; a handle is released only after the
scheduler's finish callback has recorded the TaskRun. No test sleeps.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from app.agents.workspace import ASSETS_DIR, workspace_path
from app.core import chats, projects
from app.core.auth import digest
from app.core.chats import SCHEDULED_TASKS
from app.core.config import Settings
from app.core.context import Core
from app.core.errors import Unauthorized
from app.core.grants import Scope, resolve_grant
from app.core.models import Event, Grant, Run, RunSource, RunStatus, User
from app.core.ports import Emit, Provider, TurnRequest
from app.core.turns import RunHandle, RunResult
from app.schedules.model import CreatedBy, RunOutcome, ScheduledTask, TaskRun, TaskStatus, Trigger
from app.schedules.service import Actor, TaskService
from scheduler.__main__ import build_loop
from tests.conftest import make_core, with_settings
from tests.integration.apiclient import add_user
from tests.integration.apiserver import ApiServer
from tests.isolation import free_port

pytestmark = pytest.mark.slow  # agent processes against a live API: left out of `make check`

# What the agent writes down as the task's durable prompt: the demo obeys its /complete line at each fire.
STANDING_PROMPT = "Post the standup summary in this chat.\n/complete the standup is posted\n"
ASK = ("Please post the standup summary every hour until it is done.\n"
       '/schedule --name "standup" --every 3600 --prompt-file standup.md')
DRAFT_LINE = 'created schedule {id} "standup" (draft — a user must arm it in the Schedules drawer)'
DONE_LINE = 'completed schedule {id} "standup"; it will not fire again'
WAIT = 30.0


class SeenProvider:
    """The project's real provider, noting each TurnRequest it is given (what the agent was handed)."""

    def __init__(self, inner: Provider, seen: list[TurnRequest]) -> None:
        self.inner, self.seen, self.name = inner, seen, inner.name

    def run(self, request: TurnRequest, emit: Emit, cancel: threading.Event) -> None:
        self.seen.append(request)
        self.inner.run(request, emit, cancel)


@dataclasses.dataclass
class Demo:
    core: Core
    server: ApiServer
    alice: User
    chat: int
    workspace: Path
    handles: list[RunHandle]  # every turn started, in order
    seen: list[TurnRequest]  # every request a provider received, in order

    @property
    def tasks(self) -> TaskService:
        return TaskService(self.core.db, self.core.clock, self.core.settings)

    def finished(self, handle: RunHandle) -> RunResult:
        result = handle.wait(WAIT)
        assert result is not None, f"turn {handle.run_id} did not finish in {WAIT} s"
        return result

    def rows(self) -> list[ScheduledTask]:
        with self.core.db.read() as s:
            return list(s.exec(select(ScheduledTask).order_by(ScheduledTask.id)))

    def task_runs(self, task_id: int) -> list[TaskRun]:
        with self.core.db.read() as s:
            return list(s.exec(select(TaskRun).where(TaskRun.task_id == task_id).order_by(TaskRun.id)))


@pytest.fixture
def demo(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Demo]:
    """Alice's project chat with the skill on; the API served where the core's api_url says."""
    port = free_port()
    core = make_core(with_settings(settings, api_url=f"http://127.0.0.1:{port}"))
    server = ApiServer(core, port)
    try:
        handles: list[RunHandle] = []
        seen: list[TurnRequest] = []
        start_many, factory = core.prompts.start_many, core.prompts.providers

        def kept(*args: Any, **kwargs: Any) -> list[RunHandle | Exception]:  # every start goes through here
            started = start_many(*args, **kwargs)
            handles.extend(x for x in started if isinstance(x, RunHandle))
            return started

        monkeypatch.setattr(core.prompts, "start_many", kept)
        monkeypatch.setattr(core.prompts, "providers", lambda project: SeenProvider(factory(project), seen))
        alice = add_user(core, "alice@example.com")
        project = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, "Alice's", alice)
        chat = chats.create_chat(core.db, core.clock, alice, project.id, "Standups")
        chats.update_chat(core.db, core.clock, alice, chat.id, skills=[SCHEDULED_TASKS])
        yield Demo(core, server, alice, chat.id, workspace_path(core.settings.workspaces_dir, project.id),
                   handles, seen)
    finally:
        server.close()
        core.prompts.shutdown(2.0)
        core.db.dispose()


def grant_row(core: Core, token: str) -> Grant:
    """The stored grant behind a token the provider was handed (found by its SHA-256, as the API does)."""
    with core.db.read() as s:
        return s.exec(select(Grant).where(Grant.token_hash == digest(token))).one()


def test_the_demo_agent_schedules_a_draft_the_user_arms_and_the_fire_completes_it(demo: Demo) -> None:
    core = demo.core
    (demo.workspace / "standup.md").write_text(STANDING_PROMPT, encoding="utf-8")  # the agent's prompt file

    # 1. The user asks; the demo agent runs `remote-schedule create` with the turn's manage grant.
    asked = demo.finished(core.prompts.start(demo.chat, ASK, source=RunSource.USER))
    assert asked.status == RunStatus.SUCCEEDED, asked
    [task] = demo.rows()
    assert "$ remote-schedule create --name standup --every 3600 --prompt-file standup.md\n" in asked.output
    assert f"{DRAFT_LINE.format(id=task.id)}\n" in asked.output and "(exit 0)" in asked.output
    assert (task.status, task.created_by, task.next_run_at, task.chat_id, task.owner) == (
        TaskStatus.DRAFT.value, CreatedBy.AGENT.value, None, demo.chat, "alice@example.com")
    assert (task.name, task.prompt, json.loads(task.schedule)) == (
        "standup", STANDING_PROMPT, {"kind": "interval", "every_seconds": 3600})

    [turn] = demo.seen
    assert set(turn.env) == {"SCHEDULE_API_URL", "SCHEDULE_API_TOKEN"}, "the provider gets these two, nothing else"
    assert turn.env["SCHEDULE_API_URL"] == demo.server.url
    manage = grant_row(core, turn.env["SCHEDULE_API_TOKEN"])
    assert (manage.scope, manage.chat_id, manage.owner_id, manage.task_id) == (
        Scope.MANAGE.value, demo.chat, demo.alice.id, None)
    with pytest.raises(Unauthorized, match="revoked"):
        resolve_grant(core.db, core.clock, turn.env["SCHEDULE_API_TOKEN"])

    # 2. The user arms the draft (as the drawer does); nothing is due for an hour.
    armed = demo.tasks.arm(Actor(demo.alice), task.id)
    assert armed.status == TaskStatus.ACTIVE.value
    assert armed.next_run_at - armed.armed_at == dt.timedelta(seconds=3600)
    loop = build_loop(core, "sched:demo")
    loop.tick()
    assert len(demo.handles) == 1 and demo.task_runs(task.id) == []

    # Someone tampers with the workspace copy of the CLI: the next schedule-enabled turn restores it.
    cli = demo.workspace / "scripts" / "remote-schedule"
    cli.write_text("#!/usr/bin/env python3\nprint('tampered')\n", encoding="utf-8")

    # 3. The user's run-now; one loop iteration claims and fires it.
    demo.tasks.run_now(Actor(demo.alice), task.id)
    loop.tick()
    assert len(demo.handles) == 2, "run-now did not fire on the next loop iteration"
    fired = demo.finished(demo.handles[1])
    assert fired.status == RunStatus.SUCCEEDED, fired
    assert cli.read_bytes() == (ASSETS_DIR / "remote-schedule").read_bytes()

    # The fire ran `remote-schedule complete-current` with its complete-self grant.
    assert "$ remote-schedule complete-current --reason 'the standup is posted'\n" in fired.output
    assert f"{DONE_LINE.format(id=task.id)}\n(exit 0)" in fired.output
    assert fired.output.endswith('Demo agent here. Scheduled task "standup", fire 1/∞. '
                                 "You said: Post the standup summary in this chat.")

    done = demo.rows()[0]
    [task_run] = demo.task_runs(task.id)
    assert (done.status, done.next_run_at, done.active_run_id, done.run_count, done.last_run_status) == (
        TaskStatus.COMPLETED.value, None, None, 1, RunOutcome.SUCCEEDED.value)
    assert (task_run.status, task_run.trigger, task_run.fire_number, task_run.run_id, task_run.error) == (
        RunOutcome.SUCCEEDED.value, Trigger.RUN_NOW_USER.value, 1, fired.run_id, None)

    fire_turn = demo.seen[1]
    assert set(fire_turn.env) == {"SCHEDULE_API_URL", "SCHEDULE_API_TOKEN"}
    own = grant_row(core, fire_turn.env["SCHEDULE_API_TOKEN"])
    assert (own.scope, own.chat_id, own.owner_id, own.task_id, own.task_run_id) == (
        Scope.COMPLETE_SELF.value, demo.chat, demo.alice.id, task.id, task_run.id)
    with pytest.raises(Unauthorized, match="revoked"):
        resolve_grant(core.db, core.clock, fire_turn.env["SCHEDULE_API_TOKEN"])
    assert own.revoked_at is not None

    # The fire is an ordinary turn of the chat: a scheduled_prompt, the streamed reply, the end.
    with core.db.read() as s:
        run = s.get(Run, fired.run_id)
        events = list(s.exec(select(Event).where(Event.run_id == fired.run_id).order_by(Event.id)))
    assert (run.source, run.task_id, run.chat_id) == (RunSource.SCHEDULE.value, task.id, demo.chat)
    assert events[0].type == "scheduled_prompt" and events[0].text.startswith('[scheduled task "standup", fire 1/∞]')
    assert "".join(e.text for e in events if e.type == "assistant_text") == fired.output
    assert events[-1].type == "run_finished"

    # A completed task never fires again, however often the loop runs.
    loop.tick()
    assert len(demo.handles) == 2 and len(demo.task_runs(task.id)) == 1
