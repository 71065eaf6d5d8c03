"""A fire card's planned occurrence and lateness (app/ui/times.py), read from the store on SQLite and
PostgreSQL: the fire's claim (``TaskRun.occurrence_at``) against its turn's start (``Run.started_at``)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator

import pytest

from app.core.context import Core
from app.core.models import Chat, Event, EventType, Project, Run, User
from app.schedules.model import ScheduledTask, TaskRun
from app.ui.times import fire_starts, for_events
from tests.conftest import database_core, run_async

PLANNED = dt.datetime(2026, 12, 2, 14, 5, tzinfo=dt.UTC)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def core(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Core]:
    with database_core(request, tmp_path_factory, "fire-times") as core:
        yield core


def _world(core: Core, email: str = "ann@example.com") -> dict[str, int]:
    """A chat with a user's turn and two fires of one task: one 2 min late, one on time."""
    with core.db.write() as s:
        user = User(email=email, password_hash="x", created_at=PLANNED)
        s.add(user)
        s.flush()
        project = Project(name="P", owner_id=user.id, created_at=PLANNED)
        s.add(project)
        s.flush()
        chat = Chat(project_id=project.id, owner_id=user.id, created_at=PLANNED, updated_at=PLANNED)
        s.add(chat)
        s.flush()
        task = ScheduledTask(chat_id=chat.id, project_id=project.id, owner=user.email, name="standup", prompt="go",
                             schedule=json.dumps({"kind": "interval", "every_seconds": 3600}), status="active",
                             created_at=PLANNED, updated_at=PLANNED)
        s.add(task)
        s.flush()
        ids = {}
        for name, occurrence, started in (("late", PLANNED, PLANNED + dt.timedelta(minutes=2, seconds=5)),
                                          ("on_time", PLANNED + dt.timedelta(hours=1),
                                           PLANNED + dt.timedelta(hours=1, milliseconds=400))):
            claim = TaskRun(task_id=task.id, occurrence_at=occurrence, claimed_at=occurrence, fire_number=1)
            s.add(claim)
            s.flush()
            run = Run(chat_id=chat.id, source="schedule", status="succeeded", task_id=task.id,
                      task_run_id=claim.id, started_at=started, heartbeat_at=started)
            s.add(run)
            s.flush()
            ids[name] = run.id
        user_run = Run(chat_id=chat.id, started_at=PLANNED, heartbeat_at=PLANNED, status="succeeded")
        s.add(user_run)
        s.flush()
        ids["user"], ids["chat"] = user_run.id, chat.id
    return ids


def test_a_fire_is_planned_at_its_occurrence_and_late_by_its_turns_start(core: Core) -> None:
    ids = _world(core)
    assert fire_starts(core.db, [ids["late"], ids["on_time"], ids["user"], 999_999]) == {
        ids["late"]: ("2026-12-02T14:05:00Z", "2 min late", ""),
        ids["on_time"]: ("2026-12-02T15:05:00Z", "on time", ""),
    }
    assert fire_starts(core.db, []) == {}
    events = [Event(chat_id=ids["chat"], run_id=ids["late"], type=EventType.SCHEDULED_PROMPT.value),
              Event(chat_id=ids["chat"], run_id=ids["user"], type=EventType.PROMPT.value)]
    assert run_async(for_events(core.db, events)) == {ids["late"]: ("2026-12-02T14:05:00Z", "2 min late", "")}


def test_a_run_now_fire_says_who_asked_for_it_not_a_planned_time(core: Core) -> None:
    """A run-now has no planned time to be on time for: its card names who asked (the user's run-now
    records the user; an agent's says so)."""
    ids = _world(core, "bob@example.com")
    with core.db.write() as s:
        task_id = s.get(Run, ids["late"]).task_id
        made = {}
        for name, trigger, by in (("user", "run_now_user", "ann@example.com"), ("agent", "run_now_agent", None),
                                  ("nobody", "run_now_user", None)):
            at = PLANNED + dt.timedelta(hours=len(made) + 3)
            claim = TaskRun(task_id=task_id, occurrence_at=at, claimed_at=at, trigger=trigger, requested_by=by)
            s.add(claim)
            s.flush()
            run = Run(chat_id=ids["chat"], source="schedule", status="succeeded", task_id=task_id,
                      task_run_id=claim.id, started_at=at + dt.timedelta(minutes=5), heartbeat_at=at)
            s.add(run)
            s.flush()
            made[name] = run.id
    assert fire_starts(core.db, made.values()) == {
        made["user"]: ("", "", "Run now by ann@example.com"),
        made["agent"]: ("", "", "Run now by the agent"),
        made["nobody"]: ("", "", "Run now by a user"),
    }
