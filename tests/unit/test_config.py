"""Settings from the environment (SPEC §9): documented defaults, and every bad value named."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.core.config import ConfigError, Settings, load_settings, variable_names

# SPEC §9 (and §3 for the backoff/history knobs): variable → documented default.
SPEC_DEFAULTS = {
    "CHATCRON_PROVIDER": ("provider", "demo"),
    "CHATCRON_MIN_INTERVAL_SECONDS": ("min_interval_seconds", 60),
    "CHATCRON_MAX_CONCURRENT_RUNS": ("max_concurrent_runs", 4),
    "CHATCRON_MAX_TASKS_PER_PROJECT": ("max_tasks_per_project", 50),
    "CHATCRON_PROMPT_MAX_BYTES": ("prompt_max_bytes", 32768),
    "CHATCRON_REQUEST_MAX_BYTES": ("request_max_bytes", 65536),
    "CHATCRON_GRANT_TTL_SECONDS": ("grant_ttl_seconds", 14400),
    "CHATCRON_BUSY_RETRY_SECONDS": ("busy_retry_seconds", 15),
    "CHATCRON_RUN_TIMEOUT_SECONDS": ("run_timeout_seconds", 1800),
    "CHATCRON_RUN_LEASE_SECONDS": ("run_lease_seconds", 30),
    "CHATCRON_FAILURE_BACKOFF_SECONDS": ("failure_backoff_seconds", 60),
    "CHATCRON_FAILURE_BACKOFF_CAP_SECONDS": ("failure_backoff_cap_seconds", 3600),
    "CHATCRON_MAX_CONSECUTIVE_FAILURES": ("max_consecutive_failures", 5),
    "CHATCRON_RUN_HISTORY_LIMIT": ("run_history_limit", 200),
    "CHATCRON_APPROVAL_TIMEOUT_SECONDS": ("approval_timeout_seconds", 900),  # §13
}


@pytest.mark.parametrize(("variable", "field", "default"),
                         [(v, f, d) for v, (f, d) in SPEC_DEFAULTS.items()], ids=list(SPEC_DEFAULTS))
def test_default_matches_the_spec(variable: str, field: str, default: object) -> None:
    assert variable in variable_names()
    assert getattr(load_settings({}), field) == default


def test_default_store_is_a_sqlite_file_in_the_data_dir() -> None:
    settings = load_settings({})
    assert settings.data_dir == Path("data")
    assert settings.database_url == ""
    assert settings.db_url == f"sqlite:///{(Path('data') / 'chatcron.db').resolve()}"
    assert settings.workspaces_dir == Path("data") / "workspaces"


def test_settings_are_read_from_the_given_mapping_not_the_process_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATCRON_MAX_CONCURRENT_RUNS", "9")
    assert load_settings({}).max_concurrent_runs == 4
    assert load_settings().max_concurrent_runs == 9


GOOD_VALUES = [
    ("CHATCRON_DATA_DIR", " /srv/chatcron ", "data_dir", Path("/srv/chatcron")),
    ("CHATCRON_DATABASE_URL", "postgresql://db/chatcron", "database_url", "postgresql://db/chatcron"),
    ("CHATCRON_PROVIDER", " openai ", "provider", "openai"),
    ("CHATCRON_MIN_INTERVAL_SECONDS", " 300 ", "min_interval_seconds", 300),
    ("CHATCRON_MAX_CONCURRENT_RUNS", "0", "max_concurrent_runs", 0),  # an explicit 0 disables the limit
    ("CHATCRON_MAX_TASKS_PER_PROJECT", "0", "max_tasks_per_project", 0),
    ("CHATCRON_REQUEST_MAX_BYTES", "1024", "request_max_bytes", 1024),
    ("CHATCRON_RUN_LEASE_SECONDS", "2", "run_lease_seconds", 2),
    ("CHATCRON_DEMO_WORD_DELAY_SECONDS", "0.5", "demo_word_delay_seconds", 0.5),
    ("CHATCRON_NOTIFY_ATTEMPT_SECONDS", " 2.5 ", "notify_attempt_seconds", 2.5),
    ("CHATCRON_ALLOWED_ORIGINS", " https://Chat.Example.com:443/ , http://10.0.0.5:3000,https://chat.example.com",
     "allowed_origins", ("https://chat.example.com", "http://10.0.0.5:3000")),
]


@pytest.mark.parametrize(("variable", "raw", "field", "expected"), GOOD_VALUES,
                         ids=[f"{v}={r.strip()}" for v, r, _, _ in GOOD_VALUES])
def test_good_value_is_parsed(variable: str, raw: str, field: str, expected: object) -> None:
    assert getattr(load_settings({variable: raw}), field) == expected


BAD_VALUES = [
    ("CHATCRON_PROVIDER", "gpt"),
    ("CHATCRON_APPROVAL_TIMEOUT_SECONDS", "0"),
    ("CHATCRON_APPROVAL_TIMEOUT_SECONDS", "soon"),
    ("CHATCRON_NOTIFY_ATTEMPT_SECONDS", "0.5"),
    ("CHATCRON_NOTIFY_ATTEMPT_SECONDS", "10s"),
    ("CHATCRON_NOTIFY_ATTEMPT_SECONDS", "inf"),
    ("CHATCRON_MIN_INTERVAL_SECONDS", "abc"),
    ("CHATCRON_MIN_INTERVAL_SECONDS", "-1"),
    ("CHATCRON_MIN_INTERVAL_SECONDS", "1.5"),
    ("CHATCRON_MAX_CONCURRENT_RUNS", "four"),
    ("CHATCRON_MAX_CONCURRENT_RUNS", "-4"),
    ("CHATCRON_MAX_TASKS_PER_PROJECT", "5O"),
    ("CHATCRON_PROMPT_MAX_BYTES", "0"),
    ("CHATCRON_PROMPT_MAX_BYTES", "32k"),
    ("CHATCRON_REQUEST_MAX_BYTES", "1023"),
    ("CHATCRON_GRANT_TTL_SECONDS", "0"),
    ("CHATCRON_BUSY_RETRY_SECONDS", "0"),
    ("CHATCRON_RUN_TIMEOUT_SECONDS", "30m"),
    ("CHATCRON_RUN_LEASE_SECONDS", "abc"),
    ("CHATCRON_RUN_LEASE_SECONDS", "1"),
    ("CHATCRON_FAILURE_BACKOFF_SECONDS", "-60"),
    ("CHATCRON_FAILURE_BACKOFF_CAP_SECONDS", "1h"),
    ("CHATCRON_MAX_CONSECUTIVE_FAILURES", "-1"),
    ("CHATCRON_RUN_HISTORY_LIMIT", "0"),
    ("CHATCRON_SESSION_TTL_SECONDS", "59"),
    ("CHATCRON_DEMO_WORD_DELAY_SECONDS", "fast"),
    ("CHATCRON_DEMO_WORD_DELAY_SECONDS", "-0.1"),
    ("CHATCRON_ALLOWED_ORIGINS", "*"),
    ("CHATCRON_ALLOWED_ORIGINS", "chat.example.com"),
    ("CHATCRON_ALLOWED_ORIGINS", "https://chat.example.com/app"),
    ("CHATCRON_ALLOWED_ORIGINS", "ftp://chat.example.com"),
    ("CHATCRON_ALLOWED_ORIGINS", "https://chat.example.com:99999"),
    ("CHATCRON_ALLOWED_ORIGINS", "https://chat.example.com,null"),
]


@pytest.mark.parametrize(("variable", "raw"), BAD_VALUES, ids=[f"{v}={r}" for v, r in BAD_VALUES])
def test_bad_value_is_refused_naming_the_variable(variable: str, raw: str) -> None:
    with pytest.raises(ConfigError, match=f"^{variable}:"):
        load_settings({variable: raw})


NON_FINITE = ["nan", "inf", "-inf"]


@pytest.mark.parametrize("raw", NON_FINITE, ids=NON_FINITE)
def test_non_finite_word_delay_is_refused(raw: str) -> None:
    # inf would make every demo turn fail (Event.wait overflows); nan would silently mean "no delay"
    with pytest.raises(ConfigError, match="^CHATCRON_DEMO_WORD_DELAY_SECONDS:"):
        load_settings({"CHATCRON_DEMO_WORD_DELAY_SECONDS": raw})


@pytest.mark.parametrize("variable", variable_names())
@pytest.mark.parametrize("blank", ["", "   "], ids=["empty", "spaces"])
def test_empty_value_means_default(variable: str, blank: str) -> None:
    assert load_settings({variable: blank}) == Settings()


def test_command_provider_without_a_command_is_refused() -> None:
    with pytest.raises(ConfigError, match="^CHATCRON_PROVIDER_COMMAND:"):
        load_settings({"CHATCRON_PROVIDER": "command"})
    with pytest.raises(ConfigError, match="^CHATCRON_PROVIDER_COMMAND:"):
        load_settings({"CHATCRON_PROVIDER": "command", "CHATCRON_PROVIDER_COMMAND": "  "})


def test_command_provider_with_a_command_is_accepted() -> None:
    settings = load_settings({"CHATCRON_PROVIDER": "command", "CHATCRON_PROVIDER_COMMAND": "agent --print"})
    assert (settings.provider, settings.provider_command) == ("command", "agent --print")


def test_config_error_is_a_value_error() -> None:
    assert issubclass(ConfigError, ValueError)
