"""Stopping a running turn (SPEC §16 ``composer-stop``) on SQLite and PostgreSQL: in the process that
runs it, in another core on the same store, and in a real scheduler process running a fire.

Every wait is a bounded poll on a database condition or a handle; nothing sleeps as an assertion.
"""

from __future__ import annotations

import pytest

from app.core import auth, chats, projects, runs
from app.core.config import Settings
from app.core.context import Core
from app.core.errors import NotFound
from app.core.models import RunSource, RunStatus
from app.core.stops import NothingToStop
from app.schedules.model import RunOutcome, TaskStatus
from app.schedules.service import Actor
from tests.conftest import make_core, with_settings
from tests.integration.apiclient import add_user, bearer, client_for
from tests.integration.procs import Schedulers, wait_for
from tests.integration.procs import new_chat as _chat
from tests.integration.procs import new_owner as _owner
from tests.integration.test_scheduler_processes import LEASE, _run, _service, _start_busy_sleeper, _task, _task_runs


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return with_settings(settings, run_lease_seconds=LEASE, max_tasks_per_project=0)


def _setup(core: Core):
    user = auth.create_user(core.db, core.clock, "stopper@example.com", "password-1")
    project = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, "P", user)
    return user, project, chats.create_chat(core.db, core.clock, user, project.id, "C")


def _errors(core: Core, chat_id: int) -> list[str]:
    return [e.text for e in runs.list_events(core.db, chat_id) if e.type == "error"]


def test_a_stopped_user_turn_ends_failed_stopped_by_and_frees_the_chat(core: Core) -> None:
    user, _, chat = _setup(core)
    handle = core.prompts.start(chat.id, "/sleep 60")
    assert core.prompts.stop(user, chat.id) == handle.run_id
    result = handle.wait(10)
    assert result is not None and result.status == RunStatus.FAILED
    assert result.error == "stopped by stopper@example.com"
    assert _errors(core, chat.id) == ["stopped by stopper@example.com"]
    assert runs.live_run(core.db, core.clock, chat.id, LEASE) is None
    after = core.prompts.start(chat.id, "hello").wait(10)  # the chat is free again
    assert after is not None and after.status == RunStatus.SUCCEEDED


def test_a_stop_from_another_process_reaches_the_turn(core: Core, settings: Settings) -> None:
    user, _, chat = _setup(core)
    other = make_core(settings)  # another web worker: its own prompt service, the same store
    try:
        handle = other.prompts.start(chat.id, "/sleep 60")
        assert core.prompts.stop(user, chat.id, handle.run_id) == handle.run_id
        assert not core.prompts.running()  # nothing of it runs here
        result = handle.wait(10)  # the other worker polls for stop requests every half second
        assert result is not None and result.status == RunStatus.FAILED
        assert result.error == "stopped by stopper@example.com"
    finally:
        other.prompts.shutdown(5.0)
        other.db.dispose()


def test_stopping_a_turn_that_already_ended_changes_nothing_and_says_so(core: Core) -> None:
    user, _, chat = _setup(core)
    with pytest.raises(NothingToStop, match="No turn is running"):
        core.prompts.stop(user, chat.id)
    done = core.prompts.start(chat.id, "hello").wait(10)
    assert done is not None and done.status == RunStatus.SUCCEEDED
    with pytest.raises(NothingToStop, match="already ended"):
        core.prompts.stop(user, chat.id, done.run_id)
    run = runs.get_run(core.db, done.run_id)
    assert run.status == RunStatus.SUCCEEDED and run.stop_requested_by is None and run.error is None


def test_a_user_without_access_cannot_stop(core: Core) -> None:
    _, _, chat = _setup(core)
    outsider = auth.create_user(core.db, core.clock, "outsider@example.com", "password-1")
    handle = core.prompts.start(chat.id, "/sleep 60")
    try:
        with pytest.raises(NotFound):
            core.prompts.stop(outsider, chat.id)
        assert runs.get_run(core.db, handle.run_id).stop_requested_by is None
        assert not handle.done
    finally:
        handle.cancel.set()
        handle.wait(10)


def test_a_stopped_fire_in_the_scheduler_process_fails_without_counting_towards_auto_pause(
        core: Core, procs: Schedulers) -> None:
    user, project_id = _owner(core)
    chat = _chat(core, user, project_id)
    sched, task, row, run = _start_busy_sleeper(core, _service(core), procs, user, chat)
    assert run.source == RunSource.SCHEDULE.value
    core.prompts.stop(user, chat.id)
    ended = wait_for(lambda: (r := _run(core, run.id)).status != RunStatus.RUNNING.value and r, 10,
                     "the scheduler to stop the fire's turn", [sched])
    assert ended.status == RunStatus.FAILED.value and ended.error == f"stopped by {user.email}"
    task_run = wait_for(lambda: (x := _task_runs(core, task.id)[0]).status != RunOutcome.RUNNING.value and x,
                        10, "the fire's TaskRun to finish", [sched])
    assert task_run.status == RunOutcome.FAILED.value and task_run.error == f"stopped by {user.email}"
    after = _task(core, task.id)
    assert after.status == TaskStatus.ACTIVE.value and after.consecutive_failures == 0
    assert after.active_run_id is None and after.last_error == f"stopped by {user.email}"
    assert runs.live_run(core.db, core.clock, chat.id, LEASE) is None
    assert _service(core).get(Actor(user), task.id).status == TaskStatus.ACTIVE.value


def test_the_api_stops_a_turn_and_answers_409_when_nothing_runs(core: Core) -> None:
    user, _, chat = _setup(core)
    outsider = add_user(core, "outsider@example.com")
    client = client_for(core)
    token, other = (auth.create_api_token(core.db, core.clock, u.id) for u in (user, outsider))
    handle = core.prompts.start(chat.id, "/sleep 60")
    assert client.post(f"/api/chats/{chat.id}/stop", headers=bearer(other)).status_code == 404
    assert client.post(f"/api/chats/{chat.id}/stop", json={"run": 1}, headers=bearer(token)).status_code == 400
    answer = client.post(f"/api/chats/{chat.id}/stop", json={"run_id": handle.run_id}, headers=bearer(token))
    assert answer.status_code == 202 and answer.json() == {"run_id": handle.run_id, "stopping": True}
    result = handle.wait(10)
    assert result is not None and result.error == "stopped by stopper@example.com"
    again = client.post(f"/api/chats/{chat.id}/stop", headers=bearer(token))
    assert again.status_code == 409 and again.json()["error"]["code"] == "nothing_to_stop"
