"""Chats: project chats (schedules allowed) and loose chats (no project, no schedules)."""

from __future__ import annotations

import datetime as dt
import json
import re

import sqlalchemy as sa
from sqlmodel import Session, select

from app.core.clock import Clock
from app.core.db import Database
from app.core.errors import InvalidInput, NotFound
from app.core.models import Chat, User
from app.core.projects import get_project, has_access
from app.core.text import clean_name

SCHEDULED_TASKS = "scheduled-tasks"
KNOWN_SKILLS = frozenset({SCHEDULED_TASKS})
MAX_TITLE = 200
DEFAULT_TITLE = "New chat"
AUTO_TITLE_CHARS = 60  # a title taken from a message: its first line, cut here with an ellipsis


def chat_skills(chat: Chat) -> list[str]:
    return sorted(json.loads(chat.skills or "[]"))


def title_from_message(text: str, limit: int = AUTO_TITLE_CHARS) -> str:
    """A chat title from a message: its first non-blank line, whitespace collapsed, cut to ``limit``
    characters (at a word boundary when one is near) with an ellipsis; DEFAULT_TITLE for blank text."""
    line = next((x for x in text.splitlines() if x.strip()), "")
    line = re.sub(r"\s+", " ", line).strip()
    if not line:
        return DEFAULT_TITLE
    if len(line) <= limit:
        return line
    cut = line[:limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" .,;:-") + "…"


_CHATS = Chat.__table__
_AUTO_TITLE = _CHATS.update().where(_CHATS.c.id == sa.bindparam("b_chat"), _CHATS.c.auto_title == sa.true()).values(
    title=sa.bindparam("b_title"), auto_title=False, updated_at=sa.bindparam("b_now"))


def title_from_first_message_in(s: Session, now: dt.datetime, chat_id: int, text: str) -> bool:
    """Inside the transaction that starts a user's turn: name a chat that still waits for its first
    message (``auto_title``) after that message; False when the chat is already named."""
    params = {"b_chat": chat_id, "b_title": title_from_message(text), "b_now": now}
    return s.connection().execute(_AUTO_TITLE, params).rowcount == 1


def create_chat(db: Database, clock: Clock, user: User, project_id: int | None, title: str = DEFAULT_TITLE) -> Chat:
    """Create a chat in a project the user can see (or a loose chat when ``project_id`` is None).

    A chat created with the default title is named by its first message (see ``begin_runs``)."""
    name = clean_name(title, "title", MAX_TITLE)
    if project_id is not None:
        get_project(db, user, project_id)
    now = clock.now()
    with db.write() as s:
        chat = Chat(project_id=project_id, owner_id=user.id, title=name, auto_title=name == DEFAULT_TITLE,
                        created_at=now, updated_at=now)
        s.add(chat)
        s.flush()
        return chat


def get_chat(db: Database, user: User, chat_id: int) -> Chat:
    """The chat if visible to ``user``: a member of its project, or the owner of a loose chat."""
    with db.read() as s:
        chat = s.get(Chat, chat_id)
        visible = chat is not None and (
            has_access(s, user, chat.project_id) if chat.project_id is not None
            else chat.owner_id == user.id or user.is_admin
        )
    if not visible:
        raise NotFound(f"no chat with id {chat_id}")
    return chat


def list_chats(db: Database, user: User, project_id: int) -> list[Chat]:
    get_project(db, user, project_id)
    with db.read() as s:
        return list(s.exec(select(Chat).where(Chat.project_id == project_id).order_by(Chat.id)))


def list_loose_chats(db: Database, user: User) -> list[Chat]:
    """The user's own chats outside any project, newest first."""
    with db.read() as s:
        return list(s.exec(select(Chat).where(Chat.project_id.is_(None), Chat.owner_id == user.id)
                           .order_by(Chat.id.desc())))


def validate_skills(chat: Chat, skills: object) -> list[str]:
    if not isinstance(skills, list) or not all(isinstance(x, str) for x in skills):
        raise InvalidInput("skills", "must be a list of skill names")
    unknown = sorted(set(skills) - KNOWN_SKILLS)
    if unknown:
        raise InvalidInput("skills", f"unknown skill {unknown[0]!r}; known: {', '.join(sorted(KNOWN_SKILLS))}")
    if SCHEDULED_TASKS in skills and chat.project_id is None:
        raise InvalidInput("skills", "loose chats cannot have scheduled tasks; move the chat into a project")
    return sorted(set(skills))


def update_chat(db: Database, clock: Clock, user: User, chat_id: int,
                title: str | None = None, skills: list[str] | None = None) -> Chat:
    """Change a chat's title and/or skills; validates everything before writing anything."""
    chat = get_chat(db, user, chat_id)
    new_title = clean_name(title, "title", MAX_TITLE) if title is not None else None
    new_skills = validate_skills(chat, skills) if skills is not None else None
    with db.write() as s:
        row = s.get(Chat, chat_id)
        if new_title is not None:
            row.title, row.auto_title = new_title, False  # a renamed chat keeps its name
        if new_skills is not None:
            row.skills = json.dumps(new_skills)
        row.updated_at = clock.now()
        s.add(row)
        s.flush()
        return row
