"""The ``openai`` provider: any OpenAI-compatible chat-completions endpoint, streamed.

One turn is one ``POST {base_url}/chat/completions`` with ``{"model", "messages", "stream": true}``
(and ``Authorization: Bearer <key>`` when a key is set) and ``stream_options.include_usage``, so
the turn's token counts come back in a last chunk (recorded as the run's usage). The reply
arrives as server-sent events; each ``data:`` payload's ``choices[0].delta.content`` is emitted
as it comes, and ``data: [DONE]`` (or a chunk carrying a ``finish_reason``, then the usage chunk
if one follows within a few seconds) ends the turn. A server that answers with a plain JSON
completion instead of a stream is accepted too.

History budget (``history_budget_chars``, default 24,000 characters of message text):
the current prompt is always sent, whole, and counts against the budget; earlier turns are then
added newest first while the running total stays within the budget, stopping at the first turn
that does not fit (older, smaller turns are not squeezed in, so the kept history is contiguous);
finally kept turns are dropped from the old end until the first one is a user turn, since many
chat templates require the conversation to open with the user. A prompt over budget on its own
is sent alone.

Failures (ProviderError): HTTP status >= 400 (message: the status and a short excerpt of the
body), an ``error`` object inside the stream, a stream that ends before it finished, no answer
within the read timeout (60 s per socket read), and cancel — which shuts the socket down from a
watcher thread, so even a server that never answers releases the turn at once.
"""

from __future__ import annotations

import dataclasses
import http.client
import json
import socket
import threading
import urllib.parse
from collections.abc import Iterable, Mapping

from app.core.ports import Emit, ProviderError, TurnRequest, TurnStream, Usage, stream_of

DEFAULT_HISTORY_BUDGET_CHARS = 24_000
READ_TIMEOUT_SECONDS = 60.0
USAGE_WAIT_SECONDS = 5.0  # after the finish, how long the usage chunk (or [DONE]) may take
CONNECT_TIMEOUT_SECONDS = 10.0
MAX_EVENT_LINE_BYTES = 1024 * 1024
MAX_JSON_BYTES = 8 * 1024 * 1024
ERROR_EXCERPT_CHARS = 300
_ROLES = ("system", "user", "assistant")
_DONE = "[DONE]"


def build_messages(history: Iterable[tuple[str, str]], prompt: str, budget_chars: int) -> list[dict[str, str]]:
    """The messages to send: as much recent history as the budget allows, then the prompt.

    ``history`` is (role, text) pairs oldest first; the rule is in the module docstring.
    """
    used = len(prompt)
    kept: list[dict[str, str]] = []
    for role, text in reversed(tuple(history)):
        used += len(text)
        if used > budget_chars:
            break
        kept.append({"role": role if role in _ROLES else "user", "content": text})
    kept.reverse()
    while kept and kept[0]["role"] == "assistant":
        kept.pop(0)
    return [*kept, {"role": "user", "content": prompt}]


class SseDecoder:
    """Server-sent events, one line at a time: ``feed`` returns an event's data when it ends.

    Lines starting with ``:`` are comments, fields other than ``data`` are ignored, and several
    ``data`` lines of one event are joined with newlines (the SSE rule).
    """

    def __init__(self) -> None:
        self._data: list[str] = []

    def feed(self, line: str) -> str | None:
        line = line.rstrip("\r\n")
        if not line:
            return self.flush()
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        if field == "data":
            self._data.append(value.removeprefix(" "))
        return None

    def flush(self) -> str | None:
        """The pending event's data (at a blank line or the end of the stream), if any."""
        if not self._data:
            return None
        data, self._data = "\n".join(self._data), []
        return data


def is_done(data: str) -> bool:
    return data.strip() == _DONE


def parse_chunk(data: str) -> tuple[str, bool]:
    """(text, finished) of one streamed chunk; raises ProviderError for an error payload or bad JSON."""
    text, finished, _ = parse_event(data)
    return text, finished


