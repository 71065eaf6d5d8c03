"""The run lock and event log on a real database (SQLite and PostgreSQL)."""

from __future__ import annotations

import pytest

from app.core import auth, chats, projects, runs
from app.core.errors import PromptAlreadyRunning
from app.core.models import RunSource, RunStatus
from tests import store
from tests.conftest import make_core, with_settings


def _chat(core):
    user = auth.create_user(core.db, core.clock, "a@example.com", "password-1")
    project = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, "P", user)
    return chats.create_chat(core.db, core.clock, user, project.id, "C")


def test_second_start_on_a_busy_chat_is_refused(core):
    chat = _chat(core)
    first = core.prompts.start(chat.id, "/sleep 5")
    with pytest.raises(PromptAlreadyRunning):
        core.prompts.start(chat.id, "hello")
    first.cancel.set()
    result = first.wait(10)
    assert result is not None and result.status == RunStatus.FAILED


def test_turn_streams_reply_into_events_and_output(settings):
    core = make_core(with_settings(settings, demo_word_delay_seconds=0.06))  # slower than the 50 ms batching
    chat = _chat(core)
    result = core.prompts.start(chat.id, "hello world").wait(10)
    assert result.status == RunStatus.SUCCEEDED
    assert result.output == "Demo agent here. You said: hello world"
    events = runs.list_events(core.db, chat.id)
    kinds = [e.type for e in events]
    assert kinds[:2] == ["prompt", "run_started"] and kinds[-1] == "run_finished"
    chunks = [e.text for e in events if e.type == "assistant_text"]
    assert len(chunks) > 3 and "".join(chunks) == result.output
    assert [e.id for e in events] == sorted(e.id for e in events)
    core.db.dispose()


def test_a_burst_of_chunks_is_written_in_few_events(core):
    chat = _chat(core)  # word delay 0: the whole reply is emitted at once
    result = core.prompts.start(chat.id, " ".join(f"w{i}" for i in range(40))).wait(10)
    assert result.status == RunStatus.SUCCEEDED and result.output.endswith("w39")
    chunks = [e.text for e in runs.list_events(core.db, chat.id) if e.type == "assistant_text"]
    assert "".join(chunks) == result.output and len(chunks) <= 3


def test_dead_run_is_abandoned_after_the_lease_and_chat_freed(core, fake_clock):
    chat = _chat(core)
    run = store.begin_run(core.db, fake_clock, chat.id, "x", source=RunSource.USER, lease_seconds=5,
                         instance="dead-process")
    with pytest.raises(PromptAlreadyRunning):
        store.begin_run(core.db, fake_clock, chat.id, "y", source=RunSource.USER, lease_seconds=5, instance="b")
    fake_clock.advance(6)
    abandoned = runs.abandon_stale_runs(core.db, fake_clock, 5)
    assert [r.id for r in abandoned] == [run.id]
    assert runs.get_run(core.db, run.id).status == RunStatus.ABANDONED
    again = store.begin_run(core.db, fake_clock, chat.id, "z", source=RunSource.USER, lease_seconds=5, instance="b")
    assert again.status == RunStatus.RUNNING
