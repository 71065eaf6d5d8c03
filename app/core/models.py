"""Tables of SPEC §2 (users, projects, chats, runs, events, tokens, grants) and login attempts.

All instants are stored as UTC and come back as aware UTC datetimes (:class:`UTCDateTime`).
"""

from __future__ import annotations

import datetime as dt
import enum

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from app.core.clock import UTC


class UTCDateTime(sa.types.TypeDecorator):
    """Aware UTC in Python, naive UTC in the column (same on SQLite and PostgreSQL)."""

    impl = sa.DateTime(timezone=False)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: sa.Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime written to a UTC column")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: dt.datetime | None, dialect: sa.Dialect) -> dt.datetime | None:
        return None if value is None else value.replace(tzinfo=UTC)


def instant(*, nullable: bool, index: bool = False) -> dt.datetime:
    """An aware-UTC timestamp column; every table says whether it may be empty."""
    return Field(default=None, sa_column=sa.Column(UTCDateTime(), nullable=nullable, index=index))


class RunSource(enum.StrEnum):
    """Who started a turn."""

    USER = "user"  # typed in the UI or posted through the user API
    SCHEDULE = "schedule"  # fired by a scheduled task


class RunStatus(enum.StrEnum):
    """Life of one agent turn."""

    RUNNING = "running"  # holds the chat's run lock, heartbeat renewed
    SUCCEEDED = "succeeded"  # provider finished normally
    FAILED = "failed"  # provider error, non-zero exit or timeout
    ABANDONED = "abandoned"  # its process died; found by an expired heartbeat


class EventType(enum.StrEnum):
    """Kinds of transcript entries."""

    PROMPT = "prompt"
    SCHEDULED_PROMPT = "scheduled_prompt"
    ASSISTANT_TEXT = "assistant_text"
    THOUGHT = "thought"  # the agent's reasoning, streamed like assistant_text (SPEC §11)
    TOOL = "tool"  # JSON {id, title, kind, status, output, ...}; a later event of the same id replaces it
    PLAN = "plan"  # JSON {"entries": [{content, status, priority}]}; the latest of a run is the plan
    STATUS = "status"  # a note of the product's in the transcript (e.g. a session that could not continue)
    ERROR = "error"
    RUN_STARTED = "run_started"
    RUN_FINISHED = "run_finished"


# Ids of users and of what they own are never given again after a delete (AUTOINCREMENT on SQLite;
# PostgreSQL's sequences never go back): a new row must not meet rows, marks or receivers that still
# name an old id (docs/SECURITY.md, "What delete-user leaves").
NEVER_REUSED = {"sqlite_autoincrement": True}


class User(SQLModel, table=True):
    __tablename__ = "users"
    __table_args__ = NEVER_REUSED
    id: int | None = Field(default=None, primary_key=True)
    email: str = Field(sa_column=sa.Column(sa.String(320), nullable=False, unique=True))
    password_hash: str
    is_admin: bool = False
    created_at: dt.datetime = instant(nullable=False)


class Project(SQLModel, table=True):
    __tablename__ = "projects"
    __table_args__ = NEVER_REUSED
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=120)
    owner_id: int = Field(foreign_key="users.id", index=True)
    provider: str | None = None  # None: the server default (CHATCRON_PROVIDER)
    provider_settings: str = "{}"  # JSON object, provider-specific
    created_at: dt.datetime = instant(nullable=False)
    # SPEC §15: what the project's fires may spend per UTC day (None: no limit), and the day its
    # "budget spent" notice was last given (once a day)
    daily_token_budget: int | None = Field(default=None, sa_column=sa.Column(sa.BigInteger, nullable=True))
    daily_cost_budget_usd: float | None = Field(default=None, sa_column=sa.Column(sa.Float, nullable=True))
    budget_noticed_on: dt.date | None = Field(default=None, sa_column=sa.Column(sa.Date, nullable=True))


