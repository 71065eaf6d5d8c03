"""The one place that plugs the rooms into the core's ports (docs/ARCHITECTURE.md "Rooms").

Every composition root calls ``install()`` before it builds a core: the web app (``app/app.py``),
the scheduler (``scheduler/__main__.py``), the admin CLI (``app/manage.py``), the tests' conftest
and the benchmarks. ``build_core`` does both for the callers that only want a core.
"""

from __future__ import annotations

from app.agents.side import AGENTS
from app.attention.desk import DESK
from app.core import ports
from app.core.clock import Clock
from app.core.config import Settings
from app.core.context import Core
from app.core.context import build_core as _build_core


def install() -> None:
    ports.install(AGENTS, DESK)


def build_core(settings: Settings | None = None, clock: Clock | None = None) -> Core:
    install()
    return _build_core(settings, clock)
