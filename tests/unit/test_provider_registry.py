"""Provider choice and settings (SPEC §4), plus the pure parts of the command and openai providers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from app.agents import sandbox
from app.agents.providers.command import CommandProvider, LineSplitter
from app.agents.providers.demo import DemoProvider
from app.agents.providers.openai import OpenAIProvider, SseDecoder, build_messages, is_done, parse_chunk
from app.agents.providers.registry import make_provider_factory
from app.core.config import Settings
from app.core.models import Project
from app.core.ports import ProviderError

SERVER_URL = "https://llm.example.test/v1"


def _project(provider: str | None = None, **options: object) -> Project:
    return Project(id=7, name="P", owner_id=1, provider=provider, provider_settings=json.dumps(options))


def _pick(project: Project | None, **settings: object):  # a Provider
    return make_provider_factory(Settings(**settings))(project)


# -- choice ------------------------------------------------------------------------------------

def test_default_is_the_servers_provider() -> None:
    assert isinstance(_pick(None), DemoProvider)
    assert isinstance(_pick(_project(), provider="command", provider_command="agent -p"), CommandProvider)


def test_projects_own_provider_wins_over_the_server_default() -> None:
    chosen = _pick(_project("openai", base_url="http://127.0.0.1:9/v1", model="m"), provider="demo")
    assert isinstance(chosen, OpenAIProvider)
    assert isinstance(_pick(_project("demo"), provider="command", provider_command="agent"), DemoProvider)


def test_unknown_provider_is_refused() -> None:
    with pytest.raises(ProviderError, match="unknown provider 'gpt'"):
        _pick(_project("gpt"))


# -- command -----------------------------------------------------------------------------------

def test_command_line_is_split_like_a_shell_without_one() -> None:
    chosen = _pick(None, provider="command", provider_command="agent -p --name 'two words' $HOME;x")
    assert chosen.argv == ("agent", "-p", "--name", "two words", "$HOME;x")


def test_projects_command_wins_over_the_servers() -> None:
    chosen = _pick(_project(command="own --flag"), provider="command", provider_command="server")
    assert chosen.argv == ("own", "--flag")


@pytest.mark.parametrize(("server", "own"), [("", None), ("", "  "), ("   ", None)],
                         ids=["nothing", "blank-project-command", "blank-server-command"])
def test_command_without_any_command_is_refused(server: str, own: str | None) -> None:
    project = _project("command", **({"command": own} if own is not None else {}))
    with pytest.raises(ProviderError) as caught:
        _pick(project, provider_command=server)
    assert str(caught.value) == "no command configured: set CHATCRON_PROVIDER_COMMAND or the project's command"


def test_unbalanced_quotes_are_refused() -> None:
    with pytest.raises(ProviderError, match="cannot be split"):
        _pick(_project("command", command="agent 'open"))


def test_unfenced_environment_is_the_base_plus_the_turns_variables_only(tmp_path: Path) -> None:
    launch = sandbox.prepare(Settings(agent_sandbox="off"), ["agent"], workspace=tmp_path, home=tmp_path / "h",
                             env={"SCHEDULE_API_URL": "http://x", "SCHEDULE_API_TOKEN": "t"})
    assert launch.env == {"PATH": os.pathsep.join(os.get_exec_path()), "HOME": str(tmp_path / "h"),
                          "LANG": "C.UTF-8", "TERM": "dumb", "SCHEDULE_API_URL": "http://x", "SCHEDULE_API_TOKEN": "t"}
    assert (launch.argv, launch.cwd, launch.pass_fds, launch.sandboxed) == (["agent"], tmp_path, (), False)


def test_the_agents_environment_holds_no_server_secret(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CHATCRON_DATABASE_URL", "postgresql://user:secret@db/x")
    launch = sandbox.prepare(Settings(agent_sandbox="off"), ["agent"], workspace=tmp_path, home=tmp_path, env={})
    assert set(launch.env) == {"PATH", "HOME", "LANG", "TERM"}
    assert "secret" not in json.dumps(launch.env)


LIMITS = Settings(agent_max_procs=64, agent_max_memory_bytes=256 << 20, agent_max_file_bytes=1 << 20)


@pytest.mark.parametrize(("code", "tail", "sandboxed", "message"), [
    (3, "boom", False, "command exited with 3: boom"),
    (1, "", False, "command exited with 1"),
    (-9, "", False, "command killed by SIGKILL"),
    (137, "", True, "command killed by SIGKILL"),
    (137, "", False, "command exited with 137"),
    (1, "BlockingIOError: [Errno 11] Resource temporarily unavailable", True,
     "command exited with 1 (sandbox limit reached: processes, CHATCRON_AGENT_MAX_PROCS=64): "
     "BlockingIOError: [Errno 11] Resource temporarily unavailable"),
    (1, "MemoryError", True,
     "command exited with 1 (sandbox limit reached: memory, CHATCRON_AGENT_MAX_MEMORY_BYTES=268435456): "
     "MemoryError"),
    (153, "", True,
     "command killed by SIGXFSZ (sandbox limit reached: file size, CHATCRON_AGENT_MAX_FILE_BYTES=1048576)"),
    (1, "MemoryError", False, "command exited with 1: MemoryError"),
    (1, "bwrap: execvp no-such-cli: No such file or directory", True,
     "command could not start: no-such-cli: No such file or directory"),
    (1, "bwrap: Can't find source path /x: Permission denied", True,
     "the agent sandbox could not start: bwrap: Can't find source path /x: Permission denied"),
], ids=["status-and-stderr", "no-stderr", "signal", "sandboxed-signal", "unfenced-137", "procs", "memory",
        "file-size", "unfenced-no-hint", "sandboxed-missing-program", "sandbox-setup"])
def test_exit_message(code: int, tail: str, sandboxed: bool, message: str) -> None:
    assert sandbox.explain_exit(LIMITS, code, tail, sandboxed=sandboxed) == message


def test_line_splitter_keeps_newlines_and_caps_long_lines() -> None:
    lines = LineSplitter(max_bytes=8)
    out = [*lines.feed(b"ab\ncd"), *lines.feed(b"efghijkl\nz"), *lines.flush()]
    assert out == ["ab\n", "cdefghij", "kl\n", "z"]


def test_line_splitter_completes_a_character_cut_by_the_limit() -> None:
    lines = LineSplitter(max_bytes=4)
    out = [*lines.feed("aaé€\n".encode()), *lines.flush()]  # é is cut after its first byte
    assert "".join(out) == "aaé€\n"
    assert all(len(piece.encode()) <= 4 for piece in out)


def test_line_splitter_replaces_invalid_utf8() -> None:
    assert [*LineSplitter().feed(b"ok \xff\n")] == ["ok \ufffd\n"]


# -- openai settings ---------------------------------------------------------------------------

def test_openai_takes_the_servers_settings() -> None:
    chosen = _pick(None, provider="openai", openai_base_url=SERVER_URL, openai_model="m1", openai_api_key="k")
    assert (chosen.config.base_url, chosen.config.model, chosen.config.api_key) == (SERVER_URL, "m1", "k")
    assert chosen.config.history_budget_chars == 24_000
    assert chosen.url.path == "/v1/chat/completions"


def test_projects_openai_settings_win() -> None:
    project = _project("openai", model="m2", history_budget_chars=500)
    chosen = _pick(project, openai_base_url=SERVER_URL, openai_model="m1", openai_api_key="k")
    assert (chosen.config.model, chosen.config.api_key, chosen.config.history_budget_chars) == ("m2", "k", 500)


def test_servers_key_is_never_sent_to_a_url_the_project_chose() -> None:
    settings = {"openai_base_url": SERVER_URL, "openai_model": "m", "openai_api_key": "server-key"}
    elsewhere = _pick(_project("openai", base_url="http://attacker.test/v1"), **settings)
    assert elsewhere.config.api_key == ""
    own_key = _pick(_project("openai", base_url="http://other.test/v1", api_key="own"), **settings)
    assert own_key.config.api_key == "own"
    same = _pick(_project("openai", base_url=SERVER_URL + "/"), **settings)
    assert same.config.api_key == "server-key"


@pytest.mark.parametrize(("settings", "missing"), [
    ({"openai_model": "m"}, "no base_url configured"),
    ({"openai_base_url": SERVER_URL}, "no model configured"),
], ids=["no-base-url", "no-model"])
def test_openai_without_base_url_or_model_is_refused(settings: dict[str, str], missing: str) -> None:
    with pytest.raises(ProviderError, match=missing):
        _pick(_project("openai"), **settings)


def test_openai_base_url_must_be_http() -> None:
    with pytest.raises(ProviderError, match="http"):
        _pick(_project("openai", base_url="file:///etc/passwd", model="m"))


# -- project settings errors -------------------------------------------------------------------

@pytest.mark.parametrize(("raw", "message"), [
    ("{not json", "project 7 setting provider_settings is not valid JSON"),
    ("[1, 2]", "project 7 setting provider_settings must be a JSON object"),
    ('{"comand": "x"}', "unknown key 'comand'"),
    ('{"command": 5}', "command must be a string"),
    ('{"history_budget_chars": "10"}', "history_budget_chars must be a whole number"),
    ('{"history_budget_chars": true}', "history_budget_chars must be a whole number"),
    ('{"history_budget_chars": -1}', "history_budget_chars must be at least 0"),
], ids=["invalid-json", "not-an-object", "unknown-key", "wrong-type", "number-as-text", "bool", "negative"])
def test_bad_project_settings_name_the_setting(raw: str, message: str) -> None:
    project = Project(id=7, name="P", owner_id=1, provider="command", provider_settings=raw)
    with pytest.raises(ProviderError, match=message.replace("(", r"\(")):
        _pick(project, provider_command="agent")


# -- history budget ----------------------------------------------------------------------------

def _texts(messages: list[dict[str, str]]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in messages]


U1, A1, U2, A2 = ("user", "u1" * 5), ("assistant", "a1" * 5), ("user", "u2" * 5), ("assistant", "a2" * 5)
HISTORY = (U1, A1, U2, A2)  # 10 characters each; the prompt "now!" is 4


@pytest.mark.parametrize(("budget", "kept"), [
    (44, [U1, A1, U2, A2]),  # exactly the budget
    (43, [U2, A2]),  # A1 fits (34) but cannot open the conversation, U1 does not fit
    (33, [U2, A2]),
    (23, []),  # only A2 fits (14), and an assistant turn cannot open the conversation
    (4, []),
    (0, []),  # the prompt is sent even over budget
], ids=["exact-fit", "leading-assistant-dropped", "newest-pair", "lone-assistant-dropped", "prompt-only", "zero"])
def test_history_is_trimmed_newest_first_and_the_prompt_always_sent(budget: int, kept: list) -> None:
    assert _texts(build_messages(HISTORY, "now!", budget)) == [*kept, ("user", "now!")]


def test_history_stops_at_the_first_turn_that_does_not_fit() -> None:
    history = (("user", "tiny"), ("assistant", "x" * 100), ("user", "last"))
    assert _texts(build_messages(history, "p", 50)) == [("user", "last"), ("user", "p")]


def test_kept_history_never_exceeds_the_budget() -> None:
    history = tuple(("user" if i % 2 == 0 else "assistant", "w" * (i * 37 % 500)) for i in range(200))
    for budget in (0, 100, 999, 5000, 24_000):
        messages = build_messages(history, "q" * 50, budget)
        assert sum(len(m["content"]) for m in messages[:-1]) + 50 <= max(budget, 50)
        assert messages[-1] == {"role": "user", "content": "q" * 50}


# -- server-sent events ------------------------------------------------------------------------

def test_sse_decoder_yields_data_at_blank_lines() -> None:
    events = SseDecoder()
    lines = [": keep-alive\n", "event: delta\n", "data: {\"a\": 1}\r\n", "\n", "data:[DONE]\n", "\n"]
    assert [events.feed(line) for line in lines] == [None, None, None, '{"a": 1}', None, "[DONE]"]


def test_sse_decoder_joins_multi_line_data_and_flushes_at_the_end() -> None:
    events = SseDecoder()
    assert events.feed("data: one\n") is None and events.feed("data: two\n") is None
    assert events.flush() == "one\ntwo"
    assert events.flush() is None


def test_done_marker() -> None:
    assert is_done("[DONE]") and is_done(" [DONE] ") and not is_done('{"done": true}')


@pytest.mark.parametrize(("data", "parsed"), [
    ('{"choices": [{"delta": {"content": "Hi"}}]}', ("Hi", False)),
    ('{"choices": [{"delta": {"role": "assistant"}}]}', ("", False)),
    ('{"choices": [{"delta": {"content": null}, "finish_reason": "stop"}]}', ("", True)),
    ('{"choices": []}', ("", False)),
    ('{"usage": {"total_tokens": 3}}', ("", False)),
], ids=["content", "role-only", "finish", "no-choices", "usage-only"])
def test_parse_chunk(data: str, parsed: tuple[str, bool]) -> None:
    assert parse_chunk(data) == parsed


def test_error_inside_the_stream_fails_the_turn() -> None:
    with pytest.raises(ProviderError, match="rate limited"):
        parse_chunk('{"error": {"message": "rate limited", "type": "requests"}}')
    with pytest.raises(ProviderError, match="not JSON"):
        parse_chunk("<html>")
