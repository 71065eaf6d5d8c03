"""The rows the project settings and admin pages list, made from the services' answers (pure).

A secret's row holds its name and hint only ("set · ends in …4f2a"): its value is never in the
service's answer, so it can never be in a row.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from app.agents.identity import PRESET_NAMES
from app.core.models import Role
from app.core.spend import Spend
from app.ui.budget_views import spend_text

ACTIONS = {"settings": "changed settings", "member.add": "added a member", "member.role": "changed a role",
           "member.remove": "removed a member"}


@dataclasses.dataclass
class EnvRow:
    name: str
    value: str


@dataclasses.dataclass
class SecretRow:
    name: str
    hint: str  # "set · ends in …4f2a", "new · saved with Save"
    removed: bool = False  # marked for removal on Save
    typed: bool = False  # a new value was typed (it replaces the stored one on Save)


@dataclasses.dataclass
class PresetRow:
    name: str
    label: str  # "Claude Code"
    installed: bool
    version: str
    install: str  # the admin's command
    packages: str  # "@zed-industries/claude-agent-acp 0.23.1, …"


@dataclasses.dataclass
class Choice:
    value: str
    label: str


@dataclasses.dataclass
class RefusalRow:
    entry: str  # what "Allow" adds to allow_hosts: exactly what was refused, host:port
    host: str
    port: int
    count: int
    last_seen: str  # RFC 3339, shown in the viewer's zone


@dataclasses.dataclass
class SpendRow:
    name: str
    today: str
    month: str


@dataclasses.dataclass
class MemberRow:
    user_id: int
    email: str
    role: str
    you: bool
    only_owner: bool = False  # the project's last owner: cannot leave, be removed or demoted


@dataclasses.dataclass
class AuditRow:
    id: int
    at: str
    actor: str
    action: str  # "changed settings"
    what: str  # "agent.model, agent.tool_policy" / "a.user@example.com as owner"


def hint_words(hint: str | None) -> str:
    """``set · ends in …4f2a`` (or ``set`` when the value is too short to show any of it)."""
    return f"set · ends in {hint}" if hint and hint != "…" else "set"


def secret_rows(agent: Mapping[str, Any]) -> list[SecretRow]:
    return [SecretRow(name, hint_words(shown.get("hint"))) for name, shown in (agent.get("secrets") or {}).items()]


def preset_rows(presets: Sequence[Mapping[str, Any]]) -> list[PresetRow]:
    return [PresetRow(p["name"], PRESET_NAMES.get(p["name"], p["name"]), bool(p["installed"]), p.get("version") or "",
                      p["install"], ", ".join(f"{pkg} {ver}" for pkg, ver in (p.get("packages") or {}).items()))
            for p in presets]


def preset_choices(presets: Sequence[PresetRow], current: str) -> list[Choice]:
    """The preset select's options: none (a command line instead), each installed preset, and the
    project's own when it is not installed here (so the select shows what is stored)."""
    shown = [Choice("", "None: an ACP command line")] + [Choice(p.name, f"{p.label} {p.version}".strip())
                                                          for p in presets if p.installed]
    if current and all(c.value != current for c in shown):
        shown.append(Choice(current, f"{current} (not installed)"))
    return shown


def refusal_rows(refused: Sequence[Mapping[str, Any]]) -> list[RefusalRow]:
    return [RefusalRow(f"[{r['host']}]:{r['port']}" if ":" in r["host"] else f"{r['host']}:{r['port']}",
                       r["host"], r["port"], r["count"], r["last_seen"]) for r in refused]


def spend_words(shown: Mapping[str, Any]) -> str:
    """``12,345 tokens · $0.41``, or ``nothing``."""
    return spend_text(Spend(int(shown.get("tokens") or 0), float(shown.get("cost_usd") or 0))) or "nothing"


def spend_rows(tasks: Sequence[Mapping[str, Any]]) -> list[SpendRow]:
    return [SpendRow(t["name"], spend_words(t["today"]), spend_words(t["month"])) for t in tasks]


def member_rows(members: Sequence[Any], you: int) -> list[MemberRow]:
    owners = sum(1 for m in members if m.role == Role.OWNER.value)
    return [MemberRow(m.user_id, m.email, m.role, m.user_id == you, m.role == Role.OWNER.value and owners == 1)
            for m in members]


def _what(action: str, detail: Mapping[str, Any]) -> str:
    if action == "settings":
        return ", ".join(str(k) for k in detail.get("keys") or [])
    role = f" as {detail['role']}" if detail.get("role") else ""
    return f"{detail.get('email', '')}{role}"


def audit_rows(records: Sequence[Mapping[str, Any]]) -> list[AuditRow]:
    return [AuditRow(r["id"], r["at"], r["actor"], ACTIONS.get(r["action"], r["action"]),
                     _what(r["action"], r.get("detail") or {})) for r in records]


def budget_line(budget: Mapping[str, Any]) -> str:
    """``Spent: the project's fires wait until 00:00 UTC`` when today's budget is spent, else ""."""
    return "Today's budget is spent: scheduled fires wait until 00:00 UTC." if budget.get("spent") else ""
