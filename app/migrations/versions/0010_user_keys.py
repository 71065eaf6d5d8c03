"""user keys: attention events name their user by id; ids of users and what they own are never reused

An attention event's channels were found by the email it named, so a new account registered under
a deleted user's email received what was still queued for the old one, and on SQLite a new user,
channel or delivery could take the id a deleted one had (rowids restart at the largest left).
Now ``attention_events.user_id`` names the user (backfilled from the email, only where that
account already existed when the event was written), and on SQLite the tables whose ids are
shown, kept or compared — users, projects, chats, notification channels, deliveries, attention
events (read marks compare their ids), approvals — are rebuilt with AUTOINCREMENT. PostgreSQL's
sequences never go back, so there only the column is added.

Revision ID: 0010_user_keys
Revises: 0009_attention
Create Date: 2026-12-03 09:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0010_user_keys'
down_revision = '0009_attention'
branch_labels = None
depends_on = None

NEVER_REUSED = ('users', 'projects', 'chats', 'notification_channels', 'deliveries', 'approvals')
# An event older than the account under its email was about someone else: it names nobody.
BACKFILL = ("UPDATE attention_events SET user_id = (SELECT u.id FROM users u"
            " WHERE u.email = attention_events.user_email AND u.created_at <= attention_events.created_at)")


def upgrade() -> None:
    sqlite = op.get_context().dialect.name == 'sqlite'
    if sqlite:  # app.core.migrate runs this with foreign keys off, and checks them before the commit
        for table in NEVER_REUSED:
            with op.batch_alter_table(table, recreate='always', table_kwargs={'sqlite_autoincrement': True}):
                pass
    events = op.batch_alter_table('attention_events', recreate='always',
                                  table_kwargs={'sqlite_autoincrement': True}) if sqlite \
        else op.batch_alter_table('attention_events')
    with events as batch_op:
        batch_op.add_column(sa.Column('user_id', sa.Integer(), nullable=True))
        batch_op.create_foreign_key('fk_attention_events_user_id_users', 'users', ['user_id'], ['id'])
        batch_op.drop_index('ix_attention_events_user_email')
        batch_op.create_index(batch_op.f('ix_attention_events_user_id'), ['user_id'], unique=False)
    op.execute(BACKFILL)


def downgrade() -> None:
    # AUTOINCREMENT stays on SQLite: ids that were never reused may stay so.
    with op.batch_alter_table('attention_events', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_attention_events_user_id'))
        batch_op.drop_constraint('fk_attention_events_user_id_users', type_='foreignkey')
        batch_op.drop_column('user_id')
        batch_op.create_index(batch_op.f('ix_attention_events_user_email'), ['user_email'], unique=False)
