"""The command line of one sandboxed agent process: limits, the uid switch, bubblewrap (pure).

The chain, each program exec'ing the next in the same process:

    prlimit (limits, set while still root) → [staging bwrap] → setpriv (becomes the agent uid on
    the host) → bwrap (unprivileged: a user namespace mapping the agent uid to itself) →
    [the network relay] → the agent

bwrap resolves every bind source with the agent uid's permissions, so a folder under a parent that
uid cannot traverse (a data dir or checkout under a 0700 home) cannot be bound by it. A root server
then stages such folders first: a bwrap of its own, still root, binds them into a private tmpfs
(:data:`STAGE`) in a mount namespace of its own, from where the unprivileged bwrap binds them on.
Nothing on the host changes; the staging namespace ends with the agent.

Running bwrap as root with ``--unshare-user --uid N`` would NOT do: its process stays host uid 0
(uid_map ``N 0 1``), owns every root file it can see, and RLIMIT_NPROC does not apply to it.
setpriv runs before bwrap because the server is threaded (no ``preexec_fn``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from pathlib import Path

SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
STAGE = Path("/mnt")  # the staging tmpfs, in the staging bwrap's own mount namespace only
EGRESS_INSIDE = Path("/run/chatcron")  # the egress proxy's socket folder, as the agent sees it
RELAY_PORT = 3128
RELAY_URL = f"http://127.0.0.1:{RELAY_PORT}"
# The relay inside the agent's network namespace: socat listens on 127.0.0.1:RELAY_PORT and hands
# each connection to the proxy's unix socket. A loopback port of the host the agent is allowed (a
# local model server named by a base URL) is mirrored: socat listens on that port inside and asks
# the proxy for it (CONNECT), so a client that goes direct to 127.0.0.1 (NO_PROXY covers loopback:
# the agent's own servers live there) still reaches it, and only it. The agent starts once every
# listener is up (read from /proc/net/tcp, which shows this namespace alone), so its first call
# never fails; the exec is outside the loop (inside, its stdin would be the loop's /proc/net/tcp).
# A missing agent program is said the way bwrap says it (exits.explain_exit reads it).
_SOCAT = "socat -lf /dev/null TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork {to} </dev/null >/dev/null 2>&1 &"


def relay_script(mirrors: Iterable[int] = ()) -> str:
    """The ``sh -c`` script that starts the relay (and the mirrors), then execs ``"$@"``."""
    ports = [RELAY_PORT, *sorted(set(mirrors) - {RELAY_PORT})]
    lines = ['command -v "$1" >/dev/null 2>&1 || {',
             '  echo "bwrap: execvp $1: No such file or directory" >&2; exit 1; }',
             _SOCAT.format(port=RELAY_PORT, to=f"UNIX-CONNECT:{EGRESS_INSIDE}/egress.sock"), 'pids="$!"']
    for port in ports[1:]:
        lines += [_SOCAT.format(port=port, to=f"PROXY:127.0.0.1:127.0.0.1:{port},proxyport={RELAY_PORT}"),
                  'pids="$pids $!"']
    want = " ".join(f"{port:04X}" for port in ports)
    lines += [f'want="{want}" ready=',
              'while [ -z "$ready" ]; do',
              '  up=" "',
              '  while read -r _ address _ state _; do',
              '    if [ "$state" = 0A ]; then case "$address" in 0100007F:*) up="$up${address#0100007F:} ";; esac; fi',
              '  done </proc/net/tcp',
              '  ready=1',
              '  for port in $want; do case "$up" in *" $port "*) ;; *) ready= ;; esac; done',
              '  [ -n "$ready" ] || for pid in $pids; do kill -0 "$pid" 2>/dev/null || {',
              '    echo "bwrap: the network relay (socat) did not start" >&2; exit 1; }; done',
              'done',
              'exec "$@"']
    return "\n".join(lines) + "\n"


TMP_BYTES = 512 << 20  # /tmp and /dev/shm are memory-backed: capped
SHM_BYTES = 64 << 20

# What an agent CLI needs from /etc (DNS, TLS, time zone, dynamic linker, alternatives); the
# rest (shadow, ssh host keys, the server's own configuration) does not exist inside.
ETC_ENTRIES = (
    "resolv.conf", "hosts", "host.conf", "gai.conf", "nsswitch.conf",
    "ssl/certs", "ssl/openssl.cnf", "ca-certificates", "ca-certificates.conf", "pki",
    "crypto-policies", "localtime", "timezone", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
    "alternatives", "mime.types", "protocols", "services", "os-release", "debian_version",
    "gitconfig",
)
# host prefixes visible inside: a certificate variable pointing elsewhere is not passed on
VISIBLE_PREFIXES = (Path("/usr"), Path("/etc/ssl"), Path("/etc/pki"), Path("/etc/ca-certificates"))
TOP_LEVEL = ("bin", "sbin", "lib", "lib64", "lib32", "libx32")  # links into /usr on a merged-/usr host


@dataclasses.dataclass(frozen=True)
class Plan:
    """Everything one sandboxed process is given. Paths are absolute host paths, bound at the same
    place inside, so a path the server names (cwd, a token file) means the same thing there."""

    workspace: Path
    home: Path
    read_only: tuple[Path, ...]
    uid: int
    gid: int
    max_procs: int
    max_file_bytes: int
    max_memory_bytes: int
    switch_uid: bool  # a root server: setpriv to the agent uid before bwrap
    env_fd: int  # --args: the agent's environment as --setenv triples (an argv is world-readable)
    passwd_fd: int  # --ro-bind-data: an /etc/passwd naming the agent uid, home = its HOME
    group_fd: int
    egress: Path | None = None  # the proxy's socket folder: a network namespace of its own; None = the host's
    staged: tuple[Path, ...] = ()  # bind sources the agent uid cannot reach: staged first (root only)
    mirrors: tuple[int, ...] = ()  # host loopback ports the agent is allowed: mirrored inside

    def source(self, path: Path) -> str:
        """Where the unprivileged bwrap finds ``path``: its staged place, or the path itself."""
        return str(STAGE / str(self.staged.index(path))) if path in self.staged else str(path)


def limits(plan: Plan) -> list[str]:
    """prlimit: soft = hard, inherited by everything below. DATA, not AS (see Settings)."""
    return ["prlimit", f"--nproc={plan.max_procs}", f"--fsize={plan.max_file_bytes}",
            f"--data={plan.max_memory_bytes}", "--core=0", "--"]


def switch_uid(plan: Plan) -> list[str]:
    if not plan.switch_uid:
        return []  # a non-root server cannot: bwrap maps the agent uid to the server's own
    return ["setpriv", f"--reuid={plan.uid}", f"--regid={plan.gid}", "--clear-groups", "--"]


def _namespaces(plan: Plan) -> list[str]:
    net = ["--unshare-net"] if plan.egress is not None else []
    return ["bwrap", "--unshare-user", "--uid", str(plan.uid), "--gid", str(plan.gid), "--disable-userns",
            "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", *net,
            "--hostname", "agent", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--clearenv", "--args", str(plan.env_fd)]


def _parents(paths: Iterable[Path]) -> list[Path]:
    """Every folder above the bind destinations, outermost first (created 0755 explicitly:
    bwrap makes missing ones 0700)."""
    dests = set(paths)
    found = {a for d in dests for a in d.parents} - {Path("/"), Path("/usr"), Path("/tmp")} - dests
    return sorted(found, key=lambda a: (len(a.parts), str(a)))


def _dirs(paths: Iterable[Path]) -> list[str]:
    return [x for p in paths for x in ("--perms", "0755", "--dir", str(p))]


def _system() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in TOP_LEVEL:
        host = Path("/") / name
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), str(host)]
        elif host.is_dir():
            args += ["--ro-bind", str(host), str(host)]
    for entry in ETC_ENTRIES:
        args += ["--ro-bind-try", f"/etc/{entry}", f"/etc/{entry}"]
    return args


def _under_tmp(path: Path) -> bool:
    return path.is_relative_to("/tmp")


def bwrap(plan: Plan) -> list[str]:
    """The bwrap part: namespaces, a read-only tmpfs root holding only what the agent may see."""
    own = [*plan.read_only, plan.workspace, plan.home]
    parents = _parents([Path("/etc") / e for e in ETC_ENTRIES] + own)
    args = _namespaces(plan)
    args += _dirs(p for p in parents if not _under_tmp(p))
    args += _system()
    args += ["--ro-bind-data", str(plan.passwd_fd), "/etc/passwd", "--ro-bind-data", str(plan.group_fd), "/etc/group",
             "--proc", "/proc", "--dev", "/dev",
             "--perms", "1777", "--size", str(TMP_BYTES), "--tmpfs", "/tmp",
             "--perms", "1777", "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm",
             "--dir", "/var", "--symlink", "../tmp", "/var/tmp"]
    if plan.egress is not None:
        args += ["--perms", "0755", "--dir", "/run", "--ro-bind", plan.source(plan.egress), str(EGRESS_INSIDE)]
    # a bind under /tmp (a data dir there) needs its folders inside the private /tmp, which the agent
    # may write: they go on a tmpfs of their own, made read-only below, so the agent cannot add to them
    tops = sorted({Path("/tmp", p.relative_to("/tmp").parts[0]) for p in parents if _under_tmp(p)})
    for top in tops:
        args += ["--perms", "0755", "--size", str(1 << 20), "--tmpfs", str(top)]
    args += _dirs(p for p in parents if _under_tmp(p) and p not in tops)
    for path in plan.read_only:
        args += ["--ro-bind", plan.source(path), str(path)]
    args += ["--bind", plan.source(plan.workspace), str(plan.workspace)]
    if plan.home != plan.workspace:
        args += ["--bind", plan.source(plan.home), str(plan.home)]
    # bwrap itself covers only /proc/{irq,bus}; the rest of /proc (sys/kernel/...) read-only too,
    # and the tmpfs root: nothing is writable but the workspace, the home and /tmp
    for top in tops:
        args += ["--remount-ro", str(top)]
    return args + ["--remount-ro", "/proc", "--remount-ro", "/", "--chdir", str(plan.workspace), "--"]


def staging(plan: Plan) -> list[str]:
    """The root bwrap that binds the unreachable sources into a private tmpfs (see the module's
    docstring); it keeps only what setpriv needs to become the agent uid."""
    if not plan.staged:
        return []
    args = ["bwrap", "--dev-bind", "/", "/", "--tmpfs", str(STAGE)]
    for index, path in enumerate(plan.staged):
        args += ["--bind", str(path), str(STAGE / str(index))]
    # a PID namespace of its own: when this bwrap ends, so does everything in it, the agent uid's
    # bwrap included (a uid change clears the parent-death signal that --die-with-parent gives)
    return args + ["--unshare-pid", "--die-with-parent", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--"]


def command(plan: Plan, argv: Iterable[str]) -> list[str]:
    """The whole argv handed to Popen."""
    relay = ["/bin/sh", "-c", relay_script(plan.mirrors), "chatcron-relay"] if plan.egress is not None else []
    return [*limits(plan), *staging(plan), *switch_uid(plan), *bwrap(plan), *relay, *argv]


def environment_args(env: dict[str, str]) -> bytes:
    """The ``--args`` payload: NUL-separated ``--setenv NAME VALUE`` triples."""
    out = bytearray()
    for name, value in env.items():
        if "\0" in name or "\0" in value or "=" in name or not name:
            raise ValueError(f"environment variable {name!r} cannot be passed to the agent")
        out += b"--setenv\0%s\0%s\0" % (name.encode(), value.encode())
    return bytes(out)


def passwd_lines(uid: int, gid: int, home: Path) -> tuple[bytes, bytes]:
    """/etc/passwd and /etc/group naming the agent (a uid the host does not list would make node's
    ``os.userInfo()`` throw), and nothing of the host's users."""
    passwd = f"root:x:0:0:root:/root:/usr/sbin/nologin\nagent:x:{uid}:{gid}:agent:{home}:/bin/sh\n"
    group = f"root:x:0:\nagent:x:{gid}:\n"
    return passwd.encode(), group.encode()
