"""The admin page's door to :mod:`app.projects.admin` (SPEC §18): people, the installed agent presets
and the instance's health, shaped for the page. Blocking: the page's state calls it through
``asyncio.to_thread``; every people call is refused (Forbidden) for anyone who is not a server admin.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from app.api.user import health_report
from app.core.agent_starts import one_line
from app.core.context import get_core
from app.core.models import User
from app.projects import admin
from app.projects.settings import installed_presets
from app.ui.settings_rows import PresetRow, preset_rows

ACTIONS = {"revoke_tokens": "Revoke tokens", "end_sessions": "End sessions", "delete": "Delete"}
WARNINGS = {
    "revoke_tokens": "Every personal API token of {email} stops working now (their scripts and agents' CLIs "
                     "with it).",
    "end_sessions": "Every browser session of {email} ends now: their open tabs go to the login page.",
    "delete": "{email} is deleted, with what only they used (their loose chats, the projects only they were in). "
              "This cannot be undone.",
}


@dataclasses.dataclass
class PersonRow:
    id: int
    email: str
    is_admin: bool
    created_at: str
    counts: str  # "1 project · 0 API tokens · 2 browser sessions"
    you: bool


@dataclasses.dataclass
class HealthRow:
    key: str  # sandbox | agent_network | scheduler | database | agents
    name: str
    value: str
    ok: bool
    at: str = ""  # an instant the value speaks of (the scheduler's last heartbeat), shown in the viewer's zone


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def people(user: User) -> list[PersonRow]:
    return [PersonRow(p.id, p.email, p.is_admin, p.created_at or "",
                      " · ".join((_count(p.projects, "project"), _count(p.tokens, "API token"),
                                  _count(p.sessions, "browser session"))), p.id == user.id)
            for p in admin.people(get_core(), user)]


def presets() -> list[PresetRow]:
    return preset_rows(installed_presets(get_core().settings))


def health_rows(report: Mapping[str, Any]) -> list[HealthRow]:
    """The health report (as ``/api/health`` answers an admin) in lines a person reads."""
    beat = report["scheduler"]
    agents = report.get("agents") or {}
    problems = [one_line(str(p.get("detail", ""))) for p in agents.get("problems") or []]
    sandbox, network = report.get("agent_sandbox", ""), report.get("agent_network", "")
    return [
        HealthRow("sandbox", "Agent sandbox", report.get("agent_sandbox_problem") or
                  ("bubblewrap" if sandbox == "bwrap" else "off: agents run unfenced"),
                  sandbox == "bwrap" and not report.get("agent_sandbox_problem")),
        HealthRow("agent_network", "Agent network",
                  "egress proxy" if network == "proxy" else "the host's network", network == "proxy"),
        HealthRow("scheduler", "Scheduler", "alive · last heartbeat" if beat.get("alive")
                  else "not running · last heartbeat" if beat.get("last_beat") else "not running: no heartbeat yet",
                  bool(beat.get("alive")), beat.get("last_beat") or ""),
        HealthRow("database", "Database", report["db"], report["db"] == "ok"),
        HealthRow("agents", "Agents", "no start problem known" if agents.get("ok", True)
                  else "; ".join(problems) or f"{agents.get('count', 0)} start problem(s)",
                  bool(agents.get("ok", True))),
    ]


def health() -> list[HealthRow]:
    return health_rows(health_report(get_core(), lambda: True))


def create(user: User, email: str, password: str, is_admin: bool) -> str:
    made = admin.create_person(get_core(), user, email, password, is_admin)
    return f"{made.email} can now log in{' (a server admin)' if made.is_admin else ''}."


def act(user: User, action: str, user_id: int) -> str:
    """One of ACTIONS on a person; the service's sentence."""
    core = get_core()
    if action == "revoke_tokens":
        return admin.revoke_tokens(core, user, user_id)
    if action == "end_sessions":
        return admin.end_sessions(core, user, user_id)
    return admin.delete_person(core, user, user_id)


def reset_password(user: User, user_id: int, password: str) -> str:
    return admin.reset_password(get_core(), user, user_id, password)
