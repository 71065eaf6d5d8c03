"""Helpers shared by the HTTP tests: an in-process client and a "nothing changed" snapshot."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from argon2 import PasswordHasher
from fastapi.testclient import TestClient
from sqlmodel import SQLModel

from app.api import create_api
from app.core import auth
from app.core.context import Core
from app.core.models import User

CORE_TABLES = {"users", "projects", "memberships", "chats", "runs", "events", "api_tokens", "web_sessions", "grants"}


_HASH: list[str] = []


def add_user(core: Core, email: str, is_admin: bool = False) -> User:
    """A user row whose password is "password-1", hashed once per session: argon2 is slow on purpose."""
    if not _HASH:
        _HASH.append(PasswordHasher().hash("password-1"))
    with core.db.write() as s:
        user = User(email=email, password_hash=_HASH[0], is_admin=is_admin, created_at=core.clock.now())
        s.add(user)
        s.flush()
        return user


BROWSER_NONCE = "pre-login-nonce-of-the-test-browser"  # the test client's pre-login cookie (auth.LOGIN_COOKIE)


def login_ticket(core: Core, user_id: int) -> str:
    """A login ticket issued to the test client's browser (claimable by a ``client_for`` client)."""
    return auth.create_login_ticket(core.db, core.clock, user_id, BROWSER_NONCE)


def client_for(core: Core, max_body_bytes: int | None = None, raise_server_exceptions: bool = True) -> TestClient:
    """The real FastAPI app on this core, driven in-process, as a browser holding ``BROWSER_NONCE``.

    With ``raise_server_exceptions=False`` a crash is answered 500, as a real server would.
    """
    limit = core.settings.request_max_bytes if max_body_bytes is None else max_body_bytes
    return TestClient(create_api(lambda: core, limit), raise_server_exceptions=raise_server_exceptions,
                      cookies={auth.LOGIN_COOKIE: BROWSER_NONCE})


def _tables(core: Core) -> list[sa.TableClause]:
    """Every table the database has: the SQLModel tables and any other (alembic_version, ...)."""
    present = set(sa.inspect(core.db.engine).get_table_names())
    modelled = {t.name for t in SQLModel.metadata.sorted_tables}
    assert CORE_TABLES <= modelled & present, f"schema lacks {CORE_TABLES - present}: a snapshot would prove nothing"
    return [sa.table(name) for name in sorted(present)]


def row_counts(core: Core) -> dict[str, int]:
    """Rows per table, for every table in the database."""
    with core.db.engine.connect() as conn:
        return {t.name: conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one() for t in _tables(core)}


def table_contents(core: Core) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, sorted: equal snapshots mean nothing was written."""
    with core.db.engine.connect() as conn:
        return {t.name: sorted((tuple(r) for r in conn.execute(sa.select(sa.literal_column("*")).select_from(t))),
                               key=repr)
                for t in _tables(core)}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
