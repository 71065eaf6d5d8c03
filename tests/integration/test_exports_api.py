"""Exports and the schedules import (SPEC §21) through the HTTP API and the admin CLI, on SQLite and
PostgreSQL: a transcript holds every event in order (JSON) and reads like the chat (Markdown); a
project's schedules exported and imported into another project's chat are the same definitions, as
drafts; bad import bodies are a 400 naming the index and field, with nothing created."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from sqlmodel import select

from app.core import auth, chats, envelope, projects
from app.core.clock import FakeClock, SystemClock
from app.core.context import Core
from app.core.db import Database
from app.core.models import Event, EventType, Run, RunSource, RunStatus
from app.schedules.model import ScheduledTask
from tests.integration.apiclient import client_for, table_contents
from tests.integration.managecli import Cli
from tests.integration.test_schedules_api import World, body, build_world, error_of

CRON = {"kind": "cron", "cron": "0 9 * * 1-5", "timezone": "Europe/Paris"}
DEFINITIONS = [
    body(name="Standup", prompt="Post the standup summary.", schedule=CRON, overlap="queue_one", max_runs=20,
         catchup_window_seconds=None, jitter_seconds=120, max_tokens_per_fire=50_000, notify="always",
         exclude_dates=["2031-12-24"], holidays={"country": "de", "subdivision": "by"}),
    body(name="Build watch", schedule={"kind": "interval", "every_seconds": 3600}, session="fresh",
         ends_at="2026-03-01T00:00:00Z", max_cost_per_fire_usd=0.5, overlap="queue_all", queue_cap=5,
         notify_on="changes", pace_min_seconds=600, pace_max_seconds=7200),
]


@pytest.fixture
def world(clocked_core: Core, fake_clock: FakeClock) -> Iterator[World]:
    with client_for(clocked_core) as client:
        yield build_world(clocked_core, fake_clock, client)


def a_transcript(w: World) -> list[Event]:
    """A user's turn with a tool call updated twice and a reply in two parts, then a fire's turn
    that failed; written as the prompt service writes them."""
    now = w.clock.now()

    def run(source: RunSource, status: RunStatus, output: str) -> int:
        with w.core.db.write() as s:
            row = Run(chat_id=w.chat, source=source.value, status=status.value, output=output, started_at=now,
                      heartbeat_at=now, finished_at=now)
            s.add(row)
            s.flush()
            return row.id

    first, second = run(RunSource.USER, RunStatus.SUCCEEDED, ""), run(RunSource.SCHEDULE, RunStatus.FAILED, "")
    tool = {"id": "call-1", "title": "ls -la", "kind": "execute"}
    fire = envelope.build("Build watch", "Check the nightly build.", 2, 10)  # as the scheduler writes it
    rows = [(first, EventType.PROMPT, "List the files, please."), (first, EventType.RUN_STARTED, "user"),
            (first, EventType.ASSISTANT_TEXT, "Let me "), (first, EventType.ASSISTANT_TEXT, "look."),
            (first, EventType.TOOL, json.dumps({**tool, "status": "pending"})),
            (first, EventType.TOOL, json.dumps({**tool, "status": "completed", "output": "a\nb"})),
            (first, EventType.ASSISTANT_TEXT, "There are two files."), (first, EventType.RUN_FINISHED, "succeeded"),
            (second, EventType.SCHEDULED_PROMPT, fire), (second, EventType.RUN_STARTED, "schedule"),
            (second, EventType.THOUGHT, "The build server is down."),
            (second, EventType.ERROR, "the agent exited with code 1"), (second, EventType.RUN_FINISHED, "failed")]
    with w.core.db.write() as s:
        for run_id, kind, text in rows:
            s.add(Event(chat_id=w.chat, run_id=run_id, type=kind.value, text=text, created_at=now))
    with w.core.db.read() as s:
        return list(s.exec(select(Event).where(Event.chat_id == w.chat).order_by(Event.id)))


def test_a_json_transcript_holds_every_event_in_order(world: World) -> None:
    w = world
    events = a_transcript(w)
    response = w.client.get(f"/api/chats/{w.chat}/export?format=json", headers=w.h())
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
    assert f'filename="chat-{w.chat}-plans.json"' in response.headers["content-disposition"]
    doc = response.json()
    assert doc["chat"]["title"] == "Plans" and doc["chat"]["project"] == "Alice's"
    assert [(e["id"], e["run_id"], e["type"], e["text"]) for e in doc["events"]] == [
        (e.id, e.run_id, e.type, e.text) for e in events]
    assert doc["events"][5]["data"]["status"] == "completed"  # a tool's JSON, parsed


def test_a_markdown_transcript_reads_like_the_chat(world: World) -> None:
    w = world
    a_transcript(w)
    response = w.client.get(f"/api/chats/{w.chat}/export?format=md", headers=w.h())
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/markdown")
    text = response.text
    assert text.startswith("# Plans\n")
    order = ["**You**", "List the files, please.", "**Agent**", "Let me look.", "- Tool `ls -la` — completed",
             "There are two files.", '**Scheduled fire** "Build watch" 2/10', "Check the nightly build.",
             "> *thinking:* The build server is down.", "**Error:** the agent exited with code 1",
             "*The turn ended failed.*"]
    places = [text.index(part) for part in order]
    assert places == sorted(places), text
    assert text.count("- Tool `ls -la`") == 1 and "pending" not in text  # one line, at its last state
    assert "Continue the standing task" not in text  # the fire card shows the stored prompt, not the envelope


def test_an_export_of_a_chat_one_cannot_see_or_in_an_unknown_format(world: World) -> None:
    w = world
    assert w.client.get(f"/api/chats/{w.bob_chat}/export", headers=w.h()).status_code == 404
    bad = w.client.get(f"/api/chats/{w.chat}/export?format=pdf", headers=w.h())
    assert bad.status_code == 400 and error_of(bad)["message"].startswith("format:")
    assert w.client.get(f"/api/chats/{w.loose}/export", headers=w.h()).status_code == 200  # a loose chat too


def test_schedules_exported_and_imported_into_another_projects_chat_are_the_same_definitions_as_drafts(
        world: World) -> None:
    w = world
    for definition in DEFINITIONS:
        assert w.client.post(f"/api/chats/{w.chat}/schedules", json=definition, headers=w.h()).status_code == 201
    exported = w.client.get(f"/api/projects/{w.project}/schedules/export", headers=w.h())
    assert exported.status_code == 200
    doc = exported.json()
    assert doc["version"] == 1 and [d["name"] for d in doc["schedules"]] == ["Standup", "Build watch"]
    assert set(doc["schedules"][0]) == {"name", "prompt", "schedule", "overlap", "session", "notify", "max_runs",
                                        "catchup_window_seconds", "jitter_seconds", "starts_at", "ends_at",
                                        "max_tokens_per_fire", "max_cost_per_fire_usd", "notify_on", "queue_cap",
                                        "pace_min_seconds", "pace_max_seconds", "exclude_dates", "holidays"}
    assert {k: doc["schedules"][1][k] for k in ("overlap", "queue_cap", "notify_on", "pace_min_seconds")} == {
        "overlap": "queue_all", "queue_cap": 5, "notify_on": "changes", "pace_min_seconds": 600}
    assert {k: doc["schedules"][0][k] for k in ("exclude_dates", "holidays")} == {
        "exclude_dates": ["2031-12-24"], "holidays": {"country": "DE", "subdivision": "BY"}}
    bob_project = w.client.get("/api/projects", headers=w.h("bob")).json()["projects"][0]["id"]
    assert w.client.post(f"/api/projects/{bob_project}/schedules/import", json={**doc, "chat_id": w.bob_chat},
                         headers=w.h()).status_code == 404  # alice cannot see bob's project
    imported = w.client.post(f"/api/projects/{bob_project}/schedules/import", json={**doc, "chat_id": w.bob_chat},
                             headers=w.h("bob"))
    assert imported.status_code == 201, imported.text
    made = imported.json()
    assert made["created"] == 2 and {t["status"] for t in made["schedules"]} == {"draft"}
    assert {(t["owner"], t["chat_id"], t["next_run_at"]) for t in made["schedules"]} == {
        ("bob@example.com", w.bob_chat, None)}  # nothing fires before a user arms it
    again = w.client.get(f"/api/projects/{bob_project}/schedules/export", headers=w.h("bob")).json()
    assert again == doc
    armed = w.client.post(f"/api/schedules/{made['schedules'][0]['id']}/arm", headers=w.h("bob"))
    assert armed.status_code == 200 and armed.json()["status"] == "active"


BAD: list[tuple[Any, str]] = [  # (an import body, the field its 400 names)
    ({"version": 2, "schedules": []}, "version"),
    ({"schedules": []}, "version"),
    ({"version": 1, "schedules": {}}, "schedules"),
    ({"version": 1, "schedules": [DEFINITIONS[0], "a string"]}, "schedules[1]"),
    ({"version": 1, "schedules": [DEFINITIONS[0], {**DEFINITIONS[1], "colour": "red"}]}, "schedules[1].colour"),
    ({"version": 1, "schedules": [DEFINITIONS[0], {**DEFINITIONS[1], "schedule": {"kind": "cron", "cron": "61 * * * *",
                                                                                  "timezone": "UTC"}}]},
     "schedules[1].schedule.cron"),
    ({"version": 1, "schedules": [{**DEFINITIONS[0], "overlap": "sometimes"}]}, "schedules[0].overlap"),
    ({"version": 1, "schedules": [{**DEFINITIONS[0], "name": ""}]}, "schedules[0].name"),
    ({"version": 1, "schedules": [{**DEFINITIONS[0], "max_tokens_per_fire": -1}]}, "schedules[0].max_tokens_per_fire"),
    ([1, 2], "body"),
    ({"version": True, "schedules": []}, "version"),
]


@pytest.mark.parametrize(("doc", "field"), BAD, ids=[f for _, f in BAD])
def test_a_bad_import_is_400_naming_the_index_and_field_and_creates_nothing(world: World, doc: Any,
                                                                           field: str) -> None:
    w = world
    before = table_contents(w.core)
    payload = {**doc, "chat_id": w.other_chat} if isinstance(doc, dict) else doc
    response = w.client.post(f"/api/projects/{w.project}/schedules/import", json=payload, headers=w.h())
    assert response.status_code == 400, response.text
    assert error_of(response)["message"].startswith(f"{field}:"), error_of(response)
    assert table_contents(w.core) == before


def test_an_import_into_a_chat_of_another_project_or_a_loose_chat_is_refused(world: World) -> None:
    w = world
    doc = {"version": 1, "schedules": [DEFINITIONS[0]]}
    for chat_id in (w.loose, "7", 2**63, 0, True):
        refused = w.client.post(f"/api/projects/{w.project}/schedules/import", json={**doc, "chat_id": chat_id},
                                headers=w.h())
        assert refused.status_code == 400 and error_of(refused)["message"].startswith("chat_id:"), refused.text
    hidden = w.client.post(f"/api/projects/{w.project}/schedules/import", json={**doc, "chat_id": w.bob_chat},
                           headers=w.h())
    assert hidden.status_code == 404
    with w.core.db.read() as s:
        assert s.exec(select(ScheduledTask)).all() == []


def test_the_admin_cli_exports_and_imports(cli: Cli, store: Database, tmp_path) -> None:
    assert cli.run("migrate").code == 0
    clock = SystemClock()
    owner = auth.create_user(store, clock, "owner@example.com", "password-owner")
    first = projects.create_project(store, clock, cli.data_dir / "workspaces", "Ops", owner).id
    second = projects.create_project(store, clock, cli.data_dir / "workspaces", "Moved", owner).id
    chat = chats.create_chat(store, clock, owner, first, "Ops talk").id
    target = chats.create_chat(store, clock, owner, second, "Moved talk").id
    with store.write() as s:
        s.add(ScheduledTask(chat_id=chat, project_id=first, owner=owner.email, name="Nightly", prompt="Report.",
                            schedule=json.dumps(CRON), created_at=clock.now(), updated_at=clock.now()))
    path = tmp_path / "schedules.json"
    exported, transcript, bad = cli.run_all(("export-schedules", "--project", str(first), "--to", str(path)),
                                            ("export-chat", "--chat", str(chat), "--format", "json"),
                                            ("export-chat", "--chat", "987654"))
    assert exported.code == 0 and exported.out.strip() == f"wrote {path}", exported
    assert json.loads(transcript.out)["chat"]["title"] == "Ops talk", transcript
    assert bad.code == 1 and "no chat with id 987654" in bad.err, bad
    imported = cli.run("import-schedules", "--project", str(second), "--chat", str(target), "--owner",
                       "owner@example.com", "--from", str(path))
    assert imported.code == 0 and imported.out.startswith(f"created 1 draft(s) in chat {target}"), imported
    with store.read() as s:
        [copy] = s.exec(select(ScheduledTask).where(ScheduledTask.chat_id == target)).all()
    assert (copy.name, copy.status, json.loads(copy.schedule)["cron"]) == ("Nightly", "draft", "0 9 * * 1-5")


def test_finished_tasks_stay_out_of_an_export_and_titles_of_any_script_download(world: World) -> None:
    w = world
    once = body(name="Once", schedule={"kind": "once", "at": "2026-01-05T10:00:00Z"})
    ended = body(name="Ended", ends_at="2026-01-06T00:00:00Z")
    for definition in (once, ended, DEFINITIONS[0]):
        assert w.client.post(f"/api/chats/{w.chat}/schedules", json=definition, headers=w.h()).status_code == 201
    w.clock.advance(2 * 86400)  # the once task's instant and the window's end have passed
    doc = w.client.get(f"/api/projects/{w.project}/schedules/export", headers=w.h()).json()
    assert [d["name"] for d in doc["schedules"]] == ["Standup"]  # importable as it is
    assert w.client.post(f"/api/projects/{w.project}/schedules/import", json={**doc, "chat_id": w.other_chat},
                         headers=w.h()).status_code == 201
    renamed = w.client.patch(f"/api/chats/{w.chat}", json={"title": "Отчёт 会议 `notes`"}, headers=w.h())
    assert renamed.status_code == 200
    response = w.client.get(f"/api/chats/{w.chat}/export?format=md", headers=w.h())
    assert response.status_code == 200 and f'filename="chat-{w.chat}-notes.md"' in response.headers[
        "content-disposition"]
    assert response.text.startswith("# Отчёт 会议 `notes`\n")
