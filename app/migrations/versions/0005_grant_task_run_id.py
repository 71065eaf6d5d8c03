"""grants.run_id is a TaskRun id: call it task_run_id, as runs.task_run_id does

Revision ID: 0005_grant_task_run_id
Revises: 0004_token_expiry
Create Date: 2026-12-01 20:30:00.000000
"""

from __future__ import annotations

from alembic import op

revision = '0005_grant_task_run_id'
down_revision = '0004_token_expiry'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('grants', schema=None) as batch_op:
        batch_op.alter_column('run_id', new_column_name='task_run_id')


def downgrade() -> None:
    with op.batch_alter_table('grants', schema=None) as batch_op:
        batch_op.alter_column('task_run_id', new_column_name='run_id')
