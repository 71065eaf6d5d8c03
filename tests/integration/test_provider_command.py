"""The command provider against real processes: streaming, failure, cancel, environment, memory.

Each provider-level test runs twice: in the agent sandbox (bubblewrap, the agent uid, the
system's python3, the script bound read-only) and with ``CHATCRON_AGENT_SANDBOX=off``. Process ids
inside the sandbox are its own PID namespace's, so processes are found on the host by a marker in
their command line.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import sys
import textwrap
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from app.agents import sandbox
from app.agents.providers.command import CommandProvider
from app.agents.workspace import agent_home, ensure_workspace
from app.core import auth, chats, projects
from app.core.config import Settings
from app.core.models import Project, RunStatus
from app.core.ports import ProviderError, TurnRequest
from tests.conftest import SYSTEM_PYTHON, agent_script, make_core, with_settings

DEADLINE = 20.0  # a test that would hang fails through cancel after this long instead


@dataclasses.dataclass
class Rig:
    """Settings of one sandbox mode, a folder of agent scripts the agent can read, a workspace."""

    settings: Settings
    bin: Path
    workspace: Path
    home: Path

    @property
    def python(self) -> str:
        return sys.executable if self.settings.agent_sandbox == "off" else SYSTEM_PYTHON

    def script(self, body: str, name: str = "agent.py") -> Path:
        path = self.bin / name
        path.write_text(textwrap.dedent(body))
        return path

    def provider(self, script: Path, *args: str, grace: float = 2.0) -> CommandProvider:
        return CommandProvider((self.python, str(script), *args), self.settings, kill_grace_seconds=grace)

    def request(self, text: str = "hello", env: dict[str, str] | None = None, loose: bool = False) -> TurnRequest:
        return TurnRequest(chat_id=1, run_id=1, text=text, workspace=None if loose else self.workspace,
                           project_id=None if loose else 1, env=env or {})


def make_rig(mode: str, root: Path, **changes: object) -> Rig:
    agent_bin = root / "agent-bin"
    agent_bin.mkdir(exist_ok=True)
    os.chmod(agent_bin, 0o755)
    settings = Settings(data_dir=root / "data", agent_sandbox=mode, agent_read_only_paths=(agent_bin,),
                        demo_word_delay_seconds=0.0, **changes)  # type: ignore[arg-type]
    sandbox.prepare_data_dir(settings)
    workspace = ensure_workspace(settings.workspaces_dir, 1)
    sandbox.hand_over(settings, workspace)
    return Rig(settings, agent_bin, workspace, agent_home(settings, 1))


@pytest.fixture(params=["bwrap", "off"])
def rig(request: pytest.FixtureRequest, data_root: Path) -> Rig:
    return make_rig(request.param, data_root)


def _run(provider: CommandProvider, request: TurnRequest, emit: Callable[[str], None],
         cancel: threading.Event | None = None) -> None:
    cancel = cancel or threading.Event()
    timer = threading.Timer(DEADLINE, cancel.set)
    timer.start()
    try:
        provider.run(request, emit, cancel)
    finally:
        timer.cancel()


def host_pids(marker: str) -> list[int]:
    """Live (not zombie) host processes whose command line contains ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() not in (entry / "cmdline").read_bytes():
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found


