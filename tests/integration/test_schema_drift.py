"""The migrations build exactly the tables the models describe (columns, types, nullability,
indexes), on both databases: a model change without its migration fails here."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlmodel import SQLModel

import app.schedules.model  # noqa: F401 - the scheduled-task tables join the metadata
from app.core.context import Core


def test_the_migrated_schema_matches_the_models(core: Core) -> None:
    with core.db.engine.connect() as conn:
        drift = compare_metadata(MigrationContext.configure(conn), SQLModel.metadata)
    assert drift == []
