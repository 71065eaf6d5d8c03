"""The gemini and opencode presets: command lines, environments, the settings files they write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.agents.cli import gemini, opencode
from app.agents.cli.presets import PRESETS


def test_pins() -> None:
    assert PRESETS["gemini"] is gemini.PRESET and PRESETS["opencode"] is opencode.PRESET
    assert gemini.PRESET.packages == {"@google/gemini-cli": "0.61.0"}
    assert opencode.PRESET.packages == {"opencode-ai": "1.18.33"}


# -- gemini ----------------------------------------------------------------------------------------
def test_gemini_runs_its_bundle_in_acp_mode(tmp_path: Path) -> None:
    argv = gemini.PRESET.argv(tmp_path)
    assert argv[1:] == [str(tmp_path / "node_modules/@google/gemini-cli/bundle/gemini.js"), "--acp"]
    assert Path(argv[0]).name == "node"


def test_gemini_env_keeps_everything_in_the_agent_home(tmp_path: Path) -> None:
    env = gemini.PRESET.env(tmp_path / "i", tmp_path / "home", {"model": " gemini-2.5-flash "})
    assert env["GEMINI_CLI_HOME"] == str(tmp_path / "home")
    assert env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"] == str(tmp_path / "home/.gemini/chatcron-settings.json")
    assert env["GEMINI_MODEL"] == "gemini-2.5-flash"
    assert "GEMINI_MODEL" not in gemini.PRESET.env(tmp_path, tmp_path, {})


def test_gemini_settings_turn_off_updates_and_statistics_in_both_layers(tmp_path: Path) -> None:
    gemini.PRESET.prepare_home(tmp_path, {})
    for name in ("chatcron-settings.json", "settings.json"):
        written = json.loads((tmp_path / ".gemini" / name).read_text())
        assert written["general"] == {"enableAutoUpdate": False, "enableAutoUpdateNotification": False}
        assert written["privacy"] == {"usageStatisticsEnabled": False} and written["telemetry"] == {"enabled": False}
        assert "security" not in written, "no key configured: an admin's own login choice stands"


def test_gemini_uses_the_configured_key_and_keeps_the_users_other_settings(tmp_path: Path) -> None:
    user = tmp_path / ".gemini" / "settings.json"
    user.parent.mkdir()
    user.write_text('{"security": {"auth": {"selectedType": "oauth-personal"}}, "privacy": {"x": 1}, "ui": []}')
    gemini.PRESET.prepare_home(tmp_path, {"env.GEMINI_API_KEY": "k"})
    system = json.loads((tmp_path / ".gemini" / "chatcron-settings.json").read_text())
    assert system["security"] == {"auth": {"selectedType": "gemini-api-key"}}
    assert json.loads(user.read_text()) == {"security": {"auth": {"selectedType": "oauth-personal"}},
                                            "privacy": {"x": 1, "usageStatisticsEnabled": False}, "ui": [],
                                            "general": gemini.QUIET["general"], "telemetry": {"enabled": False}}


def test_gemini_leaves_a_user_settings_file_it_cannot_parse(tmp_path: Path) -> None:
    user = tmp_path / ".gemini" / "settings.json"
    user.parent.mkdir()
    user.write_text('// an admin wrote this\n{"model": {"name": "x"}}\n')
    before = user.read_bytes()
    gemini.PRESET.prepare_home(tmp_path, {})
    assert user.read_bytes() == before
    assert (tmp_path / ".gemini" / "chatcron-settings.json").is_file()


# -- opencode --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("avx2", "musl", "first"), [
    (True, False, "opencode-linux-x64"),
    (False, False, "opencode-linux-x64-baseline"),
    (True, True, "opencode-linux-x64-musl"),
], ids=["avx2", "no-avx2", "musl"])
def test_opencode_prefers_the_build_this_cpu_runs(avx2: bool, musl: bool, first: str) -> None:
    names = opencode.candidates("linux", "x64", avx2=avx2, musl=musl)
    assert names[0] == first and len(set(names)) == 4


def _binary(install_dir: Path, package: str) -> Path:
    path = install_dir / "node_modules" / package / "bin" / "opencode"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x7fELF")
    path.chmod(0o755)
    return path


def test_opencode_runs_the_platform_binary_not_the_placeholder(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opencode.platform, "system", lambda: "Linux")
    monkeypatch.setattr(opencode.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(opencode.platform, "libc_ver", lambda: ("glibc", "2.36"))
    monkeypatch.setattr(opencode, "_has_avx2", lambda: False)
    placeholder = tmp_path / "node_modules/opencode-ai/bin/opencode"
    placeholder.parent.mkdir(parents=True)
    placeholder.write_text("placeholder")
    plain = _binary(tmp_path, "opencode-linux-x64")
    assert opencode.PRESET.argv(tmp_path) == [str(plain), "acp"], "baseline absent: the plain build"
    baseline = _binary(tmp_path, "opencode-linux-x64-baseline")
    assert opencode.PRESET.argv(tmp_path) == [str(baseline), "acp"], "no AVX2: the baseline build"


def test_opencode_missing_binary_says_how_to_install(tmp_path: Path) -> None:
    with pytest.raises(opencode.BinaryMissing, match="install-agent opencode"):
        opencode.PRESET.argv(tmp_path)


def test_opencode_env_is_offline_and_inside_the_agent_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = opencode.PRESET.env(tmp_path, home, {"model": "mock/model-1", "tool_policy": "allow"})
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        assert Path(env[name]).is_relative_to(home)
    assert env["OPENCODE_DISABLE_MODELS_FETCH"] == env["OPENCODE_DISABLE_AUTOUPDATE"] == "1"
    assert json.loads(env["OPENCODE_CONFIG_CONTENT"]) == {
        "$schema": "https://opencode.ai/config.json", "autoupdate": False, "share": "disabled",
        "model": "mock/model-1"}
    assert "OPENCODE_PERMISSION" not in env, "allow: opencode's own defaults"


def test_opencode_home_has_the_plugin_types_marked_installed(tmp_path: Path) -> None:
    opencode.PRESET.prepare_home(tmp_path, {})
    folder = tmp_path / ".config" / "opencode"
    lock = json.loads((folder / "package-lock.json").read_text())
    assert (folder / "node_modules").is_dir() and "@opencode-ai/plugin" in lock["packages"][""]["dependencies"]


def test_opencode_home_an_admin_installed_is_left_alone(tmp_path: Path) -> None:
    folder = tmp_path / ".config" / "opencode"
    (folder / "node_modules" / "some-plugin").mkdir(parents=True)
    opencode.PRESET.prepare_home(tmp_path, {})
    assert not (folder / "package-lock.json").exists()


@pytest.mark.parametrize("policy", ["deny", "ask", None])
def test_opencode_asks_for_every_acting_tool_unless_allowed(tmp_path: Path, policy: str | None) -> None:
    env = opencode.PRESET.env(tmp_path, tmp_path, {} if policy is None else {"tool_policy": policy})
    permission = json.loads(env["OPENCODE_PERMISSION"])
    assert permission["bash"] == permission["edit"] == permission["webfetch"] == "ask"
