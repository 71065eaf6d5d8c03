"""`make run` / scripts/run.sh stop on SIGTERM and SIGINT at any moment: started in the background in a
temp data dir, it is signalled at a chosen moment of start-up — during the set-up, the migration, the
demo seed, between starting the scheduler and the web process, during the production build — or once
it serves /api/health; a signal to the script (or to make, or Ctrl-C to the terminal's process group)
ends every process it started — web process, its build and workers, scheduler — and nothing starts
after it. Each moment is reached by waiting for what marks it (a `[run] …` line, a process, the health
answer), not by a delay."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.procs import ROOT
from tests.isolation import free_port, web_dir

pytestmark = pytest.mark.slow  # `make run` with a production build, several times: left out of `make check`

UP_WITHIN = 240.0  # seconds: setup check, migrate, seed, production build on a busy 2-core machine
# An upper bound for a loaded machine, not a timing claim: the script sends SIGTERM at once and
# SIGKILL after 15 s (STOP_GRACE); a person sees it stop within a second or two.
GONE_WITHIN = 120.0
# The `[run] …` lines scripts/run.sh prints before each step, in order.
STEPS = ["[run] setting up", "[run] migrating the database", "[run] seeding the demo", "[run] starting the scheduler",
         "[run] starting the web process"]
# A moment of start-up marked by a line: the line's index in STEPS. "between starts": the scheduler
# has started, the web process is starting.
MARKED = {"set-up": 0, "migration": 1, "demo seed": 2, "between starts": 4}


def _session(sid: int) -> set[int]:
    """Live processes of session ``sid``: everything the script started, however deep (job
    control gives its children process groups of their own, not sessions)."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split() if entry.name.isdigit() else []
        except OSError:
            continue
        if fields and fields[0] != "Z" and int(fields[3]) == sid:
            found.add(int(entry.name))
    return found


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def _descendants(pid: int) -> set[int]:
    tree, found, todo = _children(), set(), [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:  # it ended meanwhile
        return ""


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def _as_from_a_terminal() -> None:
    """SIGINT as a terminal's shell leaves it for the command it starts: default. A test run started
    in the background (CI, `make test &`) inherits SIGINT ignored, and the child would inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(command: list[str], tmp_path: Path, moment: str) -> tuple[subprocess.Popen, int]:
    """Start ``command`` in its own session; return once ``moment`` has come (:data:`MOMENTS`)."""
    port = free_port()
    env = {**os.environ, "CHATCRON_DATA_DIR": str(tmp_path / "data"), "CHATCRON_PORT": str(port),
           "REFLEX_WEB_WORKDIR": str(web_dir("run"))}  # this worker's build folder, never the checkout's .web
    for name in ("CHATCRON_DATABASE_URL", "CHATCRON_API_URL"):
        env.pop(name, None)
    log = (tmp_path / "run.log").open("wb")
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_as_from_a_terminal)
    deadline = time.monotonic() + UP_WITHIN
    while not MOMENTS[moment](proc.pid, port, tmp_path):
        if proc.poll() is not None or time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"run.sh did not reach {moment!r}:\n{_log(tmp_path)[-3000:]}")
        time.sleep(0.05)
    return proc, port


def _log(tmp_path: Path) -> str:
    return (tmp_path / "run.log").read_text(errors="replace")


def _step(text: str) -> Callable[[int, int, Path], bool]:
    return lambda pid, port, tmp_path: text in _log(tmp_path)


def _web_started(pid: int, port: int, tmp_path: Path) -> bool:
    return any("reflex run" in _command_line(child) for child in _descendants(pid))


def _building(pid: int, port: int, tmp_path: Path) -> bool:
    """The production build of the frontend is running: bun and node, children of the web process."""
    return any("react-router build" in _command_line(child) for child in _descendants(pid))


MOMENTS: dict[str, Callable[[int, int, Path], bool]] = {
    **{moment: _step(STEPS[index]) for moment, index in MARKED.items()},
    "web started": _web_started,
    "build": _building,
    "up": lambda pid, port, tmp_path: _healthy(port),
}


def _cleanup(started: set[int]) -> None:
    for pid in started:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


CASES = [
    (["bash", "scripts/run.sh"], "term", "up"),
    (["make", "--no-print-directory", "run"], "term", "up"),
    (["make", "--no-print-directory", "run"], "ctrl-c", "up"),
    (["bash", "scripts/run.sh"], "term", "web started"),
    *[(["make", "--no-print-directory", "run"], "ctrl-c", moment)
      for moment in ("set-up", "migration", "demo seed", "between starts", "build")],
]


@pytest.mark.serial  # the whole product under `make run`, stopped against deadlines: alone on the machine
@pytest.mark.parametrize(("command", "how", "moment"), CASES, ids=[
    "SIGTERM to run.sh", "SIGTERM to make", "Ctrl-C (SIGINT to the process group)", "SIGTERM while starting",
    *(f"Ctrl-C during the {moment}" for moment in ("set-up", "migration", "demo seed")),
    "Ctrl-C between starting the scheduler and the web process", "Ctrl-C during the production build"])
def test_a_signal_stops_every_process_the_script_started(command: list[str], how: str, moment: str,
                                                         tmp_path: Path) -> None:
    proc, port = _start(command, tmp_path, moment)
    started = _descendants(proc.pid)
    try:
        names = {_command_line(pid) for pid in started}
        if moment in ("up", "web started", "build"):
            assert any("reflex run" in name for name in names), names
        if moment == "up":
            assert any("-m scheduler" in name for name in names), names
        if how == "ctrl-c":
            os.killpg(proc.pid, signal.SIGINT)  # what a terminal does on Ctrl-C
        else:
            proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + GONE_WITHIN
        while time.monotonic() < deadline and (proc.poll() is None or _session(proc.pid)):
            time.sleep(0.2)
        left = {pid: _command_line(pid) for pid in sorted(_session(proc.pid) | started) if _alive(pid)}
        assert not left, f"still running {GONE_WITHIN} s after the signal: {left}\n{_log(tmp_path)[-3000:]}"
        assert not _healthy(port)
        if moment in MARKED:  # no step began after the signal (one may have begun as it was sent)
            log = _log(tmp_path)
            assert max(i for i, text in enumerate(STEPS) if text in log) <= MARKED[moment] + 1, log[-3000:]
            assert "chatcron is up" not in log, log[-3000:]
    finally:
        _cleanup(started | _session(proc.pid))
