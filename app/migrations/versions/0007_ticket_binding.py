"""login tickets bound to the browser that logged in

Revision ID: 0007_ticket_binding
Revises: 0006_agent_sessions_usage
Create Date: 2026-12-02 10:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0007_ticket_binding'
down_revision = '0006_agent_sessions_usage'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Tickets issued before this column existed have none and are refused; they live 30 s anyway.
    with op.batch_alter_table('web_sessions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('binding_hash', sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('web_sessions', schema=None) as batch_op:
        batch_op.drop_column('binding_hash')
