"""The ``codex`` preset: Codex through its ACP adapter, ``@zed-industries/codex-acp``.

The adapter is one native binary (from a platform package) that links Codex's core itself
(0.137.0 in adapter 0.16.0): it never runs the ``codex`` CLI, so ``@openai/codex`` is not
installed. It reads ``$CODEX_HOME/config.toml``; ``CODEX_HOME`` is ``.codex`` in the project's
agent home, where Codex also keeps its sessions (``sessions/YYYY/MM/DD/rollout-*.jsonl``) and
state databases.

What the config says, and why:
- the model endpoint is a provider table of our own (``chatcron``) whenever the project sets
  ``env.OPENAI_API_KEY`` or ``env.OPENAI_BASE_URL``: the key is sent as a bearer token, the URL
  defaults to OpenAI's. Codex's built-in ``openai`` provider would instead require an ACP
  ``authenticate`` call (which stores the key in ``auth.json``) and try WebSockets first. With
  neither set, the built-in provider is used with whatever login ``CODEX_HOME`` holds.
- ``sandbox_mode = "danger-full-access"``: the product's own sandbox is the boundary; Codex's
  (bubblewrap inside bubblewrap) is not relied on.
- ``approval_policy``: ``never`` when the project's ``tool_policy`` is ``allow`` (nothing to
  ask). Otherwise ``untrusted`` plus a rules file that makes Codex ask for the commands it
  treats as known-safe and would run unasked (``ls``, ``cat``, ``git status``…), so every shell
  command and patch reaches the product's ``session/request_permission`` handler.
- ``features.unified_exec = false``: the default exec tool never completes its ACP tool call in
  adapter 0.16.0; the plain ``shell_command`` tool does. Login shells, the shell snapshot, hosted
  web search, sub-agents and goals are off: they source profiles, reach hosts nobody configured
  or act outside the chat.
- a model Codex has no metadata for gets a one-entry model catalog; without it Codex sends
  "Model metadata for … not found" to the chat as agent text at the start of every session.
"""

from __future__ import annotations

import json
import os
import platform
import re
from collections.abc import Mapping
from pathlib import Path

from app.agents.cli.base import Preset
from app.core.errors import InvalidInput

ADAPTER = "@zed-industries/codex-acp"
VERSION = "0.16.0"
PROVIDER_ID = "chatcron"
OPENAI_URL = "https://api.openai.com/v1"
KEY_VARIABLE = "OPENAI_API_KEY"
CATALOG = "chatcron-models.json"  # relative paths in config.toml resolve against CODEX_HOME
RULES = Path("rules") / "chatcron.rules"
# Slugs Codex core 0.137.0 (inside adapter 0.16.0) carries metadata for.
BUNDLED_MODELS = frozenset({"gpt-5.5", "gpt-5.4", "gpt-5.4-mini", "gpt-5.3-codex", "gpt-5.2"})
# Programs Codex runs without asking under ``untrusted`` (its is_known_safe_command list, Linux).
KNOWN_SAFE = ("base64", "cat", "cd", "cut", "echo", "expr", "false", "find", "git", "grep", "head", "id",
              "ls", "nl", "numfmt", "paste", "pwd", "rev", "rg", "sed", "seq", "stat", "tac", "tail", "tr",
              "true", "uname", "uniq", "wc", "which", "whoami")
FALLBACK_CONTEXT_WINDOW = 272000
INSTRUCTIONS = (
    "You are a coding agent working in a project's workspace for the people in a chat. Run shell "
    "commands with the shell_command tool (they run in the workspace); look before you change "
    "anything, keep changes to what was asked, and say what you did and what you found. Answer "
    "in concise Markdown."
)
_PLATFORM = {"linux": "linux", "darwin": "darwin", "windows": "win32"}
_ARCH = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}


class AdapterMissing(RuntimeError):
    """The platform package with codex-acp's native binary is not installed."""


