"""Agent start failures: a user sees one sentence, an administrator gets the detail.

An agent that cannot start (its sandbox cannot run, its program is missing, its settings are bad,
it fails the ACP handshake, its workspace cannot be prepared) fails the turn with
:class:`AgentUnavailable`'s sentence only — in the transcript, the run, the API and a fire's
record. The detail (absolute paths, commands, the fix) goes

- to the server log: one ERROR line per failure, ``action=agent_start_failed`` with the project,
  chat, run, provider and the detail on one line;
- to the inbox of the project's owner — its creator (``projects.owner_id``) while still a member,
  else the server's first admin; a loose chat's failure goes to the first admin. The inbox shows
  such an event to its recipient and to admins only (``app/attention/reads.py``), and the
  recipient's notification channels get it like any event;
- to ``/api/health`` and ``make run`` (:func:`open_problems`).

Flooding is kept out by one row per (project, cause) in ``agent_start_problems``, whose unique key
makes the decision atomic across processes: an inbox item is written for a new cause, and again
only once a turn of that project has succeeded since the last failure (it was resolved, then came
back) or a day has passed. A problem is *open* while its last failure is under a day old and no
turn of its project has succeeded since (checked when read: a successful turn writes nothing here).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import logging
import re
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Field, SQLModel

from app.core import attention_events as attention
from app.core.attention_tables import AttentionKind
from app.core.clock import rfc3339
from app.core.db import Database
from app.core.errors import AgentUnavailable
from app.core.models import Chat, Membership, Project, Run, RunStatus, User, instant
from app.core.ports import AgentStartError, Provider, ProviderError, ProviderFactory
from app.core.redact import hide_setting_values

log = logging.getLogger("chatcron.agents")

USER_MESSAGE = AgentUnavailable().message  # "The agent could not start — an administrator has been told."
QUIET_AFTER_FIX = dt.timedelta(hours=1)  # a problem back after a fix is told again no sooner than this
REMIND_AFTER = dt.timedelta(hours=24)  # an unresolved cause is told again after this long
OPEN_FOR = dt.timedelta(hours=24)  # a problem whose last failure is older is no longer reported
FORGET_AFTER = dt.timedelta(days=30)  # rows older than this are removed when a new cause is recorded
DETAIL_MAX = 4000  # characters of the detail kept (a stderr tail can be long)
LOOSE = 0  # project_key of loose chats' problems (a unique key cannot hold NULL as one value)


class AgentStartProblem(SQLModel, table=True):
    """One cause of agent start failures in one project (or in loose chats): what /api/health and
    ``make run`` report, and what keeps the owner's inbox from flooding."""

    __tablename__ = "agent_start_problems"
    __table_args__ = (sa.UniqueConstraint("project_key", "cause", name="uq_agent_start_problems_cause"),)

    id: int | None = Field(default=None, primary_key=True)
    project_key: int  # the project's id; LOOSE (0) for loose chats
    cause: str = Field(sa_column=sa.Column(sa.String(64), nullable=False))  # see cause_of
    provider: str = Field(sa_column=sa.Column(sa.String(40), nullable=False))
    detail: str = Field(sa_column=sa.Column(sa.Text(), nullable=False))  # the latest failure's, for admins
    failures: int = 1
    last_run_id: int = 0  # the latest failed run (or the newest run then): a success after it resolves it
    first_at: dt.datetime = instant(nullable=False)
    last_at: dt.datetime = instant(nullable=False, index=True)
    told_at: dt.datetime = instant(nullable=False)  # when the last inbox item about it was written


_PROBLEMS, _RUNS, _CHATS = AgentStartProblem.__table__, Run.__table__, Chat.__table__
_USERS, _PROJECTS, _MEMBERS = User.__table__, Project.__table__, Membership.__table__
_VARYING = re.compile(r"[A-Za-z0-9_]*\d[A-Za-z0-9_]*")  # pids, ids, ports, temporary names


@dataclasses.dataclass(frozen=True)
class StartFailure:
    """One agent start failure: where it happened and the administrator's detail."""

    chat_id: int
    project_id: int | None
    run_id: int | None  # None: the turn failed before its run began (its workspace)
    provider: str
    detail: str


