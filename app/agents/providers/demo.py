"""The offline demo agent: deterministic, streams word by word, obeys a few directives.

Directives (anywhere in the prompt, one per line, run in order before the reply):
``/sleep N`` works for N seconds; ``/schedule <remote-schedule create flags>`` creates a
schedule through the real ``scripts/remote-schedule`` CLI of the workspace; ``/complete [reason]``
runs ``remote-schedule complete-current``; ``/report <outcome> [summary words]`` runs
``remote-schedule report --outcome <outcome> [--summary "<words>"]``; ``/next <duration>`` runs
``remote-schedule next --in <duration>``. The CLI runs as an agent's tool would: in the agent
sandbox (``app.agents.sandbox``), with the system's ``python3``. After the reply: ``/fail`` fails
the turn; ``/marker`` ends the reply with the completion marker.

Directives are read from the prompt only: a trigger call's payload (the fenced untrusted block,
``envelope.with_payload``) is data, so a ``/complete`` line in it is never obeyed — as a careful
agent would not follow instructions found in data. The reply still echoes it.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import threading

from app.agents import sandbox
from app.agents.workspace import agent_home
from app.core import envelope
from app.core.config import Settings
from app.core.envelope import MARKER
from app.core.ports import Emit, ProviderError, TurnRequest

SKILL_SEPARATOR = "\n\n---\n"
MAX_SLEEP = 3600.0
_SLEEP = re.compile(r"^/sleep\s+(\d+(?:\.\d+)?)\s*$")


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def directives(text: str) -> list[str]:
    """The directive lines of a prompt, in order."""
    return [line.strip() for line in text.splitlines() if line.strip().startswith("/")]


def own_text(text: str) -> tuple[str, str]:
    """(what the turn's text says without a fire's appended skill text, the same without a trigger
    call's payload too): the first is echoed, only the second is obeyed."""
    # the payload goes first: a payload holding the skill separator must not cut the text short
    prompt = envelope.without_payload(text)
    obeyed = prompt.split(SKILL_SEPARATOR, 1)[0]
    skill = prompt[len(obeyed):]
    # the skill text is the tail of both; a separator inside the prompt itself falls back to the first one
    shown = text[: len(text) - len(skill)] if text.endswith(skill) else text.split(SKILL_SEPARATOR, 1)[0]
    return shown, obeyed


def reply_for(text: str) -> str:
    """The demo's reply text for a prompt (without directives' side effects)."""
    fire = envelope.parse(text)
    if fire:
        said = reply_for(fire.prompt).removeprefix("Demo agent here. ")
        return f'Demo agent here. Scheduled task "{fire.name}", fire {fire.fire_label}. {said}'
    plain = " ".join(line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("/"))
    words = plain.split()
    summary = " ".join(words[:40]) + (" …" if len(words) > 40 else "")
    if summary:
        return f"Demo agent here. You said: {summary}"
    return "Demo agent here. Done."


class DemoProvider:
    name = "demo"

    def __init__(self, word_delay: float = 0.04, settings: Settings | None = None) -> None:
        self.word_delay = word_delay
        self.settings = settings or Settings()

    def run(self, request: TurnRequest, emit: Emit, cancel: threading.Event) -> None:
        text, obeyed = own_text(request.text)  # a fire's appended skill text is for real agents
        lines = directives(obeyed)
        for line in lines:
            match = _SLEEP.match(line)
            if match:
                seconds = min(float(match.group(1)), MAX_SLEEP)
                emit(f"Working for {match.group(1)} seconds… ")
                if cancel.wait(seconds):
                    raise ProviderError("cancelled while sleeping")
            elif line.startswith("/schedule ") or line == "/schedule":
                self._tool(request, ["create", *_split(line.removeprefix("/schedule"))], emit)
            elif line.startswith("/complete"):
                reason = line.removeprefix("/complete").strip()
                self._tool(request, ["complete-current", *(["--reason", reason] if reason else [])], emit)
            elif line.startswith("/report ") or line == "/report":
                # "/report no_change nothing new" → --outcome no_change --summary "nothing new"
                outcome, _, summary = line.removeprefix("/report").strip().partition(" ")
                args = ["report", *(["--outcome", outcome] if outcome else [])]
                self._tool(request, args + (["--summary", summary.strip()] if summary.strip() else []), emit)
            elif line.startswith("/next ") or line == "/next":
                duration = line.removeprefix("/next").split()[:1]
                self._tool(request, ["next", *(["--in", *duration] if duration else [])], emit)
        self._stream(reply_for(text), emit, cancel)
        if "/fail" in lines:
            raise ProviderError("demo failure requested with /fail")
        if "/marker" in lines:
            emit("\n" + MARKER)

    def _tool(self, request: TurnRequest, args: list[str], emit: Emit) -> None:
        """Run the workspace's remote-schedule CLI as an agent would; its output joins the reply."""
        if not request.env.get("SCHEDULE_API_TOKEN") or request.workspace is None:
            emit("I have no schedule tools in this chat: turn on the Scheduled tasks skill first.\n")
            return
        # the server's interpreter is not visible in the sandbox; the system's python3 runs the CLI
        python = sys.executable if self.settings.agent_sandbox == "off" else "python3"
        # a sandbox that cannot run fails the turn (SandboxError) with what to do about it
        home = agent_home(self.settings, request.project_id) if request.project_id is not None else request.workspace
        launch = sandbox.prepare(self.settings, [python, "scripts/remote-schedule", *args],
                                 workspace=request.workspace, home=home, env=request.env)
        try:
            with launch.popen(stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, start_new_session=True) as proc:
                try:
                    out, _ = proc.communicate(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()  # the sandbox's outer process: its whole PID namespace goes with it
                    raise
        except (OSError, subprocess.TimeoutExpired) as exc:
            emit(f"remote-schedule could not run: {exc}\n")
            return
        finally:
            launch.end()
        emit(f"$ remote-schedule {shlex.join(args)}\n{out.strip()}\n(exit {proc.returncode})\n")

    def _stream(self, reply: str, emit: Emit, cancel: threading.Event) -> None:
        words = reply.split(" ")
        for i, word in enumerate(words):
            if cancel.is_set():
                raise ProviderError("cancelled")
            emit(word if i == len(words) - 1 else word + " ")
            if self.word_delay and cancel.wait(self.word_delay):
                raise ProviderError("cancelled")
