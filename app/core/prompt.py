"""The prompt service: one entry point for every turn, typed by a user or fired by a schedule.

``start`` takes the chat's run lock in the database, then drives the provider in a thread:
each streamed chunk becomes an ``assistant_text`` event, a process-wide pump renews the
heartbeat, and a timeout cancels the provider.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from app.core import agent_starts
from app.core.chats import SCHEDULED_TASKS, chat_skills, title_from_first_message_in
from app.core.clock import Clock
from app.core.config import Settings
from app.core.db import Database, first_line
from app.core.errors import NotFound, PromptAlreadyRunning
from app.core.grants import Scope, issue_grant_in, revoke_grant_in
from app.core.models import Chat, Project, Run, RunSource, RunStatus, User
from app.core.ports import AgentSide, AgentStartError, ApprovalDesk, ProviderError, ProviderFactory, TurnRequest
from app.core.runs import (
    abandon_stale_runs,
    begin_runs,
    finish_run_in,
    record_chat_session_in,
    record_usage_in,
    renew_heartbeats,
    run_outcome_in,
)
from app.core.runs import (
    histories as chat_histories,
)
from app.core.spend import add_spend_in
from app.core.stops import STOP_POLL_SECONDS, request_stop, requested_stops, stop_error
from app.core.timers import TIMERS, Workers
from app.core.turn_writer import TurnWriter
from app.core.turns import RunHandle, RunResult, Started, TurnSpec, instance_id

log = logging.getLogger("chatcron.prompt")


class PromptService:
    """Starts turns and keeps their heartbeats alive; safe to use from many threads."""

    def __init__(self, db: Database, clock: Clock, settings: Settings, providers: ProviderFactory, *,
                 agents: AgentSide, desk: ApprovalDesk) -> None:
        self.db, self.clock, self.settings, self.providers = db, clock, settings, providers
        self.agents, self.desk = agents, desk
        self.instance = instance_id()
        self._handles: dict[int, RunHandle] = {}  # local runs this process renews; not a lock
        self._lock = threading.Lock()
        self._pump: threading.Thread | None = None
        self._stops: threading.Thread | None = None
        self._stop = threading.Event()
        self._workers = Workers("turn")  # a turn's thread, reused across turns

    def start(self, chat_id: int, text: str, *, source: RunSource = RunSource.USER,
              task_id: int | None = None, task_run_id: int | None = None, owner_id: int | None = None,
              shown_prompt: str | None = None, fresh_session: bool = False,
              on_finish: Callable[[RunResult], None] | None = None) -> RunHandle:
        """Start one turn (see :class:`TurnSpec`); raises PromptAlreadyRunning when the chat has a live
        run, NotFound for a bad chat.

        Schedule tools (a grant in SCHEDULE_API_URL / SCHEDULE_API_TOKEN, the published CLI and
        SKILL.md) are given only to project chats with the ``scheduled-tasks`` skill (scope
        ``manage``) and to scheduled fires (scope ``complete-self``, skill text appended).
        """
        spec = TurnSpec(chat_id, text, source, task_id, task_run_id, owner_id, shown_prompt, fresh_session, on_finish)
        result = self.start_many([spec])[0]
        if isinstance(result, Exception):
            raise result
        return result

    def start_many(self, specs: list[TurnSpec], started: Started | None = None) -> list[RunHandle | Exception]:
        """Start several turns with one transaction for their locks, prompts and grants.

        Returns a handle per spec, or the exception that spec met (NotFound, PromptAlreadyRunning,
        AgentUnavailable: no workspace). ``started(session, pairs)`` runs inside that transaction.
        """
        results: list[RunHandle | Exception | None] = [None] * len(specs)
        chats, projects = self._load(specs)
        ready: list[int] = []
        workspaces: dict[int, Path | None] = {}
        checked: dict[int, Path] = {}  # projects whose workspace and assets this call has checked
        for i, spec in enumerate(specs):
            if spec.chat_id not in chats:
                results[i] = NotFound(f"no chat with id {spec.chat_id}")
                continue
            try:
                workspaces[i] = self._workspace(chats[spec.chat_id], projects, spec, checked)
            except Exception as exc:  # e.g. the disk is full: the turn does not start
                results[i] = agent_starts.fail(self.db, self.clock.now(), self.settings.provider, spec.chat_id,
                                               projects.get(chats[spec.chat_id].project_id or 0), None, exc)
                continue
            ready.append(i)
        if not ready:
            return results  # type: ignore[return-value]
        try:
            begun = self._begin([specs[i] for i in ready], chats, started)
        except IntegrityError:  # another process took a chat's lock meanwhile: one by one
            if len(ready) == 1:
                results[ready[0]] = PromptAlreadyRunning()
                return results  # type: ignore[return-value]
            for i in ready:
                results[i] = self.start_many([specs[i]], started)[0]
            return results  # type: ignore[return-value]
        failure: Exception | None = None
        try:
            wanted = [specs[i].chat_id for i, (run, _) in zip(ready, begun, strict=True)
                      if run is not None and not specs[i].fresh_session]
            histories, latest = chat_histories(self.db, wanted)
        except Exception as exc:  # the locks are held: each turn ends as failed below
            histories, latest, failure = {}, {}, exc
        for i, (run, grant) in zip(ready, begun, strict=True):
            chat = chats[specs[i].chat_id]
            project = projects.get(chat.project_id) if chat.project_id else None
            results[i] = PromptAlreadyRunning() if run is None else \
                self._launch(specs[i], run, grant, chat, project, workspaces[i], (histories, latest), failure)
        return results  # type: ignore[return-value]

    def _load(self, specs: list[TurnSpec]) -> tuple[dict[int, Chat], dict[int, Project]]:
        with self.db.read() as s:
            chats = {c.id: c for c in s.exec(select(Chat).where(Chat.id.in_({x.chat_id for x in specs})))}
            wanted = {c.project_id for c in chats.values() if c.project_id}
            projects = {p.id: p for p in s.exec(select(Project).where(Project.id.in_(wanted)))} if wanted else {}
        return chats, projects

    def _needs_tools(self, chat: Chat, spec: TurnSpec) -> bool:
        return chat.project_id is not None and (spec.source == RunSource.SCHEDULE or SCHEDULED_TASKS in
                                                chat_skills(chat))

    def _workspace(self, chat: Chat, projects: dict[int, Project], spec: TurnSpec,
                   checked: dict[int, Path]) -> Path | None:
        """The project's workspace; for a turn with tools, its published assets are checked first
        (once per project and call)."""
        project = projects.get(chat.project_id) if chat.project_id else None
        if project is None:
            return None
        if project.id in checked:
            return checked[project.id]
        tools = self._needs_tools(chat, spec)
        workspace, rewritten = self.agents.workspace(self.settings, project.id, tools=tools)
        if tools:
            checked[project.id] = workspace
            if rewritten:
                log.warning("action=workspace_assets_rewritten chat_id=%s paths=%s", chat.id, ",".join(rewritten))
        return workspace

    def _begin(self, specs: list[TurnSpec], chats: dict[int, Chat],
               started: Started | None) -> list[tuple[Run | None, tuple[str, int] | None]]:
        """One transaction: every chat's run lock, prompt events, grants, and the caller's ``started``."""
        now = self.clock.now()
        with self.db.write() as s:
            runs = begin_runs(s, now, specs, lease_seconds=self.settings.run_lease_seconds, instance=self.instance)
            grants = []
            for spec, run in zip(specs, runs, strict=True):
                chat = chats[spec.chat_id]
                if run is not None and spec.source == RunSource.USER and chat.auto_title:
                    title_from_first_message_in(s, now, chat.id, spec.shown_prompt or spec.text)
                if run is None or not self._needs_tools(chat, spec):
                    grants.append(None)
                    continue
                # Every scheduled turn gets complete-self, bound to its claim (possibly none): never manage.
                scope = Scope.COMPLETE_SELF if spec.source == RunSource.SCHEDULE else Scope.MANAGE
                grants.append(issue_grant_in(s, now, self.settings.grant_ttl_seconds, scope,
                                             spec.owner_id or chat.owner_id, chat.id, chat.project_id, spec.task_id,
                                             spec.task_run_id))
            s.flush()
            begun = [(spec, run) for spec, run in zip(specs, runs, strict=True) if run is not None]
            if started is not None and begun:
                started(s, begun)
        return [(run, (grant[0], grant[1].id) if grant else None) for run, grant in zip(runs, grants, strict=True)]

    def _launch(self, spec: TurnSpec, run: Run, grant: tuple[str, int] | None, chat: Chat, project: Project | None,
                workspace: Path | None, earlier: tuple[dict[int, tuple[tuple[str, str], ...]], dict[int, int]],
                failure: Exception | None) -> RunHandle | Exception:
        """Start the thread of a turn that holds its chat's lock; on failure the turn ends as failed
        (without the spec's callbacks: the caller gets the exception instead)."""
        handle = RunHandle(run, spec, self.settings.run_output_max_bytes)
        handle.project_id = chat.project_id
        with self._lock:
            self._handles[run.id] = handle
        self._ensure_pump()
        try:
            if failure is not None:
                raise failure
            text, env = spec.text, {}
            if grant is not None:
                env = {"SCHEDULE_API_URL": self.settings.api_url, "SCHEDULE_API_TOKEN": grant[0]}
                handle.grant_id = grant[1]
                if spec.source == RunSource.SCHEDULE:
                    text = f"{text}\n\n---\n{self.agents.skill_text()}"
            asks = self.desk.for_turn(self.db, self.clock, self.settings.approval_timeout_seconds, chat.id, run.id,
                                 chat.project_id, spec.task_id, spec.owner_id)
            request = TurnRequest(chat_id=chat.id, run_id=run.id, text=text, workspace=workspace, env=env,
                                  session_id=None if spec.fresh_session else chat.provider_session_id,
                                  history=earlier[0].get(chat.id, ()), project_id=chat.project_id,
                                  previous_run_id=earlier[1].get(chat.id), fresh_session=spec.fresh_session,
                                  approvals=asks)
            self._workers.submit(self._drive, run, project, request, handle)
        except Exception as exc:  # the lock is held: end the run rather than leave the chat wedged
            log.exception("action=turn_failed_to_start run_id=%s", run.id)
            handle.on_finish = handle.record_finish = None
            self._finish(run, handle, RunStatus.FAILED, f"the turn could not start: {exc}")
            return exc
        log.info("action=run_started run_id=%s chat_id=%s source=%s task_id=%s",
                 run.id, chat.id, spec.source.value, spec.task_id)
        return handle

    def _drive(self, run: Run, project: Project | None, request: TurnRequest, handle: RunHandle) -> None:
        timed_out = threading.Event()

        def on_timeout() -> None:
            timed_out.set()
            handle.cancel.set()

        timer = TIMERS.call_later(self.settings.run_timeout_seconds, on_timeout)
        status, error = RunStatus.SUCCEEDED, None
        writer = TurnWriter(self.db, self.clock, run, handle)
        try:
            provider = agent_starts.provider_of(self.providers, project)
            provider.run(request, writer.stream, handle.cancel)
        except (AgentStartError, OSError) as exc:  # the detail is the administrator's (core/agent_starts.py)
            status, error = RunStatus.FAILED, str(agent_starts.fail(
                self.db, self.clock.now(), self.settings.provider, request.chat_id, project, run.id, exc))
        except ProviderError as exc:
            status, error = RunStatus.FAILED, str(exc)
        except Exception:  # a provider bug must fail the turn, not kill the worker silently
            log.exception("action=provider_crashed run_id=%s", run.id)
            status, error = RunStatus.FAILED, "the turn failed on an unexpected error (the server log has its cause)"
        finally:
            timer.cancel()
        if timed_out.is_set():
            status, error = RunStatus.FAILED, f"timed out after {self.settings.run_timeout_seconds} s"
        if handle.over_budget is not None:  # a fire's cap passed (SPEC §15): a failure, for back-off
            status, error = RunStatus.FAILED, handle.over_budget
        if handle.stopped_by is not None:
            status, error = RunStatus.FAILED, stop_error(handle.stopped_by)
        handle.usage, handle.session_id = writer.stream.usage, writer.stream.session_id
        self._finish(run, handle, status, error, tail=writer.take())

    def _finish(self, run: Run, handle: RunHandle, status: RunStatus, error: str | None, tail: str = "") -> None:
        """Record the end in one transaction (group-committed with other turns' ends): the rest of the
        reply, the grant revoked, the lock released, and the caller's ``record_finish``."""
        now, tail = self.clock.now(), handle.cap.clip(tail)
        run_id, chat_id, grant_id, record = run.id, run.chat_id, handle.grant_id, handle.record_finish
        usage = handle.usage.as_json() if handle.usage is not None else None
        session_id, spent = handle.session_id, handle.usage

        def end(s: Session, with_record: bool) -> RunResult:
            if grant_id is not None:
                revoke_grant_in(s, now, grant_id)
            if finish_run_in(s, now, run_id, chat_id, status, error, tail):
                if usage:
                    record_usage_in(s, run_id, json.dumps(usage, sort_keys=True))
                    add_spend_in(s, now, handle.project_id, handle.task_id, spent)
                if session_id and not handle.fresh_session:  # a fresh fire's session is its TaskRun's
                    record_chat_session_in(s, chat_id, session_id)
            row = run_outcome_in(s, run_id)
            result = RunResult(run_id, RunStatus(row[0]), row[1], row[2], usage, session_id) if row else \
                RunResult(run_id, status, "", error, usage, session_id)
            if with_record and record is not None:
                record(s, result)
            return result

        try:
            result = self.db.combined(lambda s: end(s, True))
        except Exception:
            log.exception("action=finish_failed run_id=%s", run_id)
            result = self._finish_apart(end, record, RunResult(run_id, status, "", error))
        with self._lock:
            self._handles.pop(run_id, None)
        if handle.on_finish is not None:
            try:
                handle.on_finish(result)
            except Exception:
                log.exception("action=on_finish_failed run_id=%s", run_id)
        handle._set(result)
        log.info("action=run_finished run_id=%s chat_id=%s status=%s", run_id, chat_id, result.status.value)

    def _finish_apart(self, end: Callable[[Session, bool], RunResult], record: Callable[[Session, RunResult], None]
                      | None, fallback: RunResult) -> RunResult:
        """The end failed as a whole: release the lock alone, then the caller's record alone."""
        try:
            result = self.db.combined(lambda s: end(s, False))
        except Exception:
            log.exception("action=finish_failed_again run_id=%s", fallback.run_id)
            return fallback
        if record is not None:
            try:
                with self.db.write() as s:
                    record(s, result)
            except Exception:
                log.exception("action=record_finish_failed run_id=%s", fallback.run_id)
        return result

    # -- heartbeat pump --------------------------------------------------------------------
    def start_pump(self) -> None:
        """Start renewing heartbeats and sweeping dead runs now (a scheduler does so at start)."""
        self._ensure_pump()

    def _ensure_pump(self) -> None:
        with self._lock:
            if self._pump is None or not self._pump.is_alive():
                self._pump = threading.Thread(target=self._pump_loop, name="heartbeat", daemon=True)
                self._pump.start()
            if self._stops is None or not self._stops.is_alive():
                self._stops = threading.Thread(target=self._stops_loop, name="stops", daemon=True)
                self._stops.start()

    def _stops_loop(self) -> None:
        while not self._stop.wait(STOP_POLL_SECONDS):
            self.watch_stops()

    def watch_stops(self) -> None:
        """Stop the local turns a user asked to stop (from whichever process): one read, only while
        this process runs turns."""
        with self._lock:
            handles = dict(self._handles)
        if not handles:
            return
        try:
            stops = requested_stops(self.db, handles)
        except Exception as exc:  # the store may be briefly unavailable; the next tick retries
            log.error("action=stop_check_failed error=%s", first_line(exc))
            return
        for run_id, email in stops.items():
            self.stop_local(run_id, email)

    def stop(self, user: User, chat_id: int, run_id: int | None = None) -> int:
        """A user stops the chat's running turn, wherever it runs (see app/core/stops.py); its id."""
        stopped = request_stop(self.db, user, chat_id, run_id)
        self.stop_local(stopped, user.email)  # at once when the turn runs here
        return stopped

    def stop_local(self, run_id: int, email: str) -> bool:
        """Cancel a turn this process runs, to end ``failed`` "stopped by <email>"; False if not local."""
        with self._lock:
            handle = self._handles.get(run_id)
        if handle is None:
            return False
        if handle.stopped_by is None:
            handle.stopped_by = email
            log.info("action=run_stop_requested run_id=%s", run_id)
        handle.cancel.set()
        return True

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
        except Exception as exc:  # the store may be briefly unavailable; the next tick retries
            log.error("action=heartbeat_failed error=%s", first_line(exc))

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
        close = getattr(self.providers, "close", None)  # warm agent processes end with the service
        if close is not None:
            close()
