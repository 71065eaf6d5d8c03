"""Shared fixtures: temp data dir, the store on SQLite and PostgreSQL, a wired core."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import secrets
import shlex
import shutil
import sys
import tempfile
import textwrap
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import sqlalchemy as sa
from argon2 import PasswordHasher

from app import wiring
from app.core import auth
from app.core.clock import FakeClock, SystemClock
from app.core.config import Settings
from app.core.context import Core
from app.core.db import normalize_url
from app.core.migrate import upgrade
from app.wiring import build_core
from tests import isolation, schema

wiring.install()  # the core's ports, as every composition root does (app/wiring.py)

PG_ENV = isolation.PG_ENV
_PG_KEY = pytest.StashKey[tuple[str, str]]()


T = TypeVar("T")


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)`` on a thread of its own.

    The browser tests' Playwright (sync API, session-scoped) keeps its event loop marked as running
    on the main thread until the session ends, so ``asyncio.run`` there fails in every later test.
    """
    result: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            result.append(asyncio.run(coro))
        except BaseException as exc:  # re-raised on the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=target, name="run-async")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]


def pg_base_url() -> str | None:
    """This worker's own PostgreSQL database (see ``pytest_configure``), or None when CI's URL is unset."""
    return os.environ.get(PG_ENV) or None


def _is_xdist_controller(config: pytest.Config) -> bool:
    """The process that hands tests to xdist workers and runs none itself."""
    return not hasattr(config, "workerinput") and bool(getattr(config.option, "numprocesses", None))


def pytest_configure(config: pytest.Config) -> None:
    """Give this worker (or this plain run) a PostgreSQL database of its own (tests/isolation.py)."""
    base = os.environ.get(PG_ENV)
    if not base or _is_xdist_controller(config):
        return
    try:
        own = isolation.create_worker_database(base)
    except Exception as exc:  # configured but unreachable is a failure, never a skip
        raise pytest.UsageError(f"{PG_ENV} is set but PostgreSQL is unreachable: {exc}") from exc
    config.stash[_PG_KEY] = (base, own)
    os.environ[PG_ENV] = own  # every fixture, helper and child process of this worker reads it here


