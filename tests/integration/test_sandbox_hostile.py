"""A hostile agent under the `command` provider, in the sandbox (SPEC §12), on SQLite and PostgreSQL.

The agent is tests/integration/hostile_agent.py, run by the prompt service as the project's CLI
with the system's python3. It tries what an agent with a shell would: the database by path, the
data dir, other projects, the server's HOME and processes, writing outside its workspace, root,
the per-turn limits, and the agent API beyond its grant. Each attempt must fail, the server's
files and rows must stay as they were, and the server must keep serving meanwhile.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from app.agents import doctor, sandbox
from app.agents.sandbox import probe
from app.agents.workspace import ASSETS, ASSETS_DIR
from app.core import agent_starts
from app.core.config import Settings
from app.core.models import RunSource, RunStatus
from app.schedules.model import ScheduledTask, TaskStatus
from tests.conftest import agent_script, make_core, open_tmp, with_settings
from tests.integration.apiserver import ApiServer
from tests.integration.fenced import CANARY, HOSTILE, Fenced, build, host_processes, left_behind, marker
from tests.isolation import free_port

pytestmark = pytest.mark.slow  # hostile agents in the sandbox: left out of `make check`

MAX_PROCS, MAX_MEMORY, MAX_FILE = 64, 256 << 20, 8 << 20
OPENAI_KEY = "sk-hostile-canary-4f1c"


@contextlib.contextmanager
def fenced_core(settings: Settings, monkeypatch: pytest.MonkeyPatch, script: str = "",
                **changes: Any) -> Iterator[Fenced]:  # Settings fields
    """The world with ``script`` (default: the hostile agent) as the command agent."""
    monkeypatch.setenv("CHATCRON_OPENAI_API_KEY", OPENAI_KEY)  # in the server's environment, to be leaked
    tag = marker()
    settings, line = agent_script(settings, script or HOSTILE.read_text(), "agent.py", tag)
    port = free_port()
    core = make_core(with_settings(settings, provider="command", provider_command=line, openai_api_key=OPENAI_KEY,
                                   api_url=f"http://127.0.0.1:{port}", agent_max_procs=MAX_PROCS,
                                   agent_max_memory_bytes=MAX_MEMORY, agent_max_file_bytes=MAX_FILE,
                                   run_timeout_seconds=120, **changes))
    server = ApiServer(core, port)
    try:
        world = build(core, server)
        world.marker = tag  # the one on the agent's command line
        yield world
    finally:
        server.close()
        core.prompts.shutdown(5.0)
        core.db.dispose()


@pytest.fixture
def fenced(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Fenced]:
    with fenced_core(settings, monkeypatch) as world:
        yield world


def health(world: Fenced) -> dict[str, Any]:
    with urllib.request.urlopen(world.server.url + "/api/health", timeout=10) as response:
        assert response.status == 200
        return json.loads(response.read())


def outside_targets(world: Fenced) -> list[str]:
    """Where the agent tries to write: every one is outside its workspace and home."""
    data = world.core.settings.data_dir.resolve()
    return ["/usr/pwned", "/etc/pwned", "/pwned", str(data / "pwned"), "../pwned", str(data / "workspaces" /
            str(world.other_project) / "pwned"), str(Path.home() / "pwned"), "/proc/sys/kernel/hostname"]


def probe_args(world: Fenced, *, writes: bool = True) -> dict[str, Any]:
    other = world.other_project
    home = Path.home()
    return {"data_dir": str(world.core.settings.data_dir.resolve()),
            "write_targets": outside_targets(world) if writes else [],
            "other_workspace": str(world.core.settings.workspaces_dir.resolve() / str(other)),
            "other_home": str(world.core.settings.agent_homes_dir.resolve() / str(other)),
            "server_home": str(home), "server_pid": os.getpid(),
            "server_home_files": [str(p) for p in sorted(home.iterdir()) if p.is_file()][:3],
            "secrets": [OPENAI_KEY, world.core.settings.db_url]}


# -- nothing of the server is reachable ----------------------------------------------------------


def test_the_agent_reaches_nothing_of_the_server_and_changes_nothing(fenced: Fenced) -> None:
    args = probe_args(fenced)
    assert args["server_home_files"], "the server's HOME has files to steal"
    home_before = sorted(p.name for p in Path.home().iterdir())
    chat = fenced.chat()
    before = fenced.snapshot()

    result = fenced.finished(fenced.start("probe", args, chat=chat))

    assert result.status == RunStatus.SUCCEEDED, result
    seen = json.loads(result.output)
    leaks = {name: detail for name, (stopped, detail) in seen.items() if not stopped}
    assert leaks == {}, f"the sandbox let these through: {leaks}"
    assert seen["whoami"][1]["uid"] == seen["whoami"][1]["euid"] == 65534
    assert seen["whoami"][1]["status"]["CapEff"] == "0000000000000000"
    written = [p for p in outside_targets(fenced) if p.endswith("pwned") and (fenced.workspace / p).exists()]
    for path in written:  # clean up before failing: a broken sandbox must not leave them behind
        (fenced.workspace / path).unlink()
    assert written == []
    assert fenced.snapshot() == before, "the agent changed the server's rows or files"
    assert sorted(p.name for p in Path.home().iterdir()) == home_before
    # what it did write is its own, on the host too
    mine = fenced.workspace / "agent-was-here.txt", fenced.home / "agent-was-here.txt"
    assert [(p.stat().st_uid, p.stat().st_gid) for p in mine] == [(65534, 65534)] * 2


def test_on_the_host_every_process_of_the_agent_is_the_agent_uid(fenced: Fenced) -> None:
    handle = fenced.start("hold")
    said = fenced.held(handle)
    try:
        processes = dict(host_processes(fenced.marker))
        assert health(fenced)["agent_sandbox"] == "bwrap"  # the server serves while the agent runs
    finally:
        fenced.release()
    result = fenced.finished(handle)
    assert said["uid"] == 65534 and result.status == RunStatus.SUCCEEDED, result
    # prlimit → setpriv → bwrap (outer, its pid 1) → python: none of them is root on the host
    assert len(processes) >= 3, processes
    assert {(s["Uid"], s["Gid"]) for s in processes.values()} == {("65534\t65534\t65534\t65534",) * 2}
    assert {s["CapEff"] for s in processes.values()} == {"0000000000000000"}
    assert left_behind(fenced.marker) == [], "a process of the agent outlived its turn"


# -- limits ---------------------------------------------------------------------------------------


@pytest.mark.serial  # RLIMIT_NPROC counts every process of the agent uid on the host: while the bomb
# holds its 256, another worker's agent cannot start (docs/SECURITY.md)
def test_a_fork_bomb_stops_at_the_process_limit_and_the_server_keeps_serving(fenced: Fenced) -> None:
    handle = fenced.start("fork", {"max": 10 * MAX_PROCS})
    said = fenced.held(handle)
    try:
        alive = len(list(host_processes(fenced.marker)))
        assert health(fenced)["status"] == "ok"
    finally:
        fenced.release()
    result = fenced.finished(handle)
    assert said["forked"] < MAX_PROCS and alive <= MAX_PROCS, (said, alive)
    assert result.status == RunStatus.FAILED
    assert result.error.startswith(
        f"command exited with 1 (sandbox limit reached: processes, CHATCRON_AGENT_MAX_PROCS={MAX_PROCS}): "), \
        result.error
    assert "Resource temporarily unavailable" in result.error
    assert left_behind(fenced.marker) == []


def test_a_memory_hog_stops_at_the_memory_limit(fenced: Fenced) -> None:
    result = fenced.finished(fenced.start("memory"))
    assert result.status == RunStatus.FAILED
    assert result.error.startswith(
        f"command exited with 1 (sandbox limit reached: memory, CHATCRON_AGENT_MAX_MEMORY_BYTES={MAX_MEMORY}): "), \
        result.error
    assert result.error.endswith("MemoryError")
    assert 0 < json.loads(result.output)["allocated"] < MAX_MEMORY
    assert health(fenced)["status"] == "ok"


def test_a_huge_file_stops_at_the_file_size_limit(fenced: Fenced) -> None:
    result = fenced.finished(fenced.start("bigfile"))
    assert result.status == RunStatus.FAILED
    assert result.error.startswith(
        f"command exited with 1 (sandbox limit reached: file size, CHATCRON_AGENT_MAX_FILE_BYTES={MAX_FILE}): "), \
        result.error
    assert "File too large" in result.error
    assert json.loads(result.output)["written"] == MAX_FILE == (fenced.workspace / "big.bin").stat().st_size


def test_a_program_killed_by_the_file_size_limit_says_so(fenced: Fenced) -> None:
    result = fenced.finished(fenced.start("dd", {"count": 4 * MAX_FILE >> 20}))
    assert result.status == RunStatus.FAILED
    assert result.error == (f"command killed by SIGXFSZ (sandbox limit reached: file size, "
                            f"CHATCRON_AGENT_MAX_FILE_BYTES={MAX_FILE})")
    assert (fenced.workspace / "big-dd.bin").stat().st_size == MAX_FILE
    assert health(fenced)["status"] == "ok"


# -- the anti-runaway promises ---------------------------------------------------------------------


def test_it_cannot_arm_resume_or_run_its_draft_nor_outlive_its_grant(fenced: Fenced) -> None:
    chat = fenced.chat(skill=True)
    result = fenced.finished(fenced.start("schedule", {"chat": chat}, chat=chat))
    assert result.status == RunStatus.SUCCEEDED, result
    codes = json.loads(result.output)
    tid = codes.pop("created")
    assert codes == {"arm": 403, "resume": 403, "run_now_draft": 409, "patch_enabled": 400, "patch_status": 400,
                     "patch_schedule": 403, "user_api_projects": 401, "user_api_arm": 401,
                     "user_api_new_project": 401, "user_api_prompt": 401}, codes
    with fenced.core.db.read() as s:
        task = s.get(ScheduledTask, tid)
    assert (task.status, task.next_run_at, task.armed_at, task.pending_run) == (TaskStatus.DRAFT.value, None, None,
                                                                                False)


def test_a_fires_agent_can_only_complete_its_own_task(fenced: Fenced) -> None:
    chat, own, claim = fenced.fire_target()
    other = fenced.other_task()
    with fenced.core.db.read() as s:
        other_before = s.get(ScheduledTask, other).model_dump()

    handle = fenced.start("fire", {"own": own, "other": other}, chat=chat, source=RunSource.SCHEDULE, task_id=own,
                          task_run_id=claim, owner_id=fenced.alice.id)
    result = fenced.finished(handle)

    assert result.status == RunStatus.SUCCEEDED, result
    codes = json.loads(result.output)
    assert codes == {"list": 403, "create": 403, "get_own": 403, "pause_own": 403, "run_now_own": 403,
                     "rename_own": 403, "delete_other": 403, "pause_other": 403, "run_now_other": 403,
                     "arm_other": 403, "complete_current": 200}, codes
    with fenced.core.db.read() as s:
        assert s.get(ScheduledTask, own).status == TaskStatus.COMPLETED.value
        assert s.get(ScheduledTask, other).model_dump() == other_before


# -- the server never follows what the agent plants -------------------------------------------------

TAMPER = """
import os, sys

