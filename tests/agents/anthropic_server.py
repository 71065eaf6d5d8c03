"""A scripted Anthropic Messages API for driving Claude Code offline (stdlib only).

The test queues replies (:meth:`AnthropicServer.play`); each *main* request (one that offers
tools: Claude Code's turn) takes the next one, so a conversation is a list of replies, including
``tool_use`` blocks the agent then runs. Side requests (no tools: a title, a model check) get a
short answer. Every request is recorded (method, path, headers, JSON body) for the test to assert
on, e.g. that an earlier turn is in the messages of a later one. A reply can report its own
usage and wait before answering (:func:`costing`); ``served`` counts the main replies streamed to
their end (a turn of tool calls is several: tool_use → the tool's result → the next reply …).

What it speaks, as Claude Code 2.1 uses it: ``POST /v1/messages`` (any query string) streamed as
server-sent events with all four usage fields in ``message_start`` (the ACP adapter's
``usage_update`` is NaN, sent as null, without the cache fields), or as one JSON message when the
request does not ask for a stream; ``HEAD /`` and any other ``GET`` answer 200;
``/v1/messages/count_tokens``. A reply can ``stall``: it streams its first words, then keeps the
stream open with SSE comments until :meth:`release` or the client goes away.
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

USAGE_IN, USAGE_CACHED, USAGE_OUT = 120, 30, 25  # per main request; the ACP prompt response sums them


@dataclasses.dataclass
class Reply:
    blocks: list[tuple[str, Any]]  # ("text", str) | ("thinking", str) | ("tool_use", (name, input))
    stall: bool = False
    usage: tuple[int, int, int] = (USAGE_IN, USAGE_OUT, USAGE_CACHED)  # input, output, cache reads
    delay: float = 0.0  # seconds the model "thinks" before it answers


def costing(reply: Reply, input_tokens: int, output_tokens: int, cached: int = 0, delay: float = 0.0) -> Reply:
    """``reply`` reporting this usage, answered after ``delay`` seconds."""
    return dataclasses.replace(reply, usage=(input_tokens, output_tokens, cached), delay=delay)


def text(*paragraphs: str) -> Reply:
    return Reply([("text", "\n\n".join(paragraphs))])


def bash(command: str, say: str = "Running it now.") -> Reply:
    return Reply([("text", say), ("tool_use", ("Bash", {"command": command, "description": "Run " + command[:40]}))])


def thinking_then(thought: str, reply: Reply) -> Reply:
    return dataclasses.replace(reply, blocks=[("thinking", thought), *reply.blocks])


def todo(*items: tuple[str, str]) -> Reply:
    todos = [{"content": c, "status": s, "activeForm": c} for c, s in items]
    return Reply([("text", "Planning."), ("tool_use", ("TodoWrite", {"todos": todos}))])


def stall(first_words: str = "Working on it") -> Reply:
    return Reply([("text", first_words)], stall=True)


def user_texts(body: dict[str, Any]) -> list[str]:
    """The user-visible text of every user message of a request (reminders Claude Code injects dropped)."""
    out = []
    for message in body.get("messages") or []:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in blocks:
            if block.get("type") == "text":
                cleaned = re.sub(r"<system-reminder>.*?</system-reminder>", "", block.get("text", ""), flags=re.S)
                if cleaned.strip():
                    out.append(cleaned.strip())
            elif block.get("type") == "tool_result":
                content = block.get("content")
                out.append(content if isinstance(content, str) else json.dumps(content))
    return out


class AnthropicServer:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.served = 0  # main replies streamed to their end (message_stop written)
        self._script: list[Reply] = []
        self._lock = threading.Lock()
        self.stalling = threading.Event()  # set while a stalled reply holds its stream open
        self._release = threading.Event()
        server = self
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), type("H", (_Handler,), {"server_state": server}))
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, name="anthropic-stub", daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def play(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    def release(self) -> None:
        self._release.set()

    def main_requests(self) -> list[dict[str, Any]]:
        """Bodies of the requests that carried tools (Claude Code's own turns), in order."""
        with self._lock:
            return [r["body"] for r in self.requests if r["method"] == "POST" and (r["body"] or {}).get("tools")]

    def next_reply(self, body: dict[str, Any]) -> Reply:
        if not body.get("tools"):
            system = json.dumps(body.get("system") or "")
            return text('{"title": "Scripted"}' if "title" in system.lower() else "ok")
        with self._lock:
            return self._script.pop(0) if self._script else text("(the script has no more replies)")

    def answered(self, body: dict[str, Any]) -> None:
        if body.get("tools"):
            with self._lock:
                self.served += 1

    def record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(entry)

    def wait_release(self, alive: Any) -> None:  # a callable that raises once the client is gone
        self.stalling.set()
        try:
            while not self._release.wait(0.2):
                alive()
        finally:
            self.stalling.clear()

    def close(self) -> None:
        self._release.set()
        self._httpd.shutdown()
        self._httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_state: AnthropicServer

    def log_message(self, *args: Any) -> None:
        pass

    def _body(self) -> dict[str, Any] | None:
        size = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(size) if size else b""
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return {"_raw": raw[:2000].decode("latin-1")}

    def _json(self, status: int, payload: object) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("request-id", "req_" + uuid.uuid4().hex[:16])
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_HEAD(self) -> None:  # noqa: N802
        self.server_state.record({"method": "HEAD", "path": self.path, "headers": dict(self.headers), "body": None})
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802
        self.server_state.record({"method": "GET", "path": self.path, "headers": dict(self.headers), "body": None})
        self._json(200, {"data": [], "has_more": False} if self.path.startswith("/v1/models") else {})

    def do_POST(self) -> None:  # noqa: N802
        body = self._body() or {}
        path = self.path.split("?")[0]
        self.server_state.record({"method": "POST", "path": self.path, "headers": dict(self.headers), "body": body})
        if path.endswith("/count_tokens"):
            return self._json(200, {"input_tokens": 100})
        if not path.endswith("/v1/messages"):
            return self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
        reply = self.server_state.next_reply(body)
        if reply.delay:
            time.sleep(reply.delay)
        if not body.get("stream"):
            self._json(200, _message(body, reply))
            return self.server_state.answered(body)
        if self._stream(body, reply):
            self.server_state.answered(body)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _event(self, name: str, payload: dict[str, Any]) -> None:
        self._chunk(f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode())

    def _stream(self, body: dict[str, Any], reply: Reply) -> bool:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        try:
            self._event("message_start", {"type": "message_start", "message": {
                "id": "msg_" + uuid.uuid4().hex[:20], "type": "message", "role": "assistant",
                "model": body.get("model"), "content": [], "stop_reason": None, "stop_sequence": None,
                "usage": {"input_tokens": reply.usage[0], "output_tokens": 1, "cache_creation_input_tokens": 0,
                          "cache_read_input_tokens": reply.usage[2]}}})
            stop = "end_turn"
            for index, (kind, value) in enumerate(reply.blocks):
                if kind == "tool_use":
                    stop = "tool_use"
                self._block(index, kind, value)
                if reply.stall and kind == "text":
                    self.server_state.wait_release(lambda: self._chunk(b": ping\n\n"))
            self._event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop,
                                                                                "stop_sequence": None},
                                          "usage": {"output_tokens": reply.usage[1]}})
            self._event("message_stop", {"type": "message_stop"})
            self._chunk(b"")
            return True
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            return False

    def _block(self, index: int, kind: str, value: Any) -> None:
        if kind == "tool_use":
            name, args = value
            self._event("content_block_start", {"type": "content_block_start", "index": index, "content_block": {
                "type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:20], "name": name, "input": {}}})
            raw = json.dumps(args)
            for start in range(0, len(raw), 40):
                self._event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
                    "type": "input_json_delta", "partial_json": raw[start:start + 40]}})
        else:
            block = {"type": "thinking", "thinking": "", "signature": ""} if kind == "thinking" else \
                {"type": "text", "text": ""}
            self._event("content_block_start", {"type": "content_block_start", "index": index,
                                                "content_block": block})
            for word in re.findall(r"\S+\s*|\s+", value) or [value]:
                delta = {"type": "thinking_delta", "thinking": word} if kind == "thinking" else \
                    {"type": "text_delta", "text": word}
                self._event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            if kind == "thinking":
                self._event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
                    "type": "signature_delta", "signature": "c2NyaXB0ZWQ="}})
        self._event("content_block_stop", {"type": "content_block_stop", "index": index})


def _message(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    content = []
    for kind, value in reply.blocks:
        if kind == "tool_use":
            content.append({"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:20], "name": value[0],
                            "input": value[1]})
        else:
            content.append({"type": "text", "text": value})
    stop = "tool_use" if any(kind == "tool_use" for kind, _ in reply.blocks) else "end_turn"
    return {"id": "msg_" + uuid.uuid4().hex[:20], "type": "message", "role": "assistant", "model": body.get("model"),
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": reply.usage[0], "output_tokens": reply.usage[1],
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": reply.usage[2]}}


def wait_for(predicate: Any, timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)
