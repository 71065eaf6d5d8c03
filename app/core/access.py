"""One number-tuple that moves whenever who may see what could have changed (SPEC §17).

An open tab must notice within a second that its session ended (logout elsewhere, ``end-sessions``,
``delete-user``) or that its user lost a project (``revoke-access``) or a role in one, a chat or project went away.
Instead of every tab asking for its own session and access again and again, a web worker reads
:func:`access_mark` — a handful of index-only aggregates, the same for every user — and the tabs
re-check their own session and access only when the mark moved (and now and then anyway, for a
session that simply expired).
"""

from __future__ import annotations

import sqlalchemy as sa

from app.core.db import Database
from app.core.models import Chat, Membership, Project, Role, User, WebSession

_SESSIONS, _MEMBERS = WebSession.__table__, Membership.__table__
_MARK = sa.select(
    sa.select(sa.func.count()).select_from(_SESSIONS).scalar_subquery(),
    # (SQLite may hand a new session the id of the one just deleted: the sum moves anyway)
    sa.select(sa.func.coalesce(sa.func.sum(_SESSIONS.c.id), 0)).scalar_subquery(),
    sa.select(sa.func.count()).select_from(_MEMBERS).scalar_subquery(),
    # a revoke and a grant in the same instant keep the count: the sum of the pairs moves anyway
    sa.select(sa.func.coalesce(sa.func.sum(sa.cast(_MEMBERS.c.user_id, sa.BigInteger) * 1_000_003
                                           + _MEMBERS.c.project_id), 0)).scalar_subquery(),
    # a role changed (an owner made or unmade): the settings page turns editable or read-only
    sa.select(sa.func.coalesce(sa.func.sum(sa.cast(_MEMBERS.c.user_id, sa.BigInteger) * 1_000_003
                                           + _MEMBERS.c.project_id), 0))
    .where(_MEMBERS.c.role == Role.OWNER.value).scalar_subquery(),
    sa.select(sa.func.count()).select_from(User.__table__).scalar_subquery(),
    sa.select(sa.func.coalesce(sa.func.max(User.__table__.c.id), 0)).scalar_subquery(),
    sa.select(sa.func.count()).select_from(Project.__table__).scalar_subquery(),
    sa.select(sa.func.count()).select_from(Chat.__table__).scalar_subquery(),
)


def access_mark(db: Database) -> tuple[int, ...]:
    """Blocking: the store's access mark (one statement)."""
    with db.read() as s:
        row = s.connection().execute(_MARK).one()
    return tuple(int(value or 0) for value in row)
