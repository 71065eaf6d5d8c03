"""A chat's transcript as a file (SPEC §21): JSON with every event in order, or Markdown that reads
like the chat — people's prompts, fire cards, the agent's replies, its tool calls at their last
state, notes and errors.

Read in pages of events by id, so a long chat is never one query's worth of memory at once; the
caller gets the whole text (a transcript is what a person downloads, not a stream of records).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

from sqlmodel import select

from app.core import chats, envelope
from app.core.clock import Clock, rfc3339
from app.core.db import Database
from app.core.errors import InvalidInput, NotFound
from app.core.models import Chat, Event, EventType, Project, User

FORMATS = ("md", "json")
PAGE = 5000  # events read at once
MEDIA = {"md": "text/markdown; charset=utf-8", "json": "application/json"}


def _events(db: Database, chat_id: int) -> Iterator[Event]:
    after = 0
    while True:
        with db.read() as s:
            page = list(s.exec(select(Event).where(Event.chat_id == chat_id, Event.id > after)
                               .order_by(Event.id).limit(PAGE)))
        yield from page
        if len(page) < PAGE:
            return
        after = page[-1].id


def _chat(db: Database, user: User | None, chat_id: int) -> tuple[Chat, str | None]:
    """The chat (``user`` must see it; None is the admin CLI) and its project's name."""
    if user is not None:
        chat = chats.get_chat(db, user, chat_id)
    else:
        with db.read() as s:
            chat = s.get(Chat, chat_id)
        if chat is None:
            raise NotFound(f"no chat with id {chat_id}")
    with db.read() as s:
        project = s.get(Project, chat.project_id) if chat.project_id is not None else None
    return chat, project.name if project is not None else None


def filename(chat: Chat, fmt: str) -> str:
    # ASCII only: the name goes into a header (Latin-1), and every file system takes it
    safe = "".join(c if (c.isascii() and c.isalnum()) or c in "-_" else "-" for c in chat.title.lower())
    safe = "-".join(part for part in safe.split("-") if part)[:60] or "chat"
    return f"chat-{chat.id}-{safe}.{fmt}"


def export_chat(db: Database, clock: Clock, user: User | None, chat_id: int, fmt: str) -> tuple[str, str]:
    """(file name, the transcript in ``fmt``: ``md`` or ``json``); NotFound for a chat the user
    cannot see; InvalidInput naming ``format``."""
    if fmt not in FORMATS:
        raise InvalidInput("format", f"must be one of {', '.join(FORMATS)}")
    chat, project = _chat(db, user, chat_id)
    events = _events(db, chat.id)
    text = _json(chat, project, events, clock.now()) if fmt == "json" else _markdown(chat, project, events,
                                                                                       clock.now())
    return filename(chat, fmt), text


def _json(chat: Chat, project: str | None, events: Iterator[Event], now: dt.datetime) -> str:
    rows = []
    for event in events:
        row: dict[str, Any] = {"id": event.id, "run_id": event.run_id, "type": event.type, "text": event.text,
                               "at": rfc3339(event.created_at)}
        if event.type in (EventType.TOOL.value, EventType.PLAN.value):
            try:
                row["data"] = json.loads(event.text)
            except ValueError:
                pass
        rows.append(row)
    return json.dumps({"version": 1, "exported_at": rfc3339(now),
                       "chat": {"id": chat.id, "title": chat.title, "project_id": chat.project_id, "project": project,
                                "created_at": rfc3339(chat.created_at)},
                       "events": rows}, ensure_ascii=False, indent=1)


def _when(at: dt.datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M UTC") if at else ""


def _tool_line(call: dict[str, Any]) -> str:
    title = str(call.get("title") or call.get("kind") or "tool").replace("\n", " ").replace("`", "'")
    status = str(call.get("status") or "")
    return f"- Tool `{title}`" + (f" — {status}" if status else "")


def _markdown(chat: Chat, project: str | None, events: Iterator[Event], now: dt.datetime) -> str:
    """The chat as Markdown. A tool call is one line where it first appeared, at its last state."""
    out: list[str] = [f"# {chat.title}", "",
                      f"Exported {_when(now)}" + (f" from project {project}" if project else "") + f" · chat {chat.id}",
                      ""]
    tools: dict[str, int] = {}  # a call's id → its line in ``out``
    speaking: int | None = None  # the run whose reply is being written on the last line
    heard: int | None = None  # the run whose reply has its "Agent" line
    for event in events:
        kind = event.type
        if kind == EventType.PROMPT.value:
            out += ["---", "", f"**You** · {_when(event.created_at)}", "", event.text, ""]
            speaking = heard = None
        elif kind == EventType.SCHEDULED_PROMPT.value:
            fire = envelope.parse(event.text)
            head = f'**Scheduled fire** "{fire.name}" {fire.fire_label}' if fire else "**Scheduled fire**"
            out += ["---", "", f"{head} · {_when(event.created_at)}", "",
                    (fire.prompt.strip() if fire else event.text), ""]
            speaking = heard = None
        elif kind == EventType.ASSISTANT_TEXT.value:
            if heard != event.run_id:  # the reply's first words: who speaks
                out += [f"**Agent** · {_when(event.created_at)}", ""]
                heard = event.run_id
            if speaking == event.run_id:
                out[-1] += event.text
            else:  # the reply goes on after a tool call or a thought: a paragraph of its own
                out += ["", event.text] if out[-1] else [event.text]
                speaking = event.run_id
        elif kind == EventType.THOUGHT.value:
            out += ["> *thinking:* " + event.text.replace("\n", "\n> "), ""]
            speaking = None
        elif kind == EventType.TOOL.value:
            _tool(out, tools, event.text)
            speaking = None
        elif kind == EventType.PLAN.value:
            out += [*_gap(out), "*Plan updated.*", ""]
            speaking = None
        elif kind == EventType.STATUS.value:
            out += [*_gap(out), f"*{event.text}*", ""]
            speaking = None
        elif kind == EventType.ERROR.value:
            out += [*_gap(out), f"**Error:** {event.text}", ""]
            speaking = None
        elif kind == EventType.RUN_FINISHED.value:
            if event.text != "succeeded":
                out += [*_gap(out), f"*The turn ended {event.text}.*", ""]
            speaking = None
    return "\n".join(out).rstrip() + "\n"


def _gap(out: list[str]) -> list[str]:
    return [""] if out and out[-1] else []


def _tool(out: list[str], tools: dict[str, int], text: str) -> None:
    try:
        call = json.loads(text)
    except ValueError:
        call = None
    if not isinstance(call, dict):
        out += [f"- Tool: {text[:200]}", ""]
        return
    line = _tool_line(call)
    key = str(call.get("id") or "")
    if key and key in tools:
        out[tools[key]] = line
        return
    if out[-1] and not out[-1].startswith("- Tool"):
        out.append("")  # a list of its own, not the paragraph's last line
    out.append(line)
    if key:
        tools[key] = len(out) - 1
