"""The acp provider's settings as checked values: light (no ACP SDK), so the registry and the
admin CLI load without it; the SDK is imported when an acp turn first runs."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from app.agents.cli.base import Preset
from app.agents.egress.policy import Policy
from app.agents.providers.acp_policy import ALLOW, ASK, DENY

POLICIES = (ALLOW, DENY, ASK)


@dataclasses.dataclass(frozen=True)
class AcpConfig:
    argv: tuple[str, ...]
    env: Mapping[str, str]  # the project's env.* settings
    policy: str = ALLOW
    model: str | None = None
    history_budget: int = 24_000
    preset: Preset | None = None
    install_dir: Path | None = None
    options: Mapping[str, str] = dataclasses.field(default_factory=dict)  # all string settings (prepare_home)
    egress: Policy = dataclasses.field(default_factory=lambda: Policy(()))  # where it may connect (SPEC §12.1)
