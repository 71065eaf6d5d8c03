"""The pure rules of backup and restore (app/backup): the manifest built, parsed and compared, member
names, the cache exclusions, and what an abandoned fire does to its task."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json

import pytest

from app.backup.errors import BackupError
from app.backup.files import excluded
from app.backup.manifest import (
    EMPTY_SHA256,
    Entry,
    Kind,
    Manifest,
    Store,
    differences,
    name_problem,
    parse,
    shape_problems,
    verify,
)
from app.schedules.abandon import abandoned_changes
from app.schedules.model import RunOutcome, TaskStatus, Trigger

A = hashlib.sha256(b"a").hexdigest()
B = hashlib.sha256(b"b").hexdigest()
WHEN = dt.datetime(2026, 12, 4, 2, 0, 0, tzinfo=dt.UTC)


def manifest(**changes: object) -> Manifest:
    members = {"database/chatcron.sqlite3": Entry(Kind.FILE, 1, A), "workspaces": Entry(Kind.DIR, 0, EMPTY_SHA256),
               "workspaces/1/notes.md": Entry(Kind.FILE, 1, B),
               "agent-homes/1/link": Entry(Kind.SYMLINK, 0, A)}
    base = Manifest(chatcron_version="0.1.0", schema_revision="0015_project_roles", created_at=WHEN,
                    database=Store.SQLITE, members=members, rows={"users": 2, "events": 40},
                    skipped=("workspaces/1/fifo (not a regular file, folder or link)",))
    return dataclasses.replace(base, **changes)


def body(**changes: object) -> bytes:
    raw = json.loads(manifest().to_json())
    raw.update(changes)
    return json.dumps(raw).encode()


def test_a_manifest_reads_back_as_written() -> None:
    m = manifest()
    assert parse(m.to_json()) == m
    raw = json.loads(m.to_json())
    assert raw["created_at"] == "2026-12-04T02:00:00Z" and raw["database"] == "sqlite" and raw["format"] == 1
    assert raw["members"]["workspaces/1/notes.md"] == {"type": "file", "size": 1, "sha256": B}
    assert {"chatcron_version", "schema_revision", "created_at", "database"} <= raw.keys()


def test_a_postgresql_manifest_names_its_schema() -> None:
    m = manifest(database=Store.POSTGRESQL, pg_schema="public",
                 members={"database/chatcron.pgdump": Entry(Kind.FILE, 1, A)})
    assert parse(m.to_json()).pg_schema == "public"
    with pytest.raises(BackupError, match="pg_schema"):
        parse(dataclasses.replace(m, pg_schema=None).to_json())


@pytest.mark.parametrize(("raw", "words"), [
    (b"{not json", "not valid JSON"),
    (b"[]", "not a JSON object"),
    (body(format=2), "upgrade chatcron first"),
    (body(schema_revision=""), "no schema_revision"),
    (body(created_at="yesterday"), "bad created_at"),
    (body(created_at="2026-12-04T02:00:00"), "without a time zone"),
    (body(database="mysql"), "bad created_at or database"),
    (body(members={"workspaces/a": {"type": "file", "size": 1, "sha256": A}}), "lists no database/chatcron.sqlite3"),
    (body(members={"database/chatcron.sqlite3": {"type": "file", "size": 1, "sha256": "abc"}}), "bad size or sha256"),
    (body(members={"database/chatcron.sqlite3": {"type": "fifo", "size": 1, "sha256": A}}), "bad entry"),
    (body(members={"database/chatcron.sqlite3": {"type": "file", "size": 1, "sha256": A},
                   "../etc/passwd": {"type": "file", "size": 1, "sha256": A}}), "'.' or '..'"),
    (body(rows={"users": "two"}), "bad rows"),
], ids=["not-json", "not-object", "newer-format", "no-revision", "bad-instant", "naive-instant", "bad-database",
        "no-database-member", "short-sha", "bad-type", "escaping-name", "bad-rows"])
def test_a_bad_manifest_is_refused_naming_what(raw: bytes, words: str) -> None:
    with pytest.raises(BackupError, match=words):
        parse(raw)


@pytest.mark.parametrize(("name", "ok"), [
    ("database/chatcron.sqlite3", True), ("database/chatcron.pgdump", True), ("workspaces", True),
    ("workspaces/3/a b/ç.txt", True), ("agent-homes/loose/7/home/.claude.json", True),
    ("", False), ("/workspaces/1", False), ("workspaces/../x", False), ("workspaces//x", False),
    ("workspaces/./x", False), ("agents/claude/bin", False), ("agent-tokens/3/token", False),
    ("chatcron.db", False), ("database/other.db", False), ("workspaces/1\x00x", False),
], ids=lambda v: repr(v) if isinstance(v, str) else str(v))
def test_member_names_stay_inside_the_data_dirs_folders(name: str, ok: bool) -> None:
    assert (name_problem(name) is None) is ok


def test_each_store_has_its_own_database_member() -> None:
    assert name_problem("database/chatcron.pgdump", Store.SQLITE) is not None
    assert name_problem("database/chatcron.sqlite3", Store.SQLITE) is None


def test_differences_name_missing_extra_and_changed_members() -> None:
    listed = manifest().members
    seen = dict(listed)
    del seen["workspaces/1/notes.md"]
    seen["workspaces/1/new.md"] = Entry(Kind.FILE, 1, A)
    seen["agent-homes/1/link"] = Entry(Kind.FILE, 0, A)
    seen["database/chatcron.sqlite3"] = Entry(Kind.FILE, 1, B)
    assert differences(listed, seen) == [
        "agent-homes/1/link is a file, the manifest says symlink",
        "database/chatcron.sqlite3 does not match its sha256",
        "workspaces/1/new.md is not in the manifest",
        "workspaces/1/notes.md is missing",
    ]
    assert differences(listed, dict(listed)) == []


def test_verify_names_the_first_three_and_counts_the_rest() -> None:
    m = manifest()
    verify(m, dict(m.members))
    with pytest.raises(BackupError) as caught:
        verify(m, {})
    text = str(caught.value)
    assert text.startswith("the archive does not match its manifest: agent-homes/1/link is missing;")
    assert "(and 1 more)" in text and "nothing was restored" in text


@pytest.mark.parametrize(("path", "cache"), [
    (("workspaces",), False), (("workspaces", "1"), False), (("workspaces", "1", "src"), False),
    (("workspaces", "1", "node_modules"), True), (("workspaces", "1", "web", "node_modules"), True),
    (("agent-homes", "1", ".npm"), True), (("agent-homes", "1", ".cache"), True),
    (("agent-homes", "1", ".claude"), False), (("agent-homes", "1", ".codex"), False),
    (("workspaces", "1", "pkg", "__pycache__"), True), (("workspaces", "1", ".yarn", "cache"), True),
    (("workspaces", "1", ".yarn"), False), (("workspaces", "1", "cache"), False),
    (("agent-homes", "1", ".bun", "install", "cache"), True), (("agent-homes", "1", ".bun"), False),
    (("workspaces", "node_modules"), True), (("node_modules",), False),
], ids=lambda v: "/".join(v) if isinstance(v, tuple) else str(v))
def test_caches_are_left_out_and_nothing_else(path: tuple[str, ...], cache: bool) -> None:
    assert excluded(path) is cache


@pytest.mark.parametrize(("status", "once", "trigger", "max_runs", "run_count", "after"), [
    ("active", False, Trigger.SCHEDULE, None, 3, None),
    ("active", True, Trigger.SCHEDULE, None, 1, TaskStatus.ERROR),
    ("active", True, Trigger.RUN_NOW_USER, None, 1, None),
    ("active", False, Trigger.FOLLOW_UP, 3, 3, TaskStatus.EXHAUSTED),
    ("active", False, Trigger.FOLLOW_UP, 3, 2, None),
    ("paused", True, Trigger.SCHEDULE, None, 1, None),
    ("completed", False, Trigger.SCHEDULE, 1, 1, None),
], ids=["recurring", "once", "once-run-now", "max-runs-reached", "under-max-runs", "paused", "completed"])
def test_an_abandoned_fire_is_never_refired(status: str, once: bool, trigger: Trigger, max_runs: int | None,
                                            run_count: int, after: TaskStatus | None) -> None:
    changes = abandoned_changes(status, once, trigger, max_runs, run_count, "abandoned: running when the backup "
                                                                             "was taken")
    assert changes["active_run_id"] is None and changes["last_run_status"] == RunOutcome.ABANDONED
    assert changes["last_error"] == "abandoned: running when the backup was taken"
    assert changes.get("status") == after
    assert ("next_run_at" in changes) is (after is not None) and changes.get("next_run_at") is None


def test_a_crafted_archive_with_members_below_a_link_or_roots_of_another_kind_is_refused() -> None:
    members = {"workspaces": Entry(Kind.DIR, 0, EMPTY_SHA256), "workspaces/l": Entry(Kind.SYMLINK, 0, A),
               "workspaces/l/pwned": Entry(Kind.SYMLINK, 0, B), "agent-homes": Entry(Kind.SYMLINK, 0, A),
               "database/chatcron.sqlite3": Entry(Kind.SYMLINK, 0, B)}
    crafted = manifest(members=members)
    assert shape_problems(crafted, members) == ["agent-homes is not a folder",
                                                "database/chatcron.sqlite3 is not a regular file",
                                                "workspaces/l/pwned is below a link"]
    with pytest.raises(BackupError, match="is below a link"):
        verify(crafted, members)  # the checksums all match: the shape alone refuses it
    name = "caf\udce9.md"  # a file name that is not UTF-8, as Python keeps it
    kept = manifest(members={**manifest().members, f"workspaces/1/{name}": Entry(Kind.FILE, 1, A)})
    assert f"workspaces/1/{name}" in parse(kept.to_json()).members