def cause_of(provider: str, detail: str) -> str:
    """What makes two failures one cause: the provider and the detail with every word holding a
    digit blanked (a pid, a run id, a temporary folder's name differ between tries of one cause)."""
    return hashlib.sha256(f"{provider}\n{_VARYING.sub('#', detail)}".encode()).hexdigest()


def provider_name(default: str, project: Project | None) -> str:
    """The provider a project's turns use (the registry's rule: its own, else the server's)."""
    return (project.provider if project is not None and project.provider else None) or default


def provider_of(factory: ProviderFactory, project: Project | None) -> Provider:
    """The project's provider; one that cannot be made (unknown, misconfigured, its agent not
    installed) is an agent start failure."""
    try:
        return factory(project)
    except AgentStartError:
        raise
    except ProviderError as exc:
        raise AgentStartError(str(exc)) from None


def fail(db: Database, now: dt.datetime, default_provider: str, chat_id: int, project: Project | None,
         run_id: int | None, exc: Exception) -> AgentUnavailable:
    """Report a turn's start failure — an AgentStartError, or an OS error setting up the agent's
    workspace, home or sandbox folders — with its detail (see :func:`report`); the error its user
    gets instead. The detail never holds the values of the project's secret settings (an agent's
    stderr may echo its key); the log line is redacted as every log line is (app/core/redact.py)."""
    detail = str(exc) if isinstance(exc, AgentStartError) else \
        f"the agent's workspace, home or sandbox folders could not be set up: {exc}"
    report(db, now, StartFailure(chat_id, project.id if project is not None else None, run_id,
                                 provider_name(default_provider, project), without_secrets(detail, project)))
    return AgentUnavailable()


def without_secrets(text: str, project: Project | None) -> str:
    """``text`` with the values of the project's secret settings (``api_key``, ``env.*_KEY``, …)
    replaced by the redaction mark."""
    try:
        settings = json.loads(project.provider_settings or "{}") if project is not None else {}
    except ValueError:
        settings = {}
    return hide_setting_values(text, settings) if isinstance(settings, dict) else text


def one_line(text: str) -> str:
    """``text`` on one log line (a stderr tail has many)."""
    return " | ".join(line.strip() for line in text.strip().splitlines() if line.strip())


def report(db: Database, now: dt.datetime, failure: StartFailure) -> bool:
    """Log the failure and record it (its problem row, and an inbox item when due) in one write
    transaction; True when an inbox item was written. Never raises: the turn's end must not depend
    on it."""
    told = False
    try:
        with db.write() as s:
            told = _record_in(s.connection(), now, failure)
    except Exception:
        log.exception("action=agent_start_record_failed project_id=%s run_id=%s", failure.project_id, failure.run_id)
    log.error("action=agent_start_failed project_id=%s chat_id=%s run_id=%s provider=%s told=%s detail=%s",
              failure.project_id, failure.chat_id, failure.run_id, failure.provider, told, one_line(failure.detail))
    return told


def _record_in(conn: sa.Connection, now: dt.datetime, f: StartFailure) -> bool:
    key, cause, detail = f.project_id or LOOSE, cause_of(f.provider, f.detail), f.detail[:DETAIL_MAX]
    mark = f.run_id or int(conn.execute(sa.select(sa.func.max(_RUNS.c.id))).scalar() or 0)
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    added = conn.execute(dialect.insert(_PROBLEMS).values(
        project_key=key, cause=cause, provider=f.provider, detail=detail, failures=1, last_run_id=mark,
        first_at=now, last_at=now, told_at=now).on_conflict_do_nothing(index_elements=["project_key", "cause"])
        .returning(_PROBLEMS.c.id)).first()
    if added is not None:
        conn.execute(sa.delete(_PROBLEMS).where(_PROBLEMS.c.last_at < now - FORGET_AFTER))
        return _tell(conn, now, f, detail)
    row = conn.execute(sa.select(_PROBLEMS).where(_PROBLEMS.c.project_key == key, _PROBLEMS.c.cause == cause)).one()
    # told again a day on, or once it came back after a fix — but not more than once an hour, so a
    # flaky start between good turns (or one broken loose chat among working ones) does not flood
    due = row.told_at <= now - REMIND_AFTER or (row.told_at <= now - QUIET_AFTER_FIX
                                                and _succeeded_since(conn, key, row.last_run_id))
    # compare-and-set on what was read: of two processes failing at once, one tells
    due = due and conn.execute(sa.update(_PROBLEMS).where(_PROBLEMS.c.id == row.id, _PROBLEMS.c.told_at == row.told_at)
                               .values(told_at=now)).rowcount == 1
    conn.execute(sa.update(_PROBLEMS).where(_PROBLEMS.c.id == row.id).values(
        provider=f.provider, detail=detail, failures=_PROBLEMS.c.failures + 1, last_run_id=mark, last_at=now))
    return _tell(conn, now, f, detail) if due else False


