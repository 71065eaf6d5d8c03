"""The openai provider against a real streaming HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from app.agents.providers.openai import OpenAIConfig, OpenAIProvider
from app.core.ports import ProviderError, TurnRequest, TurnStream, Usage

DEADLINE = 20.0


class FakeLLM:
    """What the test server does and saw: one ``respond`` callable per test, requests recorded."""

    def __init__(self) -> None:
        self.url = ""
        self.requests: list[dict[str, object]] = []
        self.release = threading.Event()  # lets hanging handlers end at teardown
        self.respond: Callable[[BaseHTTPRequestHandler], None] = lambda handler: None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    llm: FakeLLM

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.llm.requests.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(body)})
        self.llm.respond(self)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet test output
        pass


def start_stream(handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()


def send_chunk(handler: BaseHTTPRequestHandler, data: str) -> None:
    raw = data.encode()
    handler.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
    handler.wfile.flush()


def delta(text: str) -> str:
    return "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]}) + "\n\n"


def end_stream(handler: BaseHTTPRequestHandler, done: bool = True) -> None:
    if done:
        send_chunk(handler, "data: [DONE]\n\n")
    handler.wfile.write(b"0\r\n\r\n")


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    fake = FakeLLM()
    handler = type("Handler", (_Handler,), {"llm": fake})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield fake
    fake.release.set()
    server.shutdown()
    server.server_close()


def _provider(llm: FakeLLM, **config: object) -> OpenAIProvider:
    return OpenAIProvider(OpenAIConfig(base_url=llm.url, model="test-model", **config))


def _run(provider: OpenAIProvider, request: TurnRequest, emit: Callable[[str], None],
         cancel: threading.Event | None = None) -> None:
    cancel = cancel or threading.Event()
    timer = threading.Timer(DEADLINE, cancel.set)
    timer.start()
    try:
        provider.run(request, emit, cancel)
    finally:
        timer.cancel()


def _request(text: str = "hello", history: tuple[tuple[str, str], ...] = ()) -> TurnRequest:
    return TurnRequest(chat_id=1, run_id=1, text=text, workspace=None, history=history)


def test_chunks_are_emitted_in_order_as_they_stream(llm: FakeLLM) -> None:
    first_seen = threading.Event()
    waited: list[bool] = []

    def respond(handler: BaseHTTPRequestHandler) -> None:
        start_stream(handler)
        send_chunk(handler, ": keep-alive\n\n")
        send_chunk(handler, "data: " + json.dumps({"choices": [{"delta": {"role": "assistant"}}]}) + "\n\n")
        send_chunk(handler, delta("Hel"))
        waited.append(first_seen.wait(DEADLINE))  # the rest only once the client has emitted "Hel"
        for piece in ("lo", ", wor", "ld"):
            send_chunk(handler, delta(piece))
        end_stream(handler)

    llm.respond = respond
    out: list[str] = []

    def emit(chunk: str) -> None:
        out.append(chunk)
        first_seen.set()

    _run(_provider(llm, api_key="sk-test"), _request("hi"), emit)
    assert out == ["Hel", "lo", ", wor", "ld"]
    assert waited == [True], "the first chunk was not emitted before the stream went on"
    sent = llm.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["Authorization"] == "Bearer sk-test"
    assert sent["body"] == {"model": "test-model", "stream": True, "stream_options": {"include_usage": True},
                            "messages": [{"role": "user", "content": "hi"}]}


def test_the_usage_chunk_after_the_finish_is_reported(llm: FakeLLM) -> None:
    finish = "data: " + json.dumps({"choices": [{"delta": {}, "finish_reason": "stop"}]}) + "\n\n"
    usage = "data: " + json.dumps({"choices": [], "usage": {
        "prompt_tokens": 31, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 11}}}) + "\n\n"

    def respond(handler: BaseHTTPRequestHandler) -> None:
        start_stream(handler)
        for data in (delta("fine"), finish, usage):
            send_chunk(handler, data)
        end_stream(handler)

    llm.respond = respond
    out: list[str] = []
    stream = TurnStream(out.append)
    _run(_provider(llm), _request(), stream)
    assert out == ["fine"]
    assert stream.usage == Usage(input_tokens=31, output_tokens=7, cached_tokens=11)


def test_a_server_that_sends_no_usage_after_the_finish_still_ends_the_turn(llm: FakeLLM) -> None:
    finish = "data: " + json.dumps({"choices": [{"delta": {}, "finish_reason": "stop"}]}) + "\n\n"

    def respond(handler: BaseHTTPRequestHandler) -> None:
        start_stream(handler)
        send_chunk(handler, delta("done"))
        send_chunk(handler, finish)
        llm.release.wait(DEADLINE)  # keeps the stream open, sends nothing more

    llm.respond = respond
    out: list[str] = []
    stream = TurnStream(out.append)
    started = time.monotonic()
    _run(_provider(llm), _request(), stream)
    assert out == ["done"] and stream.usage is None
    assert time.monotonic() - started < DEADLINE - 5


def test_the_server_receives_the_history_trimmed_to_the_budget(llm: FakeLLM) -> None:
    def respond(handler: BaseHTTPRequestHandler) -> None:
        start_stream(handler)
        send_chunk(handler, delta("ok"))
        end_stream(handler)

    llm.respond = respond
    history = tuple(("user" if i % 2 == 0 else "assistant", f"turn {i} " + "." * 992) for i in range(10))  # 999 each
    prompt = "p" * 100
    _run(_provider(llm, history_budget_chars=3500), _request(prompt, history), lambda chunk: None)
    messages = llm.requests[0]["body"]["messages"]
    # 100 + 3 turns of 999 fit in 3500, a 4th does not; the oldest of them is an assistant turn, so it is dropped
    assert [m["content"][:7] for m in messages[:-1]] == ["turn 8 ", "turn 9 "]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[-1] == {"role": "user", "content": prompt}
    assert "Authorization" not in llm.requests[0]["headers"]


@pytest.mark.parametrize(("status", "body", "excerpt"), [
    (401, json.dumps({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}),
     "Incorrect API key provided"),
    (500, "<html>" + "internal trouble " * 200 + "</html>", "<html>internal trouble"),
], ids=["401-json", "500-html"])
def test_http_errors_fail_with_status_and_a_short_excerpt(llm: FakeLLM, status: int, body: str, excerpt: str) -> None:
    def respond(handler: BaseHTTPRequestHandler) -> None:
        raw = body.encode()
        handler.send_response(status)
        handler.send_header("Content-Length", str(len(raw)))
        handler.end_headers()
        handler.wfile.write(raw)

    llm.respond = respond
    with pytest.raises(ProviderError) as caught:
        _run(_provider(llm), _request(), lambda chunk: None)
    message = str(caught.value)
    assert message.startswith(f"openai endpoint returned HTTP {status}: {excerpt}")
    assert len(message) < 400


def test_an_error_in_the_stream_fails_the_turn(llm: FakeLLM) -> None:
    def respond(handler: BaseHTTPRequestHandler) -> None:
        start_stream(handler)
        send_chunk(handler, delta("par"))
        send_chunk(handler, "data: " + json.dumps({"error": {"message": "model overloaded"}}) + "\n\n")
        end_stream(handler, done=False)

    llm.respond = respond
    out: list[str] = []
    with pytest.raises(ProviderError, match="model overloaded"):
        _run(_provider(llm), _request(), out.append)
    assert out == ["par"]


def test_a_stream_cut_short_fails_and_a_finish_reason_ends_it(llm: FakeLLM) -> None:
    finish = "data: " + json.dumps({"choices": [{"delta": {}, "finish_reason": "stop"}]}) + "\n\n"
    endings = iter([[], [finish]])

    def respond(handler: BaseHTTPRequestHandler) -> None:
        start_stream(handler)
        send_chunk(handler, delta("a"))
        for data in next(endings):
            send_chunk(handler, data)
        end_stream(handler, done=False)

    llm.respond = respond
    with pytest.raises(ProviderError, match="ended before the reply was finished"):
        _run(_provider(llm), _request(), lambda chunk: None)
    out: list[str] = []
    _run(_provider(llm), _request(), out.append)
    assert out == ["a"]


def test_a_plain_json_completion_is_accepted(llm: FakeLLM) -> None:
    def respond(handler: BaseHTTPRequestHandler) -> None:
        raw = json.dumps({"choices": [{"message": {"role": "assistant", "content": "whole reply"}}]}).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(raw)))
        handler.end_headers()
        handler.wfile.write(raw)

    llm.respond = respond
    out: list[str] = []
    _run(_provider(llm), _request(), out.append)
    assert out == ["whole reply"]


@pytest.mark.parametrize("stage", ["before-headers", "mid-stream"])
def test_cancel_releases_a_turn_on_a_server_that_hangs(llm: FakeLLM, stage: str) -> None:
    def respond(handler: BaseHTTPRequestHandler) -> None:
        if stage == "mid-stream":
            start_stream(handler)
            send_chunk(handler, delta("thinking"))
        llm.release.wait(60)

    llm.respond = respond
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    started = time.monotonic()
    with pytest.raises(ProviderError, match="^cancelled$"):
        _run(_provider(llm), _request(), lambda chunk: None, cancel)
    assert time.monotonic() - started < 2.0


def test_a_silent_server_times_out_without_a_cancel(llm: FakeLLM) -> None:
    llm.respond = lambda handler: llm.release.wait(60)
    started = time.monotonic()
    with pytest.raises(ProviderError, match="timed out"):
        _run(_provider(llm, read_timeout_seconds=0.3), _request(), lambda chunk: None)
    assert time.monotonic() - started < 2.0


def test_an_unreachable_server_fails_the_turn() -> None:
    provider = OpenAIProvider(OpenAIConfig(base_url="http://127.0.0.1:9/v1", model="m"))
    with pytest.raises(ProviderError, match="openai request to 127.0.0.1 failed"):
        _run(provider, _request(), lambda chunk: None)
