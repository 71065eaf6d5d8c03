"""Health, /metrics and the loop's back-off on a store that cannot be written."""

from __future__ import annotations

import datetime as dt

from fastapi.testclient import TestClient
from sqlalchemy.exc import OperationalError

from app.api import create_api
from app.core import auth, chats, projects
from app.schedules.service import Actor, TaskService
from scheduler import claims
from scheduler.__main__ import build_loop


def _client(core) -> TestClient:
    return TestClient(create_api(lambda: core, core.settings.request_max_bytes))


def test_health_reports_the_scheduler_heartbeat(core) -> None:
    client = _client(core)
    assert client.get("/api/health").json()["scheduler"] == {"alive": False, "last_beat": None}
    claims.heartbeat(core.db, core.clock.now(), "sched:test")
    body = client.get("/api/health").json()
    assert body["status"] == "ok" and body["db"] == "ok"
    assert body["scheduler"]["alive"] is True and body["scheduler"]["last_beat"].endswith("Z")
    claims.stop_instance(core.db, core.clock.now(), "sched:test")
    assert client.get("/api/health").json()["scheduler"]["alive"] is False


def test_metrics_expose_fires_lateness_and_runs(clocked_core, fake_clock) -> None:
    core = clocked_core
    user = auth.create_user(core.db, core.clock, "m@example.com", "password-1")
    project = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, "P", user)
    chat = chats.create_chat(core.db, core.clock, user, project.id, "C")
    tasks = TaskService(core.db, core.clock, core.settings)
    tasks.create(Actor(user), chat.id, {"name": "m", "prompt": "hi", "schedule": {"kind": "interval",
                                                                                  "every_seconds": 60}})
    loop = build_loop(core, "sched:metrics")
    fake_clock.advance(60.2)
    loop.tick()
    for handle in core.prompts.running():
        assert handle.wait(10) is not None
    text = _client(core).get("/metrics").text
    assert 'chatcron_fires{outcome="succeeded"} 1.0' in text
    assert 'chatcron_runs{source="schedule",status="succeeded"} 1.0' in text
    assert "chatcron_fire_lateness_seconds_count 1.0" in text
    assert 'chatcron_fire_lateness_seconds_bucket{le="0.25"} 1.0' in text
    assert "chatcron_claims_in_flight 0.0" in text and "chatcron_queued_follow_ups 0.0" in text
    assert "chatcron_loop_iterations_total 1.0" in text


def test_lateness_of_a_jittered_fire_counts_from_its_jittered_instant(clocked_core, fake_clock) -> None:
    core = clocked_core
    user = auth.create_user(core.db, core.clock, "j@example.com", "password-1")
    project = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, "P", user)
    chat = chats.create_chat(core.db, core.clock, user, project.id, "C")
    task, _ = TaskService(core.db, core.clock, core.settings).create(Actor(user), chat.id, {
        "name": "j", "prompt": "hi", "schedule": {"kind": "interval", "every_seconds": 3600}, "jitter_seconds": 300})
    assert task.next_run_at - task.next_occurrence_at >= dt.timedelta(seconds=1)  # this task's draw moves it
    loop = build_loop(core, "sched:jitter")
    fake_clock.set(task.next_run_at + dt.timedelta(seconds=0.2))
    loop.tick()
    for handle in core.prompts.running():
        assert handle.wait(10) is not None
    text = _client(core).get("/metrics").text
    assert "chatcron_fire_lateness_seconds_count 1.0" in text
    assert 'chatcron_fire_lateness_seconds_bucket{le="0.25"} 1.0' in text  # 0.2 s after its own instant


def test_a_store_that_cannot_be_written_makes_the_loop_back_off(core, monkeypatch) -> None:
    loop = build_loop(core, "sched:readonly")
    planned: list[dt.datetime] = []
    loop.schedule = planned.append

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise OperationalError("UPDATE", {}, Exception("attempt to write a readonly database"))

    monkeypatch.setattr(claims, "heartbeat", refuse)
    before = core.clock.now()
    when = loop.tick()
    assert loop.stats.store_errors == 1
    assert planned == [when]
    assert when - before >= dt.timedelta(seconds=core.settings.busy_retry_seconds)
    monkeypatch.undo()
    when = loop.tick()  # the store is writable again: the next iteration succeeds
    assert loop.stats.store_errors == 1
    assert when - core.clock.now() <= dt.timedelta(seconds=core.settings.run_lease_seconds)
