"""What a backup of a busy store costs: ``python -m app.manage backup`` (and ``restore``) on 10,000
tasks and 100,000 transcript events.

Run: ``CHATCRON_TEST_POSTGRES_URL=postgresql://… python -m tests.perf.bench_backup [--quick]``
(PostgreSQL only when the variable is set; each store in a throw-away SQLite file or schema).

The store is seeded through SQL bulk inserts: 1,000 chats of one project, 10,000 interval tasks (ten
per chat, copies of one made by the service), 100,000 events (``assistant_text`` of 8–40 words drawn
from a fixed vocabulary, so the text compresses like prose, not like one repeated string). The
workspace holds only the published assets. Each figure is the median of 3 runs of the real command
as an admin runs it (a new interpreter each time, its start-up included):

* ``backup_seconds``, ``backup_archive_mb`` — ``backup --to FILE``; ``backup_database_snapshot_mb`` is the
  database member before compression (the SQLite copy, or the uncompressed ``pg_dump``);
* ``restore_seconds`` — ``restore --from FILE`` into a new empty store (a new SQLite file, or a schema
  of a new PostgreSQL database) and data dir, checksums checked first.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
import subprocess
import sys
import time
from pathlib import Path

import sqlalchemy as sa
from sqlmodel import select

from app.core.models import Chat, Event
from app.schedules.model import ScheduledTask
from tests.integration.backups import fresh_database, manifest_of
from tests.integration.managecli import ROOT, cli_env
from tests.perf.bench_burst import make_tasks
from tests.perf.common import Bench, emit, main_for, median, prepared

WORDS = ("the agent checked the build queue and found three failing jobs; it restarted two of them, opened an "
         "issue for the flaky integration suite and summarised what remains for tomorrow morning's standup "
         "meeting with links to logs dashboards and the release checklist").split()
BATCH = 5_000


@dataclasses.dataclass(frozen=True)
class Sizes:
    chats: int
    tasks: int
    events: int
    runs: int  # repeats of each command; the figure is their median


FULL = Sizes(chats=1_000, tasks=10_000, events=100_000, runs=3)
QUICK = Sizes(chats=20, tasks=200, events=2_000, runs=1)


def seed(b: Bench, sizes: Sizes) -> None:
    """Chats, tasks and events written with bulk INSERTs (a template task made by the service)."""
    make_tasks(b, 1)
    now = b.core.clock.now()
    with b.core.db.read() as s:
        template = s.exec(select(ScheduledTask)).one().model_dump(exclude={"id", "chat_id", "name"})
    rng = random.Random(21)
    with b.core.db.write() as s:
        conn = s.connection()
        conn.execute(sa.insert(Chat.__table__), [
            {"project_id": b.project_id, "owner_id": b.user.id, "title": f"chat {i}", "auto_title": False,
             "skills": '["scheduled-tasks"]', "created_at": now, "updated_at": now} for i in range(sizes.chats)])
        chat_ids = list(s.exec(select(Chat.id).where(Chat.title.like("chat %"))))
        tasks = [{**template, "chat_id": chat_ids[i % len(chat_ids)], "name": f"task {i}", "idempotency_key": None,
                  "next_run_at": now + dt.timedelta(hours=1, seconds=i)} for i in range(sizes.tasks)]
        for first in range(0, len(tasks), BATCH):
            conn.execute(sa.insert(ScheduledTask.__table__), tasks[first:first + BATCH])
        for first in range(0, sizes.events, BATCH):
            conn.execute(sa.insert(Event.__table__), [
                {"chat_id": chat_ids[(first + i) % len(chat_ids)], "run_id": None, "type": "assistant_text",
                 "text": " ".join(rng.choices(WORDS, k=rng.randint(8, 40))),
                 "created_at": now - dt.timedelta(seconds=sizes.events - first - i)}
                for i in range(min(BATCH, sizes.events - first))])


def manage(env: dict[str, str], *argv: str) -> float:
    """Seconds one ``python -m app.manage`` took; fails loudly on a non-zero exit."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "app.manage", *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"manage {' '.join(argv)} → {done.returncode}: {done.stderr.strip()}")
    return took


def bench(kind: str, sizes: Sizes) -> None:
    with prepared(kind, "chatcron-bench-backup-") as b:
        seed(b, sizes)
        env = cli_env(b.settings.data_dir, CHATCRON_DATABASE_URL=b.url)
        backups, restores, sizes_mb, snapshots_mb = [], [], [], []
        for i in range(sizes.runs):
            archive = b.tmp / f"backup-{i}.tar.gz"
            backups.append(manage(env, "backup", "--to", str(archive)))
            sizes_mb.append(archive.stat().st_size / 1e6)
            listed = manifest_of(archive)
            snapshots_mb.append(listed["members"][listed["database_member"]]["size"] / 1e6)
            restores.append(_restore(kind, b.tmp / f"restored-{i}", archive))
            archive.unlink()
        db = "sqlite" if kind == "sqlite" else "postgresql"
        emit("backup_seconds", median(backups), "s", None, db)
        emit("backup_archive_mb", median(sizes_mb), "MB", None, db)
        emit("backup_database_snapshot_mb", median(snapshots_mb), "MB", None, db)
        emit("restore_seconds", median(restores), "s", None, db)


def _restore(kind: str, folder: Path, archive: Path) -> float:
    folder.mkdir()
    if kind == "sqlite":
        return manage(cli_env(folder / "data"), "restore", "--from", str(archive))
    with fresh_database("restored") as target:  # a new database: the dump's schema is one of the test database's
        return manage(cli_env(folder / "data", CHATCRON_DATABASE_URL=target), "restore", "--from", str(archive))


def main() -> None:
    main_for(__doc__, bench, FULL, QUICK)


if __name__ == "__main__":
    main()
