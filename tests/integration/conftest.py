"""Fixtures shared by the scheduler-loop suites (test_scheduler_loop, test_batched_starts)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from app.core.clock import FakeClock
from app.core.config import Settings
from app.core.context import Core
from tests.conftest import make_core, with_settings


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
