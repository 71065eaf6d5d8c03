"""``restore --from PATH``: a backup put into an empty database and data dir.

Checks first, writes after: the target must be empty (the database: no table; the data dir: no
workspace, no agent home), the archive whole (gzip CRC, every member's sha256 against the
manifest, nothing more and nothing less) and of a schema this code knows. Then every member is
extracted into a hidden folder of the data dir and checked again, the database is loaded (SQLite:
one rename of the restored file; PostgreSQL: ``pg_restore`` in one transaction), the workspaces and
agent homes are renamed into place, and the store is settled (``settle``: migrated, what was in
flight closed). A refusal or a failed load leaves the target as it was.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from pathlib import Path

from app.backup import archive, postgres, sqlite
from app.backup.errors import BackupError
from app.backup.manifest import ROOTS, Manifest, Store, name_problem, verify
from app.backup.settle import Settled, settle
from app.core.clock import Clock
from app.core.config import Settings
from app.core.db import Database, first_line
from app.core.migrate import known_revisions


@dataclasses.dataclass(frozen=True)
class Restored:
    manifest: Manifest
    settled: Settled
    head: str  # the schema revision the store is at now

    def sentence(self) -> str:
        m, files = self.manifest, sum(1 for name in self.manifest.members if name != self.manifest.database_member)
        migrated = f"migrated from {m.schema_revision} to {self.head}" if m.schema_revision != self.head \
            else f"schema {self.head}"
        return (f"restored the backup of {m.created_at:%Y-%m-%d %H:%M:%S} UTC ({m.database.value}, {migrated}, "
                f"{files} workspace and agent-home entries); {len(self.settled.task_runs)} fire(s) and "
                f"{len(self.settled.runs)} turn(s) running at the snapshot recorded abandoned")


def restore(settings: Settings, db: Database, clock: Clock, source: Path, pg_restore: str | None = None) -> Restored:
    """Restore ``source`` into the store of ``db`` and ``settings.data_dir``. Raises BackupError with
    nothing written for a target that is not empty, a damaged or foreign archive, a schema newer than
    this code's, a missing ``pg_restore``, a load that failed."""
    if not source.is_file():
        raise BackupError(f"--from {source}: no such file")
    store = Store.SQLITE if db.sqlite else Store.POSTGRESQL
    _must_be_empty(settings, db)
    manifest, seen = archive.scan(source)
    verify(manifest, seen)
    if manifest.database != store:
        raise BackupError(f"the backup holds a {manifest.database.value} database and the target is {store.value}: "
                          f"restore it into a {manifest.database.value} store; nothing was restored")
    revisions = known_revisions()
    if manifest.schema_revision not in revisions:
        raise BackupError(f"the backup's schema revision {manifest.schema_revision} is newer than this chatcron's "
                          f"({revisions[0]}): upgrade chatcron first; nothing was restored")
    _must_be_empty(settings, db)  # again, just before anything is written
    tool = None
    if store == Store.POSTGRESQL:
        tool = postgres.find_tool("pg_restore", pg_restore, "--pg-restore")
        clash = postgres.name_clash(db, manifest.pg_schema or "public")
        if clash:
            raise BackupError(clash)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".restore-", dir=settings.data_dir))
    try:
        archive.extract(source, manifest, lambda name: _place(staging, name, manifest))
        staged = staging / manifest.database_member
        if tool is None:
            db.dispose()  # no connection of ours may hold the empty file while it is replaced
            sqlite.install(staged, db.url)
        else:
            postgres.load(db, staged, manifest.pg_schema or "public", tool, staging)
        try:
            _move_roots(settings, staging)
        except OSError as exc:
            raise _half(f"its folders could not be put in place ({exc})") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    try:
        settled = settle(db, clock.now(), migrate=manifest.schema_revision != revisions[0])
    except Exception as exc:
        raise _half(f"it could not be settled or migrated ({first_line(exc)})") from exc
    return Restored(manifest, settled, revisions[0])


def _half(why: str) -> BackupError:
    return BackupError(f"the database was restored but {why}: the target is half-restored; empty the database and "
                       "the data dir, then restore again")


def _must_be_empty(settings: Settings, db: Database) -> None:
    """BackupError naming what is not empty."""
    problems = [f"{settings.data_dir / root} holds {', '.join(sorted(entries)[:3])}{', …' if len(entries) > 3 else ''}"
                for root in ROOTS if (entries := _entries(settings.data_dir / root))]
    if db.sqlite:
        problem = sqlite.target_problem(db.url)
    else:
        problem = postgres.target_problem(db)
    if problem:
        problems.insert(0, problem)
    if problems:
        raise BackupError(f"the target is not empty: {'; '.join(problems)}; a restore needs an empty database and "
                          "data dir (nothing was written)")


def _entries(folder: Path) -> list[str]:
    if not folder.exists() and not folder.is_symlink():
        return []
    if not folder.is_dir():
        return [f"{folder} (not a folder)"]
    return [entry.name for entry in folder.iterdir()]


def _place(staging: Path, name: str, manifest: Manifest) -> Path:
    """Where a member is extracted: below the staging folder, only a name the manifest lists."""
    if name not in manifest.members or name_problem(name, manifest.database):
        raise BackupError(f"the archive changed while it was restored ({name}); nothing was restored")
    return staging / name


def _move_roots(settings: Settings, staging: Path) -> None:
    """Rename each restored root (workspaces, agent-homes) into the data dir, where an empty folder
    of that name (made by the server's start-up) is replaced, keeping its mode. A root that is a link
    or a mount point (shared storage, docs/DEPLOY.md) stays: what it holds is moved into it."""
    for root in ROOTS:
        restored, target = staging / root, settings.data_dir / root
        if not restored.is_dir():
            continue
        if target.is_symlink() or os.path.ismount(target):
            for child in sorted(restored.iterdir()):
                shutil.move(child, target / child.name)
            continue
        if target.is_dir():
            restored.chmod(target.stat().st_mode & 0o7777)
            target.rmdir()  # empty: checked before anything was written
        restored.rename(target)