def _succeeded_since(conn: sa.Connection, key: int, run_id: int) -> bool:
    """Whether a turn of the project (LOOSE: of any loose chat) succeeded after run ``run_id``."""
    chats = sa.select(_CHATS.c.id).where(_CHATS.c.project_id == key if key != LOOSE else _CHATS.c.project_id.is_(None))
    query = sa.select(_RUNS.c.id).where(_RUNS.c.id > run_id, _RUNS.c.status == RunStatus.SUCCEEDED.value,
                                        _RUNS.c.chat_id.in_(chats)).limit(1)
    return conn.execute(query).first() is not None


def recipient(conn: sa.Connection, project_id: int | None) -> sa.Row | None:
    """(id, email) of whom a project's start failures are told: its owner — the creator, while a
    member or an admin (SPEC §18's ``owner`` role is planned) — else the first admin; None when
    the server has no admin."""
    if project_id is not None:
        member = sa.exists().where(_MEMBERS.c.user_id == _USERS.c.id, _MEMBERS.c.project_id == project_id)
        owner = conn.execute(sa.select(_USERS.c.id, _USERS.c.email)
                             .select_from(_USERS.join(_PROJECTS, _PROJECTS.c.owner_id == _USERS.c.id))
                             .where(_PROJECTS.c.id == project_id, sa.or_(_USERS.c.is_admin, member))).first()
        if owner is not None:
            return owner
    return conn.execute(sa.select(_USERS.c.id, _USERS.c.email).where(_USERS.c.is_admin)
                        .order_by(_USERS.c.id).limit(1)).first()


def _tell(conn: sa.Connection, now: dt.datetime, f: StartFailure, detail: str) -> bool:
    who = recipient(conn, f.project_id)
    if who is None:
        return False
    payload = {"agent": {"provider": f.provider, "detail": detail, "project_id": f.project_id},
               "run": {"id": f.run_id, "outcome": RunStatus.FAILED.value, "error": detail}}
    attention.record(conn, [attention.row(now, AttentionKind.AGENT_START_FAILED, user_email=who.email,
                                          user_id=who.id, chat_id=f.chat_id, project_id=f.project_id,
                                          run_id=f.run_id, payload=payload)])
    return True


def open_problems(db: Database, now: dt.datetime, limit: int = 20) -> list[dict[str, Any]]:
    """The open problems (see the module's docstring), latest failure first, at most ``limit``:
    ``{"project_id" (None: loose chats), "provider", "detail", "at", "first_at", "failures"}``.
    The detail is for administrators only."""
    query = (sa.select(_PROBLEMS).where(_PROBLEMS.c.last_at > now - OPEN_FOR)
             .order_by(_PROBLEMS.c.last_at.desc(), _PROBLEMS.c.id.desc()).limit(limit))
    with db.read() as s:
        conn = s.connection()
        rows = [r for r in conn.execute(query) if not _succeeded_since(conn, r.project_key, r.last_run_id)]
    return [{"project_id": r.project_key or None, "provider": r.provider, "detail": r.detail,
             "at": rfc3339(r.last_at), "first_at": rfc3339(r.first_at), "failures": r.failures} for r in rows]
