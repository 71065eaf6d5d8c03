"""The transcript's usage lines read from runs.usage for the transcript and the drawer (app/ui/usage.py), on SQLite
and PostgreSQL: recorded in the transaction that ends a run, as the prompt service does."""

from __future__ import annotations

import json

from app.core import auth, chats, projects, runs
from app.core.models import RunSource, RunStatus
from app.ui import usage
from tests import store
from tests.conftest import run_async


def _run(core, chat_id: int, recorded: dict | str | None):
    run = store.begin_run(core.db, core.clock, chat_id, "q", source=RunSource.USER,
                          lease_seconds=core.settings.run_lease_seconds, instance="test")
    with core.db.write() as s:
        runs.finish_run_in(s, core.clock.now(), run.id, chat_id, RunStatus.SUCCEEDED)
        if recorded is not None:
            runs.record_usage_in(s, run.id, recorded if isinstance(recorded, str) else json.dumps(recorded))
    return run


def test_usage_lines_of_finished_runs(core) -> None:
    user = auth.create_user(core.db, core.clock, "a@example.com", "password-1")
    project = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, "P", user)
    chat = chats.create_chat(core.db, core.clock, user, project.id, "C")
    full = _run(core, chat.id, {"input_tokens": 1234, "output_tokens": 567, "cached_tokens": 89, "cost_usd": 0.0123})
    none = _run(core, chat.id, None)
    broken = _run(core, chat.id, "{not json")
    partial = _run(core, chat.id, {"output_tokens": 5})
    lines = usage.usage_lines(core.db, [full.id, none.id, broken.id, partial.id, 99_999])
    assert lines == {full.id: "1,234 in · 567 out · 89 cached · $0.0123", partial.id: "5 out"}
    assert usage.usage_lines(core.db, []) == {}

    events = runs.list_events(core.db, chat.id)
    assert run_async(usage.for_events(core.db, events)) == lines
    assert run_async(usage.for_events(core.db, [e for e in events if e.type != "run_finished"])) == {}
