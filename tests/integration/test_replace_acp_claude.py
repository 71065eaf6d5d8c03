"""overlap=replace against a real Claude Code turn (SPEC §19), offline: a trigger call over HTTP
starts a fire whose model reply stalls; a second call replaces it — the running turn is cancelled
through ACP, its record ends ``superseded`` linked to the newer one, and the newer fire runs with
its own payload. The seconds it took are printed (the figures are the benchmark's, not asserted
tightly here). On SQLite: the store does not matter here."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest
from sqlmodel import select

from app.core.config import Settings
from app.core.wake import DatabaseWaker
from app.schedules.hooks import HookService
from app.schedules.model import RunOutcome, TaskRun
from app.schedules.service import Actor, TaskService
from scheduler.__main__ import build_loop
from tests.agents.anthropic_server import AnthropicServer, stall, text
from tests.agents.rig import AgentRig, build_rig
from tests.integration.receivers import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)]

WAIT = 120.0


@pytest.fixture
def model() -> Iterator[AnthropicServer]:
    server = AnthropicServer()
    yield server
    server.close()


@pytest.fixture
def rig(settings: Settings, model: AnthropicServer) -> Iterator[AgentRig]:
    r = build_rig(settings, model, skill=False, agent_cancel_grace_seconds=5.0)
    yield r
    r.close()


def record(rig: AgentRig, task_run_id: int) -> TaskRun:
    with rig.core.db.read() as s:
        return s.exec(select(TaskRun).where(TaskRun.id == task_run_id)).one()


def test_replace_cancels_a_real_agent_turn_and_fires_the_newer_call(rig: AgentRig, model: AnthropicServer) -> None:
    tasks = TaskService(rig.core.db, rig.core.clock, rig.core.settings, DatabaseWaker(rig.core.db))
    task, _ = tasks.create(Actor(rig.user), rig.chat, {"name": "Build watch", "prompt": "Look at the build.",
                                                       "schedule": {"kind": "interval", "every_seconds": 86400},
                                                       "overlap": "replace"})
    hook_id, secret = HookService(rig.core.db, rig.core.clock, tasks.ask).make(task.id, rig.user.email)
    url = f"{rig.core.settings.api_url}/hooks/tasks/{hook_id}"
    loop = build_loop(rig.core, "sched:test")
    model.play(stall("Looking at build 1"))
    first = httpx.post(url, content=b'{"build": 1}', headers={"authorization": f"Bearer {secret}"}, timeout=30)
    assert first.status_code == 202 and first.json()["status"] == "started", first.text
    loop.tick()
    wait_until(lambda: model.stalling.is_set(), WAIT, "the first fire's model reply to stall")

    model.play(text("Build 2 is green."))
    asked = time.monotonic()
    second = httpx.post(url, content=b'{"build": 2}', headers={"authorization": f"Bearer {secret}"}, timeout=30)
    assert second.status_code == 202 and second.json()["status"] == "started", second.text
    old = wait_until(lambda: (r := record(rig, first.json()["run_id"])).status != RunOutcome.RUNNING.value and r,
                     30, "the replaced fire to end")
    cancelled = time.monotonic() - asked
    assert (old.status, old.superseded_by) == (RunOutcome.SUPERSEDED.value, second.json()["run_id"])
    assert rig.run_row(old.run_id).error.startswith("stopped by a newer fire")

    loop.tick()
    newer = wait_until(lambda: (r := record(rig, second.json()["run_id"])).run_id and r, 30, "the newer fire to start")
    started = time.monotonic() - asked
    done = wait_until(lambda: (r := record(rig, newer.id)).status != RunOutcome.RUNNING.value and r, WAIT,
                      "the newer fire to end")
    assert done.status == RunOutcome.SUCCEEDED.value and done.payload == '{"build": 2}'
    assert "Build 2 is green." in rig.run_row(done.run_id).output
    print(f"\nreplace: the running turn ended superseded {cancelled:.2f} s after the call; "
          f"the newer turn started {started:.2f} s after it")
