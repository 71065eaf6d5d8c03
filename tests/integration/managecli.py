"""Running ``python -m app.manage`` as real subprocesses, for the admin CLI suites.

Independent commands run concurrently to keep the suites fast; dependent ones run in rounds.
The ``cli`` and ``store`` fixtures (tests/integration/conftest.py) point a CLI and the test at the
same database: SQLite in the CLI's data dir, or a PostgreSQL schema.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import app

ROOT = Path(app.__file__).resolve().parent.parent
TIMEOUT = 180  # an upper bound: a loaded 2-core machine takes seconds per interpreter start


@dataclasses.dataclass(frozen=True)
class Result:
    argv: tuple[str, ...]
    code: int
    out: str
    err: str

    def __str__(self) -> str:
        return f"manage {' '.join(self.argv)} → {self.code}\nstdout: {self.out!r}\nstderr: {self.err!r}"


@dataclasses.dataclass
class Cli:
    env: dict[str, str]
    data_dir: Path
    url: str  # where the CLI's database is, for checking what it did

    def run(self, *argv: str) -> Result:
        return self.run_all(argv)[0]

    def run_all(self, *argvs: tuple[str, ...]) -> list[Result]:
        return run_concurrently([(self.env, argv) for argv in argvs])


def run_concurrently(jobs: list[tuple[dict[str, str], tuple[str, ...]]]) -> list[Result]:
    """Start every ``python -m app.manage`` at once, then collect them in order."""
    procs = [(argv, subprocess.Popen([sys.executable, "-m", "app.manage", *argv], cwd=ROOT, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
             for env, argv in jobs]
    results = []
    for argv, proc in procs:
        out, err = proc.communicate(timeout=TIMEOUT)
        results.append(Result(tuple(argv), proc.returncode, out, err))
    return results


def cli_env(data_dir: Path, **variables: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHATCRON_")}
    env.update(PYTHONPATH=str(ROOT), CHATCRON_DATA_DIR=str(data_dir), **variables)
    return env


def refused(result: Result, *words: str) -> None:
    """Exit 1 with one plain sentence on stderr that mentions ``words``."""
    assert result.code == 1, result
    assert result.out == "", result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.err, result
    for word in words:
        assert word in lines[0], result


def ok(result: Result) -> str:
    assert result.code == 0 and result.err == "", result
    return result.out.strip()
