"""chats titled from their first message; a stop request on a running turn

Revision ID: 0008_chat_titles_and_stops
Revises: 0007_ticket_binding
Create Date: 2026-12-02 02:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0008_chat_titles_and_stops'
down_revision = '0007_ticket_binding'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('chats', schema=None) as batch_op:
        batch_op.add_column(sa.Column('auto_title', sa.Boolean(), nullable=False, server_default=sa.false()))
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('stop_requested_by', sa.String(length=320), nullable=True))
    # A chat still called "New chat" that nobody has written in yet is named by its first message.
    op.execute("UPDATE chats SET auto_title = true WHERE title = 'New chat' "
               "AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.chat_id = chats.id)")


def downgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_column('stop_requested_by')
    with op.batch_alter_table('chats', schema=None) as batch_op:
        batch_op.drop_column('auto_title')
