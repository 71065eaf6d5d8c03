"""A scripted OpenAI Responses API server, so a real Codex (or any Responses client) runs offline.

It listens on 127.0.0.1 on a random port, answers ``POST <base>/responses`` with ``stream: true``
by playing the next :class:`Step` of its script as server-sent events, and records every request
it receives so a test can assert what the agent sent (the earlier turn in the history, the
``function_call_output`` of a tool it ran). The wire format is the one Codex's Responses client
accepts (``response.created`` → ``response.output_item.added``/``done`` with
``response.output_text.delta`` in between → ``response.completed`` with usage).

Codex sends the whole history on every request (``store: false``), so one agent turn that runs
a tool takes two steps: the ``function_call`` and, after the tool ran, the reply to its output.

    with ResponsesServer([step(shell("scripts/remote-schedule list")), step(Text("Done."))]) as srv:
        ... point the agent at srv.base_url ...
        assert srv.requests[1].function_outputs()

Python stdlib only; one thread per connection; a step can hold its stream open (``hang``) until
:meth:`ResponsesServer.release` or close, which is how a test makes an agent stuck mid-turn.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import threading
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SHELL_TOOL = "shell_command"  # codex's shell tool with features.unified_exec=false: {"command": str}


@dataclasses.dataclass(frozen=True)
class Usage:
    """Token counts reported in ``response.completed``."""

    input_tokens: int = 120
    output_tokens: int = 30
    cached_tokens: int = 0
    reasoning_tokens: int = 0

    def wire(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "input_tokens_details": {"cached_tokens": self.cached_tokens},
            "output_tokens": self.output_tokens,
            "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
            "total_tokens": self.input_tokens + self.output_tokens,
        }


@dataclasses.dataclass(frozen=True)
class Text:
    """An assistant message, streamed one word (with its trailing space) per delta."""

    text: str


@dataclasses.dataclass(frozen=True)
class Call:
    """A function call of a tool the request offered; ``call_id`` is generated when not given."""

    name: str
    arguments: dict[str, Any]
    call_id: str | None = None


def shell(command: str, call_id: str | None = None) -> Call:
    """Codex's shell tool running ``command`` (a string, run by ``bash -c`` in the session's cwd)."""
    return Call(SHELL_TOOL, {"command": command}, call_id)


@dataclasses.dataclass(frozen=True)
class Custom:
    """A call of a freeform ("custom") tool, e.g. codex's ``apply_patch`` whose input is the patch text."""

    name: str
    input: str
    call_id: str | None = None


@dataclasses.dataclass(frozen=True)
class Reasoning:
    """A reasoning item with one summary part (ACP agents show it as a thought)."""

    text: str


Item = Text | Call | Custom | Reasoning


@dataclasses.dataclass(frozen=True)
class Step:
    """The answer to one request.

    ``hang``: after ``response.created`` the stream stays open, sending nothing, until the server
    is released or closed. ``status`` other than 200 answers with an OpenAI-style error body
    instead of a stream. ``delta_delay``: seconds between text deltas (to watch streaming);
    ``delay``: seconds the model "thinks" before it answers.
    """

    items: tuple[Item, ...] = ()
    usage: Usage = Usage()
    hang: bool = False
    status: int = 200
    error: str = "scripted error"
    delta_delay: float = 0.0
    delay: float = 0.0


def step(*items: Item, usage: Usage | None = None, delta_delay: float = 0.0, delay: float = 0.0) -> Step:
    return Step(tuple(items), usage or Usage(), delta_delay=delta_delay, delay=delay)


def hang() -> Step:
    return Step(hang=True)


def fail(status: int, error: str) -> Step:
    return Step(status=status, error=error)


