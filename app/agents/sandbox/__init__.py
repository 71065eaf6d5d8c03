"""The agent sandbox (SPEC §12): every agent process is started from the :class:`Launch` that
:func:`prepare` returns.

Sandboxed (``CHATCRON_AGENT_SANDBOX=bwrap``, the default), the agent sees its workspace
read-write (its cwd), its project's agent home read-write (its ``HOME``), ``/usr`` and a few
``/etc`` entries read-only, the extra read-only paths it is given, a private ``/tmp``, its own
PID namespace; it runs as ``CHATCRON_AGENT_UID``/``GID`` on the host (a root server switches to
it before bwrap runs), under the per-turn limits. It never sees the data dir's other contents
(the database, other workspaces and homes), the server's ``HOME``, or any server process. It has a
network namespace of its own (``CHATCRON_AGENT_NETWORK=proxy``, the default): its only way out is
this process's egress proxy (:mod:`app.agents.egress`), through a relay inside; with ``host`` it
shares the host's network (docs/SECURITY.md).

With ``off`` the argv runs unchanged in the workspace, as the server's uid, with no limits.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from app.agents.egress.policy import AGENT_API_NAME, Policy, url_rule
from app.agents.egress.proxy import Listener, Route, proxy
from app.agents.sandbox import bwrap, probe
from app.agents.sandbox.dirs import (
    SandboxError,
    closed_parent,
    hand_over,
    hand_over_written,
    prepare_data_dir,
    scratch,
    switches_uid,
)
from app.agents.sandbox.exits import explain_exit, start_failure
from app.core.config import Settings

__all__ = ["Launch", "SandboxError", "explain_exit", "hand_over", "hand_over_written", "health", "log_mode", "prepare",
           "prepare_data_dir", "problem", "scratch", "start_failure"]

log = logging.getLogger("chatcron.sandbox")
BASE_ENV = {"LANG": "C.UTF-8", "TERM": "dumb"}


@dataclasses.dataclass
class Launch:
    """How to start one agent process: ``Popen(argv, env=env, cwd=cwd, pass_fds=pass_fds,
    preexec_fn=preexec_fn)``. The fds are the sandbox's (its environment, /etc/passwd): close
    them after the start — :meth:`popen` does both."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    preexec_fn: Callable[[], None] | None = None
    pass_fds: tuple[int, ...] = ()
    sandboxed: bool = False
    egress: Listener | None = None  # the proxy's socket of this process: ended by :meth:`end`
    route: Route | None = None  # what it may reach; whoever runs its turn sets ``route.on_refused``

    def popen(self, **kwargs: Any) -> subprocess.Popen:  # Popen's own keywords
        try:
            return subprocess.Popen(self.argv, env=self.env, cwd=self.cwd, pass_fds=self.pass_fds,
                                    preexec_fn=self.preexec_fn, **kwargs)
        finally:
            self.close()

    def close(self) -> None:
        for fd in self.pass_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.pass_fds = ()

    def end(self) -> None:
        """The process is gone (or never started): stop its proxy socket and remove its folder."""
        self.close()
        listener, self.egress = self.egress, None
        if listener is not None:
            listener.close()
            shutil.rmtree(listener.path.parent, ignore_errors=True)


