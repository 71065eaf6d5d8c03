"""Shared pieces of the benchmarks: the JSON line, percentiles, a throw-away database and core.

Every figure is printed as one JSON object per line with the keys ``metric, value, unit, target,
ok, db``; ``ok`` is ``None`` when the figure has no target ("report").
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import statistics
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from app.core import auth, projects
from app.core.config import Settings
from app.core.context import Core
from app.core.migrate import upgrade
from app.core.models import User
from app.wiring import build_core
from tests.perf.bench_scheduler import PG_ENV, _database, _percentile

__all__ = ["PG_ENV", "Bench", "databases", "emit", "main_for", "median", "percentile", "prepared"]

percentile = _percentile
median = statistics.median


def emit(metric: str, value: float | None, unit: str, target: float | None, db: str | None,
         higher_is_better: bool = False) -> None:
    """Print one figure; ``ok`` compares ``value`` with ``target`` (None when either is missing)."""
    ok = None
    if target is not None and value is not None:
        ok = value >= target if higher_is_better else value <= target
    shown = None if value is None else float(f"{value:.4g}") if abs(value) < 100 else round(value, 1)
    print(json.dumps({"metric": metric, "value": shown, "unit": unit, "target": target, "ok": ok, "db": db}),
          flush=True)


def databases() -> list[str]:
    """SQLite always; PostgreSQL when CHATCRON_TEST_POSTGRES_URL is set."""
    return ["sqlite", "postgresql"] if os.environ.get(PG_ENV) else ["sqlite"]


@dataclasses.dataclass
class Bench:
    """A fresh database with its schema, one user and one project, and the temp folder around it."""

    kind: str
    url: str
    tmp: Path
    settings: Settings
    core: Core
    user: User
    project_id: int


@contextlib.contextmanager
def prepared(kind: str, prefix: str, **overrides: object) -> Iterator[Bench]:
    """A migrated throw-away database (SQLite file or PostgreSQL schema) and a core on it."""
    with tempfile.TemporaryDirectory(prefix=prefix) as folder, _database(kind, Path(folder)) as url:
        tmp = Path(folder)
        values = {"data_dir": tmp / "data", "database_url": url, "demo_word_delay_seconds": 0.0,
                  "max_tasks_per_project": 0, "max_tasks_per_user": 0, **overrides}
        settings = Settings(**values)
        core = build_core(settings)
        upgrade(core.db)
        try:
            user = auth.create_user(core.db, core.clock, "bench@example.com", "password-1")
            project_id = projects.create_project(core.db, core.clock, settings.workspaces_dir, "bench", user).id
            yield Bench(kind, url, tmp, settings, core, user, project_id)
        finally:
            core.db.dispose()


def main_for(doc: str, bench: Callable[[str, object], None], full: object, quick: object) -> None:
    """A benchmark module's command line: ``--quick`` for the small sizes, then every database."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    sizes = quick if parser.parse_args().quick else full
    for kind in databases():
        bench(kind, sizes)