class Role(enum.StrEnum):
    """A member's role in a project (SPEC §18): owners also change its settings and members."""

    OWNER = "owner"
    MEMBER = "member"


class Membership(SQLModel, table=True):
    __tablename__ = "memberships"
    # the access mark's owners sum reads this index alone (app.core.access)
    __table_args__ = (sa.Index("ix_memberships_owners", "role", "user_id", "project_id"),)
    user_id: int = Field(foreign_key="users.id", primary_key=True)
    project_id: int = Field(foreign_key="projects.id", primary_key=True, index=True)
    created_at: dt.datetime = instant(nullable=False)
    role: str = Field(default=Role.MEMBER.value, sa_column=sa.Column(
        sa.String(8), nullable=False, server_default=Role.MEMBER.value))


class ProjectAudit(SQLModel, table=True):
    """One change of a project's settings or members (SPEC §18): who, when, which keys — never a
    secret's value. The actor's email is kept as written: the record outlives the account."""

    __tablename__ = "project_audit"
    __table_args__ = NEVER_REUSED
    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="projects.id", index=True)
    actor_email: str = Field(max_length=320)
    at: dt.datetime = instant(nullable=False)
    action: str = Field(max_length=40)  # settings | member.add | member.role | member.remove
    detail: str = "{}"  # JSON: the keys changed, or the member and role


class Chat(SQLModel, table=True):
    __tablename__ = "chats"
    __table_args__ = NEVER_REUSED
    id: int | None = Field(default=None, primary_key=True)
    project_id: int | None = Field(default=None, foreign_key="projects.id", index=True)
    owner_id: int = Field(foreign_key="users.id", index=True)
    title: str = Field(default="New chat", max_length=200)
    auto_title: bool = False  # True until the first message (or a rename) names the chat
    skills: str = "[]"  # JSON list of skill names
    provider_session_id: str | None = None
    created_at: dt.datetime = instant(nullable=False)
    updated_at: dt.datetime = instant(nullable=False)


