"""The pure rules of notification delivery (app/attention/notify/policy.py) and the task notify setting."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json

import pytest

from app.attention.notify import policy
from app.core.attention_events import pushes
from app.core.attention_tables import AttentionKind, DeliveryState
from app.core.config import ConfigError, load_settings, parse_smtp_url

T0 = dt.datetime(2026, 1, 5, 9, 0, tzinfo=dt.UTC)
FAIL = policy.Outcome(False, 503, "HTTP 503 Service Unavailable")


def test_a_success_is_delivered_at_once_whatever_came_before() -> None:
    after = policy.after_attempt(3, policy.Outcome(True, 204), T0)
    assert (after.state, after.attempts, after.last_status, after.last_error, after.delivered_at) == \
        (DeliveryState.DELIVERED, 4, 204, None, T0)
    assert after.columns()["lease_owner"] is None and after.columns()["lease_until"] is None


@pytest.mark.parametrize(("attempts_before", "wait"), [(0, 10), (1, 30), (2, 120), (3, 600), (4, 3600)],
                         ids=["1st-10s", "2nd-30s", "3rd-2min", "4th-10min", "5th-1h"])
def test_a_failure_waits_longer_each_time(attempts_before: int, wait: int) -> None:
    after = policy.after_attempt(attempts_before, FAIL, T0)
    assert after.state == DeliveryState.PENDING
    assert after.next_attempt_at - T0 == dt.timedelta(seconds=wait)
    assert (after.attempts, after.last_status, after.last_error) == (attempts_before + 1, 503, FAIL.error)
    assert after.delivered_at is None


def test_the_sixth_failure_gives_up() -> None:
    after = policy.after_attempt(5, FAIL, T0)
    assert (after.state, after.attempts, after.last_error) == (DeliveryState.FAILED, 6, FAIL.error)
    assert policy.retry_delay(6) is None and policy.retry_delay(0) is None


def test_a_final_failure_is_not_retried_and_errors_are_bounded() -> None:
    after = policy.after_attempt(0, policy.Outcome(False, None, "x" * 5000, final=True), T0)
    assert after.state == DeliveryState.FAILED and len(after.last_error) == policy.ERROR_MAX


def test_a_custom_backoff_is_followed() -> None:
    assert policy.after_attempt(0, FAIL, T0, backoff=(0.1,)).next_attempt_at == T0 + dt.timedelta(seconds=0.1)
    assert policy.after_attempt(1, FAIL, T0, backoff=(0.1,)).state == DeliveryState.FAILED


def test_the_signature_is_what_a_receiver_computes() -> None:
    secret, body = "s3cret", b'{"event":"fire.failed"}'
    header = policy.sign(secret, body)
    receiver = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    assert header == receiver
    assert policy.verify(secret, body, header)
    assert not policy.verify(secret, body + b" ", header) and not policy.verify("other", body, header)


def test_channels_take_the_kinds_they_subscribed_to() -> None:
    assert policy.wants([], "fire.finished")
    assert policy.wants(["fire.failed"], "fire.failed") and not policy.wants(["fire.failed"], "fire.finished")
    assert policy.parse_events('["task.error"]') == ["task.error"]
    assert policy.parse_events("not json") == [] and policy.parse_events('{"a": 1}') == []


def test_the_webhook_body_has_the_documented_shape() -> None:
    payload = {"task": {"id": 7, "name": "Nightly"}, "run": {"id": 3, "outcome": "failed", "error": "boom"}}
    body = json.loads(policy.webhook_body("fire.failed", payload, chat_id=5, at="2026-01-05T09:00:00.000Z",
                                          usage={"input_tokens": 10, "output_tokens": 2}))
    assert body == {"event": "fire.failed", "task": {"id": 7, "name": "Nightly"},
                    "run": {"id": 3, "outcome": "failed", "error": "boom",
                            "usage": {"input_tokens": 10, "output_tokens": 2}},
                    "chat_id": 5, "at": "2026-01-05T09:00:00.000Z"}


def test_an_approval_body_carries_the_approval() -> None:
    payload = {"approval": {"id": 4, "title": "Run rm"}}
    body = json.loads(policy.webhook_body("approval.requested", payload, chat_id=5, at=None))
    assert body["approval"] == {"id": 4, "title": "Run rm"} and body["task"] is None and body["run"] is None


def test_the_email_says_what_happened_in_its_subject() -> None:
    payload = {"task": {"id": 7, "name": "Nightly", "status": "active"},
               "run": {"outcome": "failed", "error": "boom", "first_line": "I could not"}}
    subject, text = policy.email_text(policy.webhook_body("fire.failed", payload, chat_id=5, at="now"))
    assert subject == "[chatcron] Fire failed: Nightly"
    assert "Error: boom" in text and "Reply: I could not" in text and "Chat: 5" in text
    assert policy.email_text(policy.test_body(3, "now"))[0] == "[chatcron] Test notification"


@pytest.mark.parametrize(("notify", "kind", "pushed"), [
    ("always", AttentionKind.FIRE_FINISHED, True), ("always", AttentionKind.FIRE_FAILED, True),
    ("failures", AttentionKind.FIRE_FINISHED, False), ("failures", AttentionKind.FIRE_FAILED, True),
    ("failures", AttentionKind.TASK_ERROR, True), (None, AttentionKind.FIRE_FINISHED, False),
    ("never", AttentionKind.FIRE_FAILED, False), ("never", AttentionKind.TASK_ERROR, False),
    ("never", AttentionKind.DRAFT_CREATED, True), ("never", AttentionKind.APPROVAL_REQUESTED, True),
])
def test_the_task_notify_setting_decides_what_is_pushed(notify: str | None, kind: AttentionKind,
                                                        pushed: bool) -> None:
    assert pushes(notify, kind) is pushed


def test_the_smtp_url_is_parsed_and_checked_at_start() -> None:
    server = parse_smtp_url("X", "smtp://alice%40example.com:p%3Ass@mail.example.com:2525")
    assert (server.host, server.port, server.user, server.password, server.ssl) == \
        ("mail.example.com", 2525, "alice@example.com", "p:ss", False)
    assert parse_smtp_url("X", "smtps://mail.example.com").port == 465
    assert parse_smtp_url("X", "smtp://mail.example.com").port == 25
    settings = load_settings({"CHATCRON_SMTP_URL": "smtp://127.0.0.1:2525"})
    assert settings.smtp is not None and settings.smtp.port == 2525 and settings.smtp_from == "chatcron@localhost"
    assert load_settings({}).smtp is None
    for bad in ("http://mail.example.com", "smtp://", "smtp://host:99999"):
        with pytest.raises(ConfigError, match="CHATCRON_SMTP_URL"):
            load_settings({"CHATCRON_SMTP_URL": bad})
    with pytest.raises(ConfigError, match="CHATCRON_SMTP_FROM"):
        load_settings({"CHATCRON_SMTP_FROM": "not an address"})
