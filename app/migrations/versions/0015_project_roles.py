"""project roles and audit (SPEC §18): owners and members, and the record of changes

``memberships`` gains ``role`` (``owner`` | ``member``): existing members become members and
each project's creator its owner. ``project_audit`` records every change of a project's settings
and members (who, when, which keys; never a secret's value).

Revision ID: 0015_project_roles
Revises: 0014_budgets
Create Date: 2026-12-04 15:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from app.core.models import UTCDateTime

revision = '0015_project_roles'
down_revision = '0014_budgets'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('memberships', schema=None) as batch_op:
        batch_op.add_column(sa.Column('role', sa.String(length=8), nullable=False, server_default='member'))
    op.execute("UPDATE memberships SET role = 'owner' WHERE EXISTS (SELECT 1 FROM projects p "
               "WHERE p.id = memberships.project_id AND p.owner_id = memberships.user_id)")
    # a creator removed before roles existed: the project's longest-standing member becomes its owner
    op.execute("UPDATE memberships SET role = 'owner' WHERE NOT EXISTS (SELECT 1 FROM memberships m2 "
               "WHERE m2.project_id = memberships.project_id AND m2.role = 'owner') "
               "AND user_id = (SELECT m3.user_id FROM memberships m3 WHERE m3.project_id = memberships.project_id "
               "ORDER BY m3.created_at, m3.user_id LIMIT 1)")
    op.create_index('ix_memberships_owners', 'memberships', ['role', 'user_id', 'project_id'], unique=False)
    op.create_table(
        'project_audit',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('project_id', sa.Integer(), nullable=False),
        sa.Column('actor_email', sa.String(length=320), nullable=False),
        sa.Column('at', UTCDateTime(), nullable=False),
        sa.Column('action', sa.String(length=40), nullable=False),
        sa.Column('detail', sa.String(), nullable=False),
        sa.ForeignKeyConstraint(['project_id'], ['projects.id']),
        sa.PrimaryKeyConstraint('id'),
        sqlite_autoincrement=True,
    )
    op.create_index(op.f('ix_project_audit_project_id'), 'project_audit', ['project_id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_memberships_owners', table_name='memberships')
    op.drop_index(op.f('ix_project_audit_project_id'), table_name='project_audit')
    op.drop_table('project_audit')
    with op.batch_alter_table('memberships', schema=None) as batch_op:
        batch_op.drop_column('role')
