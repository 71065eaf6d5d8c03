"""Typed settings, read once from the environment (SPEC §9).

Nothing else in the project reads ``os.environ``: callers receive a :class:`Settings`.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from app.core.origins import parse_origin


class ConfigError(ValueError):
    """A setting has a value the product cannot run with; the message names the variable."""


PROVIDERS = ("demo", "command", "openai", "acp")
SANDBOXES = ("bwrap", "off")
NETWORKS = ("proxy", "host")  # CHATCRON_AGENT_NETWORK: the egress proxy (SPEC §12.1), or the host's network
GiB = 1 << 30
# Certificate variables an agent CLI needs behind a TLS-inspecting egress proxy (node reads only
# NODE_EXTRA_CA_CERTS, not the system store): passed into the agent's environment when set.
CA_VARIABLES = ("NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")


def _int(minimum: int) -> Callable[[str, str], int]:
    def parse(name: str, raw: str) -> int:
        try:
            value = int(raw.strip())
        except ValueError:
            raise ConfigError(f"{name}: {raw!r} is not a whole number") from None
        if value < minimum:
            raise ConfigError(f"{name}: {value} is below the minimum {minimum}")
        return value

    return parse


def _float(minimum: float) -> Callable[[str, str], float]:
    def parse(name: str, raw: str) -> float:
        try:
            value = float(raw.strip())
        except ValueError:
            raise ConfigError(f"{name}: {raw!r} is not a number") from None
        if not math.isfinite(value):
            raise ConfigError(f"{name}: {raw!r} is not a finite number")
        if value < minimum:
            raise ConfigError(f"{name}: {value} is below the minimum {minimum}")
        return value

    return parse


def _text(name: str, raw: str) -> str:
    return raw.strip()


def _flag(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name}: {raw!r} is not 1 or 0 (true or false)")


def _provider(name: str, raw: str) -> str:
    value = raw.strip()
    if value not in PROVIDERS:
        raise ConfigError(f"{name}: {value!r} is not one of {', '.join(PROVIDERS)}")
    return value


def _sandbox(name: str, raw: str) -> str:
    value = raw.strip()
    if value not in SANDBOXES:
        raise ConfigError(f"{name}: {value!r} is not one of {', '.join(SANDBOXES)}")
    return value


def _network(name: str, raw: str) -> str:
    value = raw.strip()
    if value not in NETWORKS:
        raise ConfigError(f"{name}: {value!r} is not one of {', '.join(NETWORKS)}")
    return value


def _paths(name: str, raw: str) -> tuple[Path, ...]:
    """Absolute paths separated by ':' (like PATH); '/' itself is refused (it would bind everything)."""
    out = []
    for item in (x.strip() for x in raw.split(":")):
        if not item:
            continue
        path = Path(item)
        if not path.is_absolute():
            raise ConfigError(f"{name}: {item!r} is not an absolute path")
        if path == Path("/"):
            raise ConfigError(f"{name}: '/' would show the agent the whole file system")
        out.append(path)
    return tuple(out)


def _origins(name: str, raw: str) -> tuple[str, ...]:
    found: list[str] = []
    for item in (x for x in raw.split(",") if x.strip()):
        try:
            origin = parse_origin(item)
        except ValueError as exc:
            raise ConfigError(f"{name}: {exc}") from None
        if origin not in found:
            found.append(origin)
    return tuple(found)


@dataclasses.dataclass(frozen=True)
class SmtpServer:
    """Where notification emails go (``CHATCRON_SMTP_URL``): ``smtp://`` upgrades with STARTTLS
    when the server offers it, ``smtps://`` speaks TLS from the start."""

    host: str
    port: int
    user: str = ""
    password: str = ""
    ssl: bool = False


def parse_smtp_url(name: str, raw: str) -> SmtpServer:
    """``smtp://user:pass@host:port`` (user, password and port optional; 25, or 465 for smtps)."""
    try:
        parts = urlsplit(raw.strip())
        port = parts.port
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc}") from None
    if parts.scheme not in ("smtp", "smtps"):
        raise ConfigError(f"{name}: must start with smtp:// or smtps://")
    if not parts.hostname:
        raise ConfigError(f"{name}: names no host (smtp://user:pass@host:port)")
    ssl = parts.scheme == "smtps"
    return SmtpServer(host=parts.hostname, port=port or (465 if ssl else 25), user=unquote(parts.username or ""),
                      password=unquote(parts.password or ""), ssl=ssl)


def _smtp_url(name: str, raw: str) -> str:
    parse_smtp_url(name, raw)
    return raw.strip()


def _address(name: str, raw: str) -> str:
    value = raw.strip()
    if "@" not in value or any(c.isspace() for c in value):
        raise ConfigError(f"{name}: {value!r} is not an email address")
    return value


