"""Choose a project's provider: its own setting, else the server default (CHATCRON_PROVIDER).

A project's ``provider_settings`` is a JSON object; its values win over the server's:

- ``command`` (command provider): the command line, else ``CHATCRON_PROVIDER_COMMAND``;
- ``base_url``, ``model``, ``api_key`` (openai provider): else ``CHATCRON_OPENAI_BASE_URL``,
  ``CHATCRON_OPENAI_MODEL``, ``CHATCRON_OPENAI_API_KEY`` — but the server's key is sent only to
  the server's own base URL;
- ``history_budget_chars`` (openai provider): a whole number >= 0, default 24,000.

An empty string counts as unset. Unknown keys, wrong types and invalid JSON fail the turn with a
ProviderError naming the project and the setting, so a typo never silently falls back to the
server's values.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from app.core.config import Settings
from app.core.models import Project
from app.core.providers import openai
from app.core.providers.base import Provider, ProviderError
from app.core.providers.command import NO_COMMAND, CommandProvider, split_command
from app.core.providers.demo import DemoProvider

# key → expected type; one table for every provider so a project can switch provider and keep its values
SETTING_TYPES: dict[str, type] = {
    "command": str, "base_url": str, "model": str, "api_key": str, "history_budget_chars": int,
}


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
    for key, item in value.items():
        expected = SETTING_TYPES.get(key)
        if expected is None:
            known = ", ".join(SETTING_TYPES)
            raise ProviderError(f"{where}: unknown key {key!r} (known: {known})")
        if not isinstance(item, expected) or isinstance(item, bool):
            raise ProviderError(f"{where}: {key} must be a {'string' if expected is str else 'whole number'}")
        if expected is int and item < 0:
            raise ProviderError(f"{where}: {key} must be at least 0")
    return {key: item.strip() if isinstance(item, str) else item for key, item in value.items()}


def _command(settings: Settings, options: Mapping[str, object]) -> Provider:
    line = str(options.get("command") or "") or settings.provider_command
    if not line.strip():
        raise ProviderError(NO_COMMAND)
    return CommandProvider(split_command(line), settings)


def _openai(settings: Settings, options: Mapping[str, object]) -> Provider:
    config = openai.settings_from(
        options, base_url=settings.openai_base_url, model=settings.openai_model,
        api_key=settings.openai_api_key,
        read_timeout_seconds=min(openai.READ_TIMEOUT_SECONDS, float(settings.run_timeout_seconds)))
    return openai.OpenAIProvider(config)


def make_provider_factory(settings: Settings) -> Callable[[Project | None], Provider]:
    """A function project → provider, bound to these settings; it raises ProviderError when the
    chosen provider is unknown or misconfigured (the turn then fails with that message)."""
    def factory(project: Project | None) -> Provider:
        name = (project.provider if project and project.provider else None) or settings.provider
        if name == "demo":
            return DemoProvider(settings.demo_word_delay_seconds, settings)
        if name == "command":
            return _command(settings, project_settings(project))
        if name == "openai":
            return _openai(settings, project_settings(project))
        raise ProviderError(f"unknown provider {name!r}")

    return factory
