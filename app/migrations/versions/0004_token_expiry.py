"""personal token expiry

Revision ID: 0004_token_expiry
Revises: 0003_login_attempts
Create Date: 2026-11-29 15:45:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import app.core.models

revision = '0004_token_expiry'
down_revision = '0003_login_attempts'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('api_tokens', schema=None) as batch_op:
        batch_op.add_column(sa.Column('expires_at', app.core.models.UTCDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('api_tokens', schema=None) as batch_op:
        batch_op.drop_column('expires_at')
