"""Schema upgrades through Alembic, driven from Python (no alembic.ini on disk)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

from app.core.db import Database

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


def alembic_config(db: Database) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", db.url.replace("%", "%%"))
    return cfg


def upgrade(db: Database, revision: str = "head") -> None:
    """Create or upgrade the schema to ``revision`` in one transaction; safe to run again.

    On SQLite, foreign keys are off while the migrations run: rebuilding a table (Alembic's batch
    mode: copy, drop, rename) must drop a table others refer to, which with them on would delete
    or refuse rows. They are checked before the commit instead (a dangling reference rolls the
    whole upgrade back) and turned on again before the connection returns to the pool."""
    cfg = alembic_config(db)
    with db.engine.connect() as conn:
        if db.sqlite:
            _sqlite_foreign_keys(conn, False)
        try:
            with conn.begin():
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, revision)
                if db.sqlite:
                    dangling = conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                    if dangling:
                        raise RuntimeError(f"the upgrade would leave rows that refer to nothing: {dangling[:5]}")
        finally:
            if db.sqlite:
                _sqlite_foreign_keys(conn, True)


def _sqlite_foreign_keys(conn: sa.Connection, on: bool) -> None:
    """Outside a transaction (SQLite ignores the pragma inside one), on the driver's connection."""
    conn.connection.dbapi_connection.execute(f"PRAGMA foreign_keys={'ON' if on else 'OFF'}")


def revision(db: Database, message: str) -> None:
    """Autogenerate a migration from the models (developer tool)."""
    cfg = alembic_config(db)
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.revision(cfg, message=message, autogenerate=True)


def known_revisions() -> list[str]:
    """Every schema revision this code knows, newest (the head) first."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return [script.revision for script in ScriptDirectory.from_config(cfg).walk_revisions()]


def current_revision(conn: sa.Connection) -> str | None:
    """The revision a store's schema is at (None: it has no schema yet)."""
    if not sa.inspect(conn).has_table("alembic_version"):
        return None
    return conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
