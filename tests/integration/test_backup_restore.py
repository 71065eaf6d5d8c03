"""Backup while a real scheduler fires, restore into a fresh store, and a scheduler on the restored copy
(SPEC §21), on SQLite and PostgreSQL, every command a real ``python -m app.manage`` process.

What "equal" means here: the restored store holds every row of the archive's own database (read
with the standard tools alone, not our restore) unchanged, except what the restore documents
(app/backup/settle.py): each fire and turn that was ``running`` at the snapshot is ``abandoned``
with "abandoned: running when the backup was taken" (its task let go of it by the abandon rule),
each such turn's transcript gains its error and end, and the snapshot's scheduler instances are
stopped. Workspace and agent-home files come back byte for byte, caches do not.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.backup.settle import REASON
from app.core.config import Settings
from app.core.context import Core
from app.core.db import Database
from app.core.migrate import known_revisions
from app.core.wake import DatabaseWaker
from app.schedules.model import RunOutcome, ScheduledTask, TaskStatus
from app.schedules.service import Actor, TaskService
from tests.conftest import make_core
from tests.integration.backups import Rows, archived_database, empty_target, manifest_of, sha256_tree, table_rows
from tests.integration.managecli import Cli, ok
from tests.integration.procs import Schedulers, clone_tasks, schedulers, wait_for
from tests.integration.procs import new_chat as _chat
from tests.integration.procs import new_owner as _owner

pytestmark = pytest.mark.slow  # real scheduler and admin CLI processes: left out of `make check`

LEASE = 3
HOUR = 3600
QUICK, LONG, WAVE = 6, 3, 40
CATCH_IN = 20  # s after the backup: when the two catch-up tasks fall due (on the restored copy, late)
SETTLED = {"task_runs", "scheduled_tasks", "runs", "events", "scheduler_instances", "approvals"}
TASK_ABANDON_COLUMNS = {"active_run_id", "last_run_status", "last_error", "status", "next_run_at",
                        "next_occurrence_at", "updated_at"}


@pytest.fixture
def source(cli: Cli) -> Iterator[Core]:
    settings = Settings(data_dir=cli.data_dir, database_url=cli.url, demo_word_delay_seconds=0.0,
                        run_lease_seconds=LEASE, max_tasks_per_project=0, max_tasks_per_user=0)
    core = make_core(settings)
    yield core
    core.prompts.shutdown(2.0)
    core.db.dispose()


def _group(core: Core, svc: TaskService, user, project_id: int, name: str, prompt: str, n: int,
           **extra: object) -> list[int]:
    body = {"name": name, "prompt": prompt, "schedule": {"kind": "interval", "every_seconds": HOUR}, **extra}
    task, _ = svc.create(Actor(user), _chat(core, user, project_id, name).id, body)
    return clone_tasks(core, task, n)


def _set(core: Core, ids: list[int], **values: object) -> None:
    with core.db.write() as s:
        s.exec(sa.update(ScheduledTask).where(ScheduledTask.id.in_(ids)).values(**values))


def _runs(db: Database, *where: object) -> list[sa.Row]:
    t = sa.table("task_runs", sa.column("id"), sa.column("task_id"), sa.column("status"),
                 sa.column("started_at", sa.DateTime()), sa.column("occurrence_at", sa.DateTime()))
    with db.engine.connect() as conn:
        return list(conn.execute(sa.select(t).where(*where).order_by(t.c.id)))


def _files(core: Core, project_id: int) -> None:
    """What an agent leaves in its workspace and home, caches among it."""
    ws, home = core.settings.workspaces_dir / str(project_id), core.settings.agent_homes_dir / str(project_id)
    for i in range(20):
        (ws / "notes").mkdir(parents=True, exist_ok=True)
        (ws / "notes" / f"{i}.md").write_bytes(os.urandom(100 + i * 97))
    (ws / "data.bin").write_bytes(os.urandom(3 << 20))
    (ws / "node_modules" / "pkg").mkdir(parents=True)
    (ws / "node_modules" / "pkg" / "index.js").write_text("module.exports = 1\n")
    os.symlink("notes/0.md", ws / "latest.md")
    (home / ".claude" / "projects").mkdir(parents=True, exist_ok=True)
    (home / ".claude" / "projects" / "session.jsonl").write_text('{"turn": 1}\n')
    (home / ".cache" / "huge").mkdir(parents=True)
    (home / ".cache" / "huge" / "blob").write_bytes(b"0" * 1000)


def test_backup_during_a_burst_restores_equal_and_never_refires(source: Core, cli: Cli, data_root: Path,
                                                                tmp_path: Path) -> None:
    core = source
    svc = TaskService(core.db, core.clock, core.settings, DatabaseWaker(core.db))
    user, project_id = _owner(core)
    quick = _group(core, svc, user, project_id, "quick", "hello", QUICK)
    long = _group(core, svc, user, project_id, "long", "/sleep 60", LONG)
    at = (core.clock.now() + dt.timedelta(minutes=10)).isoformat()
    once, _ = svc.create(Actor(user), _chat(core, user, project_id, "once").id,
                         {"name": "once", "prompt": "/sleep 60", "schedule": {"kind": "once", "at": at}})
    wave = _group(core, svc, user, project_id, "wave", "/sleep 1", WAVE)  # some are in flight at the snapshot
    catch = _group(core, svc, user, project_id, "catch", "hello", 2)
    _files(core, project_id)
    path = tmp_path / "nightly.tar.gz"
    with _scheduler(cli, core, tmp_path / "logs-source") as procs:
        _set(core, [*quick, *long, once.id], next_run_at=core.clock.now())
        DatabaseWaker(core.db).notify()
        wait_for(lambda: _quick_done_long_running(core.db, quick, [*long, once.id]), 90,
                 "the quick fires to succeed and the long ones to run", procs.procs)
        _set(core, catch, next_run_at=core.clock.now() + dt.timedelta(seconds=CATCH_IN))
        _set(core, [catch[1]], catchup_window_seconds=1)
        with _burst(core, wave):  # fires start and end while the backup runs
            archive = Path(ok(cli.run("backup", "--to", str(path))))
    assert archive == path.resolve() and stat.S_IMODE(archive.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no partial file left
    manifest = manifest_of(archive)
    assert manifest["schema_revision"] == known_revisions()[0]
    assert manifest["database"] == ("sqlite" if core.db.sqlite else "postgresql")

    with empty_target(cli, data_root) as target, archived_database(archive, tmp_path) as archived:
        said = ok(target.run("restore", "--from", str(archive)))
        assert "recorded abandoned" in said
        restored = Database(target.url)
        try:
            snapshot, after = table_rows(archived), table_rows(restored)
            running = _assert_equal_but_settled(snapshot, after)
            fired = {r["task_id"] for r in snapshot["task_runs"].values() if r["status"] == RunOutcome.SUCCEEDED}
            assert set(quick) <= fired and {once.id, *long} <= {snapshot["task_runs"][k]["task_id"] for k in running}
            assert after["scheduled_tasks"][(once.id,)]["status"] == TaskStatus.ERROR  # its only fire is gone
            assert after["scheduled_tasks"][(once.id,)]["last_error"] == REASON
            _assert_files(core, target, project_id, manifest)
            resumed = _assert_resumes_by_catch_up(target, restored, catch, snapshot, tmp_path)
            print(f"\nsnapshot: {len(snapshot['task_runs'])} fires ({len(running)} running → abandoned), "
                  f"{len(snapshot['events'])} events; the restored copy's scheduler fired {resumed} due task(s) once")
        finally:
            restored.dispose()


@contextlib.contextmanager
def _scheduler(cli: Cli, core: Core, logs: Path) -> Iterator[Schedulers]:
    with schedulers(cli.url, cli.data_dir, logs) as procs:
        procs.start(core.db, ready_timeout=60, CHATCRON_RUN_LEASE_SECONDS=LEASE, CHATCRON_MAX_CONCURRENT_RUNS=0)
        yield procs


def _quick_done_long_running(db: Database, quick: list[int], slow: list[int]) -> bool:
    done = [r for r in _runs(db) if r.task_id in quick and r.status == RunOutcome.SUCCEEDED]
    busy = [r for r in _runs(db) if r.task_id in slow and r.status == RunOutcome.RUNNING and r.started_at]
    return len(done) == len(quick) and len(busy) == len(slow)


@contextlib.contextmanager
def _burst(core: Core, wave: list[int]) -> Iterator[None]:
    """Wave tasks fall due four at a time, every 150 ms, until the block ends."""
    stop = threading.Event()

    def fall_due() -> None:
        for first in range(0, len(wave), 4):
            if stop.wait(0.15):
                return
            _set(core, wave[first:first + 4], next_run_at=core.clock.now())
            DatabaseWaker(core.db).notify()

    thread = threading.Thread(target=fall_due, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(10)


def _same_but(got: dict, want: dict, changed: set[str]) -> bool:
    return {k: v for k, v in got.items() if k not in changed} == {k: v for k, v in want.items() if k not in changed}


def _assert_equal_but_settled(before: Rows, after: Rows) -> set[tuple]:
    """Every table equal to the snapshot's but what the restore settles; returns the keys of the
    TaskRuns that were running at the snapshot."""
    assert before.keys() == after.keys()
    for table in sorted(before.keys() - SETTLED):
        assert after[table] == before[table], f"{table} differs from the snapshot"
    assert after["approvals"] == before["approvals"]
    running = {k for k, r in before["task_runs"].items() if r["status"] == RunOutcome.RUNNING}
    assert running, "the snapshot caught fires in flight"
    _assert_abandoned(before["task_runs"], after["task_runs"], running)
    live = {k for k, r in before["runs"].items() if r["status"] == "running"}
    _assert_abandoned(before["runs"], after["runs"], live)
    for key, row in before["scheduled_tasks"].items():
        got = after["scheduled_tasks"][key]
        if (row["active_run_id"],) in running:
            assert got["active_run_id"] is None and got["last_run_status"] == RunOutcome.ABANDONED
            assert got["last_error"] == REASON and _same_but(got, row, TASK_ABANDON_COLUMNS)
        else:
            assert got == row, f"task {key} differs from the snapshot"
    top = max(before["events"])
    assert {k: v for k, v in after["events"].items() if k <= top} == before["events"]
    added = sorted((e["run_id"], e["type"], e["text"]) for k, e in after["events"].items() if k > top)
    ends = [(k[0], "error", REASON) for k in live] + [(k[0], "run_finished", "abandoned") for k in live]
    assert added == sorted(ends)
    for key, row in before["scheduler_instances"].items():
        got = after["scheduler_instances"][key]
        assert got["stopped_at"] is not None and _same_but(got, row, set() if row["stopped_at"] else {"stopped_at"})
    return running


def _assert_abandoned(before: dict, after: dict, running: set[tuple]) -> None:
    assert after.keys() == before.keys()
    for key, row in before.items():
        got = after[key]
        if key in running:
            assert got["status"] == "abandoned" and got["error"] == REASON and got["finished_at"] is not None
            assert _same_but(got, row, {"status", "error", "finished_at"})
        else:
            assert got == row


def _assert_files(core: Core, target: Cli, project_id: int, manifest: dict) -> None:
    """Every workspace and agent-home file of the archive is back, byte for byte; caches are not."""
    for root in ("workspaces", "agent-homes"):
        restored = sha256_tree(target.data_dir / root)
        listed = {name.removeprefix(root + "/"): entry["sha256"] for name, entry in manifest["members"].items()
                  if name.startswith(root + "/") and entry["type"] == "file"}
        assert restored == listed
    ws, home = Path(str(project_id)), Path(str(project_id))
    source_ws = sha256_tree(core.settings.workspaces_dir / ws)
    back_ws = sha256_tree(target.data_dir / "workspaces" / ws)
    assert {k: v for k, v in source_ws.items() if k.startswith("notes/") or k == "data.bin"} == \
        {k: v for k, v in back_ws.items() if k.startswith("notes/") or k == "data.bin"}
    assert len([k for k in back_ws if k.startswith("notes/")]) == 20
    assert os.readlink(target.data_dir / "workspaces" / ws / "latest.md") == "notes/0.md"
    assert not (target.data_dir / "workspaces" / ws / "node_modules").exists()
    assert not (target.data_dir / "agent-homes" / home / ".cache").exists()
    session = Path(".claude", "projects", "session.jsonl")
    back = target.data_dir / "agent-homes" / home / session
    assert hashlib.sha256(back.read_bytes()).hexdigest() == \
        hashlib.sha256((core.settings.agent_homes_dir / home / session).read_bytes()).hexdigest()


def _assert_resumes_by_catch_up(target: Cli, restored: Database, catch: list[int], snapshot: Rows,
                                tmp_path: Path) -> int:
    """A scheduler on the restored copy fires what fell due (once, under SPEC §14's catch-up window)
    and nothing that had fired: no task with a future next fire gets a TaskRun."""
    late = max(snapshot["scheduled_tasks"][(task_id,)]["next_run_at"] for task_id in catch)
    wait_for(lambda: _utcnow() > late + dt.timedelta(seconds=3), CATCH_IN + 30, "the catch-up tasks to be late")
    tasks = table_rows(restored)["scheduled_tasks"]
    known = {r.id for r in _runs(restored)}
    now = _utcnow()
    due = {key[0] for key, t in tasks.items() if t["status"] == TaskStatus.ACTIVE and t["active_run_id"] is None
           and ((t["next_run_at"] is not None and t["next_run_at"] <= now) or t["pending_run"])}
    assert set(catch) <= due
    with schedulers(target.url, target.data_dir, tmp_path / "logs-restored") as procs:
        sched = procs.start(restored, ready_timeout=60, CHATCRON_RUN_LEASE_SECONDS=LEASE,
                            CHATCRON_MAX_CONCURRENT_RUNS=0)
        wait_for(lambda: _all_fired_once(restored, known, due), 90, "each due task to fire once", [sched])
        beats = sched.instance(restored).iterations
        wait_for(lambda: sched.instance(restored).iterations >= beats + 3, 30, "three more iterations", [sched])
    new = [r for r in _runs(restored) if r.id not in known]
    assert sorted(r.task_id for r in new) == sorted(due)  # one each, and none for a task not due
    for run in new:
        task = tasks[(run.task_id,)]
        assert run.occurrence_at == (task["next_occurrence_at"] or task["next_run_at"])  # the nominal instant
    outcome = {r.task_id: r.status for r in new}
    assert outcome[catch[0]] == RunOutcome.SUCCEEDED and outcome[catch[1]] == RunOutcome.MISSED
    return len(new)


def _all_fired_once(db: Database, known: set[int], due: set[int]) -> bool:
    new = [r for r in _runs(db) if r.id not in known]
    return {r.task_id for r in new} == due and all(r.status != RunOutcome.RUNNING for r in new)


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)
