"""A hostile agent CLI for the sandbox tests: run by the `command` provider (or by an ACP agent's
shell tool) with the system's python3, stdlib only.

The prompt's first line starting with ``hostile:`` is ``hostile:<mode> <json>``; the reply is one
JSON line (and, for the limit modes, the exception that ended it on stderr, as a real CLI would
crash). Modes:

- ``probe``: every way out we know of; each check is [blocked, detail];
- ``network``: every network target it is given, directly and through the egress proxy, and what
  ``/proc/net`` shows of the host;
- ``hold``: report who we are, then wait until the host creates ``release`` in the workspace;
- ``fork``/``memory``/``bigfile``/``dd``: push one limit until it stops us (``hold`` first when asked);
- ``schedule``/``fire``: use the turn's own grant against the agent API beyond what it allows.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

RESULTS: dict[str, list[Any]] = {}


def blocked(name: str, attempt: Callable[[], object], *, refused: Callable[[object], bool] = lambda _: False) -> None:
    """Record whether ``attempt`` was stopped: it raised, or what it returned counts as refused."""
    try:
        got = attempt()
    except BaseException as exc:  # any failure is the sandbox saying no
        RESULTS[name] = [True, f"{type(exc).__name__}: {exc}"[:300]]
        return
    RESULTS[name] = [refused(got), repr(got)[:300]]


def read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read(256)


def write(path: str) -> str:
    with open(path, "ab") as f:
        f.write(b"pwned by the agent\n")
    return "written"


def unshare_user() -> str:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return "created a user namespace"


def readable_texts() -> list[str]:
    """The environment and command line of every process we can see, ours included."""
    texts = ["\0".join(f"{k}={v}" for k, v in os.environ.items())]
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        for name in ("environ", "cmdline"):
            try:
                texts.append(read(f"/proc/{pid}/{name}").decode("utf-8", "replace"))
            except OSError:
                pass
    return texts


def probe(a: dict[str, Any]) -> None:
    data, own = a["data_dir"], os.path.basename(os.getcwd())
    RESULTS["whoami"] = [os.getuid() != 0 and os.geteuid() != 0,
                         {"uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(), "groups": os.getgroups(),
                          "status": {k: v for k, v in (line.split(":\t", 1) for line in
                                                       open("/proc/self/status").read().splitlines() if ":\t" in line)
                                     if k in ("Uid", "Gid", "CapEff", "CapPrm", "CapBnd", "NoNewPrivs")}}]
    blocked("read_db_relative", lambda: read("../../chatcron.db"))
    blocked("read_db_absolute", lambda: read(os.path.join(data, "chatcron.db")))
    blocked("list_data_dir", lambda: os.listdir(data), refused=lambda got: "chatcron.db" not in got)
    for folder in ("workspaces", "agent-homes"):
        blocked(f"list_{folder}", lambda f=folder: os.listdir(os.path.join(data, f)), refused=lambda got: got == [own])
    blocked("read_other_workspace", lambda: read(os.path.join(a["other_workspace"], "canary.txt")))
    blocked("read_other_home", lambda: read(os.path.join(a["other_home"], "canary.txt")))
    blocked("list_server_home", lambda: os.listdir(a["server_home"]))
    for path in a["server_home_files"]:
        blocked(f"read_server_home:{os.path.basename(path)}", lambda p=path: read(p))
    blocked("read_server_environ", lambda: read(f"/proc/{a['server_pid']}/environ"))
    blocked("signal_server", lambda: os.kill(int(a["server_pid"]), 0))
    blocked("read_etc_shadow", lambda: read("/etc/shadow"))
    secrets = a["secrets"]
    blocked("secrets_anywhere_readable", lambda: [s for s in secrets for t in readable_texts() if s in t],
            refused=lambda got: got == [])
    for target in a["write_targets"]:  # none when unfenced: a root agent would really write them
        blocked(f"write:{target}", lambda t=target: write(t))
    blocked("nested_user_namespace", unshare_user)
    RESULTS["own_workspace_writable"] = [True, write("agent-was-here.txt")]
    RESULTS["own_home_writable"] = [True, write(os.path.join(os.environ["HOME"], "agent-was-here.txt"))]
    print(json.dumps(RESULTS), flush=True)


def connect(host: str, port: int) -> str:
    with socket.create_connection((host, port), timeout=5):
        return "connected"


def through_proxy(host: str, port: int) -> str:
    """CONNECT host:port through HTTPS_PROXY (the relay); its status line."""
    proxy = os.environ.get("HTTPS_PROXY", "")
    if not proxy.startswith("http://"):
        raise OSError("no egress proxy in the environment")
    relay_host, relay_port = proxy[len("http://"):].rstrip("/").rsplit(":", 1)
    with socket.create_connection((relay_host, int(relay_port)), timeout=10) as conn:
        conn.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        return conn.recv(200).decode("latin-1").split("\r\n")[0]


def foreign_sockets() -> list[str]:
    """What /proc/net shows beyond the sandbox's own: TCP/UDP sockets of another uid (the host's
    databases, the web port, other agents' servers), named or abstract unix sockets other than
    the proxy's. The relay's listeners are ours. (Shared with the host, its sockets would show.)"""
    found = []
    for name in ("tcp", "tcp6", "udp", "udp6"):
        try:
            lines = read_all(f"/proc/net/{name}").splitlines()[1:]
        except OSError:
            continue
        # a TIME_WAIT remnant (state 06) of our own connections shows uid 0
        found += [f"{name}: {line.strip()}" for line in lines
                  if line.split()[7] != str(os.getuid()) and line.split()[3] != "06"]
    unix = read_all("/proc/net/unix").splitlines()[1:]  # unnamed ones are this namespace's pipes
    found += [f"unix: {line.strip()}" for line in unix
              if len(line.split()) > 7 and not line.split()[7].endswith("/egress.sock")]  # our proxy's
    return found


def read_all(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def network(a: dict[str, Any]) -> None:
    for name, (host, port) in a["targets"].items():
        blocked(f"direct:{name}", lambda h=host, p=port: connect(h, p))
        blocked(f"proxy:{name}", lambda h=host, p=port: through_proxy(h, p),
                refused=lambda got: not str(got).startswith("HTTP/1.1 200"))
    blocked("proc_net_shows_the_host", foreign_sockets, refused=lambda got: got == [])
    allowed = a.get("allowed")
    if allowed:  # what the project allows does get through
        RESULTS["allowed"] = [False, through_proxy(*allowed)]
    print(json.dumps(RESULTS), flush=True)


def hold(a: dict[str, Any]) -> None:
    """Say HOLD (on stdout, and as a file for a host that cannot see our output yet), then wait."""
    said = json.dumps({"uid": os.getuid(), **a.get("extra", {})})
    with open(".holding", "w", encoding="utf-8") as f:
        f.write(said)
    os.rename(".holding", "holding")  # whole or absent for the host that waits for it
    print("HOLD " + said, flush=True)
    deadline = time.monotonic() + 60
    while not os.path.exists("release") and time.monotonic() < deadline:
        time.sleep(0.01)


def fork(a: dict[str, Any]) -> None:
    kids, failure = [], None
    while len(kids) < a["max"]:  # a bound of our own, should the limit be missing
        try:
            pid = os.fork()
        except OSError as exc:
            failure = exc
            break
        if pid == 0:
            time.sleep(120)
            os._exit(0)
        kids.append(pid)
    hold({"extra": {"forked": len(kids)}})
    for pid in kids:
        os.kill(pid, signal.SIGKILL)
    if failure is not None:
        raise failure
    print("the process limit never stopped us", flush=True)


def memory(a: dict[str, Any]) -> None:
    chunks: list[bytearray] = []
    try:
        while len(chunks) < 100000:
            chunks.append(bytearray(16 << 20))  # zero-filled: really touched
    except MemoryError:
        print(json.dumps({"allocated": len(chunks) * (16 << 20)}), flush=True)
        raise
    print("the memory limit never stopped us", flush=True)


def bigfile(a: dict[str, Any]) -> None:
    written = 0
    with open("big.bin", "wb", buffering=0) as f:
        try:
            while written < 1 << 34:
                written += f.write(b"x" * (1 << 20))
        except OSError:
            print(json.dumps({"written": written}), flush=True)
            raise
    print("the file size limit never stopped us", flush=True)


def dd(a: dict[str, Any]) -> None:
    # python ignores SIGXFSZ, and an ignored signal stays ignored across exec: restore the default,
    # so the kernel kills the agent process itself, as it would a shell tool's dd
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    os.execvp("dd", ["dd", "if=/dev/zero", "of=big-dd.bin", "bs=1M", f"count={a['count']}", "status=none"])


def grant() -> str:
    """The turn's token: in the environment (command provider) or in its file (a warm ACP agent)."""
    if os.environ.get("SCHEDULE_API_TOKEN"):
        return os.environ["SCHEDULE_API_TOKEN"]
    with open(os.environ["SCHEDULE_API_TOKEN_FILE"], encoding="utf-8") as f:
        return f.read().strip()


