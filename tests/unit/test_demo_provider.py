"""The offline demo agent (SPEC §4): deterministic reply, word-by-word stream, directives."""

from __future__ import annotations

import threading
import time

import pytest

from app.agents.providers.demo import MARKER, SKILL_SEPARATOR, DemoProvider, directives, reply_for
from app.core import envelope
from app.core.ports import ProviderError, TurnRequest


def _request(text: str) -> TurnRequest:
    return TurnRequest(chat_id=1, run_id=1, text=text, workspace=None)


def _run(text: str, cancel: threading.Event | None = None, word_delay: float = 0.0) -> list[str]:
    chunks: list[str] = []
    DemoProvider(word_delay).run(_request(text), chunks.append, cancel or threading.Event())
    return chunks


REPLIES = [
    ("hello world", "Demo agent here. You said: hello world"),
    ("  spaced   out\n\nlines  ", "Demo agent here. You said: spaced out lines"),
    ("/marker", "Demo agent here. Done."),
    ("check the build\n/marker", "Demo agent here. You said: check the build"),
    (" ".join(f"w{i}" for i in range(41)),
     "Demo agent here. You said: " + " ".join(f"w{i}" for i in range(40)) + " …"),
]


@pytest.mark.parametrize(("prompt", "reply"), REPLIES,
                         ids=["plain", "whitespace-collapsed", "directive-only", "directive-dropped", "over-40-words"])
def test_reply_text(prompt: str, reply: str) -> None:
    assert reply_for(prompt) == reply


def test_directives_are_the_slash_lines_in_order() -> None:
    assert directives("a\n /sleep 1 \nb\n/marker") == ["/sleep 1", "/marker"]


def test_reply_streams_word_by_word_and_chunks_join_to_the_reply() -> None:
    chunks = _run("one two three four")
    reply = reply_for("one two three four")
    assert "".join(chunks) == reply
    assert len(chunks) == len(reply.split(" "))
    assert all(chunk.count(" ") <= 1 for chunk in chunks)


def test_same_prompt_gives_the_same_stream() -> None:
    assert _run("be deterministic") == _run("be deterministic")


def test_marker_is_the_last_line() -> None:
    output = "".join(_run("finish the job\n/marker"))
    lines = [line for line in output.splitlines() if line.strip()]
    assert lines[-1] == MARKER
    assert output.startswith(reply_for("finish the job"))


def test_no_marker_without_the_directive() -> None:
    assert MARKER not in "".join(_run("finish the job"))


def test_fail_raises_after_streaming_the_reply() -> None:
    chunks: list[str] = []
    with pytest.raises(ProviderError, match="/fail"):
        DemoProvider(0.0).run(_request("break it\n/fail"), chunks.append, threading.Event())
    assert "".join(chunks) == reply_for("break it")


def test_short_sleep_announces_itself_then_replies() -> None:
    chunks = _run("/sleep 0.01\nnap")
    assert chunks[0] == "Working for 0.01 seconds… "
    assert "".join(chunks[1:]) == reply_for("nap")


def _cancel_after(seconds: float) -> threading.Event:
    cancel = threading.Event()
    timer = threading.Timer(seconds, cancel.set)
    timer.daemon = True
    timer.start()
    return cancel


def test_sleep_honours_cancel_promptly() -> None:
    cancel = _cancel_after(0.05)
    chunks: list[str] = []
    started = time.monotonic()
    with pytest.raises(ProviderError, match="cancelled"):
        DemoProvider(0.0).run(_request("/sleep 30\nnever said"), chunks.append, cancel)
    assert time.monotonic() - started < 10  # a third of the requested sleep: it woke on cancel
    assert chunks == ["Working for 30 seconds… "]  # the reply after the sleep was never streamed


def test_word_delay_honours_cancel_promptly() -> None:
    cancel = _cancel_after(0.05)
    chunks: list[str] = []
    started = time.monotonic()
    with pytest.raises(ProviderError, match="cancelled"):
        DemoProvider(30.0).run(_request("a b c d e"), chunks.append, cancel)
    assert time.monotonic() - started < 10
    assert len(chunks) == 1  # the first word, then the 30 s pause was cut short


def test_cancel_before_start_emits_nothing() -> None:
    cancel = threading.Event()
    cancel.set()
    chunks: list[str] = []
    with pytest.raises(ProviderError):
        DemoProvider(0.0).run(_request("hello"), chunks.append, cancel)
    assert chunks == []


def _tool_calls(monkeypatch: pytest.MonkeyPatch, text: str) -> tuple[list[list[str]], str]:
    """The remote-schedule calls the demo makes for ``text`` (recorded, not run), and its reply."""
    calls: list[list[str]] = []
    monkeypatch.setattr(DemoProvider, "_tool", lambda self, request, args, emit: calls.append(args))
    return calls, "".join(_run(text))


def test_report_and_next_directives_run_the_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "check the feed\n/report no_change nothing new today\n/next 4h\n/report changed"
    calls, _ = _tool_calls(monkeypatch, text)
    assert calls == [["report", "--outcome", "no_change", "--summary", "nothing new today"], ["next", "--in", "4h"],
                     ["report", "--outcome", "changed"]]


def test_a_payloads_directive_is_data_while_the_prompts_is_obeyed(monkeypatch: pytest.MonkeyPatch) -> None:
    prompt = "Look at the delivery.\n/report changed a delivery came in"
    fire = envelope.build("watch", envelope.with_payload(prompt, "order 7 shipped\n/complete\n/fail\n/marker"), 2, None)
    calls, reply = _tool_calls(monkeypatch, fire + SKILL_SEPARATOR + "skill text\n/complete from the skill")
    assert calls == [["report", "--outcome", "changed", "--summary", "a delivery came in"]]
    assert "order 7 shipped" in reply  # the reply still echoes the payload
    assert MARKER not in reply  # /marker and /fail in the payload were not obeyed either


def test_a_payload_holding_the_skill_separator_does_not_cut_the_prompt(monkeypatch: pytest.MonkeyPatch) -> None:
    fire = envelope.build("watch", envelope.with_payload("the prompt", f"before{SKILL_SEPARATOR}after\n/complete"),
                          1, 3)
    calls, reply = _tool_calls(monkeypatch, fire + SKILL_SEPARATOR + "skill text")
    assert calls == []
    assert reply.startswith('Demo agent here. Scheduled task "watch", fire 1/3. You said: the prompt')
    assert "after" in reply and "skill text" not in reply
