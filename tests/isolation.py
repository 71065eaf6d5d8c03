"""What keeps one test worker out of another's way when the suite runs in parallel (pytest-xdist).

Every worker — and a plain, unparallel ``pytest`` run, which is worker ``main`` — gets:

- its own PostgreSQL database, created at the worker's start from ``CHATCRON_TEST_POSTGRES_URL``
  and dropped (with its connections) at its end; the variable is pointed at it for the worker and
  every process it starts, so the per-test schemas, LISTEN/NOTIFY wake-ups (database-wide in
  PostgreSQL) and the multi-node topology never meet another worker's or another run's;
- its own range of loopback ports (``free_port``), below the kernel's ephemeral range, so two
  workers never pick the same free port and no outgoing connection takes one between the pick and
  the bind;
- its own Redis database number for the multi-node test;
- its own Reflex build folder (``web_dir``), kept under ``.tools/`` between runs so its
  ``node_modules`` is installed once: a production build embeds its port, so two servers cannot
  share one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

PG_ENV = "CHATCRON_TEST_POSTGRES_URL"
ROOT = Path(__file__).resolve().parents[1]
PORTS_FIRST = 20_000  # below Linux's default ephemeral range (32768–60999)
PORTS_PER_WORKER = 600
_port_lock = threading.Lock()
_port_cursor = [0]


def worker_id() -> str:
    """``gw0``, ``gw1`` … under xdist; ``main`` for a plain run."""
    return os.environ.get("PYTEST_XDIST_WORKER") or "main"


def worker_index() -> int:
    """0, 1 … under xdist; the plain run shares slot 0's numbers with ``gw0`` but never runs beside it."""
    wid = worker_id()
    return int(wid[2:]) if wid.startswith("gw") and wid[2:].isdigit() else 0


def free_port() -> int:
    """A loopback port free right now, from this worker's own range, never the same twice in a row.

    The probe binds without SO_REUSEADDR, so a port still in TIME_WAIT from an earlier test is
    passed over and the server that takes the port can bind it whatever its socket options.
    """
    first = PORTS_FIRST + worker_index() * PORTS_PER_WORKER
    with _port_lock:
        for _ in range(PORTS_PER_WORKER):
            port = first + _port_cursor[0] % PORTS_PER_WORKER
            _port_cursor[0] += 1
            with socket.socket() as probe:
                try:
                    probe.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    raise RuntimeError(f"no free loopback port in {first}–{first + PORTS_PER_WORKER - 1}")


def redis_db() -> int:
    """The Redis database number of this worker's multi-node test (7, 8, …; Redis has 16)."""
    return 7 + worker_index() % 9


def web_dir(name: str = "server") -> Path:
    """A Reflex build folder of this worker's own (``REFLEX_WEB_WORKDIR``), kept between runs."""
    return ROOT / ".tools" / "web-test" / f"{worker_id()}-{name}"


def _with_database(url: str, database: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + database))


def _as_admin(url: str, *statements: str) -> None:
    """Run statements that cannot run in a transaction (CREATE/DROP DATABASE) on ``url``'s server."""
    import sqlalchemy as sa

    from app.core.db import normalize_url

    engine = sa.create_engine(normalize_url(url), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            for statement in statements:
                conn.exec_driver_sql(statement)
    finally:
        engine.dispose()


def create_worker_database(base_url: str) -> str:
    """Create this worker's database beside the one ``base_url`` names; return its URL.

    The name carries the worker and the pid, so two runs on one PostgreSQL (two clones, CI beside a
    developer) never meet either.
    """
    base_name = urlsplit(base_url).path.lstrip("/") or "postgres"
    name = f"{base_name}_{worker_id()}_{os.getpid()}".lower()
    _as_admin(base_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'CREATE DATABASE "{name}"')
    return _with_database(base_url, name)


def drop_worker_database(base_url: str, worker_url: str) -> None:
    name = urlsplit(worker_url).path.lstrip("/")
    _as_admin(base_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


_held: list[Any] = []  # the running test's turnstile and lock files (one test at a time per worker)


@contextlib.contextmanager
def machine_share(config: Any, exclusive: bool) -> Iterator[None]:
    """Hold this run's machine lock for one test: shared for every test, exclusive for a ``serial`` one.

    A serial test (it measures CPU or latency, or starts the whole product) waits until the tests
    running on the other workers have finished and keeps every other worker waiting until it has:
    it has the machine to itself. A plain run (no workers) has nothing to share. A turnstile in
    front of the shared lock gives a waiting serial test precedence over tests that come after it.
    """
    basetemp = getattr(config.option, "basetemp", None)
    if not os.environ.get("PYTEST_XDIST_WORKER") or not basetemp:
        yield
        return
    folder = Path(basetemp).parent  # the run's own temporary folder, shared by its workers
    with open(folder / "machine.gate", "a+b") as gate, open(folder / "machine.lock", "a+b") as lock:
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        finally:
            if not exclusive:
                fcntl.flock(gate, fcntl.LOCK_UN)
        _held[:] = [gate, lock]
        try:
            yield
        finally:
            _held.clear()
            fcntl.flock(lock, fcntl.LOCK_UN)
            if exclusive:
                fcntl.flock(gate, fcntl.LOCK_UN)


@contextlib.contextmanager
def alone() -> Iterator[None]:
    """Inside a running (shared) test: the machine to itself for the block, then shared again.

    For a test whose load may share the machine but whose measurement may not (the 500-socket
    storm runs beside other tests; the web process's CPU afterwards is measured alone). It waits
    like a serial test: through the turnstile, until the other workers' running tests have ended.
    """
    if not _held:
        yield  # a plain run, or a serial test: nothing else runs
        return
    gate, lock = _held
    fcntl.flock(lock, fcntl.LOCK_UN)
    fcntl.flock(gate, fcntl.LOCK_EX)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_SH)  # shared again before the turnstile opens
    finally:
        fcntl.flock(gate, fcntl.LOCK_UN)
