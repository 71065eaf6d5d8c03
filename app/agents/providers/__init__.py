"""Agent providers: one protocol, one provider per module."""

from __future__ import annotations

from app.core.ports import Provider, ProviderError, TurnRequest

__all__ = ["Provider", "ProviderError", "TurnRequest"]
