"""The SQLite store: a consistent copy taken while the processes write (the online backup API), and
a restore that puts such a copy in place of an empty database file."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

from sqlalchemy.engine import make_url

from app.backup.errors import BackupError
from app.backup.files import sync_folder
from app.backup.manifest import Snapshot
from app.core.db import BUSY_TIMEOUT_MS, normalize_url


def store_file(url: str) -> Path:
    """The database file of a SQLite URL; BackupError for an in-memory one."""
    database = make_url(normalize_url(url)).database
    if not database or database == ":memory:" or database.startswith("file:"):
        raise BackupError(f"the SQLite database {url!r} is not a file: nothing to back up or restore into")
    return Path(database)


def snapshot(url: str, dest: Path) -> Snapshot:
    """Copy the live database at ``url`` into ``dest`` (a new file) in one step of SQLite's online
    backup API: one read transaction, so the copy is the database as of one instant while other
    processes go on writing (WAL). The copy is left in rollback-journal mode, one self-contained file."""
    source_file = store_file(url)
    if not source_file.is_file():
        raise BackupError(f"the database file {source_file} does not exist: run `python -m app.manage migrate` "
                          "first, or point CHATCRON_DATA_DIR / CHATCRON_DATABASE_URL at the store to back up")
    source = sqlite3.connect(source_file, timeout=BUSY_TIMEOUT_MS / 1000)
    copy = sqlite3.connect(dest)
    try:
        source.backup(copy)  # pages=-1: the whole database in one step, under one read lock
        copy.execute("PRAGMA journal_mode=DELETE")
        return Snapshot(revision=_revision(copy), rows=_rows(copy))
    finally:
        copy.close()
        source.close()


def _revision(conn: sqlite3.Connection) -> str:
    try:
        row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.OperationalError:
        row = None
    if not row:
        raise BackupError("the database has no schema yet: run `python -m app.manage migrate` first")
    return row[0]


def _tables(conn: sqlite3.Connection) -> list[str]:
    return [name for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]


def _rows(conn: sqlite3.Connection) -> dict[str, int]:
    return {name: conn.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0] for name in _tables(conn)}


def target_problem(url: str) -> str | None:
    """Why the database at ``url`` cannot take a restore (None: it is empty or does not exist yet)."""
    path = store_file(url)
    if not path.exists() or (path.is_file() and path.stat().st_size == 0 and not Path(f"{path}-wal").exists()):
        return None
    try:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            tables = _tables(conn)
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        return f"the database file {path} cannot be read as SQLite ({exc})"
    if tables:
        shown = ", ".join(tables[:3]) + (", …" if len(tables) > 3 else "")
        return f"the database {path} holds {len(tables)} tables ({shown})"
    return None


def install(staged: Path, url: str) -> None:
    """Put the restored file ``staged`` in place of the (empty) database of ``url``: the empty one's
    write-ahead log and shared memory are removed first (they must never be applied to the restored
    file), then one rename; the file is the server's alone (0600). Every connection to the database
    must be closed."""
    target = store_file(url)
    target.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(staged, 0o600)
    for suffix in ("-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{target}{suffix}")
    try:
        os.replace(staged, target)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        fd, near = tempfile.mkstemp(prefix=f".{target.name}.restore-", dir=target.parent)  # another file system
        os.close(fd)
        shutil.copyfile(staged, near)
        os.chmod(near, 0o600)
        os.replace(near, target)
    sync_folder(target.parent)
