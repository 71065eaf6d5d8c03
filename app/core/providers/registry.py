"""Choose a project's provider: its own setting, else the server default (CHATCRON_PROVIDER)."""

from __future__ import annotations

from app.core.config import PROVIDERS, Settings
from app.core.models import Project
from app.core.providers.base import Provider, ProviderError
from app.core.providers.demo import DemoProvider


def make_provider_factory(settings: Settings):  # noqa: ANN201 - returns a ProviderFactory
    """A function project → provider, bound to these settings."""

    def factory(project: Project | None) -> Provider:
        name = (project.provider if project and project.provider else None) or settings.provider
        if name == "demo":
            return DemoProvider(settings.demo_word_delay_seconds)
        if name in PROVIDERS:
            raise ProviderError(f"provider {name!r} is not available in this version")
        raise ProviderError(f"unknown provider {name!r}")

    return factory
