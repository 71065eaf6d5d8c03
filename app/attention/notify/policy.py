"""Pure rules of notification delivery: no database, no network, no clock of their own.

A delivery is attempted at most ``len(backoff) + 1`` times: after a failed attempt ``n`` (1-based)
the next one waits ``backoff[n - 1]`` seconds; when no wait is left it is ``failed`` for good.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import hashlib
import hmac
import json
from collections.abc import Sequence
from typing import Any

from app.core.attention_tables import AttentionKind, DeliveryState

BACKOFF_SECONDS: tuple[float, ...] = (10, 30, 120, 600, 3600)  # waits after attempts 1..5; the 6th is the last
TEST_KIND = "test"  # a "send test" delivery's kind (no attention event behind it)
SIGNATURE_HEADER = "X-Chatcron-Signature"
STANDARD_PREFIX = "whsec_"  # a Standard Webhooks secret: the key's base64 follows
USER_AGENT = "chatcron"
ERROR_MAX = 500  # characters of an attempt's error kept in last_error

_TITLES = {AttentionKind.FIRE_FINISHED.value: "Fire finished", AttentionKind.FIRE_FAILED.value: "Fire failed",
           AttentionKind.TASK_ERROR.value: "Task stopped with an error",
           AttentionKind.DRAFT_CREATED.value: "Draft waiting to be armed",
           AttentionKind.APPROVAL_REQUESTED.value: "Approval requested",
           AttentionKind.AGENT_START_FAILED.value: "The agent could not start",
           AttentionKind.BUDGET_SPENT.value: "Project budget spent: fires wait until tomorrow (UTC)",
           TEST_KIND: "Test notification"}


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What one attempt came to: ``ok``, and the HTTP status / SMTP code and error when known."""

    ok: bool
    status: int | None = None
    error: str | None = None
    final: bool = False  # no retry can help (the channel is gone): failed at once


@dataclasses.dataclass(frozen=True)
class Next:
    """The delivery's columns after an attempt (its lease is released with them)."""

    state: DeliveryState
    attempts: int
    next_attempt_at: dt.datetime
    last_status: int | None
    last_error: str | None
    delivered_at: dt.datetime | None

    def columns(self) -> dict[str, Any]:
        return {"state": self.state.value, "attempts": self.attempts, "next_attempt_at": self.next_attempt_at,
                "last_status": self.last_status, "last_error": self.last_error, "delivered_at": self.delivered_at,
                "lease_owner": None, "lease_until": None}


def retry_delay(attempts: int, backoff: Sequence[float] = BACKOFF_SECONDS) -> float | None:
    """Seconds to wait after failed attempt number ``attempts`` (1-based); None: give up."""
    if attempts < 1 or attempts > len(backoff):
        return None
    return float(backoff[attempts - 1])


def after_attempt(attempts_before: int, outcome: Outcome, now: dt.datetime,
                  backoff: Sequence[float] = BACKOFF_SECONDS) -> Next:
    """The delivery's next state once an attempt (its ``attempts_before + 1``-th) ended with ``outcome``."""
    attempts = attempts_before + 1
    error = None if outcome.ok else (outcome.error or "failed")[:ERROR_MAX]
    if outcome.ok:
        return Next(DeliveryState.DELIVERED, attempts, now, outcome.status, None, now)
    delay = None if outcome.final else retry_delay(attempts, backoff)
    if delay is None:
        return Next(DeliveryState.FAILED, attempts, now, outcome.status, error, None)
    return Next(DeliveryState.PENDING, attempts, now + dt.timedelta(seconds=delay), outcome.status, error, None)


def wants(events: Sequence[str], kind: str) -> bool:
    """Whether a channel subscribed to ``events`` (empty: every kind) takes an event of ``kind``.
    A spent budget is of the ``task.error`` class (SPEC §15): a channel for task errors takes it too."""
    return not events or kind in events or (kind == AttentionKind.BUDGET_SPENT.value
                                            and AttentionKind.TASK_ERROR.value in events)


def parse_events(raw: str | None) -> list[str]:
    """A channel's stored ``events`` column as a list (a damaged value counts as every kind)."""
    try:
        value = json.loads(raw or "[]")
    except ValueError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


