"""Where the suite's CPU goes, per test: ``python -m pytest -p tests.cpu_profile`` (docs/TESTING.md).

Appends one JSON line per test to ``$CHATCRON_TEST_CPU_LOG`` (default ``.tools/cpu-profile.jsonl``):
the wall time of setup + call + teardown, the CPU-seconds of the test worker itself, and those of
its child processes that ended during the test (a scheduler, a CLI run, a web server torn down by a
module fixture is counted on the test whose teardown ended it). Processes a test's children start
and never wait for, and Chromium's renderers (children of the session's browser), are outside it:
the system-wide figure is in docs/TESTING.md.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


def _log_path() -> Path:
    root = Path(__file__).resolve().parent.parent
    return Path(os.environ.get("CHATCRON_TEST_CPU_LOG") or root / ".tools" / "cpu-profile.jsonl")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    wall0 = time.monotonic()
    own0, kids0 = _cpu()
    yield
    own1, kids1 = _cpu()
    line = {
        "test": item.nodeid,
        "start": round(time.time() - (time.monotonic() - wall0), 3),
        "wall": round(time.monotonic() - wall0, 3),
        "own_cpu": round(own1 - own0, 3),
        "children_cpu": round(kids1 - kids0, 3),
        "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
    }
    path = _log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:  # one short append per line: workers do not interleave
        out.write(json.dumps(line) + "\n")
