"""The project settings page's form (SPEC §18): the settings object as its inputs show it, and back to
the partial PATCH body :func:`app.projects.settings.change` takes — only what changed.

Pure: no database, no Reflex. Typed text stays text until it is sent; a number the page cannot read is
sent as typed, so the service's own error names the field (``budget.daily_tokens``) and the page shows
it beside that input (:func:`slot_of`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from app.core.errors import InvalidInput
from app.projects.patch import SECRET

PROVIDERS = {"": "Server default", "demo": "Demo agent", "command": "Command", "openai": "OpenAI-compatible API",
             "acp": "ACP agent (Claude Code, Codex, …)"}
POLICIES = {"allow": "Allow every tool", "ask": "Ask me (approval)", "deny": "Deny every tool"}
PLAIN = ("preset", "model", "command", "base_url")  # the agent's text settings, by their API names
# Every input the page keeps as typed text (``SettingsState.set_field``).
FIELDS = ("provider", *PLAIN, "tool_policy", "history_budget_chars", "daily_tokens", "daily_cost_usd",
          "new_env_name", "new_env_value", "new_secret_name", "new_host")
# The API's field → the input an error is shown beside ("" for the form's own line).
SLOTS = {"agent.provider": "provider", "agent.preset": "preset", "agent.model": "model", "agent.command": "command",
         "agent.base_url": "base_url", "agent.tool_policy": "tool_policy",
         "agent.limits.history_budget_chars": "history_budget_chars", "agent.limits": "history_budget_chars",
         "agent.api_key": "secrets", "network.allow_hosts": "allow_hosts",
         "budget.daily_tokens": "daily_tokens", "budget.daily_cost_usd": "daily_cost_usd"}
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_SEPARATORS = re.compile(r"[\s,_]")
_WHOLE = re.compile(r"[+-]?\d{1,30}")
_AMOUNT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)")


@dataclasses.dataclass(frozen=True)
class Form:
    """What the page's inputs hold (every value as typed; env as (name, value) pairs in order)."""

    provider: str = ""
    preset: str = ""
    model: str = ""
    command: str = ""
    base_url: str = ""
    tool_policy: str = "allow"
    history_budget_chars: str = ""
    daily_tokens: str = ""
    daily_cost_usd: str = ""
    env: tuple[tuple[str, str], ...] = ()
    allow_hosts: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Secrets:
    """The write-only side: new values typed for secrets (never shown back), the ones to remove."""

    typed: Mapping[str, str] = dataclasses.field(default_factory=dict)
    removed: frozenset[str] = frozenset()
    api_key: str = ""
    api_key_removed: bool = False


def _text(value: object) -> str:
    return "" if value is None else str(value)


def cost_text(value: object) -> str:
    """A stored dollar amount as the input shows it: ``0.5``, ``12`` (never rounded into another)."""
    if value is None:
        return ""
    number = float(value)  # type: ignore[arg-type]
    short = f"{number:.6f}".rstrip("0").rstrip(".")
    return short if float(short) == number else repr(number)


def form_of(view: Mapping[str, Any]) -> Form:
    """The inputs' values for a settings object of :func:`app.projects.settings.view`."""
    agent, budget = view["agent"], view["budget"]
    return Form(provider=_text(agent.get("provider")), **{name: _text(agent.get(name)) for name in PLAIN},
                tool_policy=_text(agent.get("tool_policy")) or "allow",
                history_budget_chars=_text((agent.get("limits") or {}).get("history_budget_chars")),
                daily_tokens=_text(budget.get("daily_tokens")), daily_cost_usd=cost_text(budget.get("daily_cost_usd")),
                env=tuple((str(k), str(v)) for k, v in (agent.get("env") or {}).items()),
                allow_hosts=tuple(view["network"].get("allow_hosts") or ()))


def whole(text: str) -> int | str | None:
    """A typed whole number ("12,000" too); None when empty; anything else as typed (the service
    refuses it naming the field)."""
    raw = _SEPARATORS.sub("", text)
    if not raw:
        return None
    return int(raw) if _WHOLE.fullmatch(raw) else text.strip()


def amount(text: str) -> float | str | None:
    """A typed amount in US dollars ("0.50", "$2"); None when empty; anything else as typed."""
    raw = _SEPARATORS.sub("", text).removeprefix("$")
    if not raw:
        return None
    return float(raw) if _AMOUNT.fullmatch(raw) else text.strip()


