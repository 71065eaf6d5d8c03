"""The codex preset: its command line, environment and the CODEX_HOME it writes (parsed back as TOML)."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

from app.agents.cli import codex
from app.agents.cli.presets import PRESETS
from app.core.errors import InvalidInput

BINARY = Path("node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp")


def config(settings: dict[str, str]) -> dict:
    return tomllib.loads(codex.config_toml(settings))


def fake_install(install_dir: Path) -> Path:
    path = install_dir / BINARY
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x7fELF")
    path.chmod(0o755)
    return path


def test_only_the_adapter_is_pinned_it_carries_codex_itself() -> None:
    assert PRESETS["codex"] is codex.PRESET
    assert codex.PRESET.packages == {"@zed-industries/codex-acp": "0.16.0"}


@pytest.mark.skipif(os.uname().machine != "x86_64" or os.uname().sysname != "Linux", reason="linux-x64 layout")
def test_argv_is_the_platform_binary(tmp_path: Path) -> None:
    path = fake_install(tmp_path)
    assert codex.PRESET.argv(tmp_path) == [str(path)]


def test_a_missing_binary_says_how_to_install(tmp_path: Path) -> None:
    with pytest.raises(codex.AdapterMissing, match="install-agent codex"):
        codex.PRESET.argv(tmp_path)


def test_env_points_codex_home_into_the_agent_home(tmp_path: Path) -> None:
    env = codex.PRESET.env(tmp_path / "install", tmp_path / "home", {"env.OPENAI_API_KEY": "sk-x"})
    assert env["CODEX_HOME"] == str(tmp_path / "home" / ".codex")
    assert "OPENAI_API_KEY" not in env, "project env.* settings are the provider's to merge"


def test_fixed_keys_for_an_unattended_agent_behind_the_products_sandbox() -> None:
    got = config({})
    assert got["sandbox_mode"] == "danger-full-access"
    assert got["allow_login_shell"] is False and got["web_search"] == "disabled"
    assert got["features"] == {"unified_exec": False, "shell_snapshot": False, "multi_agent": False, "goals": False}
    assert "model" not in got and "model_provider" not in got, "nothing set: codex's defaults and login"


@pytest.mark.parametrize(("policy", "approval"), [("allow", "never"), ("deny", "untrusted"), ("ask", "untrusted"),
                                                  (None, "untrusted")], ids=["allow", "deny", "ask", "unset"])
def test_approval_policy_follows_tool_policy(policy: str | None, approval: str) -> None:
    settings = {} if policy is None else {"tool_policy": policy}
    assert config(settings)["approval_policy"] == approval


def test_an_api_key_alone_talks_to_openai_through_our_provider_table() -> None:
    got = config({"env.OPENAI_API_KEY": "sk-x", "model": "gpt-5.4"})
    assert got["model_provider"] == "chatcron" and got["model"] == "gpt-5.4"
    assert got["model_providers"]["chatcron"] == {"name": "chatcron", "base_url": "https://api.openai.com/v1",
                                                  "wire_api": "responses", "env_key": "OPENAI_API_KEY"}
    assert "sk-x" not in codex.config_toml({"env.OPENAI_API_KEY": "sk-x"}), "the key stays in the environment"


def test_a_base_url_without_a_key_sends_no_authorization() -> None:
    got = config({"env.OPENAI_BASE_URL": "http://127.0.0.1:9/v1/"})
    assert got["model_providers"]["chatcron"] == {"name": "chatcron", "base_url": "http://127.0.0.1:9/v1",
                                                  "wire_api": "responses"}


def test_a_bundled_model_needs_no_catalog_an_unknown_one_gets_ours() -> None:
    assert "model_catalog_json" not in config({"model": "gpt-5.4-mini"})
    assert config({"model": "qwen3-coder:30b"})["model_catalog_json"] == codex.CATALOG


def test_values_are_quoted_so_they_read_back_exactly() -> None:
    model = 'we"ird\\model ü'
    url = 'http://h/v1?q="x"'
    got = config({"model": model, "env.OPENAI_BASE_URL": url})
    assert got["model"] == model and got["model_providers"]["chatcron"]["base_url"] == url


@pytest.mark.parametrize(("settings", "field"), [
    ({"env.OPENAI_BASE_URL": "ftp://h"}, "env.OPENAI_BASE_URL"),
    ({"env.OPENAI_BASE_URL": "http://h/ v1"}, "env.OPENAI_BASE_URL"),
    ({"env.OPENAI_BASE_URL": ""}, "env.OPENAI_BASE_URL"),
    ({"model": "a\nb"}, "model"),
    ({"model": "  "}, "model"),
], ids=["scheme", "space", "empty-url", "newline", "blank-model"])
def test_bad_settings_name_the_field_and_write_nothing(tmp_path: Path, settings: dict[str, str], field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        codex.PRESET.prepare_home(tmp_path, settings)
    assert caught.value.field == field
    assert not (tmp_path / ".codex").exists()


def test_prepare_home_writes_config_rules_and_catalog(tmp_path: Path) -> None:
    codex.PRESET.prepare_home(tmp_path, {"tool_policy": "deny", "model": "local-model",
                                         "env.OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    folder = tmp_path / ".codex"
    assert tomllib.loads((folder / "config.toml").read_text())["approval_policy"] == "untrusted"
    rules = (folder / codex.RULES).read_text()
    assert all(f'"{program}"' in rules for program in codex.KNOWN_SAFE) and 'decision="prompt"' in rules
    (entry,) = json.loads((folder / codex.CATALOG).read_text())["models"]
    assert entry["slug"] == "local-model" and entry["shell_type"] == "shell_command"
    assert entry["base_instructions"] == codex.INSTRUCTIONS
    assert (folder.stat().st_mode & 0o777) == 0o700


def test_prepare_home_removes_what_the_new_settings_no_longer_want(tmp_path: Path) -> None:
    codex.PRESET.prepare_home(tmp_path, {"tool_policy": "ask", "model": "local-model"})
    codex.PRESET.prepare_home(tmp_path, {"tool_policy": "allow", "model": "gpt-5.5"})
    folder = tmp_path / ".codex"
    assert not (folder / codex.RULES).exists(), "a rule that asks would reject commands under `never`"
    assert not (folder / codex.CATALOG).exists()
    assert tomllib.loads((folder / "config.toml").read_text())["approval_policy"] == "never"
    assert sorted(p.name for p in folder.iterdir()) == ["config.toml", "rules"]


def test_prepare_home_keeps_codexs_own_files(tmp_path: Path) -> None:
    sessions = tmp_path / ".codex" / "sessions" / "2026" / "rollout.jsonl"
    sessions.parent.mkdir(parents=True)
    sessions.write_text("{}\n")
    codex.PRESET.prepare_home(tmp_path, {})
    assert sessions.read_text() == "{}\n"


def _rollout(home: Path, session_id: str, totals: list[tuple[int, int, int]], *, day: str = "2026/12/01",
             padding: int = 0) -> Path:
    path = home / ".codex" / "sessions" / day / f"rollout-2026-12-01T10-00-00-{session_id}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"type": "session_meta", "payload": {"id": session_id}})]
    for n_in, n_out, cached in totals:
        lines.append(json.dumps({"type": "response_item", "payload": {"type": "message", "text": "x" * padding}}))
        lines.append(json.dumps({"type": "event_msg", "payload": {"type": "token_count", "info": {
            "total_token_usage": {"input_tokens": n_in, "cached_input_tokens": cached, "output_tokens": n_out,
                                  "reasoning_output_tokens": 0, "total_tokens": n_in + n_out},
            "last_token_usage": {"input_tokens": 1, "output_tokens": 1}}}}))
    lines.append(json.dumps({"type": "event_msg", "payload": {"type": "task_complete"}}))
    path.write_text("\n".join(lines) + "\n")
    return path


SID = "01a23363-153e-7a10-852e-2802830a5d68"


def test_session_usage_is_the_last_cumulative_total(tmp_path: Path) -> None:
    _rollout(tmp_path, SID, [(120, 30, 0), (240, 60, 100)])
    assert codex.session_usage(tmp_path, SID) == {"input_tokens": 240, "output_tokens": 60, "cached_tokens": 100}


def test_session_usage_finds_the_total_before_a_long_tail(tmp_path: Path) -> None:
    path = _rollout(tmp_path, SID, [(7, 8, 9)])
    with path.open("a") as f:  # a turn's items after the last count, longer than the tail read first
        f.write(json.dumps({"type": "response_item", "payload": {"text": "y" * (codex.TAIL_BYTES + 10)}}) + "\n")
    assert codex.session_usage(tmp_path, SID) == {"input_tokens": 7, "output_tokens": 8, "cached_tokens": 9}


def test_session_usage_prefers_the_newest_file_with_a_count(tmp_path: Path) -> None:
    _rollout(tmp_path, SID, [(10, 1, 0)], day="2026/11/30")
    _rollout(tmp_path, SID, [(50, 5, 0)], day="2026/12/01")
    assert codex.session_usage(tmp_path, SID)["input_tokens"] == 50


@pytest.mark.parametrize("session_id", ["", "../../etc", "*", "a" * 65], ids=["empty", "path", "glob", "long"])
def test_session_usage_of_an_odd_or_unknown_session_is_none(tmp_path: Path, session_id: str) -> None:
    _rollout(tmp_path, SID, [(1, 1, 1)])
    assert codex.session_usage(tmp_path, session_id) is None
    assert codex.session_usage(tmp_path, "01a23363-0000-0000-0000-000000000000") is None


def test_session_usage_skips_broken_lines(tmp_path: Path) -> None:
    path = _rollout(tmp_path, SID, [(3, 4, 0)])
    with path.open("a") as f:
        f.write('{"type": "event_msg", "payload": {"type": "token_count", "info": null}}\n{"token_count" broken\n')
    assert codex.session_usage(tmp_path, SID) == {"input_tokens": 3, "output_tokens": 4, "cached_tokens": 0}
