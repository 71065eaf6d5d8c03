"""Alembic environment: the URL comes from the caller (``app.manage migrate``), never a file."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

import app.core.agent_starts  # noqa: F401 - agent start problems (what /api/health reports)
import app.core.attention_tables  # noqa: F401 - approvals, inbox, outbox (SPEC §13)
import app.core.models  # noqa: F401 - registers the tables on SQLModel.metadata
import app.schedules.model  # noqa: F401 - the scheduled-task tables

config = context.config
target_metadata = SQLModel.metadata


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        raise RuntimeError("run migrations through `python -m app.manage migrate`")
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


run_migrations_online()
