"""Fixtures shared by the scheduler-loop suites (test_scheduler_loop, test_batched_starts), the
suites of real scheduler processes (``procs``) and the admin CLI suites (test_manage_cli,
test_manage_access)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.core.clock import FakeClock
from app.core.config import Settings
from app.core.context import Core
from app.core.db import Database
from tests.conftest import make_core, with_settings
from tests.integration.managecli import Cli, cli_env
from tests.integration.procs import Schedulers, schedulers


@pytest.fixture
def rig(clocked_core: Core, fake_clock: FakeClock) -> Any:  # a Rig
    """Alice's project and chat, the task service and a loop on one FakeClock core
    (tests/integration/test_scheduler_loop.py ``Rig``)."""
    from tests.integration.test_scheduler_loop import build_rig

    return build_rig(clocked_core, fake_clock)


@pytest.fixture
def rig_with(settings: Settings, fake_clock: FakeClock) -> Iterator[Callable[..., Any]]:
    """A scheduler rig (tests/integration/test_scheduler_loop.py ``Rig``) whose core runs with changed
    settings."""
    from tests.integration.test_scheduler_loop import build_rig

    opened: list[Core] = []

    def build(**changes: Any) -> Any:  # a Rig
        core = make_core(with_settings(settings, **changes), fake_clock)
        opened.append(core)
        return build_rig(core, fake_clock)

    yield build
    for core in opened:
        core.prompts.shutdown(5.0)
        core.db.dispose()


@pytest.fixture
def cli(db_url: str, data_root: Path) -> Iterator[Cli]:
    """SQLite: only CHATCRON_DATA_DIR (the default store in it); PostgreSQL: CHATCRON_DATABASE_URL too.
    The data dir is one the agent sandbox can reach, so the CLI has no set-up warning to print."""
    data_dir = data_root / "cli-data"
    if db_url.startswith("sqlite"):
        yield Cli(cli_env(data_dir), data_dir, f"sqlite:///{(data_dir / 'chatcron.db').resolve()}")
    else:
        yield Cli(cli_env(data_dir, CHATCRON_DATABASE_URL=db_url), data_dir, db_url)


@pytest.fixture
def store(cli: Cli) -> Iterator[Database]:
    db = Database(cli.url)
    yield db
    db.dispose()


@pytest.fixture
def procs(settings: Settings, tmp_path: Path) -> Iterator[Schedulers]:
    """Real ``python -m scheduler`` children on the test's database (the file's ``settings``), killed
    at the end (tests/integration/procs.py)."""
    with schedulers(settings.db_url, settings.data_dir, tmp_path / "logs") as group:
        yield group
