"""The ``opencode`` preset: opencode's ACP mode (``opencode acp``).

``opencode-ai`` ships a 479-byte placeholder as its ``bin``: its postinstall (which npm may skip,
install scripts not being allowed by default) links the real binary from a platform package
(``opencode-<os>-<arch>[-baseline][-musl]``, npm installs the ones that match). The preset runs
that binary directly, so a skipped postinstall does not matter; "baseline" builds are for CPUs
without AVX2.

opencode keeps its config, sessions (a SQLite database) and caches under the XDG folders, all
put inside the agent home. At start it otherwise fetches a model catalog, checks for updates
and loads default plugins; the variables below turn that off. It also serves an HTTP API on
127.0.0.1 (port 4096, or a random one when taken) that its ACP side talks to, so a sandbox must
leave loopback open. The product's keys go in last (``OPENCODE_CONFIG_CONTENT``,
``OPENCODE_PERMISSION``), over any ``opencode.json`` the workspace holds.
"""

from __future__ import annotations

import functools
import json
import os
import platform
from collections.abc import Mapping
from pathlib import Path

from app.agents.cli.base import Preset

PACKAGE = "opencode-ai"
VERSION = "1.18.33"
QUIET = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_EMBEDDED_WEB_UI": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",  # no reading of ~/.claude (another agent's files)
    "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
    "NO_COLOR": "1",
}
# Under any tool_policy but ``allow``, every tool that acts asks, so the request reaches the
# product's policy (opencode allows most tools unasked by default).
ASK = {"edit": "ask", "bash": "ask", "webfetch": "ask", "websearch": "ask", "task": "ask",
       "external_directory": "ask"}
_PLATFORM = {"linux": "linux", "darwin": "darwin", "windows": "windows"}
_ARCH = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}


class BinaryMissing(RuntimeError):
    """No platform package with opencode's binary for this machine is installed."""


@functools.cache
def _has_avx2() -> bool:
    try:
        return " avx2" in Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return False


def candidates(system: str, arch: str, *, avx2: bool, musl: bool) -> list[str]:
    """Platform package names, best first (the order of opencode's own postinstall)."""
    base = f"opencode-{system}-{arch}"
    plain = [base, f"{base}-baseline"] if avx2 or arch != "x64" else [f"{base}-baseline", base]
    libc = [f"{name}-musl" for name in plain]
    return libc + plain if musl else plain + libc


def binary(install_dir: Path) -> Path:
    system = _PLATFORM.get(platform.system().lower(), platform.system().lower())
    arch = _ARCH.get(platform.machine().lower(), platform.machine().lower())
    musl = system == "linux" and platform.libc_ver()[0] != "glibc"
    name = "opencode.exe" if system == "windows" else "opencode"
    for package in candidates(system, arch, avx2=_has_avx2(), musl=musl):
        path = install_dir / "node_modules" / package / "bin" / name
        if path.is_file() and os.access(path, os.X_OK):
            return path
    raise BinaryMissing(f"opencode's binary for {system}-{arch} is not in {install_dir / 'node_modules'}: "
                        "reinstall with `python -m app.manage install-agent opencode`")


def _argv(install_dir: Path) -> list[str]:
    return [str(binary(install_dir)), "acp"]


def config_content(settings: Mapping[str, str]) -> dict[str, object]:
    config: dict[str, object] = {"$schema": "https://opencode.ai/config.json", "autoupdate": False,
                                 "share": "disabled"}
    model = settings.get("model")
    if model and model.strip():
        config["model"] = model.strip()  # "provider/model", e.g. "anthropic/claude-sonnet-4-5"
    return config


def _env(install_dir: Path, home: Path, settings: Mapping[str, str]) -> dict[str, str]:
    env = {
        **QUIET,
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "OPENCODE_CONFIG_CONTENT": json.dumps(config_content(settings)),
    }
    if settings.get("tool_policy") != "allow":
        env["OPENCODE_PERMISSION"] = json.dumps(ASK)
    return env


def _prepare_home(home: Path, settings: Mapping[str, str]) -> list[Path]:
    """Keep opencode from installing ``@opencode-ai/plugin`` from the npm registry at every start.

    For each config folder it runs a background ``npm install`` unless the folder has a
    ``node_modules`` and a lock file that already lists the package (the types for plugins
    written in that folder, which chatcron does not use). A folder an admin really installed
    plugins into is left alone.
    """
    folder = home / ".config" / "opencode"
    if (folder / "node_modules").exists():
        return []
    (folder / "node_modules").mkdir(parents=True, mode=0o700)
    lock = {"name": "opencode-config", "lockfileVersion": 3, "requires": True,
            "packages": {"": {"dependencies": {"@opencode-ai/plugin": VERSION}}}}
    (folder / "package-lock.json").write_text(json.dumps(lock, indent=2) + "\n", encoding="utf-8")
    return [folder / "node_modules", folder / "package-lock.json"]


PRESET = Preset(
    name="opencode",
    model_hosts=("api.anthropic.com:443", "api.openai.com:443", "generativelanguage.googleapis.com:443"),
    packages={PACKAGE: VERSION},
    argv=_argv,
    env=_env,
    prepare_home=_prepare_home,
)