def usage_of(payload: object) -> Usage | None:
    """A chunk's (or completion's) ``usage``: prompt/completion/cached tokens; None when absent."""
    usage = payload.get("usage") if isinstance(payload, dict) else None
    if not isinstance(usage, dict):
        return None
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    found = Usage(input_tokens=Usage.count(usage.get("prompt_tokens")),
                  output_tokens=Usage.count(usage.get("completion_tokens")), cached_tokens=Usage.count(cached))
    return found if found.as_json() else None


def parse_event(data: str) -> tuple[str, bool, Usage | None]:
    """(text, finished, usage) of one streamed chunk; raises ProviderError like :func:`parse_chunk`."""
    try:
        chunk = json.loads(data)
    except json.JSONDecodeError:
        raise ProviderError(f"the endpoint streamed something that is not JSON: {_excerpt(data)}") from None
    if not isinstance(chunk, dict):
        raise ProviderError(f"the endpoint streamed an unexpected chunk: {_excerpt(data)}")
    if chunk.get("error"):
        raise ProviderError(f"the endpoint reported an error: {_error_text(chunk['error'])}")
    choices = chunk.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], dict) else {}
    delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
    content = delta.get("content")
    return (content if isinstance(content, str) else ""), choice.get("finish_reason") is not None, usage_of(chunk)


def _error_text(error: object) -> str:
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return _excerpt(error["message"])
    return _excerpt(json.dumps(error) if not isinstance(error, str) else error)


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= ERROR_EXCERPT_CHARS else flat[:ERROR_EXCERPT_CHARS] + "…"


def body_excerpt(raw: bytes) -> str:
    """A short, one-line excerpt of an error body; the API's ``error.message`` when it has one."""
    text = raw.decode("utf-8", "replace")
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        return _excerpt(text)
    if isinstance(parsed, dict) and parsed.get("error"):
        return _error_text(parsed["error"])
    return _excerpt(text)


