"""Choose a project's provider: its own setting, else the server default (CHATCRON_PROVIDER).

A project's ``provider_settings`` is a JSON object; its values win over the server's:

- ``command`` (command provider): the command line, else ``CHATCRON_PROVIDER_COMMAND``;
- ``base_url``, ``model``, ``api_key`` (openai provider): else ``CHATCRON_OPENAI_BASE_URL``,
  ``CHATCRON_OPENAI_MODEL``, ``CHATCRON_OPENAI_API_KEY`` — but the server's key is sent only to
  the server's own base URL;
- ``history_budget_chars`` (openai and acp providers): a whole number >= 0, default 24,000;
- ``agent``, ``tool_policy``, ``env.NAME`` (acp provider, with ``command`` and ``model``): see
  :mod:`app.agents.providers.acp`;
- ``allow_hosts`` (command and acp providers, sandboxed): hosts the agent may reach through the
  egress proxy besides its model API (``host``, ``host:port``, ``*.suffix``; SPEC §12.1).

An empty string counts as unset. Unknown keys, wrong types and invalid JSON fail the turn with a
ProviderError naming the project and the setting, so a typo never silently falls back to the
server's values.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from app.agents import egress
from app.agents.cli import presets
from app.agents.providers import openai
from app.agents.providers.acp_settings import POLICIES, AcpConfig
from app.agents.providers.command import NO_COMMAND, CommandProvider, split_command
from app.agents.providers.demo import DemoProvider
from app.core.config import Settings
from app.core.errors import InvalidInput
from app.core.models import Project
from app.core.ports import Provider, ProviderError

if TYPE_CHECKING:
    from app.agents.providers.acp_pool import AgentPool

# key → expected type; one table for every provider so a project can switch provider and keep its values
SETTING_TYPES: dict[str, type] = {
    "command": str, "base_url": str, "model": str, "api_key": str, "history_budget_chars": int,
    "agent": str, "tool_policy": str, "allow_hosts": str,
}
ENV_PREFIX = "env."  # env.NAME: a variable of the acp agent's environment
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def project_settings(project: Project | None) -> dict[str, object]:
    """The project's provider settings, validated; raises ProviderError naming the bad setting."""
    if project is None:
        return {}
    where = f"project {project.id} setting provider_settings"
    try:
        value = json.loads(project.provider_settings or "{}")
    except json.JSONDecodeError as exc:
        raise ProviderError(f"{where} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if not isinstance(value, dict):
        raise ProviderError(f"{where} must be a JSON object")
    return _validated(value, where)


def _validated(value: dict[str, object], where: str) -> dict[str, object]:
    for key, item in value.items():
        if key.startswith(ENV_PREFIX):
            if not _ENV_NAME.fullmatch(key[len(ENV_PREFIX):]):
                raise ProviderError(f"{where}: {key!r} is not env.NAME with a variable name (letters, digits, _)")
            if not isinstance(item, str):
                raise ProviderError(f"{where}: {key} must be a string")
            continue
        expected = SETTING_TYPES.get(key)
        if expected is None:
            known = ", ".join(SETTING_TYPES)
            raise ProviderError(f"{where}: unknown key {key!r} (known: {known})")
        if not isinstance(item, expected) or isinstance(item, bool):
            raise ProviderError(f"{where}: {key} must be a {'string' if expected is str else 'whole number'}")
        if expected is int and item < 0:
            raise ProviderError(f"{where}: {key} must be at least 0")
        if key == egress.ALLOW_HOSTS:
            egress.policy_of({key: item})  # host, host:port or *.suffix, each (SPEC §12.1)
    return {key: item.strip() if isinstance(item, str) else item for key, item in value.items()}


def _command(settings: Settings, options: Mapping[str, object]) -> Provider:
    line = str(options.get("command") or "") or settings.provider_command
    if not line.strip():
        raise ProviderError(NO_COMMAND)
    return CommandProvider(split_command(line), settings, egress=egress.policy_of(options))


def _openai(settings: Settings, options: Mapping[str, object]) -> Provider:
    config = openai.settings_from(
        options, base_url=settings.openai_base_url, model=settings.openai_model,
        api_key=settings.openai_api_key,
        read_timeout_seconds=min(openai.READ_TIMEOUT_SECONDS, float(settings.run_timeout_seconds)))
    return openai.OpenAIProvider(config)


def checked_settings(provider: str, raw: Mapping[str, str]) -> dict[str, object]:
    """What ``set-provider`` stores: the admin's KEY=VALUE strings, whole numbers parsed, checked as a
    turn checks them (whether a preset is installed aside); raises InvalidInput naming the setting."""
    values: dict[str, object] = dict(raw)
    for key, text in raw.items():
        if SETTING_TYPES.get(key) is int:
            try:
                values[key] = int(text.strip())
            except ValueError:
                raise InvalidInput(f"--setting {key}", f"{text!r} is not a whole number") from None
    try:
        options = _validated(values, "set-provider")
        if provider == "acp":
            agent, _, _ = _acp_choices(options)
            check = presets.PRESETS[agent].check if agent else None
            if check is not None:  # the preset's own settings (e.g. codex's base URL)
                check({k: v for k, v in options.items() if isinstance(v, str)})
    except ProviderError as exc:
        raise InvalidInput("--setting", str(exc)) from None
    return values


def _acp_choices(options: Mapping[str, object]) -> tuple[str, str, str]:
    """(agent, command, tool_policy) of acp settings; raises ProviderError naming the setting."""
    agent, command = str(options.get("agent") or ""), str(options.get("command") or "")
    if bool(agent) == bool(command):
        raise ProviderError("acp settings: set exactly one of agent (a preset: "
                            f"{', '.join(sorted(presets.PRESETS))}) or command (an ACP agent command line)")
    if agent and agent not in presets.PRESETS:
        raise ProviderError(f"acp setting agent: unknown preset {agent!r} (known: "
                            f"{', '.join(sorted(presets.PRESETS))})")
    policy = str(options.get("tool_policy") or "allow")
    if policy not in POLICIES:
        raise ProviderError(f"acp setting tool_policy: {policy!r} is not one of {', '.join(POLICIES)}")
    return agent, command, policy


def acp_config(settings: Settings, options: Mapping[str, object]) -> AcpConfig:
    """The acp provider's settings, checked; raises ProviderError naming the setting."""
    agent, command, policy = _acp_choices(options)
    preset = install_dir = None
    if agent:
        preset = presets.PRESETS[agent]
        try:
            install_dir = presets.require_installed(preset, settings.agents_dir)
        except presets.AgentInstallError as exc:
            raise ProviderError(str(exc)) from None
        argv = tuple(preset.argv(install_dir))
    else:
        argv = split_command(command)
    env = {key[len(ENV_PREFIX):]: str(item) for key, item in options.items() if key.startswith(ENV_PREFIX)}
    budget = options.get("history_budget_chars")
    return AcpConfig(argv=argv, env=env, policy=policy, model=str(options.get("model") or "") or None,
                     history_budget=budget if isinstance(budget, int) else openai.DEFAULT_HISTORY_BUDGET_CHARS,
                     preset=preset, install_dir=install_dir,
                     options={k: v for k, v in options.items() if isinstance(v, str)},
                     egress=egress.policy_of(options, preset.model_hosts if preset is not None else ()))


class ProviderFactory:
    """project → provider, bound to these settings; raises ProviderError when the chosen provider
    is unknown or misconfigured (the turn then fails with that message). Owns this process's warm
    ACP agents: ``close`` ends them."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._agents = None  # the AgentPool, made (and the ACP SDK imported) by the first acp turn

    @property
    def agents(self) -> AgentPool:  # imported late: the SDK is heavy to load
        if self._agents is None:
            from app.agents.providers.acp_pool import AgentPool

            self._agents = AgentPool(max_processes=self.settings.max_agent_processes,
                                     idle_seconds=self.settings.agent_idle_seconds,
                                     cancel_grace_seconds=self.settings.agent_cancel_grace_seconds)
        return self._agents

    def __call__(self, project: Project | None) -> Provider:
        settings = self.settings
        name = (project.provider if project and project.provider else None) or settings.provider
        if name == "demo":
            return DemoProvider(settings.demo_word_delay_seconds, settings)
        if name == "command":
            return _command(settings, project_settings(project))
        if name == "openai":
            return _openai(settings, project_settings(project))
        if name == "acp":
            config = acp_config(settings, project_settings(project))
            from app.agents.providers.acp import AcpProvider  # the ACP SDK, loaded by the first acp turn

            return AcpProvider(config, self.agents, settings)
        raise ProviderError(f"unknown provider {name!r}")

    def close(self) -> None:
        if self._agents is not None:
            self._agents.close()


def make_provider_factory(settings: Settings) -> ProviderFactory:
    return ProviderFactory(settings)
