"""What an ACP agent streams, as chatcron's events (SPEC §11, the contract's event shapes).

- Tool calls are folded by id: every ``tool_call`` / ``tool_call_update`` (and every permission
  decision) that changes the call gives the full current object, which is logged as a new
  ``tool`` event (readers fold events by ``id``; the log stays append-only).
- Plans become ``plan`` events; usage comes from the prompt response and ``usage_update``.
- :func:`is_remote_schedule` tells a plain call of the workspace's ``scripts/remote-schedule``
  (always allowed: its token scopes it) from anything else.
"""

from __future__ import annotations

import datetime as dt
import json
import shlex
from pathlib import Path
from typing import Any

INPUT_MAX_BYTES = 2048
OUTPUT_MAX_BYTES = 8192
KINDS = frozenset({"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"})
STATUSES = frozenset({"pending", "in_progress", "completed", "failed", "awaiting_approval"})
FINAL = frozenset({"completed", "failed"})
CLI = "scripts/remote-schedule"


def cut(text: str, limit: int) -> str:
    """``text`` within ``limit`` UTF-8 bytes; a cut one ends with a note saying so (inside the limit)."""
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text
    note = f"\n[cut: {len(data)} bytes, the first {limit} kept]"
    return data[: limit - len(note.encode())].decode("utf-8", "ignore") + note


def command_of(raw_input: object) -> str | None:
    """The shell command of a tool's raw input (Claude's ``{"command": str}``; Codex's
    ``{"command": ["/bin/bash", "-lc", str]}``), or None when it is not a command."""
    if not isinstance(raw_input, dict):
        return None
    command = raw_input.get("command")
    if isinstance(command, str):
        return command
    if isinstance(command, list) and command and all(isinstance(x, str) for x in command):
        if len(command) >= 3 and command[-2] in ("-c", "-lc") and Path(command[0]).name in ("bash", "sh", "zsh"):
            return command[-1]
        return shlex.join(command)
    return None


def _input_text(raw_input: object) -> str | None:
    if raw_input is None or raw_input == {}:
        return None
    command = command_of(raw_input)
    if command is not None:
        return command
    if isinstance(raw_input, str):
        return raw_input
    return json.dumps(raw_input, ensure_ascii=False, sort_keys=True)


def _content_text(content: object) -> str | None:
    """The text of a tool call's ``content`` list (text blocks, diffs and terminals summarised)."""
    if not isinstance(content, list):
        return None
    parts = []
    for item in content:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "content" and isinstance(item.get("content"), dict):
            text = item["content"].get("text")
            if isinstance(text, str):
                parts.append(text)
        elif item.get("type") == "diff":
            parts.append(f"edited {item.get('path', '?')}")
        elif item.get("type") == "terminal":
            parts.append(f"[terminal {item.get('terminalId', '?')}]")
    return "\n".join(parts) if parts else None


def _raw_output_text(update: dict[str, Any]) -> str | None:
    raw = update.get("rawOutput")
    if isinstance(raw, str):
        return raw or None
    return None if raw in (None, {}, []) else json.dumps(raw, ensure_ascii=False, sort_keys=True)


def _output_text(update: dict[str, Any]) -> str | None:
    raw = update.get("rawOutput")
    if isinstance(raw, str) and raw:
        return raw
    text = _content_text(update.get("content"))
    if text:
        return text
    if raw not in (None, "", {}, []):
        return json.dumps(raw, ensure_ascii=False, sort_keys=True)
    return None


