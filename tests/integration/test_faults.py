"""Fault injection (SPEC §3 "Crash recovery", "The loop"; §4 providers): nothing lost, nothing doubled.

Each test provokes one fault against real processes or the real loop and then counts rows:
every expected fire happened or is recorded abandoned/failed (nothing lost), and no occurrence
has more than one TaskRun, no turn more than one Run (nothing doubled).

- kill -9 of a scheduler with 50 turns in flight;
- kill -9 of the web process (``reflex run --env prod --backend-only``) during a user turn;
- the store stops accepting writes: SQLite on a small tmpfs filled to the last byte (SQLITE_FULL),
  PostgreSQL switched to a read-only database;
- a provider that hangs, a provider that floods its output;
- the clock jumping forward three days and back two hours.

Faults that cannot be produced here skip with the reason printed (``pytest -rs``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlmodel import select

from app.core import auth
from app.core.clock import FakeClock
from app.core.config import Settings
from app.core.context import Core
from app.core.db import normalize_url
from app.core.models import Chat, Run, RunStatus, User
from app.core.wake import DatabaseWaker
from app.schedules.model import RunOutcome, ScheduledTask, TaskRun
from app.schedules.service import Actor, TaskService
from scheduler.__main__ import build_loop
from scheduler.decisions import ABANDONED_REASON
from tests.conftest import SYSTEM_PYTHON, agent_script, make_core, pg_base_url, with_settings
from tests.integration.procs import ROOT, Schedulers, schedulers, wait_for
from tests.integration.procs import new_chat as _chat
from tests.integration.procs import new_owner as _owner
from tests.integration.test_scheduler_loop import settle
from tests.isolation import web_dir

pytestmark = pytest.mark.slow  # processes killed and stores broken, waited out in real time: left out of `make check`

LEASE = 3
HOUR = 3600


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return with_settings(settings, run_lease_seconds=LEASE, max_tasks_per_project=0, max_concurrent_runs=0)


# -- helpers --------------------------------------------------------------------------------------
def _service(core: Core) -> TaskService:
    return TaskService(core.db, core.clock, core.settings, DatabaseWaker(core.db))


def _create(svc: TaskService, user: User, chat: Chat, prompt: str = "hello", **schedule: object) -> ScheduledTask:
    body = {"name": f"task in {chat.title}", "prompt": prompt,
            "schedule": schedule or {"kind": "interval", "every_seconds": HOUR}}
    task, created = svc.create(Actor(user), chat.id, body)
    assert created
    return task


def _make_due(core: Core, task_ids: list[int], when: dt.datetime) -> None:
    with core.db.write() as s:
        s.exec(sa.update(ScheduledTask).where(ScheduledTask.id.in_(task_ids)).values(next_run_at=when))


def _rows(core: Core, model: type, *where: object) -> list:
    with core.db.read() as s:
        return list(s.exec(select(model).where(*where).order_by(model.id)))


def _assert_no_double(core: Core) -> None:
    """Nothing doubled: one TaskRun per (task, occurrence), one Run per TaskRun."""
    runs = _rows(core, TaskRun)
    per_occurrence = Counter((r.task_id, r.occurrence_at) for r in runs)
    assert max(per_occurrence.values(), default=1) == 1, per_occurrence
    per_claim = Counter(r.task_run_id for r in _rows(core, Run, Run.task_run_id.is_not(None)))
    assert max(per_claim.values(), default=1) == 1, per_claim


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _status_kib(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def _free_chat(core: Core, chat_id: int) -> bool:
    result = core.prompts.start(chat_id, "hello again").wait(15)
    return result is not None and result.status == RunStatus.SUCCEEDED


# -- 1. kill -9 the scheduler with 50 turns in flight ----------------------------------------------
def test_kill_9_with_50_turns_in_flight_abandons_50_and_refires_none(core: Core, procs: Schedulers) -> None:
    user, project_id = _owner(core)
    svc = _service(core)
    chat_list = [_chat(core, user, project_id, f"C{i}") for i in range(50)]
    tasks = [_create(svc, user, c, prompt="/sleep 120") for c in chat_list]
    ids = [t.id for t in tasks]
    due = core.clock.now().replace(microsecond=0) - dt.timedelta(seconds=1)
    _make_due(core, ids, due)
    first = procs.start(core.db, CHATCRON_RUN_LEASE_SECONDS=LEASE, CHATCRON_MAX_CONCURRENT_RUNS=0)

    def all_started() -> bool:
        rows = _rows(core, TaskRun, TaskRun.status == RunOutcome.RUNNING.value, TaskRun.started_at.is_not(None))
        return len(rows) == 50

    t0 = time.monotonic()
    wait_for(all_started, 60, "50 turns in flight", [first])
    print(f"\n50 fires started in {time.monotonic() - t0:.1f} s ({core.db.engine.dialect.name})")
    running = _rows(core, TaskRun)
    first.kill(signal.SIGKILL)
    first.wait_exit(10)
    second = procs.start(core.db, CHATCRON_RUN_LEASE_SECONDS=LEASE, CHATCRON_MAX_CONCURRENT_RUNS=0)
    t1 = time.monotonic()

    def all_abandoned() -> list | None:
        rows = _rows(core, TaskRun, TaskRun.status == RunOutcome.ABANDONED.value)
        return rows if len(rows) == 50 else None

    abandoned = wait_for(all_abandoned, 4 * LEASE + 10, "50 abandoned TaskRuns", [second])
    print(f"50 abandoned {time.monotonic() - t1:.1f} s after the second scheduler started")
    assert {r.id for r in abandoned} == {r.id for r in running}
    assert {r.error for r in abandoned} == {ABANDONED_REASON}
    wait_for(lambda: not _rows(core, Run, Run.status == RunStatus.RUNNING.value), 3 * LEASE,
             "the dead turns' Runs to be abandoned", [second])

    # Nothing re-fired: another lease passes with the survivor beating, and no new TaskRun appears.
    t_done = core.clock.now()
    wait_for(lambda: (row := second.instance(core.db)) and row.heartbeat_at > t_done + dt.timedelta(seconds=LEASE + 1),
             4 * LEASE, "the survivor to beat for another lease", [second])
    assert len(_rows(core, TaskRun)) == 50
    after = _rows(core, ScheduledTask)
    assert all(t.status == "active" and t.active_run_id is None and not t.pending_run for t in after)
    assert all(t.next_run_at > t_done for t in after), "an abandoned fire must not be re-fired"
    runs = _rows(core, Run)
    assert len(runs) == 50 and {r.status for r in runs} == {RunStatus.ABANDONED.value}
    _assert_no_double(core)
    # Every chat is free after the lease.
    handles = [core.prompts.start(c.id, "hello again") for c in chat_list]
    results = [h.wait(30) for h in handles]
    assert all(r is not None and r.status == RunStatus.SUCCEEDED for r in results)


# -- 1b. kill -9 the web process during a user turn -----------------------------------------------
def _web_env(settings: Settings, port: int) -> dict[str, str]:
    """What scripts/env.sh gives every project command, plus this test's store and lease."""
    tools = ROOT / ".tools"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHATCRON_")}
    env.update({
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", "PYTHONPATH": str(ROOT),
        "REFLEX_BUN_PATH": str(tools / "node_modules/@oven/bun-linux-x64/bin/bun"), "REFLEX_DIR": str(tools / "reflex"),
        "BUN_INSTALL_CACHE_DIR": str(tools / "bun-cache"),
        "BUN_RUNTIME_TRANSPILER_CACHE_PATH": str(tools / "bun-transpiler-cache"),
        "REFLEX_CHECK_LATEST_VERSION": "false", "REFLEX_TELEMETRY_ENABLED": "false",
        "CHATCRON_DATA_DIR": str(settings.data_dir), "CHATCRON_DATABASE_URL": settings.db_url,
        "CHATCRON_RUN_LEASE_SECONDS": str(LEASE), "CHATCRON_DEMO_WORD_DELAY_SECONDS": "0",
        "CHATCRON_API_URL": f"http://127.0.0.1:{port}",
        "REFLEX_WEB_WORKDIR": str(web_dir("backend")),  # never the folder a worker's e2e server builds in
    })
    return env


