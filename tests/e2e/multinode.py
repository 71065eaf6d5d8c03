"""The multi-node topology of docs/DEPLOY.md on one machine, for tests/e2e/test_multinode.py.

One PostgreSQL schema (the only thing the processes share), one Redis database (Reflex's state
and socket records between the web workers), one ``reflex run --env prod`` with two granian
workers, and scheduler processes started with ``tests/integration/procs.py``. Every process gets
its own data folder, as it would on its own host.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT, _wait_healthy
from tests.isolation import free_port, redis_db

PG_ENV = "CHATCRON_TEST_POSTGRES_URL"
REDIS_ENV = "CHATCRON_TEST_REDIS_URL"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/{db}"  # a database number per test worker: FLUSHDB at teardown
SOCKET_RECORD_PREFIX = "token_manager_socket_record_"  # Reflex's RedisTokenManager key of a tab's socket


def redis_url_or_skip() -> str:
    """The test Redis URL, or a loud skip when Redis does not answer."""
    import redis

    url = os.environ.get(REDIS_ENV) or DEFAULT_REDIS_URL.format(db=redis_db())
    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except Exception as exc:  # noqa: BLE001 - any failure to reach it is "unreachable"
        reason = f"multi-node test SKIPPED: Redis at {url} is unreachable ({exc}); set {REDIS_ENV}"
        print(f"\n{reason}")
        pytest.skip(reason)
    return url


def postgres_url_or_skip() -> str:
    url = os.environ.get(PG_ENV)
    if not url:
        reason = f"multi-node test SKIPPED: {PG_ENV} is not set (CI sets it); the topology needs PostgreSQL"
        print(f"\n{reason}")
        pytest.skip(reason)
    return url


def flush_redis(url: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    client.flushdb()
    client.close()


def base_env() -> dict[str, str]:
    """This environment without any CHATCRON_ or REFLEX_REDIS_ setting of the caller's."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith("CHATCRON_") and k not in {"REFLEX_REDIS_URL", "GRANIAN_WORKERS"}}


def manage(env: dict[str, str], *args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "app.manage", *args], env=env, cwd=ROOT,
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


class WebProcess:
    """``reflex run --env prod`` with ``REFLEX_REDIS_URL`` and ``GRANIAN_WORKERS`` set."""

    def __init__(self, env: dict[str, str], log_path: Path, workers: int, web_dir: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # A build folder of its own: a prod build embeds its port, so rebuilding the shared .web/
        # would point the pages of any other running server (the e2e session server) at this one.
        self.env = {**env, "CHATCRON_API_URL": self.url, "GRANIAN_WORKERS": str(workers),
                    "REFLEX_WEB_WORKDIR": str(web_dir)}
        self.log_path = log_path
        self.popen: subprocess.Popen | None = None

    def start(self, timeout: float = 240) -> None:
        with self.log_path.open("w") as out:
            self.popen = subprocess.Popen(
                [str(Path(sys.executable).parent / "reflex"), "run", "--env", "prod",
                 "--frontend-port", str(self.port), "--backend-port", str(self.port), "--backend-host", "127.0.0.1"],
                cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )
        _wait_healthy(self.url, self.popen, self.log_path, timeout)

    def worker_pids(self) -> list[int]:
        """The granian workers: the supervisor's (``reflex run``'s) forked children, read from /proc."""
        assert self.popen is not None
        return children(self.popen.pid)

    def stop(self) -> None:
        if self.popen is None or self.popen.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signal.SIGTERM)
        try:
            self.popen.wait(20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(10)


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces, so split after its closing parenthesis.
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return sorted(found)


def socket_instance(redis_url: str, token: str, timeout: float = 10.0) -> str:
    """The Reflex worker instance holding the websocket of the tab whose client token is ``token``."""
    import redis

    client = redis.Redis.from_url(redis_url)
    deadline = time.monotonic() + timeout
    try:
        while True:
            raw = client.get(SOCKET_RECORD_PREFIX + token)
            if raw is not None:
                return pickle.loads(raw).instance_id  # a SocketRecord written by the worker itself
            if time.monotonic() > deadline:
                pytest.fail(f"no socket record in Redis for tab token {token} after {timeout} s")
            time.sleep(0.1)
    finally:
        client.close()


def tail(path: Path, lines: int = 40) -> str:
    """The last lines of a log, without Reflex's repeated deprecation warnings."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    keep = [line for line in text.splitlines() if "eprecat" not in line and "(app/ui/state" not in line]
    return "\n".join(keep[-lines:])
