"""The command provider against real processes: streaming, failure, cancel, environment, memory."""

from __future__ import annotations

import json
import os
import shlex
import sys
import textwrap
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from app.core import auth, chats, projects
from app.core.config import Settings
from app.core.models import Project, RunStatus
from app.core.providers.base import ProviderError, TurnRequest
from app.core.providers.command import CommandProvider, base_environment
from tests.conftest import make_core, with_settings

DEADLINE = 20.0  # a test that would hang fails through cancel after this long instead


def _script(tmp_path: Path, body: str, name: str = "agent.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def _provider(script: Path, *args: str, grace: float = 2.0) -> CommandProvider:
    return CommandProvider((sys.executable, str(script), *args), base_environment(), kill_grace_seconds=grace)


def _request(workspace: Path | None, text: str = "hello", env: dict[str, str] | None = None) -> TurnRequest:
    return TurnRequest(chat_id=1, run_id=1, text=text, workspace=workspace, env=env or {})


def _run(provider: CommandProvider, request: TurnRequest, emit: Callable[[str], None],
         cancel: threading.Event | None = None) -> None:
    cancel = cancel or threading.Event()
    timer = threading.Timer(DEADLINE, cancel.set)
    timer.start()
    try:
        provider.run(request, emit, cancel)
    finally:
        timer.cancel()


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def _wait_dead(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.02)
    return False


def test_lines_are_emitted_while_the_command_still_runs(tmp_path: Path) -> None:
    flag = tmp_path / "flag"
    script = _script(tmp_path, f"""
        import os, sys, time
        prompt = sys.stdin.read()  # returns once the provider has closed stdin
        print(f"pid {{os.getpid()}}", flush=True)
        print(f"got {{prompt.upper()}}", flush=True)
        while not os.path.exists({str(flag)!r}):
            time.sleep(0.01)
        print("after flag", end="", flush=True)
    """)
    seen: list[str] = []

    def emit(chunk: str) -> None:
        seen.append(chunk)
        if chunk.startswith("got "):
            pid = int(seen[0].split()[1])
            assert _alive(pid), "the line arrived only after the command had exited"
            flag.touch()  # only now may the command finish

    _run(_provider(script), _request(tmp_path, "stream me"), emit)
    assert seen[1:] == ["got STREAM ME\n", "after flag"]
    assert seen[0].startswith("pid ") and seen[0].endswith("\n")


def test_cwd_is_the_workspace_and_env_is_minimal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATCRON_OPENAI_API_KEY", "sk-test-secret-value")
    monkeypatch.setenv("CHATCRON_DATABASE_URL", "postgresql://u:pw-secret@db/x")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = _script(tmp_path, """
        import json, os
        print(json.dumps({"cwd": os.getcwd(), "env": dict(os.environ)}))
    """)
    out: list[str] = []
    turn_env = {"SCHEDULE_API_URL": "http://127.0.0.1:3000/agent-api", "SCHEDULE_API_TOKEN": "tok"}
    _run(_provider(script), _request(workspace, env=turn_env), out.append)
    seen = json.loads("".join(out))
    assert Path(seen["cwd"]).resolve() == workspace.resolve()
    env = seen["env"]
    assert env["SCHEDULE_API_URL"] == turn_env["SCHEDULE_API_URL"] and env["SCHEDULE_API_TOKEN"] == "tok"
    assert "secret" not in json.dumps(env)
    assert set(env) - {"LC_CTYPE"} == {"PATH", "HOME", "LANG", "TERM", *turn_env}


def test_a_loose_chat_runs_in_a_temporary_folder_removed_afterwards(tmp_path: Path) -> None:
    script = _script(tmp_path, "import os; print(os.getcwd())")
    out: list[str] = []
    _run(_provider(script), _request(None), out.append)
    folder = Path(out[0].strip())
    assert folder.name.startswith("chatcron-turn-") and not folder.exists()


def test_non_zero_exit_fails_with_the_tail_of_stderr(tmp_path: Path) -> None:
    script = _script(tmp_path, """
        import sys
        print("partial reply", flush=True)
        sys.stderr.write("EARLY-NOISE " + "x" * 20000 + "\\n")
        sys.stderr.write("the real reason: boom\\n")
        sys.exit(3)
    """)
    out: list[str] = []
    with pytest.raises(ProviderError) as caught:
        _run(_provider(script), _request(tmp_path), out.append)
    message = str(caught.value)
    assert message.startswith("command exited with 3: ")
    assert message.endswith("the real reason: boom") and "EARLY-NOISE" not in message
    assert len(message) < 4200
    assert out == ["partial reply\n"]


def test_a_missing_program_fails_the_turn(tmp_path: Path) -> None:
    provider = CommandProvider((str(tmp_path / "no-such-agent"),), base_environment())
    with pytest.raises(ProviderError, match="command could not start"):
        _run(provider, _request(tmp_path), lambda chunk: None)


def test_cancel_kills_the_whole_process_group_promptly(tmp_path: Path) -> None:
    script = _script(tmp_path, """
        import signal, subprocess, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the grandchild inherits this too: SIGKILL needed
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        print(f"pids {child.pid}", flush=True)
        time.sleep(600)
    """)
    cancel = threading.Event()
    pids: list[int] = []

    def emit(chunk: str) -> None:
        pids.append(int(chunk.split()[1]))
        cancel.set()

    started = time.monotonic()
    with pytest.raises(ProviderError, match="^cancelled$"):
        _run(_provider(script, grace=0.5), _request(tmp_path), emit, cancel)
    assert time.monotonic() - started < 5.0
    assert pids and _wait_dead(pids[0]), "the grandchild survived the cancel"


def test_cancel_while_the_command_has_closed_stdout(tmp_path: Path) -> None:
    script = _script(tmp_path, """
        import os, sys, time
        print("bye", flush=True)
        os.close(1)
        time.sleep(600)
    """)
    cancel = threading.Event()
    started = time.monotonic()
    with pytest.raises(ProviderError, match="^cancelled$"):
        _run(_provider(script, grace=0.5), _request(tmp_path), lambda chunk: cancel.set(), cancel)
    assert time.monotonic() - started < 5.0


def test_leftover_processes_are_killed_when_the_command_exits(tmp_path: Path) -> None:
    script = _script(tmp_path, """
        import subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        print(child.pid, flush=True)
    """)
    out: list[str] = []
    started = time.monotonic()
    _run(_provider(script), _request(tmp_path), out.append)
    assert time.monotonic() - started < 5.0  # the leftover held stdout; the turn did not wait for it
    assert _wait_dead(int(out[0]))


MiB = 1024 * 1024


@pytest.mark.parametrize("line", [b"x" * 1023 + b"\n", b"y" * 4096], ids=["1KiB-lines", "no-newlines"])
def test_a_flood_of_output_streams_in_bounded_memory(tmp_path: Path, line: bytes) -> None:
    script = _script(tmp_path, f"""
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
        _run(_provider(script), _request(tmp_path), emit)
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


def test_a_turn_through_the_prompt_service_records_the_output(settings: Settings, tmp_path: Path) -> None:
    script = _script(tmp_path, ECHO)
    core = make_core(with_settings(settings, provider="command",
                                   provider_command=shlex.join([sys.executable, str(script)])))
    try:
        project, chat = _chat(core, core.settings.workspaces_dir)
        result = core.prompts.start(chat.id, "hi there").wait(DEADLINE)
        assert result is not None and result.status == RunStatus.SUCCEEDED, result
        workspace = os.path.basename(projects.ensure_workspace(core.settings.workspaces_dir, project.id))
        assert result.output == f"echo: hi there\nin {workspace}\n"
    finally:
        core.prompts.shutdown(2.0)
        core.db.dispose()


def test_a_projects_own_command_runs_and_its_failure_fails_the_run(settings: Settings, tmp_path: Path) -> None:
    script = _script(tmp_path, GIVE_UP)
    core = make_core(settings)  # the server default stays demo
    try:
        project, chat = _chat(core, core.settings.workspaces_dir)
        with core.db.write() as s:
            row = s.get(Project, project.id)
            row.provider = "command"
            row.provider_settings = json.dumps({"command": shlex.join([sys.executable, str(script)])})
        result = core.prompts.start(chat.id, "try").wait(DEADLINE)
        assert result is not None and result.status == RunStatus.FAILED
        assert result.error == "command exited with 2: agent gave up"
        assert result.output.startswith("echo: try\n")
    finally:
        core.prompts.shutdown(2.0)
        core.db.dispose()