def _agent(old: Form, new: Form, secrets: Secrets) -> dict[str, Any]:
    agent: dict[str, Any] = {}
    if new.provider != old.provider:
        agent["provider"] = new.provider or None
    for name in (*PLAIN, "tool_policy"):
        if getattr(new, name).strip() != getattr(old, name).strip():
            agent[name] = getattr(new, name).strip() or None
    if new.history_budget_chars.strip() != old.history_budget_chars.strip():
        agent["limits"] = {"history_budget_chars": whole(new.history_budget_chars)}
    before, after = dict(old.env), dict(new.env)
    env: dict[str, str | None] = {name: value for name, value in after.items() if before.get(name) != value}
    env |= {name: None for name in before if name not in after}
    if env:
        agent["env"] = env
    # a removal wins over a value typed before Remove was pressed: "removed on Save" means removed
    chosen = {k: v for k, v in secrets.typed.items() if v.strip()} | {name: None for name in sorted(secrets.removed)}
    if chosen:
        agent["secrets"] = chosen
    if secrets.api_key_removed:
        agent["api_key"] = None
    elif secrets.api_key.strip():
        agent["api_key"] = secrets.api_key
    return agent


def patch_of(old: Form, new: Form, secrets: Secrets = Secrets()) -> dict[str, Any]:
    """The partial PATCH body: only the sections and keys whose value changed ({} for nothing)."""
    body: dict[str, Any] = {}
    agent = _agent(old, new, secrets)
    if agent:
        body["agent"] = agent
    if [h.strip() for h in new.allow_hosts] != [h.strip() for h in old.allow_hosts]:
        body["network"] = {"allow_hosts": [h.strip() for h in new.allow_hosts if h.strip()]}
    budget: dict[str, Any] = {}
    if new.daily_tokens.strip() != old.daily_tokens.strip():
        budget["daily_tokens"] = whole(new.daily_tokens)
    if new.daily_cost_usd.strip() != old.daily_cost_usd.strip():
        budget["daily_cost_usd"] = amount(new.daily_cost_usd)
    if budget:
        body["budget"] = budget
    return body


def changed_words(body: Mapping[str, Any]) -> str:
    """``model, tool policy, daily tokens``: what a save changed, for the page's notice."""
    words = []
    for section in ("agent", "network", "budget"):
        for key, value in (body.get(section) or {}).items():
            if key in ("env", "secrets"):
                words.extend(f"{'secret' if key == 'secrets' else 'env'} {name}" for name in value)
            elif key == "limits":
                words.append("history budget")
            else:
                words.append(key.replace("_", " "))
    return ", ".join(words)


def slot_of(field: str) -> str:
    """Which input an error on the API's ``field`` is shown beside ("" for the form's own line)."""
    if field in SLOTS:
        return SLOTS[field]
    if field.startswith("agent.env."):
        return "env"
    if field.startswith("agent.secrets."):
        return "secrets"
    return ""


def _sentence(field: str, text: str) -> str:
    text = text.replace("(null: no limit)", "(leave it empty for no limit)")
    for prefix in ("agent.env.", "agent.secrets."):
        if field.startswith(prefix):
            return f"{field.removeprefix(prefix)}: {text}"
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", ")")) else text + "."


def message_of(exc: InvalidInput) -> str:
    """The error as a sentence beside its input: ``Must be a whole number…``; a variable's error names
    the variable (``OPENAI_API_KEY: must be…``)."""
    return _sentence(exc.field, exc.message.removeprefix(f"{exc.field}: "))


_NAMED = re.compile(r"((?:agent|network|budget)\.[A-Za-z_.]*[A-Za-z0-9_]): (.+)", re.DOTALL)


def placed(exc: InvalidInput | Exception) -> tuple[str, str]:
    """(input, sentence) of a refused save: beside the input its field names — an InvalidInput's
    field, or another refusal whose message starts with one (``network.allow_hosts: 10.0.0.7 is a
    private address…``) — else on the form's own line ("")."""
    if isinstance(exc, InvalidInput):
        return slot_of(exc.field), message_of(exc)
    text = str(exc)
    named = _NAMED.fullmatch(text)
    if named and slot_of(named.group(1)):
        return slot_of(named.group(1)), _sentence(named.group(1), named.group(2))
    return "", text


def new_name_problem(name: str, secret: bool, taken: set[str]) -> str:
    """Why a variable cannot be added under ``name`` ("" when it can): a variable's name, in the
    right list (a name holding KEY, TOKEN, SECRET or PASSWORD is a secret), not there already."""
    if not ENV_NAME.fullmatch(name):
        return "A variable's name is letters, digits and _ (not starting with a digit)."
    if bool(SECRET.search(name)) != secret:
        return (f"{name} names a secret (KEY, TOKEN, SECRET or PASSWORD in it): add it under Secrets." if not secret
                else f"{name} is not a secret's name (no KEY, TOKEN, SECRET or PASSWORD in it): add it under "
                     "Environment.")
    if name in taken:
        return f"{name} is there already."
    return ""


def host_problem(host: str, hosts: tuple[str, ...]) -> str:
    """Why ``host`` cannot be added to the allowed hosts ("" when it can; the service checks its form)."""
    if not host or any(c.isspace() or c == "," for c in host):
        return "A host is one name: host, host:port or *.suffix."
    if host in hosts:
        return f"{host} is allowed already."
    return ""
