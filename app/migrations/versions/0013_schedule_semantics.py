"""schedule semantics, second round (SPEC §14): catch-up window, jitter, active window, pause note/until

``scheduled_tasks`` gains ``catchup_window_seconds`` (existing tasks get the default, one hour),
``jitter_seconds``, ``starts_at`` / ``ends_at``, ``next_occurrence_at`` (the nominal instant of a
jittered next fire), ``pause_note`` / ``paused_until`` / ``paused_by``; ``task_runs`` gains
``planned_at`` (the jittered instant) and ``missed_count``.

Revision ID: 0013_schedule_semantics
Revises: 0012_agent_start_problems
Create Date: 2026-12-04 05:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import app.core.models

revision = '0013_schedule_semantics'
down_revision = '0012_agent_start_problems'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('scheduled_tasks', schema=None) as batch_op:
        batch_op.add_column(sa.Column('next_occurrence_at', app.core.models.UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column('catchup_window_seconds', sa.Integer(), nullable=True, server_default='3600'))
        batch_op.add_column(sa.Column('jitter_seconds', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('starts_at', app.core.models.UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column('ends_at', app.core.models.UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column('pause_note', sa.String(length=500), nullable=True))
        batch_op.add_column(sa.Column('paused_until', app.core.models.UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column('paused_by', sa.String(length=16), nullable=True))
        batch_op.create_index(batch_op.f('ix_scheduled_tasks_ends_at'), ['ends_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_scheduled_tasks_paused_until'), ['paused_until'], unique=False)
    with op.batch_alter_table('task_runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('planned_at', app.core.models.UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column('missed_count', sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('task_runs', schema=None) as batch_op:
        batch_op.drop_column('missed_count')
        batch_op.drop_column('planned_at')
    with op.batch_alter_table('scheduled_tasks', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_scheduled_tasks_paused_until'))
        batch_op.drop_index(batch_op.f('ix_scheduled_tasks_ends_at'))
        for column in ('paused_by', 'paused_until', 'pause_note', 'ends_at', 'starts_at', 'jitter_seconds',
                       'catchup_window_seconds', 'next_occurrence_at'):
            batch_op.drop_column(column)