class Run(SQLModel, table=True):
    __tablename__ = "runs"
    __table_args__ = (
        # The run lock: at most one running run per chat, enforced by the database itself.
        sa.Index(
            "uq_run_one_running_per_chat",
            "chat_id",
            unique=True,
            sqlite_where=sa.text("status = 'running'"),
            postgresql_where=sa.text("status = 'running'"),
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    chat_id: int = Field(foreign_key="chats.id", index=True)
    source: str = RunSource.USER.value
    status: str = Field(default=RunStatus.RUNNING.value, index=True)
    prompt: str = ""
    output: str = ""
    error: str | None = None
    usage: str | None = None  # JSON {input_tokens, output_tokens, cached_tokens, cost_usd} as the agent reported
    task_id: int | None = Field(default=None, index=True)
    task_run_id: int | None = None
    instance: str = ""  # process that executes it (host:pid:nonce), for logs
    # A user asked to stop the turn (their email); the process running it notices and ends it failed.
    stop_requested_by: str | None = Field(default=None, sa_column=sa.Column(sa.String(320), nullable=True))
    started_at: dt.datetime = instant(nullable=False)
    heartbeat_at: dt.datetime = instant(nullable=False, index=True)
    finished_at: dt.datetime | None = instant(nullable=True)


class Event(SQLModel, table=True):
    __tablename__ = "events"
    __table_args__ = (sa.Index("ix_event_chat_cursor", "chat_id", "id"),)

    id: int | None = Field(default=None, primary_key=True)
    chat_id: int = Field(foreign_key="chats.id")
    run_id: int | None = Field(default=None, foreign_key="runs.id")
    type: str
    text: str = ""
    created_at: dt.datetime = instant(nullable=False)


class ApiToken(SQLModel, table=True):
    """Personal API token; only its SHA-256 is stored."""

    __tablename__ = "api_tokens"
    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="users.id", index=True)
    token_hash: str = Field(sa_column=sa.Column(sa.String(64), nullable=False, unique=True))
    name: str = ""
    created_at: dt.datetime = instant(nullable=False)
    expires_at: dt.datetime | None = instant(nullable=True)  # None: until revoked
    revoked_at: dt.datetime | None = instant(nullable=True)


class SessionKind(enum.StrEnum):
    """What a web_sessions row is."""

    SESSION = "session"  # a logged-in browser; the cookie holds the token
    TICKET = "ticket"  # single-use, seconds-long proof of a login, exchanged for a cookie over HTTP


class WebSession(SQLModel, table=True):
    """Browser login; the cookie carries the token, the table only its SHA-256."""

    __tablename__ = "web_sessions"
    id: int | None = Field(default=None, primary_key=True)
    kind: str = SessionKind.SESSION.value
    user_id: int = Field(foreign_key="users.id", index=True)
    token_hash: str = Field(sa_column=sa.Column(sa.String(64), nullable=False, unique=True))
    # tickets only: SHA-256 of the pre-login cookie of the browser that logged in (auth.LOGIN_COOKIE)
    binding_hash: str | None = Field(default=None, sa_column=sa.Column(sa.String(64), nullable=True))
    created_at: dt.datetime = instant(nullable=False)
    expires_at: dt.datetime = instant(nullable=False)


class Grant(SQLModel, table=True):
    """Capability token handed to an agent turn (SPEC §6); only its SHA-256 is stored."""

    __tablename__ = "grants"
    id: int | None = Field(default=None, primary_key=True)
    token_hash: str = Field(sa_column=sa.Column(sa.String(64), nullable=False, unique=True))
    scope: str
    owner_id: int = Field(foreign_key="users.id")
    chat_id: int = Field(foreign_key="chats.id", index=True)
    project_id: int = Field(foreign_key="projects.id")
    task_id: int | None = None
    task_run_id: int | None = None  # the fire's claim (a TaskRun id)
    created_at: dt.datetime = instant(nullable=False)
    expires_at: dt.datetime = instant(nullable=False)
    revoked_at: dt.datetime | None = instant(nullable=True)


class LoginAttempt(SQLModel, table=True):
    """One password check at the login form, counted in a sliding window to stop guessing.

    Rows older than the window are pruned; ``email`` is whatever was typed (lowercased), known or not.
    """

    __tablename__ = "login_attempts"
    __table_args__ = (
        sa.Index("ix_login_attempts_email_at", "email", "at"),
        sa.Index("ix_login_attempts_address_at", "address", "at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    email: str = Field(sa_column=sa.Column(sa.String(320), nullable=False))
    # client IP ("" when unknown); a trusted attempt's device key instead ("device:<digest>", app/core/devices.py)
    address: str = Field(sa_column=sa.Column(sa.String(64), nullable=False))
    succeeded: bool = False  # False until the password has been verified (a check in flight counts as failed)
    at: dt.datetime = instant(nullable=False)


class UsageDay(SQLModel, table=True):
    """What turns spent, per UTC day, project and task (SPEC §15): a ledger added to in the
    transaction that ends each turn, so spend outlives a deleted chat or run. ``project_id`` 0: a
    loose chat; ``task_id`` 0: a person's turns (not a fire)."""

    __tablename__ = "usage_days"
    day: dt.date = Field(sa_column=sa.Column(sa.Date, primary_key=True))
    project_id: int = Field(default=0, sa_column=sa.Column(sa.Integer, primary_key=True))
    task_id: int = Field(default=0, sa_column=sa.Column(sa.Integer, primary_key=True, index=True))
    tokens: int = Field(default=0, sa_column=sa.Column(sa.BigInteger, nullable=False, server_default="0"))
    cost_usd: float = Field(default=0.0, sa_column=sa.Column(sa.Float, nullable=False, server_default="0"))
    turns: int = Field(default=0, sa_column=sa.Column(sa.Integer, nullable=False, server_default="0"))
