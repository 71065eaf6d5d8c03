"""The prompt service: one entry point for every turn, typed by a user or fired by a schedule.

``start`` takes the chat's run lock in the database, then drives the provider in a thread:
each streamed chunk becomes an ``assistant_text`` event, a process-wide pump renews the
heartbeat, and a timeout cancels the provider.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import secrets
import socket
import threading
from collections.abc import Callable
from pathlib import Path

from sqlmodel import select

from app.core.batching import Batcher
from app.core.chats import SCHEDULED_TASKS, chat_skills
from app.core.clock import Clock
from app.core.config import Settings
from app.core.db import Database
from app.core.errors import NotFound
from app.core.grants import Scope, issue_grant, revoke_grant
from app.core.models import Chat, Project, Run, RunSource, RunStatus
from app.core.providers.base import Provider, ProviderError, TurnRequest
from app.core.runs import abandon_stale_runs, append_output, begin_run, finish_run, renew_heartbeats
from app.core.workspace import ensure_workspace, publish_assets, skill_text

log = logging.getLogger("chatcron.prompt")


def instance_id() -> str:
    """Identifies this process in run rows and logs: host:pid:nonce."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


@dataclasses.dataclass(frozen=True)
class RunResult:
    run_id: int
    status: RunStatus
    output: str
    error: str | None


class RunHandle:
    """A started turn; ``wait`` blocks until it has finished and returns its result."""

    def __init__(self, run: Run) -> None:
        self.run_id: int = run.id
        self.chat_id: int = run.chat_id
        self._done = threading.Event()
        self._result: RunResult | None = None
        self.cancel = threading.Event()
        self.on_finish: Callable[[RunResult], None] | None = None
        self.grant_id: int | None = None

    def _set(self, result: RunResult) -> None:
        self._result = result
        self._done.set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> RunResult | None:
        self._done.wait(timeout)
        return self._result


ProviderFactory = Callable[[Project | None], Provider]