order = next(line for line in sys.stdin.read().splitlines() if line.startswith("hostile:"))
if not order.startswith("hostile:tamper"):
    sys.exit(0)
os.rename("scripts", "scripts.old")
os.symlink("../..", "scripts")  # on the host: the data dir
skill = ".agents/skills/scheduled-tasks/SKILL.md"
os.remove(skill)
os.mkfifo(skill)  # a server reading it blindly would hang
print("planted", flush=True)
"""


def test_planted_links_and_fifos_are_replaced_before_the_next_schedule_turn(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    with fenced_core(settings, monkeypatch, TAMPER) as world:
        data = world.core.settings.data_dir
        assert world.finished(world.start("tamper", chat=world.chat(skill=True))).status == RunStatus.SUCCEEDED
        assert (world.workspace / "scripts").is_symlink()
        listing = sorted(p.name for p in data.iterdir())

        world.finished(world.start("again", chat=world.chat(skill=True)))  # its publish step restores first

        assert sorted(p.name for p in data.iterdir()) == listing, "the server wrote through the planted link"
        for name, (relative, mode) in ASSETS.items():
            path = world.workspace / relative
            assert not path.is_symlink() and path.is_file() and (path.stat().st_mode & 0o777) == mode
            assert path.read_bytes() == (ASSETS_DIR / name).read_bytes()
            assert path.stat().st_uid == 0, "the server's copy must not be editable in place by the agent"
        assert (world.workspace / "scripts").stat().st_uid == 65534  # the folder stays the agent's


# -- the switch and its failures ------------------------------------------------------------------------


def test_sandbox_off_runs_unfenced_and_health_says_so(settings: Settings, monkeypatch: pytest.MonkeyPatch,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    settings = with_settings(settings, agent_sandbox="off")
    with caplog.at_level(logging.WARNING, logger="chatcron.sandbox"), fenced_core(settings, monkeypatch) as world:
        assert any("action=agent_sandbox_off" in r.getMessage() for r in caplog.records)
        assert health(world)["agent_sandbox"] == "off"
        seen = json.loads(world.finished(world.start("probe", probe_args(world, writes=False))).output)
        assert seen["whoami"][1]["uid"] == 0, "unfenced, the agent is the server's uid"
        assert not seen["read_other_workspace"][0] and CANARY.decode()[:20] in seen["read_other_workspace"][1]
        assert not seen["list_workspaces"][0] and not seen["list_server_home"][0]


def test_without_bubblewrap_a_turn_fails_and_only_an_admin_learns_how_to_fix_it(
        fenced: Fenced, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(probe, "HOST_PATH", str(tmp_path))  # a search path without bwrap
    monkeypatch.setattr(probe, "_known", {})
    result = fenced.finished(fenced.start("probe", probe_args(fenced)))
    assert (result.status, result.error) == (RunStatus.FAILED, agent_starts.USER_MESSAGE)
    public = health(fenced)  # no auth: says agents are not ok, never the fix
    assert public["agents"]["ok"] is False and public["agents"]["count"] == 2
    assert "agent_sandbox_problem" not in public and "bubblewrap" not in json.dumps(public)
    admin = doctor.health(fenced.core.settings, fenced.core.db, fenced.core.clock.now(), admin=True)
    assert admin["agent_sandbox_problem"] == probe.NOT_INSTALLED
    sandbox_now, recorded = admin["agents"]["problems"]  # live probe first, then what the turn met
    assert (sandbox_now["scope"], recorded["scope"], recorded["project_id"]) == ("sandbox", "project", fenced.project)
    assert "apt-get install bubblewrap" in recorded["detail"] and "CHATCRON_AGENT_SANDBOX=off" in recorded["detail"]
    assert not (fenced.workspace / "agent-was-here.txt").exists()


def test_a_data_dir_and_an_agent_under_a_closed_folder_work_and_the_folder_is_left_alone(db_url: str) -> None:
    """A checkout or data dir under a 0700 home (or `mktemp -d`): the agent uid cannot traverse the
    folder above, so the root server stages what the agent sees (app.agents.sandbox.bwrap)."""
    with open_tmp() as root:
        closed = root / "closed"
        closed.mkdir(mode=0o700)
        settings = Settings(data_dir=closed / "data", database_url=db_url)
        settings, line = agent_script(settings, HOSTILE.read_text())  # under the closed folder too
        core = make_core(with_settings(settings, provider="command", provider_command=line))
        try:
            world = build(core, None)  # type: ignore[arg-type] - no agent API needed
            result = world.finished(world.start("network", {"targets": {}}))
            assert result.status == RunStatus.SUCCEEDED, result
            assert json.loads(result.output) == {"proc_net_shows_the_host": [True, "[]"]}
            assert (closed.stat().st_mode & 0o777) == 0o700, "the product changed a folder above its data dir"
        finally:
            core.prompts.shutdown(5.0)
            core.db.dispose()


def test_the_database_file_is_private_and_the_data_dir_only_traversable() -> None:
    with open_tmp() as root:
        core = make_core(Settings(data_dir=root / "data"))  # the default store: a SQLite file in the data dir
        try:
            with core.db.write() as s:
                s.exec(sa.text("CREATE TABLE written (x int)"))
            data = core.settings.data_dir
            assert [(data / f).stat().st_mode & 0o007 for f in ("", "workspaces", "agent-homes")] == [0o001] * 3
            files = [p for p in data.iterdir() if p.name.startswith("chatcron.db")]
            assert files and {p.stat().st_mode & 0o777 for p in files} == {0o600}, files
            assert sandbox.health(core.settings) == {"agent_sandbox": "bwrap", "agent_network": "proxy"}
        finally:
            core.prompts.shutdown(5.0)
            core.db.dispose()
