"""who asked for a run-now: a fire card says "run now by <who>", not a planned time

``scheduled_tasks.pending_forced_by`` holds the email of the user whose run-now is queued (None for
an agent's run-now or a regular follow-up); the fire's record copies it into
``task_runs.requested_by`` when it is claimed.

Revision ID: 0011_run_now_by
Revises: 0010_user_keys
Create Date: 2026-12-03 23:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0011_run_now_by'
down_revision = '0010_user_keys'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('scheduled_tasks', schema=None) as batch_op:
        batch_op.add_column(sa.Column('pending_forced_by', sa.String(length=320), nullable=True))
    with op.batch_alter_table('task_runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('requested_by', sa.String(length=320), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('task_runs', schema=None) as batch_op:
        batch_op.drop_column('requested_by')
    with op.batch_alter_table('scheduled_tasks', schema=None) as batch_op:
        batch_op.drop_column('pending_forced_by')
