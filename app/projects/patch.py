"""The settings PATCH body (SPEC §18), checked key by key before anything is written: only the keys
sent change; ``null`` (or an empty string) removes a setting; unknown keys and wrong types are
refused naming the field (``agent.env.FOO``, ``budget.daily_tokens``…)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from app.agents.providers.acp_settings import POLICIES
from app.core.config import PROVIDERS
from app.core.errors import InvalidInput
from app.core.redact import SECRET_NAME
from app.core.spend import tokens_value, usd_value

SECRET = SECRET_NAME  # a secret setting's name (app.core.redact)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLAIN = {"preset": "agent", "command": "command", "base_url": "base_url", "model": "model",
          "tool_policy": "tool_policy"}
_AGENT_KEYS = {"provider", *_PLAIN, "limits", "env", "secrets", "api_key"}
_WRONG_SECTION = {
    False: "names a secret (KEY, TOKEN, SECRET or PASSWORD in it): send it in agent.secrets",
    True: "is not a secret's name (no KEY, TOKEN, SECRET or PASSWORD in it): send it in agent.env",
}
MAX_VALUE = 8192  # characters of one setting


@dataclasses.dataclass
class Change:
    assigned: dict[str, object] = dataclasses.field(default_factory=dict)  # stored key → new value
    removed: set[str] = dataclasses.field(default_factory=set)  # stored keys to drop
    provider_given: bool = False
    provider: str | None = None
    budget: dict[str, object] = dataclasses.field(default_factory=dict)  # daily_tokens / daily_cost_usd
    keys: list[str] = dataclasses.field(default_factory=list)  # the API's names of what changes (audit)

    def touches_agent(self) -> bool:
        return bool(self.assigned or self.removed or self.provider_given)

    def put(self, api: str, stored: str, value: object) -> None:
        self.keys.append(api)
        if value is None or value == "":
            self.removed.add(stored)
        else:
            self.assigned[stored] = value


def _object(value: object, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidInput(field, "must be an object")
    return value


def _text(value: object, field: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(field, "must be a string or null")
    if len(value) > MAX_VALUE or "\x00" in value:
        raise InvalidInput(field, f"must be at most {MAX_VALUE} characters, with no NUL")
    return value.strip()


def _unknown(body: dict[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(body) - allowed)
    if extra:
        raise InvalidInput(f"{where}{extra[0]}", f"unknown field (known: {', '.join(sorted(allowed))})")


def parse_patch(body: object) -> Change:
    """The checked change; InvalidInput naming the first bad field."""
    body = _object(body, "body")
    _unknown(body, {"agent", "network", "budget"}, "")
    change = Change()
    if "agent" in body:
        _agent(_object(body["agent"], "agent"), change)
    if "network" in body:
        net = _object(body["network"], "network")
        if "mode" in net:
            raise InvalidInput("network.mode", "is the server's (CHATCRON_AGENT_NETWORK), set by its admin")
        _unknown(net, {"allow_hosts"}, "network.")
        if "allow_hosts" in net:
            hosts = net["allow_hosts"]
            if hosts is None:
                hosts = []
            if isinstance(hosts, str):
                hosts = [h for h in hosts.split(",")]
            if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
                raise InvalidInput("network.allow_hosts", "must be a list of hosts (host, host:port or *.suffix)")
            joined = _text(",".join(h.strip() for h in hosts if h.strip()), "network.allow_hosts")
            change.put("network.allow_hosts", "allow_hosts", joined)
    if "budget" in body:
        budget = _object(body["budget"], "budget")
        _unknown(budget, {"daily_tokens", "daily_cost_usd"}, "budget.")
        if "daily_tokens" in budget:
            change.budget["daily_tokens"] = tokens_value(budget["daily_tokens"], "budget.daily_tokens")
        if "daily_cost_usd" in budget:
            change.budget["daily_cost_usd"] = usd_value(budget["daily_cost_usd"], "budget.daily_cost_usd")
    return change


def _agent(agent: dict[str, Any], change: Change) -> None:
    _unknown(agent, _AGENT_KEYS, "agent.")
    if "provider" in agent:
        provider = agent["provider"]
        if provider is not None and provider not in PROVIDERS:
            raise InvalidInput("agent.provider", f"must be one of {', '.join(PROVIDERS)}, or null for the server's")
        change.provider_given, change.provider = True, provider
        change.keys.append("agent.provider")
    for name, stored in _PLAIN.items():
        if name in agent:
            value = _text(agent[name], f"agent.{name}")
            if name == "tool_policy" and value and value not in POLICIES:
                raise InvalidInput("agent.tool_policy", f"must be one of {', '.join(POLICIES)}")
            change.put(f"agent.{name}", stored, value)
    if "limits" in agent:
        limits = _object(agent["limits"], "agent.limits")
        _unknown(limits, {"history_budget_chars"}, "agent.limits.")
        if "history_budget_chars" in limits:
            value = limits["history_budget_chars"]
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not
                                      0 <= value <= 10_000_000):
                raise InvalidInput("agent.limits.history_budget_chars", "must be a whole number from 0 to 10,000,000")
            change.put("agent.limits.history_budget_chars", "history_budget_chars",
                       None if value is None else str(value))
    for section, secret in (("env", False), ("secrets", True)):
        if section in agent:
            for name, value in _object(agent[section], f"agent.{section}").items():
                field = f"agent.{section}.{name}"
                if not _ENV_NAME.fullmatch(name):
                    raise InvalidInput(field, "is not a variable name (letters, digits and _)")
                if bool(SECRET.search(name)) != secret:
                    raise InvalidInput(field, _WRONG_SECTION[secret])
                change.put(field, f"env.{name}", _text(value, field))
    if "api_key" in agent:
        change.put("agent.api_key", "api_key", _text(agent["api_key"], "agent.api_key"))
