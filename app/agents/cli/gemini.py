"""The ``gemini`` preset: Gemini CLI in its ACP mode (``gemini --acp`` in 0.61.0; the older
``--experimental-acp`` is a deprecated alias).

Gemini CLI keeps its settings, sessions and login in ``~/.gemini`` (``GEMINI_CLI_HOME`` set to
the agent home, so a HOME from elsewhere cannot redirect it). ``session/new`` fails with
"Gemini API key is missing or not configured" unless a key (``env.GEMINI_API_KEY``, put into
the agent's environment by the provider) or another login exists; starting a session makes no
model call. At start, without settings, it looks for updates and sends usage statistics
(``play.googleapis.com``): ``prepare_home`` turns those off, in a settings file of the
product's own (``GEMINI_CLI_SYSTEM_SETTINGS_PATH``, the layer that wins over a workspace's
``.gemini/``) and in the user's ``~/.gemini/settings.json``.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from app.agents.cli.base import Preset

PACKAGE = "@google/gemini-cli"
VERSION = "0.61.0"
SYSTEM_SETTINGS = "chatcron-settings.json"

# settings.json values the product owns: no update checks, no usage statistics, no telemetry.
QUIET: dict[str, dict[str, Any]] = {
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},  # 0.61.0's names
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
}


def _argv(install_dir: Path) -> list[str]:
    script = install_dir / "node_modules" / PACKAGE / "bundle" / "gemini.js"
    return [shutil.which("node") or "node", str(script), "--acp"]


def _env(install_dir: Path, home: Path, settings: Mapping[str, str]) -> dict[str, str]:
    env = {
        "GEMINI_CLI_HOME": str(home),
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(system_settings_path(home)),
        # Gemini CLI otherwise re-executes itself in a second node process to raise its heap limit.
        "GEMINI_CLI_NO_RELAUNCH": "true",
        "NO_COLOR": "1",
    }
    model = settings.get("model")
    if model and model.strip():
        env["GEMINI_MODEL"] = model.strip()
    return env


def system_settings(settings: Mapping[str, str]) -> dict[str, Any]:
    """The product's settings file: Gemini CLI's "system" layer, which wins over the user's
    ``~/.gemini/settings.json`` (left to an admin) and over a workspace's ``.gemini/``."""
    values: dict[str, Any] = {table: dict(keys) for table, keys in QUIET.items()}
    if "env.GEMINI_API_KEY" in settings:
        # With a key configured, use it: a login choice left in the user's settings would win and fail.
        values["security"] = {"auth": {"selectedType": "gemini-api-key"}}
    return values


def system_settings_path(home: Path) -> Path:
    return home / ".gemini" / SYSTEM_SETTINGS


def _write_json(path: Path, value: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def user_settings(existing: Mapping[str, Any]) -> dict[str, Any]:
    """``existing`` with the QUIET keys set (their tables merged, everything else kept)."""
    merged = dict(existing)
    for table, keys in QUIET.items():
        current = merged.get(table)
        merged[table] = {**(current if isinstance(current, dict) else {}), **keys}
    return merged


def _prepare_home(home: Path, settings: Mapping[str, str]) -> list[Path]:
    """Write the product's system layer, and the QUIET keys into ``~/.gemini/settings.json`` too:
    0.61.0 reads the usage-statistics switch from the user's file only (with it only in the
    system layer, every start still sends statistics). A user file that is not plain JSON (Gemini
    CLI allows comments) is an admin's and is left as it is."""
    written = [_write_json(system_settings_path(home), system_settings(settings))]
    user = home / ".gemini" / "settings.json"
    try:
        existing = json.loads(user.read_text(encoding="utf-8"))
    except FileNotFoundError:
        existing = {}
    except (OSError, ValueError):
        return written
    if isinstance(existing, dict):
        written.append(_write_json(user, user_settings(existing)))
    return written


PRESET = Preset(
    name="gemini",
    model_hosts=("generativelanguage.googleapis.com:443", "cloudcode-pa.googleapis.com:443",
                 "oauth2.googleapis.com:443"),
    packages={PACKAGE: VERSION},
    argv=_argv,
    env=_env,
    prepare_home=_prepare_home,
)
