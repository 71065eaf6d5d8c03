"""Composition of the core for one process: settings, clock, database, prompt service."""

from __future__ import annotations

import dataclasses
import threading

from app.core import ports
from app.core.clock import Clock, SystemClock
from app.core.config import Settings, load_settings
from app.core.db import Database
from app.core.prompt import PromptService


@dataclasses.dataclass
class Core:
    settings: Settings
    clock: Clock
    db: Database
    prompts: PromptService


def build_core(settings: Settings | None = None, clock: Clock | None = None) -> Core:
    """Wire the core for this process (reads the environment only when ``settings`` is None) on the
    ports ``app.wiring.install`` plugged in."""
    settings = settings or load_settings()
    clock = clock or SystemClock()
    agents = ports.agents()
    agents.prepare(settings)  # before the database opens: its file is made 0600
    db = Database(settings.db_url)
    prompts = PromptService(db, clock, settings, agents.providers(settings), agents=agents, desk=ports.desk())
    return Core(settings=settings, clock=clock, db=db, prompts=prompts)


_core: Core | None = None
_core_lock = threading.Lock()


def get_core() -> Core:
    """The process-wide core of the web process, built on first use."""
    global _core
    with _core_lock:
        if _core is None:
            _core = build_core()
        return _core
