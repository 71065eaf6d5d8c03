"""Engines and transactions for SQLite (default) and PostgreSQL.

SQLite runs in WAL mode with foreign keys and a busy timeout; write transactions start with
``BEGIN IMMEDIATE`` so two processes never deadlock upgrading a read lock.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlmodel import Session

BUSY_TIMEOUT_MS = 10_000
T = TypeVar("T")
GROUP_MAX = 200  # units per group commit: bounds how long one transaction holds the write lock


class StoreError(RuntimeError):
    """The database could not be reached or written; the caller may retry later.

    Raised by :class:`Database` for operational failures (connection refused or lost, disk full,
    a read-only database, a lock held past the busy timeout) in place of the driver's error, which
    stays as ``__cause__``. Constraint violations and programming errors are not store errors.
    """


# What the drivers raise when the store itself fails, not the statement.
_OPERATIONAL = (sa.exc.OperationalError, sa.exc.InterfaceError)


# What a loop that must outlive a database outage catches: the store failing, or any other driver error.
STORE_FAILURES: tuple[type[BaseException], ...] = (StoreError, sa.exc.SQLAlchemyError)


def first_line(exc: BaseException, limit: int = 200) -> str:
    """The first line of an error's message (its class name when it has none), at most ``limit`` characters."""
    lines = str(exc).strip().splitlines()
    return (lines[0].strip() if lines else type(exc).__name__)[:limit]


@contextlib.contextmanager
def _store_errors() -> Iterator[None]:
    try:
        yield
    except _OPERATIONAL as exc:
        raise StoreError(first_line(getattr(exc, "orig", None) or exc)) from exc


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
        return sa.create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20,
                                hide_parameters=True)  # no statement's values in a log line
    database = make_url(url).database
    if database and database != ":memory:":
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(
        url,
        connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000},
        pool_size=20,
        max_overflow=20,
        hide_parameters=True,  # a failed statement's values (a project's secrets) never reach a log
    )

    @sa.event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn, _record) -> None:  # DB-API connection
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
        self._group = threading.Condition()
        self._group_queue: list[_Unit] = []
        self._group_busy = False

    @contextlib.contextmanager
    def read(self) -> Iterator[Session]:
        """A session for reads; nothing it does is committed."""
        with _store_errors(), Session(self.engine, expire_on_commit=False) as session:
            yield session

    @contextlib.contextmanager
    def write(self) -> Iterator[Session]:
        """A session whose work commits on normal exit and rolls back on an exception."""
        with self._write_gate, _store_errors(), Session(self._writer, expire_on_commit=False) as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    def combined(self, work: Callable[[Session], T]) -> T:
        """Run ``work(session)`` in a write transaction shared with other threads' concurrent calls.

        Group commit: while one transaction is being written, the calls that arrive queue up and
        the next caller writes them all in one transaction, so N concurrent small writes cost one
        BEGIN/COMMIT instead of N. ``work`` must only use the session it is given and have no
        other side effects: if any unit of a group raises, the group is rolled back and every
        unit is run again alone, so one bad unit fails only its own caller. Returns what ``work``
        returns once it is committed; raises what it raised.
        """
        unit = _Unit(work)
        with self._group:
            self._group_queue.append(unit)
        while True:
            with self._group:
                while self._group_busy and not unit.done:
                    self._group.wait()
                if unit.done:
                    break
                self._group_busy = True
                batch = self._group_queue[:GROUP_MAX]
                del self._group_queue[:GROUP_MAX]
            try:
                self._write_group(batch)
            except BaseException as exc:  # e.g. interrupted: no unit of the group may wait forever
                for waiting in batch:
                    if not waiting.done:
                        waiting.error, waiting.done = exc, True
            finally:
                with self._group:
                    self._group_busy = False
                    self._group.notify_all()
        if unit.error is not None:
            raise unit.error
        return unit.result

    def _write_group(self, batch: list[_Unit]) -> None:
        try:
            with self.write() as session:
                results = [unit.work(session) for unit in batch]
        except Exception as exc:
            if len(batch) == 1:
                batch[0].error, batch[0].done = exc, True
                return
            for unit in batch:  # isolate the failure: each unit alone, in its own transaction
                try:
                    with self.write() as session:
                        unit.result = unit.work(session)
                except Exception as exc:
                    unit.error = exc
                unit.done = True
            return
        for unit, result in zip(batch, results, strict=True):
            unit.result, unit.done = result, True

    def dispose(self) -> None:
        self.engine.dispose()


@dataclasses.dataclass(eq=False)
class _Unit:
    work: Callable[[Session], Any]
    result: Any = None
    error: BaseException | None = None
    done: bool = False
