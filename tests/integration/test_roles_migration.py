"""Migration 0015 (SPEC §18) on a store with rows, on SQLite and PostgreSQL: each project's
creator becomes its owner, the other members stay members, and a project whose creator had left
gets its longest-standing member as owner."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

from app.core.db import Database
from app.core.migrate import upgrade

T0 = dt.datetime(2026, 1, 5, 9, 0)


def test_0015_makes_creators_owners_and_keeps_an_owner_where_the_creator_left(db_url: str) -> None:
    db = Database(db_url)
    try:
        upgrade(db, "0014_budgets")
        with db.engine.begin() as conn:
            for uid in (1, 2, 3):
                conn.execute(sa.text("INSERT INTO users (id, email, password_hash, is_admin, created_at) "
                                     "VALUES (:id, :email, 'x', false, :at)"),
                             {"id": uid, "email": f"u{uid}@example.com", "at": T0})
            for pid, owner in ((1, 1), (2, 1)):
                conn.execute(sa.text("INSERT INTO projects (id, name, owner_id, provider_settings, created_at) "
                                     "VALUES (:id, 'p', :owner, '{}', :at)"), {"id": pid, "owner": owner, "at": T0})
            # project 1: its creator and two members; project 2: its creator left, 3 joined before 2
            for uid, pid, minutes in ((1, 1, 0), (2, 1, 1), (3, 1, 2), (3, 2, 1), (2, 2, 5)):
                conn.execute(sa.text("INSERT INTO memberships (user_id, project_id, created_at) VALUES (:u, :p, :at)"),
                             {"u": uid, "p": pid, "at": T0 + dt.timedelta(minutes=minutes)})
        upgrade(db)
        with db.engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT project_id, user_id, role FROM memberships "
                                        "ORDER BY project_id, user_id")).all()
            audit = conn.execute(sa.text("SELECT count(*) FROM project_audit")).scalar_one()
        assert [tuple(r) for r in rows] == [(1, 1, "owner"), (1, 2, "member"), (1, 3, "member"),
                                            (2, 2, "member"), (2, 3, "owner")]
        assert audit == 0
    finally:
        db.dispose()
