"""calendars people speak (SPEC §20)

``scheduled_tasks`` gains ``exclude_dates`` (a JSON list of local dates whose occurrences are not
fired) and ``holidays`` (a country's public holidays, ``{"country", "subdivision"}`` JSON).

Revision ID: 0017_calendars
Revises: 0016_fires_that_know
Create Date: 2026-12-04 21:10:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0017_calendars'
down_revision = '0016_fires_that_know'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('scheduled_tasks', schema=None) as batch_op:
        batch_op.add_column(sa.Column('exclude_dates', sa.Text(), nullable=False, server_default='[]'))
        batch_op.add_column(sa.Column('holidays', sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('scheduled_tasks', schema=None) as batch_op:
        batch_op.drop_column('holidays')
        batch_op.drop_column('exclude_dates')