@dataclasses.dataclass(frozen=True)
class OpenAIConfig:
    base_url: str
    model: str
    api_key: str = ""
    history_budget_chars: int = DEFAULT_HISTORY_BUDGET_CHARS
    read_timeout_seconds: float = READ_TIMEOUT_SECONDS

    def endpoint(self) -> urllib.parse.SplitResult:
        """The chat-completions URL; raises ProviderError for a base URL that is not http(s)."""
        url = urllib.parse.urlsplit(self.base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ProviderError(f"openai base_url must be an http(s) URL, not {self.base_url!r}")
        return url._replace(path=url.path.rstrip("/") + "/chat/completions", fragment="")


def _watch(conn: http.client.HTTPConnection, cancel: threading.Event, finished: threading.Event) -> None:
    """Shut the socket down when ``cancel`` is set, unblocking a read that may never return."""
    while not finished.wait(0.05):
        if cancel.is_set() and conn.sock is not None:
            try:
                conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return


class OpenAIProvider:
    """Streams a chat completion; see the module docstring for the request and the history rule."""

    name = "openai"

    def __init__(self, config: OpenAIConfig) -> None:
        self.config = config
        self.url = config.endpoint()

    def run(self, request: TurnRequest, emit: Emit, cancel: threading.Event) -> None:
        """Emit the reply as it streams; raises ProviderError on any failure or on cancel."""
        messages = build_messages(request.history, request.text, self.config.history_budget_chars)
        body = json.dumps({"model": self.config.model, "messages": messages, "stream": True,
                           "stream_options": {"include_usage": True}}).encode()
        conn = self._connection()
        finished = threading.Event()
        threading.Thread(target=_watch, args=(conn, cancel, finished), name="openai-cancel", daemon=True).start()
        try:
            conn.connect()
            conn.sock.settimeout(self.config.read_timeout_seconds)
            response = self._post(conn, body)
            self._read(response, stream_of(emit), cancel, conn)
        except (OSError, http.client.HTTPException) as exc:
            if cancel.is_set():
                raise ProviderError("cancelled") from None
            raise ProviderError(f"openai request to {self.url.hostname} failed: {exc or type(exc).__name__}") from None
        finally:
            finished.set()
            conn.close()

    def _connection(self) -> http.client.HTTPConnection:
        kind = http.client.HTTPSConnection if self.url.scheme == "https" else http.client.HTTPConnection
        return kind(self.url.hostname, self.url.port, timeout=CONNECT_TIMEOUT_SECONDS)

    def _post(self, conn: http.client.HTTPConnection, body: bytes) -> http.client.HTTPResponse:
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream",
                   "User-Agent": "chatcron"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        target = self.url.path + (f"?{self.url.query}" if self.url.query else "")
        conn.request("POST", target, body=body, headers=headers)
        response = conn.getresponse()
        if response.status >= 400:
            excerpt = body_excerpt(response.read(4096))
            raise ProviderError(f"openai endpoint returned HTTP {response.status}: {excerpt}")
        return response

    def _read(self, response: http.client.HTTPResponse, stream: TurnStream, cancel: threading.Event,
              conn: http.client.HTTPConnection) -> None:
        """Emit the streamed text; after the finish, read on briefly for the usage chunk (sent after
        it when ``include_usage`` is honoured) until ``[DONE]``, the end, or a short wait."""
        if "application/json" in (response.getheader("Content-Type") or ""):
            return _read_whole(response, stream)
        events, finished = SseDecoder(), False
        while not cancel.is_set():
            try:
                raw = response.readline(MAX_EVENT_LINE_BYTES + 1)
            except (TimeoutError, OSError):
                if finished and not cancel.is_set():
                    return None  # the reply is whole; the usage never came
                raise
            if len(raw) > MAX_EVENT_LINE_BYTES:
                raise ProviderError(f"the endpoint streamed a line over {MAX_EVENT_LINE_BYTES} bytes")
            data = events.feed(raw.decode("utf-8", "replace")) if raw else events.flush()
            if data is not None:
                if is_done(data):
                    return None
                text, ended, usage = parse_event(data)
                if text:
                    stream(text)
                if usage is not None:
                    stream.report_usage(usage)
                    if finished or ended:
                        return None
                if ended and not finished:
                    finished = True
                    if conn.sock is not None:
                        conn.sock.settimeout(USAGE_WAIT_SECONDS)
            if not raw:
                break
        if cancel.is_set():
            raise ProviderError("cancelled")
        if finished:
            return None
        raise ProviderError("the stream ended before the reply was finished")


def _read_whole(response: http.client.HTTPResponse, stream: TurnStream) -> None:
    """A non-streamed completion (some servers ignore ``stream``): emit its message at once."""
    raw = response.read(MAX_JSON_BYTES + 1)
    if len(raw) > MAX_JSON_BYTES:
        raise ProviderError(f"the endpoint's reply is over {MAX_JSON_BYTES} bytes")
    try:
        whole = json.loads(raw)
        content = whole["choices"][0]["message"].get("content") or ""
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise ProviderError(f"the endpoint's reply has no message: {body_excerpt(raw)}") from None
    if content:
        stream(str(content))
    usage = usage_of(whole)
    if usage is not None:
        stream.report_usage(usage)


def settings_from(options: Mapping[str, object], *, base_url: str, model: str, api_key: str,
                  read_timeout_seconds: float = READ_TIMEOUT_SECONDS) -> OpenAIConfig:
    """Resolve a project's options over the server's values; raises ProviderError naming what is missing.

    The server's API key goes only to the server's own base URL: a project that points elsewhere
    must bring its own key, so the server's key is never sent to a URL a project chose.
    """
    own_url = str(options.get("base_url") or "")
    url = own_url or base_url
    if not url:
        raise ProviderError("openai provider: no base_url configured: set CHATCRON_OPENAI_BASE_URL "
                            "or the project's base_url")
    chosen_model = str(options.get("model") or "") or model
    if not chosen_model:
        raise ProviderError("openai provider: no model configured: set CHATCRON_OPENAI_MODEL or the project's model")
    same_server = not own_url or own_url.rstrip("/") == base_url.rstrip("/")
    key = str(options.get("api_key") or "") or (api_key if same_server else "")
    budget = options.get("history_budget_chars")
    return OpenAIConfig(base_url=url, model=chosen_model, api_key=key,
                        history_budget_chars=budget if isinstance(budget, int) else DEFAULT_HISTORY_BUDGET_CHARS,
                        read_timeout_seconds=read_timeout_seconds)