def prepare(settings: Settings, argv: Sequence[str], *, workspace: Path, home: Path, env: Mapping[str, str],
            read_only: Sequence[Path] = (), egress: Policy | None = None) -> Launch:
    """The Launch of ``argv`` as an agent of this workspace; ``env`` are the agent's own variables
    (they win over PATH, HOME, LANG, TERM and the certificate variables given by default).
    ``egress``: where the agent may connect through the proxy besides chatcron's agent API (none
    when None); a ``SCHEDULE_API_URL`` naming the server's ``api_url`` is rewritten to the name the
    proxy routes (:data:`AGENT_API_NAME`).

    Raises SandboxError (a ProviderError: the turn fails with it) when the sandbox cannot run
    here, with what to do about it.
    """
    if not argv:
        raise SandboxError("no command to run")
    if settings.agent_sandbox == "off":
        base = {"PATH": os.pathsep.join(os.get_exec_path()), "HOME": str(home), **BASE_ENV,
                **dict(settings.agent_ca_env)}
        return Launch(list(argv), {**base, **env}, workspace)
    found = probe.problem(settings)
    if found is not None:
        raise SandboxError(found)
    workspace, home = workspace.absolute(), home.absolute()
    extra = tuple(dict.fromkeys(Path(p).absolute() for p in (*settings.agent_read_only_paths, *read_only)))
    _check(settings, workspace, home, extra)
    base = {"PATH": bwrap.SANDBOX_PATH, "HOME": str(home), **BASE_ENV, **_visible_ca(settings, extra)}
    env = dict(env)
    route, listener = None, None
    if settings.agent_network == "proxy":
        route = _route(settings, env, egress or Policy(()))
        listener = _listen(settings, route)
        env.update(dict.fromkeys(PROXY_VARIABLES, bwrap.RELAY_URL))  # over the agent's own: nothing else leads out
        # its own loopback is its own (an agent CLI's local server, a tool it starts): reached directly
        env.update(dict.fromkeys(NO_PROXY_VARIABLES, "localhost,127.0.0.1,::1"))
    passwd, group = bwrap.passwd_lines(settings.agent_uid, settings.agent_gid, home)
    try:
        fds = (_memfd(bwrap.environment_args({**base, **env})), _memfd(passwd), _memfd(group))
    except BaseException:
        if listener is not None:
            Launch([], {}, workspace, egress=listener).end()
        raise
    plan = bwrap.Plan(workspace=workspace, home=home, read_only=extra, uid=settings.agent_uid,
                      gid=settings.agent_gid, max_procs=settings.agent_max_procs,
                      max_file_bytes=settings.agent_max_file_bytes,
                      max_memory_bytes=settings.agent_max_memory_bytes, switch_uid=switches_uid(settings),
                      env_fd=fds[0], passwd_fd=fds[1], group_fd=fds[2],
                      egress=listener.path.parent if listener is not None else None,
                      mirrors=route.policy.loopback_ports() if route is not None else (),
                      staged=_unreachable(settings, [*extra, workspace, home,
                                                     *([listener.path.parent] if listener is not None else [])]))
    # bwrap's own environment is readable inside (it is the sandbox's pid 1): nothing but PATH
    return Launch(bwrap.command(plan, argv), {"PATH": probe.HOST_PATH}, workspace, pass_fds=fds, sandboxed=True,
                  egress=listener, route=route)


PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")
NO_PROXY_VARIABLES = ("NO_PROXY", "no_proxy")


def _route(settings: Settings, env: dict[str, str], policy: Policy) -> Route:
    """The agent's route; its SCHEDULE_API_URL (when it names the server's agent API over http)
    becomes the reserved name, which the proxy alone resolves."""
    api = urlsplit(settings.api_url)
    try:
        api_port = api.port or (443 if api.scheme == "https" else 80)
    except ValueError:
        api_port = 0
    if api.scheme != "http" or not api.hostname or not api_port:
        rule = url_rule(settings.api_url)  # https (a public name): the agent reaches it like any allowed host
        return Route(dataclasses.replace(policy, rules=(*policy.rules, rule)) if rule else policy)
    url = env.get("SCHEDULE_API_URL")
    if url is not None and url.rstrip("/") == settings.api_url.rstrip("/"):
        env["SCHEDULE_API_URL"] = urlunsplit(("http", f"{AGENT_API_NAME}:{api_port}", api.path, "", ""))
    return Route(policy, api=(api.hostname, api_port), api_port=api_port)