@dataclasses.dataclass(frozen=True)
class Request:
    """One request as received: its path, headers (lower-cased names) and JSON body."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any

    @property
    def input(self) -> list[dict[str, Any]]:
        items = self.body.get("input") if isinstance(self.body, dict) else None
        return items if isinstance(items, list) else []

    def tool_names(self) -> list[str]:
        tools = self.body.get("tools") if isinstance(self.body, dict) else None
        return [t.get("name") or t.get("type") for t in tools or [] if isinstance(t, dict)]

    def messages(self, role: str) -> list[str]:
        """The text of every message item of ``role``, in order."""
        return [_text_of(i) for i in self.input if i.get("type", "message") == "message" and i.get("role") == role]

    def user_texts(self) -> list[str]:
        """What users typed: Codex also sends ``<environment_context>``-style user messages; those are left out."""
        return [t for t in self.messages("user") if not t.lstrip().startswith("<")]

    def function_calls(self) -> list[Call]:
        calls = []
        for i in self.input:
            if i.get("type") == "function_call":
                try:
                    args = json.loads(i.get("arguments") or "{}")
                except ValueError:
                    args = {"_unparsed": i.get("arguments")}
                calls.append(Call(i.get("name", ""), args, i.get("call_id")))
        return calls

    def function_outputs(self) -> dict[str, str]:
        """call id → the tool's output as the agent reported it back."""
        out = {}
        for i in self.input:
            if i.get("type") == "function_call_output":
                value = i.get("output")
                out[i.get("call_id", "")] = value if isinstance(value, str) else json.dumps(value)
        return out

    def custom_outputs(self) -> dict[str, str]:
        """call id → the output of a freeform tool (``custom_tool_call_output``)."""
        kind = "custom_tool_call_output"
        return {i.get("call_id", ""): str(i.get("output")) for i in self.input if i.get("type") == kind}

    def last_item(self) -> dict[str, Any]:
        return self.input[-1] if self.input else {}


