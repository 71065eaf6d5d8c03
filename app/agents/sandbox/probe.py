"""Whether bubblewrap can build the sandbox here, asked once per process (a success is kept; a
failure is asked again after a while, so installing bubblewrap needs no restart)."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time

from app.agents.sandbox.dirs import switches_uid
from app.core.config import Settings

HOST_PATH = "/usr/bin:/bin"  # the search path of the sandbox's own helpers (bwrap, setpriv, prlimit)
RETRY_SECONDS = 30.0
OFF_HINT = "or set CHATCRON_AGENT_SANDBOX=off to run agents unfenced"
NOT_INSTALLED = ("agents run in a bubblewrap sandbox, but bubblewrap (bwrap) is not installed: install it "
                 "(Debian/Ubuntu: apt-get install bubblewrap; `make run` does) " + OFF_HINT)
_USERNS_SIGNS = ("No permissions to creating new namespace", "setting up uid map", "Creating new namespace failed",
                 "Operation not permitted")

_lock = threading.Lock()
_known: dict[tuple[int, int, bool, bool], tuple[float, str | None]] = {}


def problem(settings: Settings) -> str | None:
    """None when the sandbox works for these settings, else what is wrong and how to fix it."""
    key = (settings.agent_uid, settings.agent_gid, switches_uid(settings), settings.agent_network == "proxy")
    with _lock:
        known = _known.get(key)
    if known is not None and (known[1] is None or time.monotonic() - known[0] < RETRY_SECONDS):
        return known[1]
    found = _ask(*key)
    with _lock:
        _known[key] = (time.monotonic(), found)
    return found


def _ask(uid: int, gid: int, switch: bool, network: bool) -> str | None:
    missing = [tool for tool in ("bwrap", "setpriv", "prlimit") if shutil.which(tool, path=HOST_PATH) is None]
    if "bwrap" in missing:
        return NOT_INSTALLED
    if missing:
        return f"{' and '.join(missing)} (util-linux) is not installed; install util-linux {OFF_HINT}"
    if network and shutil.which("socat", path=HOST_PATH) is None:
        return ("socat is not installed: it relays a sandboxed agent's connections to the egress proxy; install it "
                "(Debian/Ubuntu: apt-get install socat; `make run` does) or set CHATCRON_AGENT_NETWORK=host to "
                "let agents share the host's network")
    argv = [*(["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"] if switch else []),
            "bwrap", "--unshare-user", "--uid", str(uid), "--gid", str(gid), "--disable-userns",
            "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent",
            "--new-session", "--cap-drop", "ALL", *(["--unshare-net"] if network else []),
            "--ro-bind", "/", "/", "--proc", "/proc", "--", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=15, env={"PATH": HOST_PATH}, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not be started: {exc}; fix it {OFF_HINT}"
    if done.returncode == 0:
        return None
    said = done.stderr.strip()[-500:] or f"exit status {done.returncode}"
    if "disable-userns" in said:
        return f"bubblewrap is too old ({said}): 0.8.0 or newer is needed; upgrade it {OFF_HINT}"
    if any(sign in said for sign in _USERNS_SIGNS):
        return (f"bubblewrap cannot create a user namespace for uid {uid} here ({said}): allow unprivileged "
                "user namespaces (Debian: sysctl kernel.unprivileged_userns_clone=1; Ubuntu 23.10+: an AppArmor "
                f"profile for /usr/bin/bwrap with `userns`; a container: allow user namespaces) {OFF_HINT}")
    return f"bubblewrap does not work here: {said}; fix it {OFF_HINT}"
