"""Engines and transactions for SQLite (default) and PostgreSQL.

SQLite runs in WAL mode with foreign keys and a busy timeout; write transactions start with
``BEGIN IMMEDIATE`` so two processes never deadlock upgrading a read lock.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlmodel import Session

BUSY_TIMEOUT_MS = 10_000


class StoreError(RuntimeError):
    """The database could not be reached or written; the caller may retry later."""


def normalize_url(url: str) -> str:
    """Map ``postgresql://`` to the psycopg 3 driver; other URLs pass unchanged."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def is_sqlite(url: str) -> bool:
    return make_url(normalize_url(url)).get_backend_name() == "sqlite"


def make_engine(url: str) -> sa.Engine:
    """Create an engine with the pragmas and pool settings this product relies on."""
    url = normalize_url(url)
    if not is_sqlite(url):
        return sa.create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
    database = make_url(url).database
    if database and database != ":memory:":
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(
        url,
        connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000},
        pool_size=20,
        max_overflow=20,
    )

    @sa.event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn, _record) -> None:  # noqa: ANN001 - DB-API connection
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (below)
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @sa.event.listens_for(engine, "begin")
    def _begin(conn: sa.Connection) -> None:
        immediate = conn.get_execution_options().get("immediate", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


class Database:
    """One engine plus the two kinds of transaction the services use."""

    def __init__(self, url: str) -> None:
        self.url = normalize_url(url)
        self.engine = make_engine(self.url)
        self._writer = self.engine.execution_options(immediate=True)
        self.sqlite = is_sqlite(self.url)
        # SQLite admits one writer at a time; threads of this process queue here instead of in
        # SQLite's busy handler, which sleeps in steps of up to 100 ms. A performance measure only:
        # other processes still meet at the database's own lock.
        self._write_gate = threading.RLock() if self.sqlite else contextlib.nullcontext()

    @contextlib.contextmanager
    def read(self) -> Iterator[Session]:
        """A session for reads; nothing it does is committed."""
        with Session(self.engine, expire_on_commit=False) as session:
            yield session

    @contextlib.contextmanager
    def write(self) -> Iterator[Session]:
        """A session whose work commits on normal exit and rolls back on an exception."""
        with self._write_gate, Session(self._writer, expire_on_commit=False) as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    def dispose(self) -> None:
        self.engine.dispose()