class PromptService:
    """Starts turns and keeps their heartbeats alive; safe to use from many threads."""

    def __init__(self, db: Database, clock: Clock, settings: Settings, providers: ProviderFactory) -> None:
        self.db = db
        self.clock = clock
        self.settings = settings
        self.providers = providers
        self.instance = instance_id()
        self._handles: dict[int, RunHandle] = {}  # local runs this process renews; not a lock
        self._lock = threading.Lock()
        self._pump: threading.Thread | None = None
        self._stop = threading.Event()

    def start(self, chat_id: int, text: str, *, source: RunSource = RunSource.USER,
              task_id: int | None = None, run_id: int | None = None, owner_id: int | None = None,
              shown_prompt: str | None = None, fresh_session: bool = False,
              on_finish: Callable[[RunResult], None] | None = None) -> RunHandle:
        """Start a turn; raises PromptAlreadyRunning when the chat has a live run, NotFound for a bad chat.

        ``run_id`` is the scheduler's claim (TaskRun id) for a fire; ``shown_prompt`` is what the
        transcript shows when it differs from what the agent receives; ``owner_id`` is the user
        the turn acts for (default: the chat's owner); ``fresh_session`` starts a new provider
        session; ``on_finish`` is called with the result from the run's thread.

        Schedule tools (a grant in SCHEDULE_API_URL / SCHEDULE_API_TOKEN, the published CLI and
        SKILL.md) are given only to project chats with the ``scheduled-tasks`` skill (scope
        ``manage``) and to scheduled fires (scope ``complete-self``, skill text appended).
        """
        with self.db.read() as s:
            chat = s.get(Chat, chat_id)
            project = s.get(Project, chat.project_id) if chat and chat.project_id else None
        if chat is None:
            raise NotFound(f"no chat with id {chat_id}")
        run = begin_run(self.db, self.clock, chat_id, text, source=source,
                        lease_seconds=self.settings.run_lease_seconds, instance=self.instance,
                        shown_prompt=shown_prompt, task_id=task_id, task_run_id=run_id)
        handle = RunHandle(run)
        with self._lock:
            self._handles[run.id] = handle
        self._ensure_pump()
        try:
            request = self._prepare(chat, project, run, handle, text, source, task_id, run_id, owner_id,
                                    fresh_session)
            handle.on_finish = on_finish
            thread = threading.Thread(target=self._drive, args=(run, project, request, handle),
                                      name=f"run-{run.id}", daemon=True)
            thread.start()
        except Exception as exc:  # the lock is held: end the run rather than leave the chat wedged
            log.exception("action=turn_failed_to_start run_id=%s", run.id)
            self._finish(run, handle, RunStatus.FAILED, f"the turn could not start: {exc}")
            raise
        log.info("action=run_started run_id=%s chat_id=%s source=%s task_id=%s",
                 run.id, chat_id, source.value, task_id)
        return handle

    def _prepare(self, chat: Chat, project: Project | None, run: Run, handle: RunHandle, text: str,
                 source: RunSource, task_id: int | None, run_id: int | None, owner_id: int | None,
                 fresh_session: bool) -> TurnRequest:
        """Workspace, schedule tools (when allowed) and history of a turn that holds the chat's lock."""
        workspace = ensure_workspace(self.settings.workspaces_dir, project.id) if project else None
        env: dict[str, str] = {}
        if workspace is not None and (source == RunSource.SCHEDULE or SCHEDULED_TASKS in chat_skills(chat)):
            env, handle.grant_id = self._tools(chat, workspace, source, task_id, run_id, owner_id)
            if source == RunSource.SCHEDULE:
                text = f"{text}\n\n---\n{skill_text()}"
        return TurnRequest(chat_id=chat.id, run_id=run.id, text=text, workspace=workspace, env=env,
                           session_id=None if fresh_session else chat.provider_session_id,
                           history=() if fresh_session else self._history(chat.id, run.id))

    def _history(self, chat_id: int, before_run: int, limit: int = 50) -> tuple[tuple[str, str], ...]:
        """Earlier finished turns of the chat as (role, text), oldest first (providers trim to budget)."""
        with self.db.read() as s:
            rows = list(s.exec(select(Run).where(Run.chat_id == chat_id, Run.id < before_run,
                                                 Run.status != RunStatus.RUNNING.value)
                               .order_by(Run.id.desc()).limit(limit)))
        turns: list[tuple[str, str]] = []
        for run in reversed(rows):
            turns.append(("user", run.prompt))
            if run.output:
                turns.append(("assistant", run.output))
        return tuple(turns)

    def _tools(self, chat: Chat, workspace: Path, source: RunSource, task_id: int | None, run_id: int | None,
               owner_id: int | None) -> tuple[dict[str, str], int]:
        """Verify the workspace assets and mint this turn's grant; returns (env, grant id)."""
        rewritten = publish_assets(workspace)
        if rewritten:
            log.warning("action=workspace_assets_rewritten chat_id=%s paths=%s", chat.id, ",".join(rewritten))
        # Every scheduled turn gets complete-self, bound to its claim (possibly none): never manage.
        scope = Scope.COMPLETE_SELF if source == RunSource.SCHEDULE else Scope.MANAGE
        token, grant_id = issue_grant(self.db, self.clock, self.settings.grant_ttl_seconds, scope,
                                      owner_id or chat.owner_id, chat.id, chat.project_id, task_id, run_id)
        return {"SCHEDULE_API_URL": self.settings.api_url, "SCHEDULE_API_TOKEN": token}, grant_id

    def _drive(self, run: Run, project: Project | None, request: TurnRequest, handle: RunHandle) -> None:
        timed_out = threading.Event()

        def on_timeout() -> None:
            timed_out.set()
            handle.cancel.set()

        timer = threading.Timer(self.settings.run_timeout_seconds, on_timeout)
        timer.daemon = True
        timer.start()
        status, error = RunStatus.SUCCEEDED, None
        batcher = Batcher(self._capped_writer(run))
        try:
            provider = self.providers(project)

            def emit(chunk: str) -> None:
                batcher.add(chunk)
                if batcher.ended:
                    handle.cancel.set()  # someone else ended this run (abandoned it)
                    raise ProviderError("the run was ended elsewhere")

            provider.run(request, emit, handle.cancel)
        except ProviderError as exc:
            status, error = RunStatus.FAILED, str(exc)
        except Exception as exc:  # a provider bug must fail the turn, not kill the worker silently
            log.exception("action=provider_crashed run_id=%s", run.id)
            status, error = RunStatus.FAILED, f"provider error: {exc}"
        finally:
            timer.cancel()
            try:
                batcher.flush()  # the tail of the reply, before the run is finished
            except Exception:
                log.exception("action=final_flush_failed run_id=%s", run.id)
        if timed_out.is_set():
            status, error = RunStatus.FAILED, f"timed out after {self.settings.run_timeout_seconds} s"
        self._finish(run, handle, status, error)

    def _capped_writer(self, run: Run) -> Callable[[str], bool]:
        """Appends to the run's output until CHATCRON_RUN_OUTPUT_MAX_BYTES, then notes the cut once and
        drops the rest, so a flooding agent costs bounded memory and storage."""
        cap = self.settings.run_output_max_bytes
        left = [cap]  # bytes still allowed; -1 once the cut has been noted

        def write(text: str) -> bool:
            if left[0] < 0:
                return True
            data = text.encode("utf-8", "replace")
            if len(data) > left[0]:
                text = data[:left[0]].decode("utf-8", "ignore") + f"\n[output truncated at {cap} bytes]"
                left[0] = -1
            else:
                left[0] -= len(data)
            return append_output(self.db, self.clock, run, text)

        return write

    def _finish(self, run: Run, handle: RunHandle, status: RunStatus, error: str | None) -> None:
        try:
            if handle.grant_id is not None:
                revoke_grant(self.db, self.clock, handle.grant_id)
        except Exception:  # the grant still expires by its TTL
            log.exception("action=grant_revoke_failed run_id=%s", run.id)
        try:
            finish_run(self.db, self.clock, run, status, error)
        except Exception:
            log.exception("action=finish_failed run_id=%s", run.id)
        with self._lock:
            self._handles.pop(run.id, None)
        with self.db.read() as s:
            row = s.get(Run, run.id)
        final = RunStatus(row.status) if row else status
        result = RunResult(run.id, final, row.output if row else "", row.error if row else error)
        if handle.on_finish is not None:
            try:
                handle.on_finish(result)
            except Exception:
                log.exception("action=on_finish_failed run_id=%s", run.id)
        handle._set(result)
        log.info("action=run_finished run_id=%s chat_id=%s status=%s", run.id, run.chat_id, final.value)

    # -- heartbeat pump --------------------------------------------------------------------
    def start_pump(self) -> None:
        """Start renewing heartbeats and sweeping dead runs now (a scheduler does so at start)."""
        self._ensure_pump()

    def _ensure_pump(self) -> None:
        with self._lock:
            if self._pump is None or not self._pump.is_alive():
                self._pump = threading.Thread(target=self._pump_loop, name="heartbeat", daemon=True)
                self._pump.start()

    def _pump_loop(self) -> None:
        interval = max(0.5, self.settings.run_lease_seconds / 3)
        while not self._stop.wait(interval):
            self.pump_once()

    def pump_once(self) -> None:
        """Renew local heartbeats, cancel local runs ended elsewhere, abandon dead ones anywhere."""
        with self._lock:
            handles = dict(self._handles)
        try:
            alive = renew_heartbeats(self.db, self.clock, handles)
            for run_id, handle in handles.items():
                if run_id not in alive:
                    handle.cancel.set()
            for run in abandon_stale_runs(self.db, self.clock, self.settings.run_lease_seconds):
                log.warning("action=run_abandoned run_id=%s chat_id=%s", run.id, run.chat_id)
        except Exception:  # the store may be briefly unavailable; the next tick retries
            log.exception("action=heartbeat_failed")

    def running(self) -> list[RunHandle]:
        with self._lock:
            return list(self._handles.values())

    def shutdown(self, grace_seconds: float = 5.0) -> None:
        """Cancel local turns, wait up to ``grace_seconds`` for them to record their end."""
        for handle in self.running():
            handle.cancel.set()
        for handle in self.running():
            handle.wait(grace_seconds)
        self._stop.set()