@contextlib.contextmanager
def _web(settings: Settings, log_path: Path) -> Iterator[tuple[subprocess.Popen, str]]:
    from tests.isolation import free_port

    port = free_port()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([str(Path(sys.executable).parent / "reflex"), "run", "--env", "prod", "--backend-only",
                                 "--backend-port", str(port), "--backend-host", "127.0.0.1"],
                                cwd=ROOT, env=_web_env(settings, port), stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        def healthy() -> bool:
            assert proc.poll() is None, f"web process exited:\n{log_path.read_text(errors='replace')[-3000:]}"
            with contextlib.suppress(OSError), urllib.request.urlopen(url + "/api/health", timeout=2) as r:
                return r.status == 200
            return False

        wait_for(healthy, 120, "the web process to answer /api/health", every=0.25)
        yield proc, url
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def _post(url: str, token: str, body: dict) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as r:
        return json.loads(r.read())


def test_kill_9_web_process_during_user_turn_abandons_after_the_lease(core: Core, settings: Settings,
                                                                      procs: Schedulers, tmp_path: Path) -> None:
    user, project_id = _owner(core)
    chat = _chat(core, user, project_id)
    token = auth.create_api_token(core.db, core.clock, user.id, "faults")
    t0 = time.monotonic()
    with _web(settings, tmp_path / "web.log") as (web, url):
        print(f"\nweb process healthy in {time.monotonic() - t0:.1f} s")
        run_id = _post(f"{url}/api/chats/{chat.id}/prompts", token, {"text": "/sleep 60"})["run_id"]
        wait_for(lambda: (r := _rows(core, Run, Run.id == run_id)) and r[0].status == RunStatus.RUNNING.value,
                 10, "the user turn to run")
        os.killpg(web.pid, signal.SIGKILL)  # the web host dies: server and every worker it spawned
        web.wait(10)
    killed_at = core.clock.now()
    sweeper = procs.start(core.db, CHATCRON_RUN_LEASE_SECONDS=LEASE)  # any live process sweeps dead turns
    gone = wait_for(lambda: (r := _rows(core, Run, Run.id == run_id)[0]).status != RunStatus.RUNNING.value and r,
                    LEASE + 10, "the dead web process's turn to be abandoned", [sweeper])
    late = (gone.finished_at - killed_at).total_seconds()
    print(f"user turn abandoned {late:.1f} s after kill -9 of the web process (lease {LEASE} s)")
    assert gone.status == RunStatus.ABANDONED.value
    assert (gone.finished_at - gone.heartbeat_at).total_seconds() >= LEASE, "abandoned before the lease ran out"
    runs = _rows(core, Run)
    assert [r.id for r in runs] == [run_id] and _rows(core, TaskRun) == []  # nothing doubled, nothing fired
    assert _free_chat(core, chat.id)


# -- 2. a provider that hangs --------------------------------------------------------------------
def test_hanging_provider_times_out_fails_the_fire_and_frees_the_chat(settings: Settings) -> None:
    marker = f"time.sleep(600.{secrets.randbelow(10**6)})"
    hang = with_settings(settings, provider="command", provider_command=f"{SYSTEM_PYTHON} -c 'import time; {marker}'",
                         run_timeout_seconds=2)
    core = make_core(hang)
    try:
        user, project_id = _owner(core)
        chat = _chat(core, user, project_id)
        task = _create(_service(core), user, chat)
        _make_due(core, [task.id], core.clock.now() - dt.timedelta(seconds=1))
        loop = build_loop(core, "sched:faults")
        t0 = time.monotonic()
        loop.tick()
        [row] = _rows(core, TaskRun)
        handle = next(h for h in core.prompts.running() if h.run_id == row.run_id)
        result = handle.wait(15)
        settle(core)
        elapsed = time.monotonic() - t0
        print(f"\nhanging provider: fire failed after {elapsed:.1f} s ({core.db.engine.dialect.name})")
        assert result is not None and result.status == RunStatus.FAILED
        assert result.error == "timed out after 2 s"
        assert 2 <= elapsed < 2 + 5  # the timeout, plus the SIGTERM grace at most
        [row] = _rows(core, TaskRun)
        assert row.status == RunOutcome.FAILED.value and row.finished_at is not None
        after = _rows(core, ScheduledTask)[0]
        assert after.active_run_id is None and after.last_run_status == RunOutcome.FAILED.value
        assert not [p for p in Path("/proc").glob("[0-9]*/cmdline")
                    if marker.encode() in _read(p)], "the hung command outlived its turn"
        _assert_no_double(core)
        loop.tick()  # the failure backs the task off: nothing fires again now
        assert len(_rows(core, TaskRun)) == 1
        # The chat is free for the next turn (it fails fast the same way, but it starts: no 409).
        nxt = core.prompts.start(chat.id, "again")
        assert nxt.wait(15) is not None
    finally:
        core.prompts.shutdown(2.0)
        core.db.dispose()


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


# -- 3. a provider that floods its output --------------------------------------------------------
FLOOD_MIB = 50
FLOOD_TIMEOUT = 15


def test_flooding_provider_keeps_scheduler_memory_bounded(core: Core, procs: Schedulers) -> None:
    shown, line = agent_script(core.settings, "import sys\nchunk = b'x' * (1 << 20)\n"
                               f"for _ in range({FLOOD_MIB}):\n    sys.stdout.buffer.write(chunk)\n", "flood.py")
    user, project_id = _owner(core)
    chat = _chat(core, user, project_id)
    task = _create(_service(core), user, chat)
    sched = procs.start(core.db, CHATCRON_PROVIDER="command", CHATCRON_PROVIDER_COMMAND=line,
                        CHATCRON_AGENT_READ_ONLY_PATHS=":".join(map(str, shown.agent_read_only_paths)),
                        CHATCRON_RUN_LEASE_SECONDS=LEASE, CHATCRON_RUN_TIMEOUT_SECONDS=FLOOD_TIMEOUT)
    time.sleep(1.0)  # let the process settle after its first iteration
    before = _status_kib(sched.pid, "VmHWM")
    t0 = time.monotonic()
    _service(core).run_now(Actor(user), task.id)  # wakes the scheduler
    row = wait_for(lambda: (r := _rows(core, TaskRun)) and r[0].status != RunOutcome.RUNNING.value and r[0],
                   FLOOD_TIMEOUT + 20, "the flood fire to finish", [sched])
    growth_mib = (_status_kib(sched.pid, "VmHWM") - before) / 1024
    run = _rows(core, Run)[0]
    with core.db.read() as s:
        stored = s.exec(sa.select(sa.func.length(Run.output)).where(Run.id == run.id)).one()[0]
    print(f"\nflood {FLOOD_MIB} MiB ({core.db.engine.dialect.name}): fire {row.status} after "
          f"{time.monotonic() - t0:.1f} s ({run.error}), scheduler peak RSS +{growth_mib:.0f} MiB, "
          f"Run.output {stored / (1 << 20):.1f} MiB stored")
    # Nothing doubled: one fire, one run.
    assert len(_rows(core, TaskRun)) == 1 and len(_rows(core, Run)) == 1
    assert growth_mib < FLOOD_MIB / 2, f"scheduler memory grew by {growth_mib:.0f} MiB for a {FLOOD_MIB} MiB reply"
    # Nothing lost silently: the fire succeeded; the output keeps the first CHATCRON_RUN_OUTPUT_MAX_BYTES
    # (1 MiB by default) and says where it was cut (README "Decisions").
    assert row.status == RunOutcome.SUCCEEDED.value and run.status == RunStatus.SUCCEEDED.value
    assert core.settings.run_output_max_bytes <= stored <= core.settings.run_output_max_bytes + 100
    with core.db.read() as s:
        tail = s.exec(sa.select(sa.func.substr(Run.output, stored - 60, 80)).where(Run.id == run.id)).one()[0]
    assert tail.endswith(f"[output truncated at {core.settings.run_output_max_bytes} bytes]")


# -- 4. the clock jumps forward and back ---------------------------------------------------------
def test_clock_jumps_forward_3_days_and_back_2_hours_without_flood_or_double_fire(clocked_core: Core,
                                                                                  fake_clock: FakeClock) -> None:
    from tests.integration.test_scheduler_loop import build_rig

    rig = build_rig(clocked_core, fake_clock)
    t0 = fake_clock.now()
    specs = {
        "interval": {"kind": "interval", "every_seconds": 60},
        "cron": {"kind": "cron", "cron": "*/5 * * * *", "timezone": "Europe/Berlin"},
        "once": {"kind": "once", "at": (t0 + dt.timedelta(hours=1)).isoformat()},
    }
    # an unbounded catch-up window: the 3-day-late occurrences fire once (with the default window they
    # are one `missed` record each: tests/unit/test_schedule_semantics.py)
    ids = {name: rig.create(chat=rig.new_chat(name), schedule=spec, catchup_window_seconds=None)
           for name, spec in specs.items()}

    fake_clock.set(t0 + dt.timedelta(days=3))
    for _ in range(3):  # repeated iterations at the same instant add nothing
        rig.tick()
    counts = {name: len(rig.task_runs(i)) for name, i in ids.items()}
    assert counts == {"interval": 1, "cron": 1, "once": 1}, f"replay flood after a 3-day jump: {counts}"
    assert rig.task(ids["once"]).status == "completed"
    nexts = {name: rig.task(i).next_run_at for name, i in ids.items() if name != "once"}
    assert all(n > fake_clock.now() for n in nexts.values())

    fake_clock.set(t0 + dt.timedelta(days=3, hours=-2))  # back two hours; then time runs forward again
    for _ in range(2 * 60 // 10):
        rig.tick()
        fake_clock.advance(600)
    # Two hours later the clock is back where the fires happened: none of them happened again.
    again = {name: len(rig.task_runs(i)) for name, i in ids.items()}
    assert again == counts, "a fire happened again after the jump back"
    fake_clock.set(t0 + dt.timedelta(days=3, minutes=5))  # and time goes on: the next occurrences fire, once each
    rig.tick()
    rig.tick()
    final = {name: len(rig.task_runs(i)) for name, i in ids.items()}
    assert final == {"interval": 2, "cron": 2, "once": 1}, final
    assert all(r.status == RunOutcome.SUCCEEDED.value for i in ids.values() for r in rig.task_runs(i))
    _assert_no_double(clocked_core)


# -- 5. the store stops accepting writes ---------------------------------------------------------
RETRY = 2  # CHATCRON_BUSY_RETRY_SECONDS of the scheduler under fault
FAULT_SECONDS = 10


@contextlib.contextmanager
def _tiny_tmpfs(where: Path) -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        reason = f"disk-full fault SKIPPED: cannot mount a tmpfs here ({done.stderr.strip() or done.returncode})"
        print(reason)
        pytest.skip(reason)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(folder: Path) -> Path:
    """Write a file until the filesystem is full; returns it (delete it to clear the fault)."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as f:
        block = b"\0" * 4096
        while True:
            try:
                f.write(block)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                return filler


def terminate_backends(c: sa.Connection, database: str, condition: str) -> int:
    rows = c.exec_driver_sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                             f"WHERE datname = '{database}' AND pid <> pg_backend_pid() AND {condition}").all()
    return len(rows)


class _ReadOnlyPostgres:
    """A dedicated PostgreSQL database made read-only (as a failed-over or full server would be)."""

    def __init__(self, base: str) -> None:
        self.admin = sa.create_engine(normalize_url(base), isolation_level="AUTOCOMMIT")
        self.name = "chatcron_ro_" + secrets.token_hex(4)
        with self.admin.connect() as c:
            c.exec_driver_sql(f"CREATE DATABASE {self.name}")
        self.url = make_url(normalize_url(base)).set(database=self.name).render_as_string(hide_password=False)

    def read_only(self, on: bool) -> None:
        """Switch new sessions' default and drop existing sessions, so every connection sees the change.

        The scheduler's LISTEN connection is spared: dropping it is its own fault (see
        ``test_postgres_listen_connection_dropped_keeps_the_scheduler_running``).
        """
        with self.admin.connect() as c:
            c.exec_driver_sql(f"ALTER DATABASE {self.name} SET default_transaction_read_only = {'on' if on else 'off'}")
            terminate_backends(c, self.name, "position('listen' in lower(query)) <> 1")

    def drop(self) -> None:
        with self.admin.connect() as c:
            c.exec_driver_sql(f"DROP DATABASE IF EXISTS {self.name} WITH (FORCE)")
        self.admin.dispose()


@contextlib.contextmanager
def _faulty_store(db_url: str, tmp_path: Path) -> Iterator[tuple[str, object, object]]:
    """(url, inject, clear): SQLite on a tiny tmpfs filled up, or a PostgreSQL database set read-only."""
    if db_url.startswith("sqlite"):
        with _tiny_tmpfs(tmp_path / "small-disk") as disk:
            holder: list[Path] = []
            yield (f"sqlite:///{disk / 'chatcron.db'}", lambda: holder.append(_fill(disk)),
                   lambda: holder.pop().unlink())
        return
    pg = _ReadOnlyPostgres(pg_base_url())
    try:
        yield pg.url, lambda: pg.read_only(True), lambda: pg.read_only(False)
    finally:
        pg.drop()


@pytest.mark.serial  # measures the scheduler's CPU time against a bound: alone on the machine (docs/TESTING.md)
def test_store_refusing_writes_backs_off_serves_reads_and_recovers(settings: Settings, tmp_path: Path) -> None:
    with _faulty_store(settings.db_url, tmp_path) as (url, inject, clear):
        core = make_core(with_settings(settings, database_url=url))
        try:
            with schedulers(url, settings.data_dir, tmp_path / "logs") as group:
                _store_fault_scenario(core, group, inject, clear)
        finally:
            core.prompts.shutdown(2.0)
            core.db.dispose()


def _store_fault_scenario(core: Core, group: Schedulers, inject, clear) -> None:
    user, project_id = _owner(core)
    chat = _chat(core, user, project_id)
    task = _create(_service(core), user, chat, kind="interval", every_seconds=60)
    if core.db.sqlite:
        with core.db.engine.connect() as c:  # a small WAL, so the fault is not absorbed by old pages
            c.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    sched = group.start(core.db, CHATCRON_BUSY_RETRY_SECONDS=RETRY, CHATCRON_RUN_LEASE_SECONDS=6)
    _make_due(core, [task.id], core.clock.now() + dt.timedelta(seconds=1))  # due during the fault
    inject()
    log_mark = len(sched.log_path.read_text(errors="replace"))
    cpu0, t0 = _cpu_seconds(sched.pid), time.monotonic()
    reads = 0
    while time.monotonic() - t0 < FAULT_SECONDS:
        assert sched.popen.poll() is None, f"scheduler exited under the fault\n{sched.log_tail()}"
        with core.db.read() as s:  # reads are served all along
            assert s.get(ScheduledTask, task.id) is not None
            reads += 1
        time.sleep(0.5)
    cpu = _cpu_seconds(sched.pid) - cpu0
    errors = sched.log_path.read_text(errors="replace")[log_mark:].count("action=store_error")
    assert _rows(core, TaskRun) == [], "a claim was recorded while the store refused writes"
    clear()
    t_clear = time.monotonic()
    row = wait_for(lambda: (r := _rows(core, TaskRun)) and r[0].started_at and r[0], RETRY + 3,
                   "the due task to fire after the fault cleared", [sched])
    recovered = time.monotonic() - t_clear
    print(f"\nstore fault ({core.db.engine.dialect.name}): {FAULT_SECONDS} s, scheduler CPU {cpu:.2f} s, "
          f"{errors} store errors logged, {reads} reads served; fired {recovered:.1f} s after the fault cleared")
    assert cpu < 0.15 * FAULT_SECONDS, f"the loop spun: {cpu:.2f} s CPU in {FAULT_SECONDS} s"
    assert errors <= FAULT_SECONDS / 1 + 5, f"{errors} store errors in {FAULT_SECONDS} s: no back-off"
    wait_for(lambda: _rows(core, TaskRun)[0].status == RunOutcome.SUCCEEDED.value, 15, "the fire to succeed", [sched])
    assert len(_rows(core, TaskRun)) == 1 and row.trigger == "schedule"
    _assert_no_double(core)




@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_postgres_listen_connection_dropped_keeps_the_scheduler_running(core: Core, procs: Schedulers) -> None:
    user, project_id = _owner(core)
    chat = _chat(core, user, project_id)
    task = _create(_service(core), user, chat)
    sched = procs.start(core.db)
    base = sa.create_engine(normalize_url(pg_base_url()), isolation_level="AUTOCOMMIT")
    try:
        with base.connect() as c:
            database = c.exec_driver_sql("SELECT current_database()").scalar()
            dropped = terminate_backends(c, database, "position('listen' in lower(query)) = 1")
    finally:
        base.dispose()
    assert dropped >= 1, "no LISTEN connection found to drop"
    time.sleep(3)
    assert sched.popen.poll() is None, f"scheduler exited when its LISTEN connection dropped\n{sched.log_tail()}"
    _service(core).run_now(Actor(user), task.id)  # nothing lost: the wake still works, within a beat
    wait_for(lambda: (r := _rows(core, TaskRun, TaskRun.task_id == task.id)) and r[0].started_at, LEASE + 3,
             "a run-now after the LISTEN connection dropped", [sched])
    _assert_no_double(core)