class ToolCalls:
    """The tool calls of one turn, by id."""

    def __init__(self) -> None:
        self._calls: dict[str, dict[str, Any]] = {}

    def get(self, call_id: str) -> dict[str, Any] | None:
        return self._calls.get(call_id)

    def apply(self, update: dict[str, Any]) -> str | None:
        """Fold a ``tool_call``/``tool_call_update`` (camelCase JSON); the JSON to log, or None when
        nothing a reader sees changed."""
        call_id = update.get("toolCallId")
        if not isinstance(call_id, str) or not call_id:
            return None
        known = call_id in self._calls
        call = self._calls.get(call_id) or {"id": call_id, "title": "", "kind": "other", "status": "pending"}
        before = dict(call)
        if isinstance(update.get("title"), str) and update["title"]:
            call["title"] = update["title"]
        if update.get("kind") in KINDS:
            call["kind"] = update["kind"]
        if update.get("status") in STATUSES:
            call["status"] = update["status"]
        text = _input_text(update.get("rawInput"))
        if text is not None:
            call["input"] = cut(text, INPUT_MAX_BYTES)
        # Claude puts the call's description in ``content`` while it runs: content is output once
        # the call has ended; ``rawOutput`` is output whenever it comes.
        output = _output_text(update) if call["status"] in FINAL else _raw_output_text(update)
        if output is not None:
            call["output"] = cut(output, OUTPUT_MAX_BYTES)
        self._calls[call_id] = call
        return json.dumps(call, ensure_ascii=False) if call != before or not known else None

    def _call(self, call_id: str) -> dict[str, Any]:
        return self._calls.setdefault(call_id, {"id": call_id, "title": "", "kind": "other", "status": "pending"})

    def decide(self, call_id: str, outcome: str, option: str | None, by: str, now: dt.datetime) -> str:
        """Record a permission decision on the call; the JSON to log."""
        call = self._call(call_id)
        call["decision"] = {"outcome": outcome, "option": option, "by": by,
                            "at": now.isoformat().replace("+00:00", "Z")}
        if outcome != "allowed" and call["status"] not in FINAL:
            call["status"] = "failed"  # some agents send no update for a refused call
        elif call["status"] == "awaiting_approval":
            call["status"] = "pending"  # allowed: the agent's own updates take it on
        return json.dumps(call, ensure_ascii=False)

    def await_approval(self, call_id: str, approval: dict[str, Any]) -> str:
        """The call waits for a person (SPEC §13): ``approval`` is what its card needs (id, state,
        options, expiry); the JSON to log."""
        call = self._call(call_id)
        call["status"] = "awaiting_approval"
        call["approval"] = approval
        return json.dumps(call, ensure_ascii=False)

    def approval_state(self, call_id: str, state: str) -> None:
        """The call's approval settled (logged with the decision that follows)."""
        approval = self._call(call_id).get("approval")
        if isinstance(approval, dict):
            approval["state"] = state


def plan_json(update: dict[str, Any]) -> str:
    entries = []
    for entry in update.get("entries") or []:
        if isinstance(entry, dict):
            entries.append({"content": str(entry.get("content", "")), "status": str(entry.get("status", "pending")),
                            "priority": str(entry.get("priority", "medium"))})
    return json.dumps({"entries": entries}, ensure_ascii=False)


def _plain_words(command: str) -> list[str] | None:
    """The words of a single simple command, or None when the line does more than run one command
    (a separator, pipe, redirection, subshell, substitution or line break outside quotes)."""
    quote = ""
    escaped = False
    for i, char in enumerate(command):
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            if char == quote:
                quote = ""
            elif quote == '"' and (char == "`" or command.startswith("$(", i)):
                return None
        elif char in "'\"":
            quote = char
        elif char in ";&|<>()`\n\r" or command.startswith("$(", i):
            return None
    try:
        return shlex.split(command)
    except ValueError:
        return None


def is_remote_schedule(raw_input: object, workspace: Path | None) -> bool:
    """Whether a tool call runs the workspace's ``scripts/remote-schedule`` and nothing else.

    Accepted: ``scripts/remote-schedule ARGS``, ``./scripts/…``, the absolute path in the workspace,
    or ``python3 …`` / ``python …`` of one of those; any shell operator makes it a different call.
    """
    command = command_of(raw_input)
    words = _plain_words(command) if command is not None else None
    if not words:
        return False
    allowed = {CLI, f"./{CLI}"}
    if workspace is not None:
        allowed.add(str(workspace / CLI))
    if words[0] in ("python3", "python") and len(words) > 1:
        words = words[1:]
    return words[0] in allowed


def now_utc() -> dt.datetime:
    return dt.datetime.now(dt.UTC)