def _text_of(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


class ResponsesServer:
    """The server: ``start()``/``close()`` or a ``with`` block; ``base_url`` ends in ``/v1``."""

    EXHAUSTED = "(the scripted model has no step left for this request)"

    def __init__(self, script: Iterable[Step] = (), *, host: str = "127.0.0.1") -> None:
        self._script = list(script)
        self._requests: list[Request] = []
        self.problems: list[str] = []  # what went wrong on the server side; a test asserts it stays empty
        self.served = 0  # responses streamed to their end (response.completed written)
        self._cond = threading.Condition()
        self._released = threading.Event()
        self._ids = itertools.count(1)
        handler = type("Handler", (_Handler,), {"owner": self})
        self._http = ThreadingHTTPServer((host, 0), handler)
        self._http.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._http.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ResponsesServer:
        self._thread = threading.Thread(target=self._http.serve_forever, args=(0.05,), daemon=True,
                                        name=f"responses-server:{self.port}")
        self._thread.start()
        return self

    def close(self) -> None:
        self._released.set()
        if self._thread is not None:
            self._http.shutdown()
            self._thread.join(5)
        self._http.server_close()

    def __enter__(self) -> ResponsesServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- script and records ----------------------------------------------------------------------
    def add(self, *steps: Step) -> None:
        """Append steps (e.g. the next turn's) to the script."""
        with self._cond:
            self._script.extend(steps)

    @property
    def remaining(self) -> int:
        with self._cond:
            return len(self._script)

    @property
    def requests(self) -> list[Request]:
        """The model requests (``POST …/responses``) received so far, oldest first."""
        with self._cond:
            return [r for r in self._requests if r.method == "POST" and r.path.split("?")[0].endswith("/responses")]

    @property
    def all_requests(self) -> list[Request]:
        with self._cond:
            return list(self._requests)

    def wait_for_requests(self, count: int, timeout: float = 30.0) -> list[Request]:
        """Block until ``count`` model requests have arrived; AssertionError after ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.requests) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"the scripted model got {len(self.requests)} requests, expected {count}")
                self._cond.wait(left)
        return self.requests

    def release(self) -> None:
        """End every hanging step (their streams close without completing)."""
        self._released.set()

    def _record(self, request: Request) -> None:
        with self._cond:
            self._requests.append(request)
            self._cond.notify_all()

    def _next_step(self) -> Step | None:
        with self._cond:
            return self._script.pop(0) if self._script else None

    def _problem(self, text: str) -> None:
        with self._cond:
            self.problems.append(text)

    def _id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids)}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    owner: ResponsesServer

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet test output
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.owner._record(Request("GET", self.path, _lower(self.headers), None))
        if self.path.split("?")[0].rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": []})
        else:
            self._json(404, {"error": {"message": f"no such path {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:  # noqa: N802
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        request = Request("POST", self.path, _lower(self.headers), body)
        self.owner._record(request)
        if not self.path.split("?")[0].endswith("/responses"):
            return self._json(404, {"error": {"message": f"no such path {self.path}", "type": "not_found"}})
        if not isinstance(body, dict) or body.get("stream") is not True:
            self.owner._problem(f"a request without stream=true: {str(body)[:200]}")
            return self._json(400, {"error": {"message": "only streaming requests are scripted",
                                              "type": "invalid_request_error"}})
        scripted = self.owner._next_step()
        if scripted is None:
            self.owner._problem(f"no step left for request {len(self.owner.requests)}: "
                                f"last input item {json.dumps(request.last_item())[:300]}")
            scripted = step(Text(ResponsesServer.EXHAUSTED))
        if scripted.status != 200:
            return self._json(scripted.status, {"error": {"message": scripted.error, "type": "scripted_error"}})
        offered = request.tool_names()
        missing = [i.name for i in scripted.items if isinstance(i, Call | Custom) and i.name not in offered]
        if missing:
            self.owner._problem(f"the script calls {missing}, the request offered {request.tool_names()}")
        try:
            if scripted.delay:
                time.sleep(scripted.delay)
            self._stream(request, scripted)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the agent went away mid-stream (killed, cancelled): nothing to answer

    def _json(self, status: int, obj: object) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, request: Request, scripted: Step) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")  # the stream ends when the connection does
        self.end_headers()
        self.close_connection = True
        rid = self.owner._id("resp")
        model = request.body.get("model", "scripted")
        self._event({"type": "response.created", "response": {"id": rid, "model": model, "status": "in_progress"}})
        if scripted.hang:
            self.owner._released.wait()
            return
        for index, item in enumerate(scripted.items):
            if isinstance(item, Text):
                self._text(index, item, scripted.delta_delay)
            elif isinstance(item, Reasoning):
                self._reasoning(index, item)
            elif isinstance(item, Custom):
                self._custom(index, item)
            else:
                self._call(index, item)
        self._event({"type": "response.completed", "response": {
            "id": rid, "model": model, "status": "completed", "usage": scripted.usage.wire()}})
        with self.owner._cond:
            self.owner.served += 1

    def _event(self, obj: dict[str, Any]) -> None:
        self.wfile.write(f"event: {obj['type']}\ndata: {json.dumps(obj)}\n\n".encode())
        self.wfile.flush()

    def _text(self, index: int, item: Text, delay: float) -> None:
        mid = self.owner._id("msg")
        base = {"type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []}
        self._event({"type": "response.output_item.added", "output_index": index, "item": base})
        for word in re.findall(r"\s*\S+\s*|\s+", item.text):
            if delay:
                time.sleep(delay)  # scripted pacing so a reader can watch the text stream
            self._event({"type": "response.output_text.delta", "item_id": mid, "output_index": index,
                         "content_index": 0, "delta": word})
        done = dict(base, status="completed", content=[{"type": "output_text", "text": item.text, "annotations": []}])
        self._event({"type": "response.output_item.done", "output_index": index, "item": done})

    def _reasoning(self, index: int, item: Reasoning) -> None:
        rid = self.owner._id("rs")
        base = {"type": "reasoning", "id": rid, "summary": []}
        self._event({"type": "response.output_item.added", "output_index": index, "item": base})
        self._event({"type": "response.reasoning_summary_part.added", "item_id": rid, "output_index": index,
                     "summary_index": 0, "part": {"type": "summary_text", "text": ""}})
        self._event({"type": "response.reasoning_summary_text.delta", "item_id": rid, "output_index": index,
                     "summary_index": 0, "delta": item.text})
        done = dict(base, summary=[{"type": "summary_text", "text": item.text}])
        self._event({"type": "response.output_item.done", "output_index": index, "item": done})

    def _call(self, index: int, item: Call) -> None:
        wire = {"type": "function_call", "id": self.owner._id("fc"), "call_id": item.call_id or self.owner._id("call"),
                "name": item.name, "arguments": json.dumps(item.arguments), "status": "completed"}
        self._event({"type": "response.output_item.added", "output_index": index,
                     "item": dict(wire, arguments="", status="in_progress")})
        self._event({"type": "response.output_item.done", "output_index": index, "item": wire})

    def _custom(self, index: int, item: Custom) -> None:
        wire = {"type": "custom_tool_call", "id": self.owner._id("ctc"),
                "call_id": item.call_id or self.owner._id("call"), "name": item.name, "input": item.input,
                "status": "completed"}
        self._event({"type": "response.output_item.added", "output_index": index,
                     "item": dict(wire, input="", status="in_progress")})
        self._event({"type": "response.output_item.done", "output_index": index, "item": wire})


def _lower(headers: Any) -> dict[str, str]:  # an http.client.HTTPMessage
    return {k.lower(): v for k, v in headers.items()}
