"""real agents: a run's usage, a fresh fire's own agent session

Revision ID: 0006_agent_sessions_usage
Revises: 0005_grant_task_run_id
Create Date: 2026-12-01 20:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0006_agent_sessions_usage'
down_revision = '0005_grant_task_run_id'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('usage', sa.String(), nullable=True))
    with op.batch_alter_table('task_runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('provider_session_id', sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('task_runs', schema=None) as batch_op:
        batch_op.drop_column('provider_session_id')
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_column('usage')
