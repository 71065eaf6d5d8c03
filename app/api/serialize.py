"""JSON shapes of the API's resources (instants as RFC 3339 with Z)."""

from __future__ import annotations

import json
from typing import Any

from app.core.chats import chat_skills
from app.core.clock import rfc3339
from app.core.models import Chat, Event, Project, Run


def project_json(p: Project) -> dict[str, Any]:
    return {"id": p.id, "name": p.name, "provider": p.provider, "created_at": rfc3339(p.created_at)}


def chat_json(c: Chat, busy: bool | None = None) -> dict[str, Any]:
    data = {"id": c.id, "project_id": c.project_id, "title": c.title, "skills": chat_skills(c),
            "created_at": rfc3339(c.created_at), "updated_at": rfc3339(c.updated_at)}
    if busy is not None:
        data["busy"] = busy
    return data


def event_json(e: Event) -> dict[str, Any]:
    return {"id": e.id, "chat_id": e.chat_id, "run_id": e.run_id, "type": e.type, "text": e.text,
            "created_at": rfc3339(e.created_at)}


def run_json(r: Run) -> dict[str, Any]:
    return {"id": r.id, "chat_id": r.chat_id, "source": r.source, "status": r.status, "output": r.output,
            "error": r.error, "task_id": r.task_id, "started_at": rfc3339(r.started_at),
            "heartbeat_at": rfc3339(r.heartbeat_at), "finished_at": rfc3339(r.finished_at),
            "usage": run_usage(r)}


def run_usage(r: Run) -> dict[str, Any] | None:
    """``runs.usage`` as an object (SPEC §11): tokens in / out / cached and cost, the keys the agent
    reported; None when it reported nothing."""
    if not r.usage:
        return None
    try:
        value = json.loads(r.usage)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