def _listen(settings: Settings, route: Route) -> Listener:
    """A folder of its own holding the proxy's socket for one agent process (bound into its sandbox)."""
    parent = settings.data_dir / "egress"
    parent.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="agent-", dir=parent))
    owner = (settings.agent_uid, settings.agent_gid) if switches_uid(settings) else None
    try:
        if owner is not None:
            os.chown(folder, *owner)
        return proxy().open(route, folder, owner=owner)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _check(settings: Settings, workspace: Path, home: Path, read_only: tuple[Path, ...]) -> None:
    """Refuse what the sandbox must never show or cannot bind, with the reason."""
    data = settings.data_dir.resolve()
    for name, folder in (("workspace", workspace), ("agent home", home)):
        try:
            st = folder.lstat()
        except FileNotFoundError:
            raise SandboxError(f"the agent's {name} {folder} does not exist") from None
        if not stat.S_ISDIR(st.st_mode):
            raise SandboxError(f"the agent's {name} {folder} is not a folder")
        if folder.resolve() == data or data.is_relative_to(folder.resolve()):
            raise SandboxError(f"the agent's {name} {folder} would show it the whole data dir")
    for path in read_only:
        if not path.exists():
            raise SandboxError(f"{path}, which the agent needs to read, does not exist")
        if data.is_relative_to(path.resolve()) or path.resolve() in (data / "workspaces", data / "agent-homes"):
            raise SandboxError(f"{path} cannot be shown to the agent: it holds the data dir")


def _unreachable(settings: Settings, sources: Sequence[Path]) -> tuple[Path, ...]:
    """The bind sources the agent uid cannot reach itself (a closed folder above them): staged by
    the root server first (app.agents.sandbox.bwrap). A non-root server's bwrap has its own uid."""
    if not switches_uid(settings):
        return ()
    return tuple(p for p in dict.fromkeys(sources) if closed_parent(p, settings.agent_uid, settings.agent_gid))


def _visible_ca(settings: Settings, read_only: tuple[Path, ...]) -> dict[str, str]:
    """The server's certificate variables whose files the agent can see (others would mislead it)."""
    shown = (*bwrap.VISIBLE_PREFIXES, *read_only)
    return {name: value for name, value in settings.agent_ca_env
            if any(Path(value).is_relative_to(p) for p in shown)}


def _memfd(data: bytes) -> int:
    """An anonymous in-memory file holding ``data``, read from its start by bwrap."""
    fd = os.memfd_create("chatcron-sandbox")
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


def network(settings: Settings) -> str:
    """``proxy`` (each agent in a network namespace of its own, out only through the egress proxy)
    or ``host`` (CHATCRON_AGENT_NETWORK=host, or no sandbox at all)."""
    return "proxy" if settings.agent_sandbox == "bwrap" and settings.agent_network == "proxy" else "host"


def describe_network(settings: Settings) -> str:
    """One line for ``list-agents``."""
    if network(settings) == "proxy":
        return ("network: proxy (each agent in a network namespace of its own; out only through the egress "
                "proxy, to its model hosts, its base URLs and the project's allow_hosts)")
    why = "the sandbox is off" if settings.agent_sandbox == "off" else "CHATCRON_AGENT_NETWORK=host"
    return f"network: host (agents share the host's network: {why})"


def health(settings: Settings) -> dict[str, str]:
    """``agent_sandbox`` for /api/health: ``bwrap`` or ``off``; ``agent_network``: ``proxy`` or
    ``host``. Whether the sandbox can run is :func:`problem`'s (app.agents.doctor reports it)."""
    return {"agent_sandbox": settings.agent_sandbox, "agent_network": network(settings)}


def problem(settings: Settings) -> str | None:
    """None when agents can be sandboxed here as configured (or the sandbox is off), else what is
    wrong and how to fix it — for an administrator (agent turns fail with it as their detail)."""
    return probe.problem(settings) if settings.agent_sandbox == "bwrap" else None


def log_mode(settings: Settings) -> None:
    """Said at every start of a process: ``off`` loudly, the server's uid kept, the host's network."""
    pid = os.getpid()
    if settings.agent_sandbox == "off":
        log.warning("action=agent_sandbox_off pid=%s detail=agents run unfenced, as the server's uid, "
                    "with no limits (CHATCRON_AGENT_SANDBOX=off)", pid)
        return
    if not switches_uid(settings):
        log.warning("action=agent_sandbox_same_uid pid=%s detail=the server is not root: sandboxed agents "
                    "keep the server's uid on the host", pid)
    if network(settings) == "host":
        log.warning("action=agent_network_host pid=%s detail=agents share the host's network: every loopback "
                    "service is within their reach (CHATCRON_AGENT_NETWORK=host)", pid)