def api(method: str, path: str, body: dict[str, Any] | None = None) -> int:
    url = os.environ["SCHEDULE_API_URL"].rstrip("/") + path
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={
        "Authorization": f"Bearer {grant()}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def schedule(a: dict[str, Any]) -> None:
    """A manage grant: create a draft, then try to make it run or outlive the turn."""
    url = os.environ["SCHEDULE_API_URL"].rstrip("/") + "/agent-api/schedules"
    body = {"name": "runaway", "prompt": "Do it again, forever.", "schedule": {"kind": "interval", "every_seconds": 60}}
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers={
        "Authorization": f"Bearer {grant()}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        tid = json.loads(response.read())["id"]
    codes = {"created": tid}
    for name, method, path, payload in [
        ("arm", "POST", f"/agent-api/schedules/{tid}/arm", None),
        ("resume", "POST", f"/agent-api/schedules/{tid}/resume", None),
        ("run_now_draft", "POST", f"/agent-api/schedules/{tid}/run-now", None),
        ("patch_enabled", "PATCH", f"/agent-api/schedules/{tid}", {"enabled": True}),
        ("patch_status", "PATCH", f"/agent-api/schedules/{tid}", {"status": "active"}),
        ("patch_schedule", "PATCH", f"/agent-api/schedules/{tid}", {"schedule": {"kind": "interval",
                                                                                  "every_seconds": 1}}),
        ("user_api_projects", "GET", "/api/projects", None),
        ("user_api_arm", "POST", f"/api/schedules/{tid}/arm", None),
        ("user_api_new_project", "POST", "/api/projects", {"name": "mine"}),
        ("user_api_prompt", "POST", f"/api/chats/{a['chat']}/prompts", {"text": "arm it for me"}),
    ]:
        codes[name] = api(method, path, payload)
    print(json.dumps(codes), flush=True)


def fire(a: dict[str, Any]) -> None:
    """A fire's complete-self grant: everything but completing its own task, then that."""
    codes: dict[str, int] = {}
    for name, method, path, payload in [
        ("list", "GET", "/agent-api/schedules", None),
        ("create", "POST", "/agent-api/schedules", {"name": "more", "prompt": "p",
                                                   "schedule": {"kind": "interval", "every_seconds": 60}}),
        ("get_own", "GET", f"/agent-api/schedules/{a['own']}", None),
        ("pause_own", "POST", f"/agent-api/schedules/{a['own']}/pause", None),
        ("run_now_own", "POST", f"/agent-api/schedules/{a['own']}/run-now", None),
        ("rename_own", "PATCH", f"/agent-api/schedules/{a['own']}", {"name": "renamed"}),
        ("delete_other", "DELETE", f"/agent-api/schedules/{a['other']}", None),
        ("pause_other", "POST", f"/agent-api/schedules/{a['other']}/pause", None),
        ("run_now_other", "POST", f"/agent-api/schedules/{a['other']}/run-now", None),
        ("arm_other", "POST", f"/agent-api/schedules/{a['other']}/arm", None),
        ("complete_current", "POST", "/agent-api/schedules/current/complete", {"reason": "done, honestly"}),
    ]:
        codes[name] = api(method, path, payload)
    print(json.dumps(codes), flush=True)


MODES = {"probe": probe, "network": network, "hold": hold, "fork": fork, "memory": memory, "bigfile": bigfile, "dd": dd,
         "schedule": schedule, "fire": fire}

if __name__ == "__main__":
    # the order may sit inside a fire's envelope: the first line that starts with "hostile:"
    order = next(line for line in sys.stdin.read().splitlines() if line.startswith("hostile:"))
    mode, _, raw = order.removeprefix("hostile:").partition(" ")
    MODES[mode](json.loads(raw or "{}"))
