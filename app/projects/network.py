"""The Network section's facts (SPEC §12.1, §18): the server's egress mode and what the project's
agents were refused lately, so an owner can allow what an agent needed."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import sqlalchemy as sa
from sqlmodel import Session

from app.agents import egress, sandbox
from app.core.config import Settings
from app.core.models import Chat, Event, EventType

WINDOW = dt.timedelta(days=7)
SHOWN = 50  # hosts listed at most, the most refused first


def mode(settings: Settings) -> str:
    """``proxy`` or ``host``: the server's (``CHATCRON_AGENT_NETWORK``), not a project's to change."""
    return sandbox.network(settings)


def allow_hosts_list(raw: object) -> list[str]:
    return [item.strip() for item in str(raw or "").split(",") if item.strip()]


def refusals(s: Session, project_id: int, now: dt.datetime) -> list[dict[str, Any]]:
    """The egress proxy's refusals of this project's agents in the last 7 days, from the turns'
    ``network … refused`` cards: ``[{"host", "port", "count", "last_seen"}]``, most refused first."""
    rows = s.connection().execute(
        sa.select(Event.text, Event.created_at).join(Chat, Chat.id == Event.chat_id)
        .where(Chat.project_id == project_id, Event.type == EventType.TOOL.value, Event.created_at >= now - WINDOW,
               Event.text.like(f'%"kind": "{egress.REFUSED_KIND}"%'),
               Event.text.like(f'%"status": "{egress.REFUSED_STATUS}"%')))
    seen: dict[tuple[str, int], list[Any]] = {}
    for text, at in rows:
        target = _target(text)
        if target is None:
            continue
        entry = seen.setdefault(target, [0, at])
        entry[0] += 1
        entry[1] = max(entry[1], at)
    listed = sorted(seen.items(), key=lambda item: (-item[1][0], item[0]))[:SHOWN]
    return [{"host": host, "port": port, "count": count, "last_seen": last.isoformat().replace("+00:00", "Z")}
            for (host, port), (count, last) in listed]


def _target(text: str) -> tuple[str, int] | None:
    """(host, port) of a refusal card: its title is ``network: <host>:<port> refused``."""
    try:
        title = json.loads(text).get("title", "")
    except (ValueError, AttributeError):
        return None
    prefix, suffix = "network: ", " refused"
    if not (isinstance(title, str) and title.startswith(prefix) and title.endswith(suffix)):
        return None
    host, _, port = title[len(prefix):-len(suffix)].rpartition(":")
    if not host or not port.isdigit():
        return None
    return host.removeprefix("[").removesuffix("]"), int(port)
