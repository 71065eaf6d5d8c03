"""Schema upgrades through Alembic, driven from Python (no alembic.ini on disk)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

from app.core.db import Database

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


def alembic_config(db: Database) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", db.url.replace("%", "%%"))
    return cfg


def upgrade(db: Database, revision: str = "head") -> None:
    """Create or upgrade the schema to ``revision``; safe to run again."""
    cfg = alembic_config(db)
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


def revision(db: Database, message: str) -> None:
    """Autogenerate a migration from the models (developer tool)."""
    cfg = alembic_config(db)
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.revision(cfg, message=message, autogenerate=True)
