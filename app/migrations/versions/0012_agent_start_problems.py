"""agent start problems: an agent that could not start is told to the project's owner once per
cause (until resolved, or a day later) and reported by /api/health — users see one sentence

``agent_start_problems`` holds one row per (project, cause); ``project_key`` 0 stands for loose
chats (a unique key cannot hold NULL as one value). See app/core/agent_starts.py.

Revision ID: 0012_agent_start_problems
Revises: 0011_run_now_by
Create Date: 2026-12-04 09:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import app.core.models

revision = '0012_agent_start_problems'
down_revision = '0011_run_now_by'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('agent_start_problems',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_key', sa.Integer(), nullable=False),
    sa.Column('cause', sa.String(length=64), nullable=False),
    sa.Column('provider', sa.String(length=40), nullable=False),
    sa.Column('detail', sa.Text(), nullable=False),
    sa.Column('failures', sa.Integer(), nullable=False),
    sa.Column('last_run_id', sa.Integer(), nullable=False),
    sa.Column('first_at', app.core.models.UTCDateTime(), nullable=False),
    sa.Column('last_at', app.core.models.UTCDateTime(), nullable=False),
    sa.Column('told_at', app.core.models.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('project_key', 'cause', name='uq_agent_start_problems_cause')
    )
    with op.batch_alter_table('agent_start_problems', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_agent_start_problems_last_at'), ['last_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('agent_start_problems', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_agent_start_problems_last_at'))
    op.drop_table('agent_start_problems')
