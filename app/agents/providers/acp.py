"""The ``acp`` provider: any agent that speaks the Agent Client Protocol (SPEC §11).

Project settings (``set-provider --provider acp --setting KEY=VALUE``):

- ``agent``: a preset (``python -m app.manage install-agent NAME``), or ``command``: any ACP agent
  command line (split like a shell would, never run through one);
- ``tool_policy``: ``allow`` (default) answers every permission request with the agent's "allow
  once" option, ``deny`` with its "reject" option; a plain call of the workspace's
  ``scripts/remote-schedule`` is always allowed (its grant scopes it); ``ask`` makes every other
  request an approval a person answers (SPEC §13; rejected after CHATCRON_APPROVAL_TIMEOUT_SECONDS),
  and a turn that ends while one waits cancels it;
- ``model``: chosen through the session's ``model`` option (or ``session/set_model``);
- ``env.NAME=VALUE``: put into the agent's environment (credentials, base URLs); stored with the
  project's settings, which no API returns;
- ``history_budget_chars``: how much of the chat seeds a session that had to start anew.

The agent gets no variable of the server's own: PATH, HOME (the project's agent home), a UTF-8
locale, the preset's variables, ``SCHEDULE_API_URL`` and ``SCHEDULE_API_TOKEN_FILE`` (a warm
process outlives a turn's grant, so the grant is in a file present only during the turn), then
the project's ``env.*``. The turn's thread writes everything the agent streams to the log; the
agent itself runs on the pool's event loop (:mod:`app.agents.providers.acp_turn`).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import os
import queue
import threading
from pathlib import Path

from app.agents.providers.acp_agent import _launch
from app.agents.providers.acp_client import TurnSink
from app.agents.providers.acp_meter import Meter
from app.agents.providers.acp_pool import AgentPool
from app.agents.providers.acp_settings import AcpConfig
from app.agents.providers.acp_turn import TurnControl, TurnPlan, run_turn
from app.agents.sandbox.dirs import hand_over_written, switches_uid
from app.agents.workspace import agent_home, agent_token_file, loose_agent_dirs
from app.core.config import Settings
from app.core.models import EventType
from app.core.ports import AgentStartError, Emit, ProviderError, TurnRequest, TurnStream, stream_of


class AcpProvider:
    """One turn of an ACP agent; see the module docstring."""

    name = "acp"

    def __init__(self, config: AcpConfig, pool: AgentPool, settings: Settings) -> None:
        self.config, self.pool, self.settings = config, pool, settings

    def _dirs(self, request: TurnRequest) -> tuple[Path, Path, Path | None]:
        """(HOME, working directory, token file) of the chat's agent."""
        if request.project_id is not None and request.workspace is not None:
            return (agent_home(self.settings, request.project_id), request.workspace,
                    agent_token_file(self.settings, request.chat_id))
        home, work = loose_agent_dirs(self.settings, request.chat_id)
        return home, work, None

    def _environment(self, home: Path, token_file: Path | None) -> dict[str, str]:
        env: dict[str, str] = {}  # PATH, HOME, LANG, TERM come from the sandbox (app.agents.sandbox.prepare)
        if self.config.preset is not None and self.config.install_dir is not None:
            try:
                env.update(self.config.preset.env(self.config.install_dir, home, self.config.options))
            except RuntimeError as exc:  # e.g. the native binary is missing
                raise AgentStartError(str(exc)) from None
        if token_file is not None:
            env["SCHEDULE_API_URL"] = self.settings.api_url
            env["SCHEDULE_API_TOKEN_FILE"] = str(token_file)
        env.update(self.config.env)
        return env

    def plan(self, request: TurnRequest) -> tuple[TurnPlan, Path | None]:
        home, cwd, token_file = self._dirs(request)
        env = self._environment(home, token_file)
        if self.config.preset is not None:
            written = self.config.preset.prepare_home(home, self.config.options)
            hand_over_written(self.settings, home, written or ())  # sandboxed: the agent's uid must own them
        read_only = [p for p in (self.config.install_dir, token_file.parent if token_file else None) if p]
        argv = self.config.argv

        def launch():  # a Launch
            return _launch(self.settings, argv, workspace=cwd, home=home, env=env, read_only=read_only,
                           egress=self.config.egress)

        key = (argv, tuple(sorted(env.items())), str(home), str(cwd))
        tokens = self.config.preset.session_usage if self.config.preset is not None else None
        return TurnPlan(chat_id=request.chat_id, run_id=request.run_id, key=key, launch=launch, cwd=cwd,
                        prompt=request.text, session_id=request.session_id, history=request.history,
                        history_budget=self.config.history_budget, previous_run_id=request.previous_run_id,
                        fresh=request.fresh_session, policy=self.config.policy, model=self.config.model,
                        workspace=request.workspace,
                        session_tokens=functools.partial(tokens, home) if tokens else None), token_file

    def run(self, request: TurnRequest, emit: Emit, cancel: threading.Event) -> None:
        stream = stream_of(emit)
        plan, token_file = self.plan(request)
        control = TurnControl(sink=TurnSink(session_id="", policy=plan.policy, workspace=request.workspace,
                                            approvals=request.approvals))
        token = request.env.get("SCHEDULE_API_TOKEN")
        try:
            if token_file is not None and token:
                _write_token(self.settings, token_file, token)
            future = self.pool.submit(run_turn(self.pool, plan, control, self.settings.agent_cancel_grace_seconds))
            self._drain(future, control, stream, cancel)
        finally:
            if token_file is not None:
                with contextlib.suppress(FileNotFoundError):
                    token_file.unlink()
            if request.approvals is not None:
                request.approvals.close()  # a card left open can no longer be answered

    def _drain(self, future: concurrent.futures.Future, control: TurnControl, stream: TurnStream,
               cancel: threading.Event) -> None:
        """Write what the agent streams until the turn ends; pass a cancel on to the loop; measure
        the usage so far while the turn runs (:mod:`app.agents.providers.acp_meter`)."""
        signalled, failure, paragraph = False, None, ""
        meter = Meter(lambda: control.sink.cost)
        while True:
            if (cancel.is_set() or failure is not None) and not signalled:
                self.pool.call_soon(control.cancel.set)
                signalled = True
            try:
                kind, payload = control.sink.items.get(timeout=0.05)
            except queue.Empty:
                if future.done():
                    break
                kind, payload = "", None
            if kind == "meter":
                meter.poke()
            elif kind == "meter_start":
                meter.start(payload)  # type: ignore[arg-type]
            elif kind:
                if kind == "usage":
                    meter.close()  # the turn's final usage is the last word
                elif kind == "text":  # text after a tool call is a new paragraph, not a run-on of the last
                    payload, paragraph = (f"\n\n{payload}" if paragraph == "after_tool" else payload), "text"
                elif kind in ("tool", "plan") and paragraph:
                    paragraph = "after_tool"
                failure = failure or _delivered(stream, kind, payload)
            if failure is None and not signalled:  # a cap passed sets ``cancel``: signalled next pass
                usage = meter.tick()
                if usage is not None:
                    failure = _delivered(stream, "usage", usage)
        if failure is not None:
            raise failure
        future.result()


def _delivered(stream: TurnStream, kind: str, payload: object) -> ProviderError | None:
    """Deliver one item; the error when the run was ended elsewhere."""
    try:
        _deliver(stream, kind, payload)
    except ProviderError as exc:
        return exc
    return None


def _deliver(stream: TurnStream, kind: str, payload: object) -> None:
    if kind == "text":
        stream(str(payload))
    elif kind == "thought":
        stream.thought(str(payload))
    elif kind in ("tool", "plan", "status"):
        stream.event(EventType(kind), str(payload))
    elif kind == "session":
        stream.report_session(str(payload))
    elif kind == "usage":
        stream.report_usage(payload)  # type: ignore[arg-type]


def _write_token(settings: Settings, path: Path, token: str) -> None:
    """The turn's grant, readable by the agent's user only (SCHEDULE_API_TOKEN_FILE): sandboxed,
    the file belongs to the agent uid (its folder is bound read-only into the sandbox)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        if switches_uid(settings):
            os.fchown(out.fileno(), settings.agent_uid, settings.agent_gid)
        out.write(token)
    os.replace(tmp, path)