def _wait_gone(marker: str, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not host_pids(marker):
            return True
        time.sleep(0.02)
    return False


def _marker() -> str:
    return "chatcron-test-" + secrets.token_hex(6)


def test_lines_are_emitted_while_the_command_still_runs(rig: Rig) -> None:
    flag, marker = rig.workspace / "flag", _marker()
    script = rig.script(f"""
        import os, sys, time
        prompt = sys.stdin.read()  # returns once the provider has closed stdin
        print("started", flush=True)
        print(f"got {{prompt.upper()}}", flush=True)
        while not os.path.exists({str(flag)!r}):
            time.sleep(0.01)
        print("after flag", end="", flush=True)
    """)
    seen: list[str] = []

    def emit(chunk: str) -> None:
        seen.append(chunk)
        if chunk.startswith("got "):
            assert host_pids(marker), "the line arrived only after the command had exited"
            flag.touch()  # only now may the command finish

    _run(rig.provider(script, marker), rig.request("stream me"), emit)
    assert seen == ["started\n", "got STREAM ME\n", "after flag"]


def test_cwd_is_the_workspace_home_the_agent_home_and_env_is_minimal(
        rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATCRON_OPENAI_API_KEY", "sk-test-secret-value")
    monkeypatch.setenv("CHATCRON_DATABASE_URL", "postgresql://u:pw-secret@db/x")
    script = rig.script("""
        import json, os
        print(json.dumps({"cwd": os.getcwd(), "env": dict(os.environ)}))
    """)
    out: list[str] = []
    turn_env = {"SCHEDULE_API_URL": "http://127.0.0.1:3000/agent-api", "SCHEDULE_API_TOKEN": "tok"}
    _run(rig.provider(script), rig.request(env=turn_env), out.append)
    seen = json.loads("".join(out))
    assert Path(seen["cwd"]).resolve() == rig.workspace.resolve()
    env = seen["env"]
    assert env["SCHEDULE_API_URL"] == turn_env["SCHEDULE_API_URL"] and env["SCHEDULE_API_TOKEN"] == "tok"
    assert env["HOME"] == str(rig.home)
    assert "secret" not in json.dumps(env)
    fence = {*sandbox.PROXY_VARIABLES, *sandbox.NO_PROXY_VARIABLES} if rig.settings.agent_sandbox == "bwrap" else set()
    assert set(env) - {"LC_CTYPE", "PWD"} == {"PATH", "HOME", "LANG", "TERM", *turn_env, *fence}


def test_a_loose_chat_runs_in_a_temporary_folder_removed_afterwards(rig: Rig) -> None:
    script = rig.script("import os; print(os.getcwd()); print(os.environ['HOME'])")
    out: list[str] = []
    _run(rig.provider(script), rig.request(loose=True), out.append)
    folder = Path(out[0].strip())
    assert folder.name.startswith("chatcron-turn-") and not folder.exists()
    assert out[1].strip() == str(folder)


def test_non_zero_exit_fails_with_the_tail_of_stderr(rig: Rig) -> None:
    script = rig.script("""
        import sys
        print("partial reply", flush=True)
        sys.stderr.write("EARLY-NOISE " + "x" * 20000 + "\\n")
        sys.stderr.write("the real reason: boom\\n")
        sys.exit(3)
    """)
    out: list[str] = []
    with pytest.raises(ProviderError) as caught:
        _run(rig.provider(script), rig.request(), out.append)
    message = str(caught.value)
    assert message.startswith("command exited with 3: ")
    assert message.endswith("the real reason: boom") and "EARLY-NOISE" not in message
    assert len(message) < 4200
    assert out == ["partial reply\n"]


def test_a_missing_program_fails_the_turn(rig: Rig) -> None:
    provider = CommandProvider((str(rig.bin / "no-such-agent"),), rig.settings)
    with pytest.raises(ProviderError, match="command could not start"):
        _run(provider, rig.request(), lambda chunk: None)


SLEEPER = "[sys.executable, '-c', 'import time; time.sleep(600)', sys.argv[1]]"


def test_cancel_kills_the_whole_process_group_promptly(rig: Rig) -> None:
    marker = _marker()
    script = rig.script(f"""
        import signal, subprocess, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the grandchild inherits this too: SIGKILL needed
        child = subprocess.Popen({SLEEPER})
        print("sleeper started", flush=True)
        time.sleep(600)
    """)
    cancel = threading.Event()
    seen: list[str] = []

    def emit(chunk: str) -> None:
        seen.append(chunk)
        cancel.set()

    started = time.monotonic()
    with pytest.raises(ProviderError, match="^cancelled$"):
        _run(rig.provider(script, marker, grace=0.5), rig.request(), emit, cancel)
    assert time.monotonic() - started < 5.0
    assert seen and _wait_gone(marker), "the grandchild survived the cancel"


def test_cancel_while_the_command_has_closed_stdout(rig: Rig) -> None:
    script = rig.script("""
        import os, sys, time
        print("bye", flush=True)
        os.close(1)
        time.sleep(600)
    """)
    cancel = threading.Event()
    started = time.monotonic()
    with pytest.raises(ProviderError, match="^cancelled$"):
        _run(rig.provider(script, grace=0.5), rig.request(), lambda chunk: cancel.set(), cancel)
    assert time.monotonic() - started < 5.0


def test_leftover_processes_are_killed_when_the_command_exits(rig: Rig) -> None:
    marker = _marker()
    script = rig.script(f"""
        import subprocess, sys
        child = subprocess.Popen({SLEEPER})
        print("left one behind", flush=True)
    """)
    out: list[str] = []
    started = time.monotonic()
    _run(rig.provider(script, marker), rig.request(), out.append)
    assert time.monotonic() - started < 5.0  # the leftover held stdout; the turn did not wait for it
    assert out == ["left one behind\n"] and _wait_gone(marker)


MiB = 1024 * 1024


@pytest.mark.parametrize("line", [b"x" * 1023 + b"\n", b"y" * 4096], ids=["1KiB-lines", "no-newlines"])
def test_a_flood_of_output_streams_in_bounded_memory(rig: Rig, line: bytes) -> None:
    script = rig.script(f"""
        import sys
        block = {line!r} * ({MiB} // {len(line)})
        for _ in range(50):
            sys.stdout.buffer.write(block)
    """)
    total = longest = 0

    def emit(chunk: str) -> None:  # discards, as the run store would after writing
        nonlocal total, longest
        total += len(chunk)
        longest = max(longest, len(chunk))

    tracemalloc.start()
    try:
        _run(rig.provider(script), rig.request(), emit)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total == 50 * MiB
    assert longest <= 64 * 1024
    assert peak < 2 * MiB, f"the provider held {peak} bytes at its peak"


# -- a whole turn through the prompt service ---------------------------------------------------

def _chat(core, workspace_root: Path):
    user = auth.create_user(core.db, core.clock, "a@example.com", "password-1")
    project = projects.create_project(core.db, core.clock, workspace_root, "P", user)
    return project, chats.create_chat(core.db, core.clock, user, project.id, "C")


ECHO = """
    import os, sys
    prompt = sys.stdin.read()
    print(f"echo: {prompt}")
    print(f"in {os.path.basename(os.getcwd())}")
"""
GIVE_UP = """
    import sys
    print(f"echo: {sys.stdin.read()}")
    sys.stderr.write("agent gave up")
    sys.exit(2)
"""


def test_a_turn_through_the_prompt_service_records_the_output(settings: Settings) -> None:
    settings, line = agent_script(settings, ECHO)
    core = make_core(with_settings(settings, provider="command", provider_command=line))
    try:
        project, chat = _chat(core, core.settings.workspaces_dir)
        result = core.prompts.start(chat.id, "hi there").wait(DEADLINE)
        assert result is not None and result.status == RunStatus.SUCCEEDED, result
        folder = os.path.basename(ensure_workspace(core.settings.workspaces_dir, project.id))
        assert result.output == f"echo: hi there\nin {folder}\n"
    finally:
        core.prompts.shutdown(2.0)
        core.db.dispose()


def test_a_projects_own_command_runs_and_its_failure_fails_the_run(settings: Settings) -> None:
    settings, line = agent_script(settings, GIVE_UP)
    core = make_core(settings)  # the server default stays demo
    try:
        project, chat = _chat(core, core.settings.workspaces_dir)
        with core.db.write() as s:
            row = s.get(Project, project.id)
            row.provider = "command"
            row.provider_settings = json.dumps({"command": line})
        result = core.prompts.start(chat.id, "try").wait(DEADLINE)
        assert result is not None and result.status == RunStatus.FAILED
        assert result.error == "command exited with 2: agent gave up"
        assert result.output.startswith("echo: try\n")
    finally:
        core.prompts.shutdown(2.0)
        core.db.dispose()