_TIERS = {"unit": "unit", "integration": "integration", "agents": "integration", "e2e": "e2e"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test with its tier (its folder) and every PostgreSQL variant with ``postgres``,
    so ``-m`` selects a tier (docs/TESTING.md)."""
    for item in items:
        parts = item.path.relative_to(Path(__file__).parent).parts
        tier = _TIERS.get(parts[0]) if len(parts) > 1 else None
        if tier:
            item.add_marker(tier)
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "postgres" in params.values():
            item.add_marker("postgres")
    # xdist hands out tests in this order. The serial tests come first, back to back: at the start
    # no other worker is in the middle of a long test, so taking the machine costs no wait for one
    # to end. Then a test of a minute or more: started last, it would run alone at the end while
    # the other workers idle.
    items.sort(key=lambda item: (item.get_closest_marker("serial") is None, item.get_closest_marker("long") is None))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """A ``serial`` test has the machine to itself; every other test shares it (tests/isolation.py)."""
    with isolation.machine_share(item.config, exclusive=item.get_closest_marker("serial") is not None):
        return (yield)


def pytest_unconfigure(config: pytest.Config) -> None:
    made = config.stash.get(_PG_KEY, None)
    if made is not None:
        base, own = made
        os.environ[PG_ENV] = base
        isolation.drop_worker_database(base, own)


def _pg_schema_url(base: str) -> tuple[str, str]:
    """A URL whose connections live in a fresh schema of the test database, and the schema name."""
    schema = "t_" + secrets.token_hex(6)
    engine = sa.create_engine(normalize_url(base))
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
    except Exception as exc:  # configured but unreachable is a failure, never a skip
        pytest.fail(f"{PG_ENV} is set but PostgreSQL is unreachable: {exc}")
    finally:
        engine.dispose()
    sep = "&" if "?" in base else "?"
    return f"{normalize_url(base)}{sep}options=-csearch_path%3D{schema}", schema


def _drop_schema(base: str, schema: str) -> None:
    engine = sa.create_engine(normalize_url(base))
    with engine.begin() as conn:
        conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    engine.dispose()


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty, migrated-on-demand database URL: a SQLite file, then a PostgreSQL schema."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'test.db'}"
        return
    base = pg_base_url()
    if base is None:
        pytest.skip(f"PostgreSQL variant SKIPPED: {PG_ENV} is not set (CI sets it)")
    url, schema = _pg_schema_url(base)
    yield url
    _drop_schema(base, schema)


@contextlib.contextmanager
def open_tmp(prefix: str = "chatcron-test-") -> Iterator[Path]:
    """A temporary folder the agent sandbox can reach, removed afterwards.

    Sandboxed agents run as their own uid, which must traverse every folder above the data dir;
    pytest's own temporary folders sit under a 0700 ``pytest-of-<user>`` that pytest resets at
    every session start, so the data dirs of tests that start agents live here instead (0711:
    traversable, not listable).
    """
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(folder, 0o711)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def data_root() -> Iterator[Path]:
    """A folder for one test's data dir (``<data_root>/data``) that sandboxed agents can reach."""
    with open_tmp() as folder:
        yield folder


@pytest.fixture
def settings(data_root: Path, db_url: str) -> Settings:
    # webhook_allow_private: the tests' webhook receivers listen on loopback (a single-host set-up);
    # the destination rule is tested with it off (tests/*/test_notify_destinations.py)
    return Settings(data_dir=data_root / "data", database_url=db_url, demo_word_delay_seconds=0.0,
                    run_lease_seconds=5, min_interval_seconds=60, webhook_allow_private=True)


_MADE: list[Core] = []  # every core the tests built, in order; see no_core_outlives_its_test


def make_core(settings: Settings, clock=None) -> Core:
    """A core on a migrated store: this process's migrated template where the store is new
    (tests/schema.py), the real upgrade where it already holds tables."""
    seeded = schema.seed_sqlite(settings.db_url)
    core = build_core(settings, clock or SystemClock())
    if core.db.sqlite:
        if not seeded:
            upgrade(core.db)
    else:
        schema.migrate_postgres(core.db)
    _MADE.append(core)
    return core


@pytest.fixture(autouse=True)
def no_core_outlives_its_test() -> Iterator[None]:
    """A core a test built and did not shut down is shut down after it: its heartbeat pump would
    otherwise go on writing (or, its database gone, logging errors) through every later test and
    take the CPU from them. Cores of wider-scoped fixtures were built before this and are theirs."""
    first = len(_MADE)
    yield
    made = _MADE[first:]
    del _MADE[first:]
    for core in made:
        core.prompts.shutdown(1.0)
        core.db.dispose()


@pytest.fixture
def core(settings: Settings) -> Iterator[Core]:
    """A migrated core on the parametrized database, with the real system clock."""
    c = make_core(settings)
    yield c
    c.prompts.shutdown(2.0)
    c.db.dispose()


PRODUCT_HASHER = auth._hasher
CHEAP_HASHER = PasswordHasher(time_cost=1, memory_cost=256, parallelism=1)


def _hash_with(hasher: PasswordHasher) -> None:
    auth._hasher = hasher
    auth._dummy_hash.cache_clear()  # the unknown-email hash is made with the hasher in force


@pytest.fixture(scope="session", autouse=True)
def cheap_passwords() -> Iterator[None]:
    """In-process tests hash passwords with argon2id at a low cost: the same code path and hash
    format, ~1 ms instead of ~150 ms of CPU per hash (a quarter of some modules' time). Processes a
    test starts (the web app, the CLI) and tests marked ``real_passwords`` use the product's cost,
    which ``test_web_auth`` asserts."""
    _hash_with(CHEAP_HASHER)
    yield
    _hash_with(PRODUCT_HASHER)


@pytest.fixture(autouse=True)
def _product_passwords_when_marked(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.node.get_closest_marker("real_passwords") is None:
        yield
        return
    _hash_with(PRODUCT_HASHER)
    try:
        yield
    finally:
        _hash_with(CHEAP_HASHER)


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def clocked_core(settings: Settings, fake_clock: FakeClock) -> Iterator[Core]:
    """Like ``core`` but on a FakeClock the test moves."""
    c = make_core(settings, fake_clock)
    yield c
    c.prompts.shutdown(2.0)
    c.db.dispose()


def with_settings(settings: Settings, **changes: object) -> Settings:
    return dataclasses.replace(settings, **changes)


SYSTEM_PYTHON = "/usr/bin/python3"  # agent scripts: the server's interpreter is not visible in the sandbox


def agent_script(settings: Settings, body: str, name: str = "agent.py", *args: str) -> tuple[Settings, str]:
    """Write an agent script beside the data dir (``<data_root>/agent-bin``, bound read-only into
    the sandbox) and return settings that show it to agents, and its command line."""
    agent_bin = settings.data_dir.parent / "agent-bin"
    agent_bin.mkdir(exist_ok=True)
    os.chmod(agent_bin, 0o755)
    (agent_bin / name).write_text(textwrap.dedent(body), encoding="utf-8")
    python = SYSTEM_PYTHON if settings.agent_sandbox == "bwrap" else sys.executable
    shown = settings.agent_read_only_paths + ((agent_bin,) if agent_bin not in settings.agent_read_only_paths else ())
    return (with_settings(settings, agent_read_only_paths=shown),
            shlex.join([python, str(agent_bin / name), *args]))


@contextlib.contextmanager
def database_core(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, name: str,
                  clock=None, **changes: object) -> Iterator[Core]:
    """A migrated core on the database ``request.param`` names ("sqlite" or "postgres"), for a
    module-scoped fixture: a SQLite file in its own temp folder, or a fresh PostgreSQL schema
    dropped afterwards (the PostgreSQL variant is skipped, saying why, when CI's URL is unset)."""
    tmp = tmp_path_factory.mktemp(f"{name}-{request.param}")
    schema = base = None
    if request.param == "sqlite":
        url = f"sqlite:///{tmp / 'test.db'}"
    else:
        base = pg_base_url()
        if base is None:
            pytest.skip(f"PostgreSQL variant SKIPPED: {PG_ENV} is not set (CI sets it)")
        url, schema = _pg_schema_url(base)
    with open_tmp() as reachable:  # the data dir where sandboxed agents can reach their workspace
        settings = Settings(data_dir=reachable / "data", database_url=url, demo_word_delay_seconds=0.0,
                            run_lease_seconds=5)
        core = make_core(dataclasses.replace(settings, **changes), clock)
        try:
            yield core
        finally:
            core.prompts.shutdown(2.0)
            core.db.dispose()
            if schema is not None:
                _drop_schema(base, schema)
