"""fires that know when to start and when to speak (SPEC §19)

``scheduled_tasks`` gains ``notify_on``, ``queue_cap``, ``pace_min_seconds`` / ``pace_max_seconds``
and ``paced_at``; ``task_runs`` gains ``payload`` (a trigger call's body), ``outcome`` /
``summary`` (the agent's report), ``quiet`` and ``superseded_by``; ``task_hooks`` holds a task's
trigger URL and secret, ``hook_calls`` the accepted calls (rate limit, idempotency for 24 h).

Revision ID: 0016_fires_that_know
Revises: 0015_project_roles
Create Date: 2026-12-04 18:20:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import app.core.models

revision = '0016_fires_that_know'
down_revision = '0015_project_roles'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('scheduled_tasks', schema=None) as batch_op:
        batch_op.add_column(sa.Column('notify_on', sa.String(length=16), nullable=False, server_default='always'))
        batch_op.add_column(sa.Column('queue_cap', sa.Integer(), nullable=False, server_default='3'))
        batch_op.add_column(sa.Column('pace_min_seconds', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('pace_max_seconds', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('paced_at', app.core.models.UTCDateTime(), nullable=True))
    with op.batch_alter_table('task_runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('payload', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('outcome', sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column('summary', sa.String(length=2000), nullable=True))
        batch_op.add_column(sa.Column('quiet', sa.Boolean(), nullable=False, server_default=sa.false()))
        batch_op.add_column(sa.Column('superseded_by', sa.Integer(), nullable=True))
    op.create_table(
        'task_hooks',
        sa.Column('id', sa.String(length=64), nullable=False),
        sa.Column('task_id', sa.Integer(), nullable=False),
        sa.Column('secret', sa.String(length=128), nullable=False),
        sa.Column('created_by', sa.String(length=320), nullable=False),
        sa.Column('created_at', app.core.models.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(['task_id'], ['scheduled_tasks.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('task_id'),
    )
    op.create_table(
        'hook_calls',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('hook_id', sa.String(length=64), nullable=False),
        sa.Column('call_key', sa.String(length=200), nullable=True),
        sa.Column('received_at', app.core.models.UTCDateTime(), nullable=False),
        sa.Column('answer', sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('hook_id', 'call_key', name='uq_hook_call_key'),
    )
    op.create_index(op.f('ix_hook_calls_hook_id'), 'hook_calls', ['hook_id'], unique=False)
    op.create_index(op.f('ix_hook_calls_received_at'), 'hook_calls', ['received_at'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_hook_calls_received_at'), table_name='hook_calls')
    op.drop_index(op.f('ix_hook_calls_hook_id'), table_name='hook_calls')
    op.drop_table('hook_calls')
    op.drop_table('task_hooks')
    with op.batch_alter_table('task_runs', schema=None) as batch_op:
        for column in ('superseded_by', 'quiet', 'summary', 'outcome', 'payload'):
            batch_op.drop_column(column)
    with op.batch_alter_table('scheduled_tasks', schema=None) as batch_op:
        for column in ('paced_at', 'pace_max_seconds', 'pace_min_seconds', 'queue_cap', 'notify_on'):
            batch_op.drop_column(column)
