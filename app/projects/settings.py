"""A project's settings as one object (SPEC §18): read by its members, changed by its owners.

``GET /api/projects/{pid}/settings``, the settings page and the admin CLI's ``set-provider`` /
``set-budget`` read and change the same things, validated the same way: the agent (provider,
preset, model, tool policy, per-turn limits, environment and secrets — the project's
``provider_settings``), the network (the server's egress mode, the project's ``allow_hosts`` and
the refusals of the last 7 days) and the daily budget with what was spent.

A secret — ``api_key`` or any ``env.*`` setting whose name holds KEY, TOKEN, SECRET or PASSWORD —
is write-only: it is shown as ``{"set": true, "hint": "…4f2a"}`` and its value never leaves the
server in an answer, an error, an audit record or a log line.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import re
from collections.abc import Mapping
from typing import Any

from sqlmodel import Session, select

from app.agents.cli import presets
from app.agents.egress.policy import forbidden, parse_allow_hosts, url_rule
from app.agents.providers.command import split_command
from app.agents.providers.registry import ENV_PREFIX, checked_settings
from app.core.clock import Clock
from app.core.config import Settings
from app.core.db import Database
from app.core.errors import Forbidden, InvalidInput, NotFound
from app.core.models import Project, User
from app.core.ports import ProviderError
from app.core.redact import HIDDEN, hide_setting_values
from app.core.spend import Budget, Spend, project_spent_by_task, utc_day
from app.core.wake import Waker
from app.projects import audit, network
from app.projects.patch import SECRET, Change, parse_patch
from app.projects.roles import require_owner, shown_role
from app.schedules.budgets import UNCHANGED, set_budget
from app.schedules.model import ScheduledTask

# the agent's plain settings: the API's name → the stored key
PLAIN = {"preset": "agent", "command": "command", "base_url": "base_url", "model": "model",
         "tool_policy": "tool_policy"}
LIMITS = {"history_budget_chars": "history_budget_chars"}


def hint(value: str) -> str:
    """What a secret shows of itself: its last four characters when it is long enough to keep the
    rest secret (12 or more), else nothing."""
    value = value.strip()
    return "…" + value[-4:] if len(value) >= 12 else "…"


def stored_settings(project: Project) -> dict[str, object]:
    try:
        value = json.loads(project.provider_settings or "{}")
    except json.JSONDecodeError:
        value = None
    return value if isinstance(value, dict) else {}


def installed_presets(settings: Settings) -> list[dict[str, Any]]:
    """Every preset: whether it is installed here, its version, and how an admin installs it."""
    shown = []
    for name, preset in sorted(presets.PRESETS.items()):
        target = settings.agents_dir.resolve() / name
        installed = not presets.missing_packages(preset, target)
        shown.append({"name": name, "installed": installed, "version": preset.version(target) if installed else None,
                      "packages": dict(preset.packages),
                      "install": f"python -m app.manage install-agent {name}"})
    return shown


def view(db: Database, clock: Clock, settings: Settings, user: User, project_id: int) -> dict[str, Any]:
    """The settings object of SPEC §18 for a member of the project (or an admin)."""
    now = clock.now()
    with db.read() as s:
        role = shown_role(s, user, project_id)
        project = s.get(Project, project_id)
        if project is None:
            raise NotFound(f"no project with id {project_id}")
        stored = stored_settings(project)
        refused = network.refusals(s, project_id, now)
        budget = _budget(s, project, now)
    env = {k[len(ENV_PREFIX):]: str(v) for k, v in stored.items() if k.startswith(ENV_PREFIX) and not SECRET.search(k)}
    secrets = {k[len(ENV_PREFIX):]: {"set": True, "hint": hint(str(v))} for k, v in stored.items()
               if k.startswith(ENV_PREFIX) and SECRET.search(k)}
    agent: dict[str, Any] = {
        "provider": project.provider, "default_provider": settings.provider,
        **{name: stored.get(key) or None for name, key in PLAIN.items()},
        "limits": {name: stored.get(key) for name, key in LIMITS.items()},
        "env": dict(sorted(env.items())), "secrets": dict(sorted(secrets.items())),
        "api_key": {"set": bool(stored.get("api_key")), "hint": hint(str(stored["api_key"]))
                    if stored.get("api_key") else None},
        "presets": installed_presets(settings),
    }
    return {"project": {"id": project.id, "name": project.name}, "role": role, "can_edit": role != "member",
            "agent": agent,
            "network": {"mode": network.mode(settings), "refused": refused,
                        "allow_hosts": network.allow_hosts_list(stored.get("allow_hosts"))},
            "budget": budget}


def _budget(s: Session, project: Project, now: dt.datetime) -> dict[str, Any]:
    day = utc_day(now)
    by_task = project_spent_by_task(s.connection(), project.id, day)
    today = Spend(sum(t.tokens for t, _ in by_task.values()), sum(t.cost_usd for t, _ in by_task.values()))
    month = Spend(sum(m.tokens for _, m in by_task.values()), sum(m.cost_usd for _, m in by_task.values()))
    ids = [tid for tid in by_task if tid]
    names = dict(s.exec(select(ScheduledTask.id, ScheduledTask.name).where(ScheduledTask.id.in_(ids)))) if ids else {}
    tasks = [{"task_id": tid or None, "name": names.get(tid, f"deleted task {tid}") if tid else "people's turns",
              "today": t.as_json(), "month": m.as_json()}
             for tid, (t, m) in sorted(by_task.items(), key=lambda item: (-item[1][1].tokens, item[0]))]
    limit = Budget(project.daily_token_budget, project.daily_cost_budget_usd)
    return {"daily_tokens": limit.tokens, "daily_cost_usd": limit.cost_usd, "today": today.as_json(),
            "month": month.as_json(), "spent": limit.spent_by(today) is not None, "tasks": tasks}


def change(db: Database, clock: Clock, settings: Settings, waker: Waker, user: User, project_id: int,
           body: object) -> dict[str, Any]:
    """Apply a partial PATCH (owners): only the keys sent change, checked as a whole first; bad
    input raises InvalidInput naming the field and changes nothing. Returns the new view."""
    patch = parse_patch(body)
    with db.read() as s:
        require_owner(s, user, project_id)
    if patch.touches_agent():
        _write_agent(db, clock, settings, user, project_id, patch)
    if patch.budget:
        keys = sorted(f"budget.{k}" for k in patch.budget)

        def record(s: Session) -> None:
            audit.record(s, clock.now(), project_id, user.email, audit.SETTINGS, {"keys": keys})

        set_budget(db, clock, waker, project_id, patch.budget.get("daily_tokens", UNCHANGED),
                   patch.budget.get("daily_cost_usd", UNCHANGED), also=record)
    return view(db, clock, settings, user, project_id)


def _write_agent(db: Database, clock: Clock, settings: Settings, user: User, project_id: int, patch: Change) -> None:
    with db.write() as s:
        require_owner(s, user, project_id)
        project = s.get(Project, project_id, with_for_update=True)  # no concurrent change is lost
        if project is None:
            raise NotFound(f"no project with id {project_id}")
        stored = stored_settings(project)
        merged = {k: v for k, v in stored.items() if k not in patch.removed} | patch.assigned
        provider = patch.provider if patch.provider_given else project.provider
        effective = provider or settings.provider
        values = _checked(effective, merged)
        _runnable(effective, values)
        preset = values.get("agent")
        if effective == "acp" and isinstance(preset, str) and preset and (
                patch.assigned.get("agent") or patch.provider_given):
            _require_installed(settings, preset)
        if not user.is_admin:
            _no_private_literal(patch)
        project.provider = provider
        project.provider_settings = json.dumps(values, sort_keys=True)
        s.add(project)
        audit.record(s, clock.now(), project_id, user.email, audit.SETTINGS, {"keys": patch.keys})


def _runnable(provider: str, values: Mapping[str, object]) -> None:
    """What a turn would refuse of these settings, refused now (InvalidInput naming the field)."""
    command = values.get("command")
    if provider in ("command", "acp") and isinstance(command, str) and command:
        try:
            split_command(command)
        except ProviderError as exc:
            raise InvalidInput("agent.command", str(exc)) from None
    base_url = values.get("base_url")
    if provider == "openai" and isinstance(base_url, str) and base_url and url_rule(base_url) is None:
        raise InvalidInput("agent.base_url", "must be an http:// or https:// URL with a host")


def _no_private_literal(patch: Change) -> None:
    """Only a server admin opens a loopback, private, link-local or metadata address: in
    ``allow_hosts`` (the egress fence's one way to such an address, SPEC §12.1) or as the openai
    provider's base URL (which the server itself connects to). Forbidden naming the field."""
    hosts = patch.assigned.get("allow_hosts")
    for rule in parse_allow_hosts(hosts) if isinstance(hosts, str) else ():
        if _internal(rule.host):
            raise Forbidden(f"network.allow_hosts: {rule.host} is a loopback, private or link-local address: "
                            "only a server admin can allow it")
    base_url = patch.assigned.get("base_url")
    rule = url_rule(base_url) if isinstance(base_url, str) else None
    if rule is not None and _internal(rule.host):
        raise Forbidden(f"agent.base_url: {rule.host} is a loopback, private or link-local address: "
                        "only a server admin can set it")


def _internal(host: str) -> bool:
    if host in ("localhost", "localhost.localdomain") or host.endswith(".localhost"):
        return True
    try:
        return forbidden(ipaddress.ip_address(host))
    except ValueError:
        return False


def _require_installed(settings: Settings, name: str) -> None:
    preset = presets.PRESETS.get(name)
    if preset is None:
        return  # checked_settings named it already
    if presets.missing_packages(preset, settings.agents_dir.resolve() / name):
        raise InvalidInput("agent.preset", f"{name} is not installed on this server (an admin installs it: "
                                           f"python -m app.manage install-agent {name})")


def _checked(provider: str, merged: Mapping[str, object]) -> dict[str, object]:
    """``checked_settings`` of the merged settings; its refusal names the API's field and shows no
    secret's value."""
    raw = {k: str(v) for k, v in merged.items()}
    try:
        return checked_settings(provider, raw)
    except InvalidInput as exc:
        message = hide_setting_values(str(exc).removeprefix(f"{exc.field}: ").removeprefix("set-provider: "), raw,
                                      HIDDEN)
        raise InvalidInput(api_field(exc.field, message), message) from None


def api_field(cli_field: str, message: str) -> str:
    """The API's name of the setting a refusal is about (``--setting tool_policy`` →
    ``agent.tool_policy``); a message that names one without a key names it in its text."""
    key = cli_field.removeprefix("--setting").strip()
    if not key:
        for candidate in ("tool_policy", "allow_hosts", "history_budget_chars", "base_url", "api_key", "model",
                          "command"):
            if candidate in message:
                key = candidate
                break
        else:
            match = re.search(r"\benv\.[A-Za-z_][A-Za-z0-9_]*", message)
            key = match.group(0) if match else "agent"
    if key.startswith(ENV_PREFIX):
        name = key[len(ENV_PREFIX):]
        return f"agent.{'secrets' if SECRET.search(name) else 'env'}.{name}"
    if key == "allow_hosts":
        return "network.allow_hosts"
    if key in LIMITS:
        return f"agent.limits.{key}"
    reverse = {stored: name for name, stored in PLAIN.items()}
    return f"agent.{reverse.get(key, key)}" if key != "agent" else "agent.preset"

