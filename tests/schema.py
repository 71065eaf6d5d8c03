"""A migrated database for every test without running Alembic for every test.

``app.core.migrate.upgrade`` costs ~0.2 s of CPU (Alembic loads and runs every migration script),
and the suite builds a fresh store for ~1,500 tests. So each test process runs the real upgrade
once per dialect and hands its result to every later store:

- SQLite: the migrated file is copied (byte for byte what the upgrade wrote);
- PostgreSQL: the statements the upgrade sent are recorded and replayed, in order, in the new
  test's empty schema (the connection's ``search_path`` names it, as it did for the recording).

A store that already holds tables (a test building a second core on the same database) gets the
real ``upgrade``, as does any test of the migrations themselves (they call it directly).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from app.core.db import Database, is_sqlite, normalize_url
from app.core.migrate import upgrade

_SQLITE_TEMPLATE: list[Path] = []
_PG_SCRIPT: list[list[tuple[str, Any]]] = []


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite URL (None for an in-memory or non-SQLite one)."""
    url = normalize_url(url)
    if not is_sqlite(url) or not url.startswith("sqlite:///") or ":memory:" in url:
        return None
    return Path(url.removeprefix("sqlite:///").split("?", 1)[0])


def _sqlite_template() -> Path:
    if not _SQLITE_TEMPLATE:
        folder = Path(tempfile.mkdtemp(prefix="chatcron-schema-"))
        db = Database(f"sqlite:///{folder / 'template.db'}")
        try:
            upgrade(db)
        finally:
            db.dispose()  # the last connection's close checkpoints the WAL into the file
        _SQLITE_TEMPLATE.append(folder / "template.db")
    return _SQLITE_TEMPLATE[0]


def seed_sqlite(url: str) -> bool:
    """Put a migrated database at a SQLite URL whose file does not exist yet; False when it cannot."""
    path = sqlite_file(url)
    if path is None or path.exists() or not path.parent.is_dir():
        return False
    shutil.copyfile(_sqlite_template(), path)
    return True


def _record(db: Database) -> list[tuple[str, Any]]:
    sent: list[tuple[str, Any]] = []

    def keep(conn, cursor, statement: str, parameters: Any, context, executemany) -> None:
        sent.append((statement, parameters))

    sa.event.listen(db.engine, "before_cursor_execute", keep)
    try:
        upgrade(db)
    finally:
        sa.event.remove(db.engine, "before_cursor_execute", keep)
    return sent


def _is_empty(db: Database) -> bool:
    with db.engine.connect() as conn:
        return not sa.inspect(conn).get_table_names()


def migrate_postgres(db: Database) -> None:
    """The real upgrade the first time (recorded), its recording replayed in an empty schema after."""
    if not _is_empty(db):
        upgrade(db)
    elif not _PG_SCRIPT:
        _PG_SCRIPT.append(_record(db))
    else:
        with db.engine.begin() as conn:
            for statement, parameters in _PG_SCRIPT[0]:
                conn.exec_driver_sql(statement, parameters)
