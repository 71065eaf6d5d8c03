"""budgets (SPEC §15): per-fire caps, per-project daily budgets, the spend ledger

``scheduled_tasks`` gains ``max_tokens_per_fire`` / ``max_cost_per_fire_usd`` and ``task_runs``
``max_tokens`` / ``max_cost_usd`` (the caps a fire was claimed with); ``projects`` gains
``daily_token_budget`` / ``daily_cost_budget_usd`` and ``budget_noticed_on`` (the UTC day of the
last "budget spent" notice); ``usage_days`` is the ledger of what turns spent per UTC day,
project and task. On SQLite ``scheduled_tasks`` is rebuilt with AUTOINCREMENT, so a deleted
task's id (and its spend in the ledger) never passes to a new task.

Revision ID: 0014_budgets
Revises: 0013_schedule_semantics
Create Date: 2026-12-04 12:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0014_budgets'
down_revision = '0013_schedule_semantics'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # a task's id is never given again (SQLite AUTOINCREMENT): the ledger's spend of a deleted task
    # must not become a new task's (app.core.migrate runs this with foreign keys off, checked after)
    sqlite = op.get_context().dialect.name == 'sqlite'
    tasks = op.batch_alter_table('scheduled_tasks', recreate='always', table_kwargs={'sqlite_autoincrement': True}) \
        if sqlite else op.batch_alter_table('scheduled_tasks', schema=None)
    with tasks as batch_op:
        batch_op.add_column(sa.Column('max_tokens_per_fire', sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column('max_cost_per_fire_usd', sa.Float(), nullable=True))
    with op.batch_alter_table('task_runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('max_tokens', sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column('max_cost_usd', sa.Float(), nullable=True))
    with op.batch_alter_table('projects', schema=None) as batch_op:
        batch_op.add_column(sa.Column('daily_token_budget', sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column('daily_cost_budget_usd', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('budget_noticed_on', sa.Date(), nullable=True))
    op.create_table(
        'usage_days',
        sa.Column('day', sa.Date(), nullable=False),
        sa.Column('project_id', sa.Integer(), nullable=False),
        sa.Column('task_id', sa.Integer(), nullable=False),
        sa.Column('tokens', sa.BigInteger(), nullable=False, server_default='0'),
        sa.Column('cost_usd', sa.Float(), nullable=False, server_default='0'),
        sa.Column('turns', sa.Integer(), nullable=False, server_default='0'),
        sa.PrimaryKeyConstraint('day', 'project_id', 'task_id'),
    )
    op.create_index(op.f('ix_usage_days_task_id'), 'usage_days', ['task_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_usage_days_task_id'), table_name='usage_days')
    op.drop_table('usage_days')
    with op.batch_alter_table('projects', schema=None) as batch_op:
        for column in ('budget_noticed_on', 'daily_cost_budget_usd', 'daily_token_budget'):
            batch_op.drop_column(column)
    with op.batch_alter_table('task_runs', schema=None) as batch_op:
        batch_op.drop_column('max_cost_usd')
        batch_op.drop_column('max_tokens')
    with op.batch_alter_table('scheduled_tasks', schema=None) as batch_op:
        batch_op.drop_column('max_cost_per_fire_usd')
        batch_op.drop_column('max_tokens_per_fire')