def sign(secret: str, body: bytes) -> str:
    """The ``X-Chatcron-Signature`` value: ``sha256=`` + hex HMAC-SHA256 of the exact body bytes."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(secret: str, body: bytes, header: str) -> bool:
    """What a receiver does: recompute the signature and compare in constant time."""
    return hmac.compare_digest(sign(secret, body), header or "")


def standard_key(secret: str) -> bytes:
    """The Standard Webhooks key of a channel secret: a ``whsec_<base64>`` secret is the bytes its
    base64 stands for (the spec's form); any other — chatcron's channel secrets are 64 hex
    characters — is its own UTF-8 bytes, which a receiver passes as bytes:
    ``standardwebhooks.Webhook(secret.encode())`` (or ``Webhook("whsec_" + base64(secret))``)."""
    if secret.startswith(STANDARD_PREFIX):
        return base64.b64decode(secret[len(STANDARD_PREFIX):] + "==")
    return secret.encode()


def standard_signature(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value: ``v1,`` + base64 HMAC-SHA256 of ``"{id}.{timestamp}.{body}"``."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(standard_key(secret), signed, hashlib.sha256).digest()).decode()


def webhook_headers(job_id: int, kind: str, secret: str, body: bytes, timestamp: int) -> dict[str, str]:
    """Every header of a webhook POST but the transport's: chatcron's own, and the Standard Webhooks
    ones — ``webhook-id`` is the delivery's id (the same on every retry: a receiver refuses a
    replay by it), ``webhook-timestamp`` the attempt's Unix time in whole seconds."""
    msg_id = str(job_id)
    return {"Content-Type": "application/json", "User-Agent": USER_AGENT, "X-Chatcron-Event": kind,
            "X-Chatcron-Delivery": msg_id, SIGNATURE_HEADER: sign(secret, body),
            "webhook-id": msg_id, "webhook-timestamp": str(timestamp),
            "webhook-signature": standard_signature(secret, msg_id, timestamp, body)}


def webhook_body(kind: str, payload: dict[str, Any], *, chat_id: int | None, at: str | None,
                 usage: dict[str, Any] | None = None) -> str:
    """The JSON every channel of an event gets (SPEC §13): event, task, run, chat_id, at, and for
    ``approval.requested`` the approval. ``usage`` (the run's token counts) joins the run."""
    body: dict[str, Any] = {"event": kind, "task": payload.get("task"), "run": payload.get("run"),
                            "chat_id": chat_id, "at": at}
    if body["run"] is not None and usage is not None:
        body["run"] = {**body["run"], "usage": usage}
    if kind == AttentionKind.APPROVAL_REQUESTED.value or "approval" in payload:
        body["approval"] = payload.get("approval")
    if kind == AttentionKind.BUDGET_SPENT.value:  # why, and when the project's fires go on
        body["budget"] = {"reason": payload.get("reason"), "until": payload.get("until")}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)


def test_body(channel_id: int, at: str | None) -> str:
    """The body of a "send test" delivery: shaped like an event, with no task or run."""
    return json.dumps({"event": TEST_KIND, "task": None, "run": None, "chat_id": None, "at": at,
                       "channel_id": channel_id}, sort_keys=True, separators=(",", ":"))


def title(kind: str) -> str:
    return _TITLES.get(kind, kind)


def email_text(body: str) -> tuple[str, str]:
    """Subject and plain-text body of the email for a webhook body (the same facts, for people)."""
    data = json.loads(body)
    kind = data.get("event", "")
    task = data.get("task") or {}
    run = data.get("run") or {}
    name = task.get("name")
    subject = f"[chatcron] {title(kind)}" + (f": {name}" if name else "")
    lines = [f"{title(kind)}.", ""]
    if name:
        lines.append(f"Task: {name} (id {task.get('id')}, status {task.get('status')})")
    if run:
        lines.append(f"Outcome: {run.get('outcome')}")
        if run.get("error"):
            lines.append(f"Error: {run['error']}")
        if run.get("first_line"):
            lines.append(f"Reply: {run['first_line']}")
    budget = data.get("budget")
    if task.get("last_error") and not run and not budget:
        lines.append(f"Error: {task['last_error']}")
    if budget:
        lines.append(f"Why: {budget.get('reason')}; the project's fires wait until {budget.get('until')}")
    approval = data.get("approval")
    if approval:
        lines.append(f"Tool: {approval.get('title')}")
    if data.get("chat_id") is not None:
        lines.append(f"Chat: {data['chat_id']}")
    lines += [f"At: {data.get('at')}", "", f"Event: {kind}"]
    return subject, "\n".join(lines) + "\n"
