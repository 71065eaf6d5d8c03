"""The attention tables (SPEC §13), owned by the store: approvals, attention_events, notification
channels and deliveries, read marks. `app/attention` reads and writes them; the store keeps them
consistent when a user is deleted or a run abandoned (docs/ARCHITECTURE.md "Rooms"). Instants are
aware UTC (``instant``); JSON is stored as text."""

from __future__ import annotations

import datetime as dt
import enum

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from app.core.models import NEVER_REUSED, instant


class AttentionKind(enum.StrEnum):
    """What happened that someone may want to know (the notification events of SPEC §13)."""

    FIRE_FINISHED = "fire.finished"
    FIRE_FAILED = "fire.failed"
    TASK_ERROR = "task.error"
    DRAFT_CREATED = "draft.created"
    APPROVAL_REQUESTED = "approval.requested"
    BUDGET_SPENT = "budget.spent"  # a project's daily budget is spent: its fires wait (SPEC §15; once a day)
    AGENT_START_FAILED = "agent.start_failed"  # for the project's owner and admins only: it holds admin detail


class ApprovalState(enum.StrEnum):
    PENDING = "pending"  # the turn waits for a person
    ALLOWED = "allowed"  # a person chose one of the agent's allow options
    REJECTED = "rejected"  # a person chose one of the agent's reject options
    EXPIRED = "expired"  # nobody answered within CHATCRON_APPROVAL_TIMEOUT_SECONDS: rejected
    CANCELLED = "cancelled"  # the turn ended (stopped, failed, its process died) before an answer


class Notify(enum.StrEnum):
    """Per task: which of its events are pushed to its owner's channels (the inbox shows all)."""

    ALWAYS = "always"
    FAILURES = "failures"
    NEVER = "never"


class ChannelKind(enum.StrEnum):
    WEBHOOK = "webhook"
    EMAIL = "email"


class DeliveryState(enum.StrEnum):
    PENDING = "pending"  # waits for its next attempt (next_attempt_at); claimable when its lease is over
    DELIVERED = "delivered"
    FAILED = "failed"  # gave up after the last retry


class Approval(SQLModel, table=True):
    """A permission request of an agent under ``tool_policy=ask``, waiting for a person."""

    __tablename__ = "approvals"
    __table_args__ = (sa.Index("ix_approvals_state_expires", "state", "expires_at"), NEVER_REUSED)

    id: int | None = Field(default=None, primary_key=True)
    project_id: int | None = Field(default=None, index=True)
    chat_id: int = Field(index=True)
    run_id: int = Field(index=True)
    task_id: int | None = None  # the scheduled task whose fire asks, None for an interactive turn
    requested_for: str = Field(sa_column=sa.Column(sa.String(320), nullable=False))  # the turn's owner (email)
    tool_call_id: str = ""
    title: str = ""
    input: str = "null"  # JSON: the tool's raw input as the agent sent it
    options: str = "[]"  # JSON: [{"option_id", "name", "kind"}] — the agent's own options
    state: str = Field(default=ApprovalState.PENDING.value)
    option_id: str | None = None  # the chosen option (None while pending, or when expired/cancelled)
    decided_by: str | None = Field(default=None, sa_column=sa.Column(sa.String(320), nullable=True))
    decided_at: dt.datetime | None = instant(nullable=True)
    created_at: dt.datetime = instant(nullable=False)
    expires_at: dt.datetime = instant(nullable=False)


class AttentionEvent(SQLModel, table=True):
    """One thing that happened: the inbox's feed and the outbox's source.

    Written in the same transaction as what it records (a fire's end, a draft, an approval), so it
    is never lost and never invented; delivery to channels happens later, elsewhere
    (``fanned_out_at`` marks the one deliverer that turned it into ``deliveries``; an event no
    channel may take is written with it set).
    """

    __tablename__ = "attention_events"
    __table_args__ = (sa.Index("ix_attention_fanout", "fanned_out_at", "id"),
                      sa.Index("ix_attention_chat", "chat_id", "id"), NEVER_REUSED)

    id: int | None = Field(default=None, primary_key=True)
    kind: str
    # Whom it concerns: the user's id when it was written (None: nobody then, or since deleted), and
    # their email as it was, for display. Deliveries follow the id, never the email.
    user_id: int | None = Field(default=None, foreign_key="users.id", index=True)
    user_email: str = Field(sa_column=sa.Column(sa.String(320), nullable=False))
    project_id: int | None = Field(default=None, index=True)
    chat_id: int
    task_id: int | None = None
    run_id: int | None = None
    task_run_id: int | None = None
    approval_id: int | None = None
    notify: bool = True  # False: the task's ``notify`` setting keeps it off the channels (inbox only)
    payload: str = "{}"  # JSON: what the inbox row and the webhook body show (task, run, reason...)
    created_at: dt.datetime = instant(nullable=False)
    fanned_out_at: dt.datetime | None = instant(nullable=True)


class NotificationChannel(SQLModel, table=True):
    """Where a user wants to be told: a webhook or an email address. Only its owner delivers to it."""

    __tablename__ = "notification_channels"
    __table_args__ = NEVER_REUSED

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="users.id", index=True)
    kind: str
    target: str = Field(sa_column=sa.Column(sa.String(2048), nullable=False))  # URL or email address
    secret: str | None = None  # webhook HMAC key; returned once, at creation
    events: str = "[]"  # JSON list of AttentionKind values; [] means every kind
    created_at: dt.datetime = instant(nullable=False)
    deleted_at: dt.datetime | None = instant(nullable=True)


class Delivery(SQLModel, table=True):
    """One event to one channel: the outbox row a deliverer claims, attempts and records."""

    __tablename__ = "deliveries"
    __table_args__ = (sa.UniqueConstraint("event_id", "channel_id", name="uq_delivery_event_channel"),
                      sa.Index("ix_deliveries_due", "state", "next_attempt_at"),
                      sa.Index("ix_deliveries_channel", "channel_id", "id"), NEVER_REUSED)

    id: int | None = Field(default=None, primary_key=True)
    event_id: int | None = None  # None: a "send test" delivery
    channel_id: int = Field(foreign_key="notification_channels.id")
    kind: str  # the event kind (or "test")
    body: str  # the exact JSON body sent (what the signature covers)
    state: str = Field(default=DeliveryState.PENDING.value)
    attempts: int = 0
    next_attempt_at: dt.datetime = instant(nullable=False)
    lease_owner: str | None = None  # the deliverer that holds it (host:pid:nonce)
    lease_until: dt.datetime | None = instant(nullable=True)
    last_status: int | None = None  # HTTP status or SMTP reply code of the last attempt
    last_error: str | None = None
    created_at: dt.datetime = instant(nullable=False)
    delivered_at: dt.datetime | None = instant(nullable=True)


class InboxRead(SQLModel, table=True):
    """A user's inbox read mark: attention events with ``id <= read_before`` are read."""

    __tablename__ = "inbox_reads"

    user_id: int = Field(foreign_key="users.id", primary_key=True)
    read_before: int = 0
    updated_at: dt.datetime = instant(nullable=False)


class ChatRead(SQLModel, table=True):
    """What a user last saw of a chat: the transcript event id at their last visit."""

    __tablename__ = "chat_reads"

    user_id: int = Field(foreign_key="users.id", primary_key=True)
    chat_id: int = Field(sa_column=sa.Column(sa.Integer, sa.ForeignKey("chats.id", ondelete="CASCADE"),
                                             primary_key=True))
    last_event_id: int = 0
    updated_at: dt.datetime = instant(nullable=False)