@dataclasses.dataclass(frozen=True)
class Settings:
    """Every tunable of the product; defaults are the documented ones (README, SPEC §9)."""

    data_dir: Path = Path("data")
    database_url: str = ""
    api_url: str = "http://127.0.0.1:3000"
    provider: str = "demo"
    provider_command: str = ""
    openai_base_url: str = ""
    openai_model: str = ""
    openai_api_key: str = ""
    demo_word_delay_seconds: float = 0.04
    min_interval_seconds: int = 60
    max_concurrent_runs: int = 4
    max_tasks_per_project: int = 50
    max_projects_per_user: int = 20  # projects a user owns (0: no limit)
    max_tasks_per_user: int = 200  # schedules in the projects a user owns, all of them together (0: no limit)
    prompt_max_bytes: int = 32768
    request_max_bytes: int = 65536
    grant_ttl_seconds: int = 14400
    busy_retry_seconds: int = 15
    run_timeout_seconds: int = 1800
    run_lease_seconds: int = 30
    run_output_max_bytes: int = 1_048_576
    failure_backoff_seconds: int = 60
    failure_backoff_cap_seconds: int = 3600
    max_consecutive_failures: int = 5
    run_history_limit: int = 200
    session_ttl_seconds: int = 14 * 24 * 3600
    trusted_proxies: tuple[str, ...] = ()  # addresses whose X-Forwarded-Proto/-For are believed
    allowed_origins: tuple[str, ...] = ()  # browser origins let in with credentials; () = the served URL's
    login_max_failures_per_account: int = 5
    login_max_failures_per_address: int = 20
    login_window_seconds: int = 900
    test_postgres_url: str = ""
    # the agent sandbox (SPEC §12): every agent process runs in bubblewrap unless this is "off"
    agent_sandbox: str = "bwrap"
    agent_network: str = "proxy"  # a sandboxed agent's network: its own namespace and the egress proxy
    agent_uid: int = 65534
    agent_gid: int = 65534
    agent_max_procs: int = 256
    agent_max_file_bytes: int = GiB
    # enforced as RLIMIT_DATA, not RLIMIT_AS: node reserves ~10 GiB of address space per
    # WebAssembly memory (its fetch does), so an address-space limit breaks node agents
    agent_max_memory_bytes: int = 4 * GiB
    agent_read_only_paths: tuple[Path, ...] = ()  # extra host paths bound read-only (agent CLIs)
    agent_ca_env: tuple[tuple[str, str], ...] = ()  # CA_VARIABLES found in the server's environment
    agents_dir_override: Path | None = None  # CHATCRON_AGENTS_DIR; default <data-dir>/agents
    agent_idle_seconds: int = 300
    max_agent_processes: int = 8
    agent_cancel_grace_seconds: float = 5.0
    # notifications (SPEC §13): email channels need an SMTP server; webhooks need nothing
    smtp_url: str = ""
    smtp_from: str = "chatcron@localhost"
    notify_attempt_seconds: float = 10.0  # one webhook POST or email, connect to last byte, ends within this
    # webhooks may go to loopback, private, link-local and metadata addresses (single-host set-ups, tests)
    webhook_allow_private: bool = False

    @property
    def smtp(self) -> SmtpServer | None:
        """The SMTP server of ``CHATCRON_SMTP_URL``, or None when email is not configured."""
        return parse_smtp_url(PREFIX + "SMTP_URL", self.smtp_url) if self.smtp_url else None
    approval_timeout_seconds: int = 900  # tool_policy=ask: an unanswered approval is rejected after this

    @property
    def db_url(self) -> str:
        """The SQLAlchemy URL in force: the configured one, else a SQLite file in the data dir."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'chatcron.db').resolve()}"

    @property
    def workspaces_dir(self) -> Path:
        """Folder holding one workspace per project."""
        return self.data_dir / "workspaces"

    @property
    def agent_homes_dir(self) -> Path:
        """Folder holding one agent home (the agents' HOME) per project."""
        return self.data_dir / "agent-homes"

    @property
    def agent_tokens_dir(self) -> Path:
        """Folder holding one schedule-token folder per chat (SCHEDULE_API_TOKEN_FILE)."""
        return self.data_dir / "agent-tokens"

    @property
    def agents_dir(self) -> Path:
        """Where presets are installed (``install-agent``): one folder per preset."""
        return self.agents_dir_override or self.data_dir / "agents"


# variable suffix → (field, parser)
_VARIABLES: dict[str, tuple[str, Callable[[str, str], Any]]] = {
    "DATA_DIR": ("data_dir", lambda n, v: Path(_text(n, v) or "data")),
    "DATABASE_URL": ("database_url", _text),
    "API_URL": ("api_url", _text),
    "PROVIDER": ("provider", _provider),
    "PROVIDER_COMMAND": ("provider_command", _text),
    "OPENAI_BASE_URL": ("openai_base_url", _text),
    "OPENAI_MODEL": ("openai_model", _text),
    "OPENAI_API_KEY": ("openai_api_key", _text),
    "DEMO_WORD_DELAY_SECONDS": ("demo_word_delay_seconds", _float(0.0)),
    "MIN_INTERVAL_SECONDS": ("min_interval_seconds", _int(0)),
    "MAX_CONCURRENT_RUNS": ("max_concurrent_runs", _int(0)),
    "MAX_TASKS_PER_PROJECT": ("max_tasks_per_project", _int(0)),
    "MAX_PROJECTS_PER_USER": ("max_projects_per_user", _int(0)),
    "MAX_TASKS_PER_USER": ("max_tasks_per_user", _int(0)),
    "PROMPT_MAX_BYTES": ("prompt_max_bytes", _int(1)),
    "REQUEST_MAX_BYTES": ("request_max_bytes", _int(1024)),
    "GRANT_TTL_SECONDS": ("grant_ttl_seconds", _int(1)),
    "BUSY_RETRY_SECONDS": ("busy_retry_seconds", _int(1)),
    "RUN_TIMEOUT_SECONDS": ("run_timeout_seconds", _int(1)),
    "RUN_LEASE_SECONDS": ("run_lease_seconds", _int(2)),
    "RUN_OUTPUT_MAX_BYTES": ("run_output_max_bytes", _int(1024)),
    "FAILURE_BACKOFF_SECONDS": ("failure_backoff_seconds", _int(0)),
    "FAILURE_BACKOFF_CAP_SECONDS": ("failure_backoff_cap_seconds", _int(0)),
    "MAX_CONSECUTIVE_FAILURES": ("max_consecutive_failures", _int(0)),
    "RUN_HISTORY_LIMIT": ("run_history_limit", _int(1)),
    "SESSION_TTL_SECONDS": ("session_ttl_seconds", _int(60)),
    "LOGIN_MAX_FAILURES_PER_ACCOUNT": ("login_max_failures_per_account", _int(1)),
    "LOGIN_MAX_FAILURES_PER_ADDRESS": ("login_max_failures_per_address", _int(1)),
    "LOGIN_WINDOW_SECONDS": ("login_window_seconds", _int(1)),
    "TEST_POSTGRES_URL": ("test_postgres_url", _text),
    "AGENTS_DIR": ("agents_dir_override", lambda n, v: Path(_text(n, v))),
    "AGENT_IDLE_SECONDS": ("agent_idle_seconds", _int(0)),
    "MAX_AGENT_PROCESSES": ("max_agent_processes", _int(0)),
    "AGENT_CANCEL_GRACE_SECONDS": ("agent_cancel_grace_seconds", _float(0.0)),
    "APPROVAL_TIMEOUT_SECONDS": ("approval_timeout_seconds", _int(1)),
    "TRUSTED_PROXIES": ("trusted_proxies", lambda n, v: tuple(x.strip() for x in v.split(",") if x.strip())),
    "AGENT_SANDBOX": ("agent_sandbox", _sandbox),
    "AGENT_NETWORK": ("agent_network", _network),
    "AGENT_UID": ("agent_uid", _int(1)),  # never 0: the agent must not be root
    "AGENT_GID": ("agent_gid", _int(1)),
    "AGENT_MAX_PROCS": ("agent_max_procs", _int(16)),  # fewer and the sandbox itself cannot start
    "AGENT_MAX_FILE_BYTES": ("agent_max_file_bytes", _int(1 << 20)),
    "AGENT_MAX_MEMORY_BYTES": ("agent_max_memory_bytes", _int(64 << 20)),
    "AGENT_READ_ONLY_PATHS": ("agent_read_only_paths", _paths),
    "ALLOWED_ORIGINS": ("allowed_origins", _origins),
    "SMTP_URL": ("smtp_url", _smtp_url),
    "SMTP_FROM": ("smtp_from", _address),
    "NOTIFY_ATTEMPT_SECONDS": ("notify_attempt_seconds", _float(1.0)),
    "WEBHOOK_ALLOW_PRIVATE": ("webhook_allow_private", _flag),
}

PREFIX = "CHATCRON_"


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Build settings from ``CHATCRON_*`` variables; raises :class:`ConfigError` naming the bad one."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for suffix, (field, parse) in _VARIABLES.items():
        raw = env.get(PREFIX + suffix)
        if raw is not None and raw.strip() != "":
            values[field] = parse(PREFIX + suffix, raw)
    ca = tuple((name, env[name].strip()) for name in CA_VARIABLES if env.get(name, "").strip())
    settings = Settings(**values, agent_ca_env=ca)
    data = settings.data_dir.resolve()
    for path in settings.agent_read_only_paths:
        if data.is_relative_to(path) or path.is_relative_to(data):
            raise ConfigError(f"{PREFIX}AGENT_READ_ONLY_PATHS: {path} overlaps the data dir {data}; "
                              "the agent must never see the database or other projects")
    if settings.provider == "command" and not settings.provider_command:
        raise ConfigError("CHATCRON_PROVIDER_COMMAND: required when CHATCRON_PROVIDER is 'command'")
    return settings


def variable_names() -> list[str]:
    """All documented environment variables, for the README and error messages."""
    return [PREFIX + suffix for suffix in _VARIABLES]