def adapter_binary(install_dir: Path) -> Path:
    """codex-acp's native binary (``@zed-industries/codex-acp-<os>-<arch>``); its JavaScript
    wrapper only finds this file and runs it, so it is run directly."""
    system = _PLATFORM.get(platform.system().lower(), platform.system().lower())
    arch = _ARCH.get(platform.machine().lower(), platform.machine().lower())
    name = "codex-acp.exe" if system == "win32" else "codex-acp"
    path = install_dir / "node_modules" / "@zed-industries" / f"codex-acp-{system}-{arch}" / "bin" / name
    if path.is_file() and os.access(path, os.X_OK):
        return path
    raise AdapterMissing(f"codex-acp's binary for {system}-{arch} is not at {path}: "
                         "reinstall with `python -m app.manage install-agent codex`")


def codex_home(home: Path) -> Path:
    return home / ".codex"


def _argv(install_dir: Path) -> list[str]:
    return [str(adapter_binary(install_dir))]


def _env(install_dir: Path, home: Path, settings: Mapping[str, str]) -> dict[str, str]:
    return {"CODEX_HOME": str(codex_home(home)), "NO_COLOR": "1"}


def _string(value: str) -> str:
    """A TOML basic string (JSON's escapes are all valid TOML)."""
    return json.dumps(value, ensure_ascii=False)


def _model(settings: Mapping[str, str]) -> str | None:
    model = settings.get("model")
    if model is None:
        return None
    if not model.strip() or any(ord(c) < 32 or c == "\x7f" for c in model):
        raise InvalidInput("model", "must be a model name without control characters")
    return model.strip()


def _base_url(settings: Mapping[str, str]) -> str | None:
    url = settings.get("env.OPENAI_BASE_URL")
    if url is None:
        return None
    if not url.startswith(("http://", "https://")) or any(c.isspace() for c in url):
        raise InvalidInput("env.OPENAI_BASE_URL", "must be an http:// or https:// URL")
    return url.rstrip("/")


def config_toml(settings: Mapping[str, str]) -> str:
    """The whole ``config.toml`` for the project's settings (rewritten before every agent start)."""
    model, base_url = _model(settings), _base_url(settings)
    has_key = f"env.{KEY_VARIABLE}" in settings
    ask = settings.get("tool_policy") != "allow"
    lines = ["# Written by chatcron before every agent start (app/agents/cli/codex.py): edits are lost."]
    if model:
        lines.append(f"model = {_string(model)}")
        if model not in BUNDLED_MODELS:
            lines.append(f"model_catalog_json = {_string(CATALOG)}")
    if base_url or has_key:
        lines.append(f"model_provider = {_string(PROVIDER_ID)}")
    lines += [
        'sandbox_mode = "danger-full-access"',
        f'approval_policy = "{"untrusted" if ask else "never"}"',
        "allow_login_shell = false",
        'web_search = "disabled"',
        "",
        "[features]",
        "unified_exec = false",
        "shell_snapshot = false",
        "multi_agent = false",
        "goals = false",
    ]
    if base_url or has_key:
        lines += ["", f"[model_providers.{PROVIDER_ID}]", f"name = {_string(PROVIDER_ID)}",
                  f"base_url = {_string(base_url or OPENAI_URL)}", 'wire_api = "responses"']
        if has_key:
            lines.append(f"env_key = {_string(KEY_VARIABLE)}")
    return "\n".join(lines) + "\n"


def model_catalog(model: str) -> dict[str, object]:
    """A catalog entry for a model Codex does not know: conservative, like Codex's own fallback
    (no reasoning parameters, no parallel calls, no freeform patch tool), so any Responses API
    server accepts the requests; our own short base instructions."""
    return {"models": [{
        "slug": model, "display_name": model, "description": "configured in chatcron",
        "visibility": "list", "supported_in_api": True, "priority": 0,
        "shell_type": "shell_command", "supported_reasoning_levels": [],
        "supports_reasoning_summaries": False, "support_verbosity": False,
        "supports_parallel_tool_calls": False, "experimental_supported_tools": [],
        "truncation_policy": {"mode": "tokens", "limit": 10000},
        # Codex's fallback window; without one, codex-acp sends no usage_update at all.
        "context_window": FALLBACK_CONTEXT_WINDOW,
        "base_instructions": INSTRUCTIONS,
    }]}


