"""What a preset is: an ACP agent pinned to exact npm versions (one module per preset)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path


def _no_home(home: Path, settings: Mapping[str, str]) -> None:
    return None


@dataclasses.dataclass(frozen=True)
class Preset:
    """One installable agent (contract: name, packages, argv, env, prepare_home, version)."""

    name: str
    packages: dict[str, str]  # npm name → exact version
    argv: Callable[[Path], list[str]]  # install dir → the agent's command line
    env: Callable[[Path, Path, Mapping[str, str]], dict[str, str]]  # install dir, home, settings → variables
    # home, settings → the paths it wrote (the provider gives them to a sandboxed agent's uid)
    prepare_home: Callable[[Path, Mapping[str, str]], Sequence[Path] | None] = _no_home
    main_package: str = ""  # whose version ``version`` reports (default: the first package)
    # home, session id → the session's cumulative tokens ({"input_tokens", "output_tokens",
    # "cached_tokens"}), for an agent whose ACP side reports none (codex); differenced around a turn
    session_usage: Callable[[Path, str], Mapping[str, int] | None] | None = None
    # settings → None, or InvalidInput naming the setting; ``set-provider`` calls it (prepare_home
    # checks the same before writing anything, for settings stored before)
    check: Callable[[Mapping[str, str]], None] | None = None
    # the model API hosts the egress proxy lets it reach (SPEC §12.1), besides the project's
    # env.*_BASE_URL hosts and allow_hosts
    model_hosts: tuple[str, ...] = ()

    def version(self, install_dir: Path) -> str | None:
        """The installed version of the preset's main package, or None when it is not installed."""
        return installed_version(install_dir, self.main_package or next(iter(self.packages)))


def installed_version(install_dir: Path, package: str) -> str | None:
    try:
        data = json.loads((install_dir / "node_modules" / package / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    version = data.get("version") if isinstance(data, dict) else None
    return version if isinstance(version, str) else None
