"""No secret reaches a log line (app/core/redact.py), and no line is longer than the cap."""

from __future__ import annotations

import logging

import pytest

from app.core import redact


@pytest.mark.parametrize(("text", "secret"), [
    ("{'headers': {'cookie': 'chatcron_session=abcdef123; x=1'}}", "abcdef123"),
    ("(b'cookie', b'chatcron_session=zzzzzzzz')", "zzzzzzzz"),
    ("(b'cookie', b'chatcron_login=nonce-value-1')", "nonce-value-1"),
    ("{'chatcron_session': 'tok-in-a-dict'}", "tok-in-a-dict"),
    ("{'chatcron_device': '1.abc.def'}", "1.abc.def"),
    ("{'authorization': 'Bearer cct_secret_token_1'}", "cct_secret_token_1"),
    ("calling with Bearer cct_abcdefghijkl", "cct_abcdefghijkl"),
    ("GET /_event/?EIO=4&transport=websocket&token=tab-token-123 HTTP/1.1", "tab-token-123"),
    ("GET /auth/claim?ticket=tkt-98765 HTTP/1.1", "tkt-98765"),
    ('{"email": "a@example.com", "password": "hunter22"}', "hunter22"),
    ("{'SCHEDULE_API_TOKEN': 'agent-token-42'}", "agent-token-42"),
    ("state delta: {'schedule_state.secret': 'whsec_c2VjcmV0LXZhbHVlLTEyMzQ1Njc4'}", "c2VjcmV0LXZhbHVlLTEyMzQ1Njc4"),
    ("made whsec_QUJDREVGR0hJSktMTU5PUA== for task 3", "QUJDREVGR0hJSktMTU5PUA=="),
])
def test_secrets_are_redacted(text: str, secret: str) -> None:
    cleaned = redact.redact(text)
    assert secret not in cleaned and redact.MARK in cleaned


def test_a_long_line_is_cut_and_says_so() -> None:
    cleaned = redact.redact("Q" * 90_000)
    assert len(cleaned) < redact.MAX_CHARS + 100 and "88000 more characters not logged" in cleaned


def test_every_record_of_the_process_is_redacted_with_its_traceback(caplog: pytest.LogCaptureFixture,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    original = logging.getLogRecordFactory()
    monkeypatch.setattr(logging, "_logRecordFactory", original)  # restored after the test
    redact.install()
    redact.install()  # idempotent
    log = logging.getLogger("chatcron.test_redact")
    with caplog.at_level(logging.INFO):
        log.info("event %s", {"cookie": "chatcron_session=from-args-1"})
        try:
            raise ValueError("Failed to deserialize event data: {'cookie': 'chatcron_session=in-a-traceback'}")
        except ValueError:
            log.exception("boom")
    text = caplog.text + "".join(r.exc_text or "" for r in caplog.records)
    assert "from-args-1" not in text and "in-a-traceback" not in text
    assert "ValueError" in text  # the traceback itself is still there