def rules_text() -> str:
    """Codex exec-policy rules: ask for every program Codex would otherwise run unasked."""
    programs = ", ".join(_string(p) for p in KNOWN_SAFE)
    return ("# Written by chatcron (app/agents/cli/codex.py): every command reaches the product's tool policy.\n"
            f'prefix_rule(pattern=[[{programs}]], decision="prompt")\n')


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


def _remove(path: Path) -> None:
    if path.is_file() or path.is_symlink():
        path.unlink()


def _prepare_home(home: Path, settings: Mapping[str, str]) -> list[Path]:
    """Write ``$CODEX_HOME/config.toml`` (and the catalog, the rules) for the project's settings.

    Codex refuses to start when ``CODEX_HOME`` does not exist. The rules file must be absent when
    nothing may ask: under ``approval_policy = "never"`` a rule that asks rejects the command.
    """
    config = config_toml(settings)  # validates before anything is written
    folder = codex_home(home)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    written = [folder]
    model = _model(settings)
    if model and model not in BUNDLED_MODELS:
        written.append(_write(folder / CATALOG, json.dumps(model_catalog(model), indent=1) + "\n"))
    else:
        _remove(folder / CATALOG)
    if settings.get("tool_policy") != "allow":
        written.append(_write(folder / RULES, rules_text()))
    else:
        _remove(folder / RULES)
    written.append(_write(folder / "config.toml", config))
    return written


_SESSION_ID = re.compile(r"[0-9A-Za-z-]{8,64}")
TAIL_BYTES = 256 * 1024


def _last_token_count(path: Path) -> dict[str, object] | None:
    """The ``total_token_usage`` of the last ``token_count`` event in a rollout file; the tail is
    read first (the newest event is near the end), the whole file only when the tail has none."""
    size = path.stat().st_size
    for start in ((max(0, size - TAIL_BYTES), 0) if size > TAIL_BYTES else (0,)):
        with path.open("rb") as f:
            f.seek(start)
            lines = f.read().splitlines()
        for line in reversed(lines[1:] if start else lines):  # a cut first line is not JSON
            if b'"token_count"' not in line:
                continue
            try:
                info = json.loads(line)["payload"]["info"]
                total = info["total_token_usage"]
            except (ValueError, KeyError, TypeError):
                continue
            if isinstance(total, dict):
                return total
    return None


def session_usage(home: Path, session_id: str) -> dict[str, int] | None:
    """The session's cumulative tokens as Codex recorded them in its rollout file
    (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<session id>.jsonl``), or None.

    codex-acp 0.16.0 reports no usage on the prompt's answer and its ``usage_update`` carries only
    how full the context window is, so a turn's tokens are the difference of these totals before
    and after it; during the turn they are read again on every ``usage_update`` (one per model
    response) and every tool-call update, and at least every second (``acp_meter``), so a fire's cap is
    checked while the turn runs. ``input_tokens`` includes the cached ones (OpenAI's convention),
    so a budget's tokens (``Usage.tokens``) count cached input.
    """
    if not _SESSION_ID.fullmatch(session_id):
        return None
    files = sorted((codex_home(home) / "sessions").glob(f"*/*/*/rollout-*-{session_id}.jsonl"), reverse=True)
    for path in files:
        try:
            total = _last_token_count(path)
        except OSError:
            continue
        if total is not None:
            counts = {"input_tokens": total.get("input_tokens"), "output_tokens": total.get("output_tokens"),
                      "cached_tokens": total.get("cached_input_tokens")}
            return {k: v for k, v in counts.items() if isinstance(v, int) and not isinstance(v, bool) and v >= 0}
    return None


PRESET = Preset(
    name="codex",
    model_hosts=("api.openai.com:443",),
    packages={ADAPTER: VERSION},
    argv=_argv,
    env=_env,
    prepare_home=_prepare_home,
    session_usage=session_usage,
    check=config_toml,
)
