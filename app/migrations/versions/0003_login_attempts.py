"""login attempts

Revision ID: 0003_login_attempts
Revises: 0002_scheduled_tasks
Create Date: 2026-12-01 10:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import app.core.models


revision = '0003_login_attempts'
down_revision = '0002_scheduled_tasks'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('login_attempts',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('email', sa.String(length=320), nullable=False),
    sa.Column('address', sa.String(length=64), nullable=False),
    sa.Column('succeeded', sa.Boolean(), nullable=False),
    sa.Column('at', app.core.models.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('login_attempts', schema=None) as batch_op:
        batch_op.create_index('ix_login_attempts_email_at', ['email', 'at'], unique=False)
        batch_op.create_index('ix_login_attempts_address_at', ['address', 'at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('login_attempts', schema=None) as batch_op:
        batch_op.drop_index('ix_login_attempts_address_at')
        batch_op.drop_index('ix_login_attempts_email_at')

    op.drop_table('login_attempts')
