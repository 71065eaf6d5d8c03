"""The ``remote-schedule`` CLI (SPEC §7) with hostile arguments and environment.

Run as a real subprocess against the recording stub of ``test_remote_schedule_cli``. Whatever an
agent passes, the CLI answers with an exit code and a sentence — 2 for a usage error (nothing is
sent), 3 for unusable credentials, 1 when the API refuses — and never with a traceback. What it
does send stays inside the agent API: ASCII ids, the value given, no file contents.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.unit.test_remote_schedule_cli import CLI, TOKEN, Stub, error, task

CREATE = ["create", "--name", "n", "--prompt", "p"]
SAFE_PATH = re.compile(r"/agent-api/(schedules(/[0-9]+(/[a-z-]+)?|/current/complete)?|whoami)")
MEMORY_CAP = 1 << 30  # address space of the CLI process: a runaway read fails instead of eating the machine


@pytest.fixture
def stub() -> Iterator[Stub]:
    s = Stub()
    yield s
    s.close()


def cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def run(*args: str | bytes, url: str | None, token: str | bytes | None = TOKEN, stdin: Any = None,
        timeout: float = 30, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI as an agent runs it, memory-capped; bytes arguments reach it as raw argv bytes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCHEDULE_API_")}
    env["PYTHONIOENCODING"] = "utf-8"
    if url is not None:
        env["SCHEDULE_API_URL"] = url
    if token is not None:
        env["SCHEDULE_API_TOKEN"] = token if isinstance(token, str) else os.fsdecode(token)
    return subprocess.run([sys.executable, str(CLI), *args], env=env, stdin=stdin, capture_output=True,
                          timeout=timeout, cwd=cwd, check=False, preexec_fn=cap_memory,
                          encoding="utf-8", errors="backslashreplace")


def answered_sanely(result: subprocess.CompletedProcess[str], codes: tuple[int, ...]) -> None:
    """An expected exit code, a sentence on stderr, and no traceback anywhere."""
    assert "Traceback" not in result.stderr + result.stdout, result.stderr[-2000:]
    assert result.returncode in codes, (result.returncode, result.stderr[-2000:])
    if result.returncode:
        assert re.search(r"remote-schedule[\w -]*: \S", result.stderr), result.stderr[-2000:]


def sent_safely(stub: Stub) -> None:
    for seen in stub.requests:
        assert SAFE_PATH.fullmatch(seen.path), seen.path


# -- --name: huge and odd ------------------------------------------------------------------------

def test_a_huge_name_is_sent_whole_and_the_apis_413_becomes_exit_1(stub: Stub) -> None:
    """Linux caps one argv string at 128 KiB (MAX_ARG_STRLEN), so 120 000 characters is the most an agent can pass."""
    stub.answer("POST", "/agent-api/schedules", 413, error("too_large", "body: larger than 65536 bytes"))
    name = "N" * 120_000
    result = run(*CREATE[:2], name, *CREATE[3:], "--every", "300", url=stub.url)
    answered_sanely(result, (1,))
    assert "body: larger than 65536 bytes (HTTP 413)" in result.stderr
    assert stub.requests[0].json["name"] == name
    sent_safely(stub)


ODD_NAMES = {
    "rtl-override": "safe\u202eexe.txt", "zero-width": "a\u200b\u200c\u200db", "bom": "\ufeffname",
    "combining": "e" + "\u0301" * 500, "emoji-zwj": "👩‍👩‍👧‍👦" * 50, "astral": "𝕏𝔂𝔃",
    "terminal-escape": "\x1b[31mred\x1b[0m\x07", "newlines": "a\nb\r\nc", "tabs-and-vt": "a\tb\x0bc\x0cd",
    "dash-first": "--json", "only-spaces": "   ", "noncharacters": "\ufffe\uffff\U0010ffff",
}


@pytest.mark.parametrize("name", list(ODD_NAMES.values()), ids=list(ODD_NAMES))
def test_an_odd_unicode_name_is_sent_as_given(stub: Stub, name: str) -> None:
    stub.answer("POST", "/agent-api/schedules", 201, task(name=name))
    result = run("create", f"--name={name}", "--prompt", "p", "--every", "300", url=stub.url)
    answered_sanely(result, (0,))
    assert stub.requests[0].json["name"] == name
    sent_safely(stub)


def test_argv_bytes_that_are_not_utf8_reach_the_api_as_an_escaped_surrogate(stub: Stub) -> None:
    """NUL cannot be in argv; undecodable bytes can: Python decodes them to lone surrogates."""
    stub.answer("POST", "/agent-api/schedules", 400, error("invalid", "name: must be valid Unicode text"))
    result = run("create", "--name", b"bad\xff\xfename", "--prompt", b"\xc0\xaf", "--every", "300", url=stub.url)
    answered_sanely(result, (1,))
    assert "name: must be valid Unicode text (HTTP 400)" in result.stderr
    raw = stub.requests[0].raw
    raw.decode("utf-8")  # the request itself is valid UTF-8 JSON
    assert json.loads(raw)["name"] == "bad\udcff\udcfename"


# -- numbers: --max-runs and --every ------------------------------------------------------------

USAGE_NUMBERS = [
    ("--max-runs", "-1"), ("--max-runs", "0"), ("--max-runs", "1e9"), ("--max-runs", "abc"), ("--max-runs", ""),
    ("--max-runs", "2.5"), ("--max-runs", "0x10"), ("--max-runs", "9" * 5000), ("--max-runs", "NaN"),
    ("--every", "0"), ("--every", "-5"), ("--every", "-0"), ("--every", "1.5"), ("--every", "5x"),
    ("--every", ""), ("--every", "1e3"), ("--every", "9" * 5000), ("--every", "inf"), ("--every", "0d"),
]


@pytest.mark.parametrize(("flag", "value"), USAGE_NUMBERS, ids=[f"{f}={v[:12]}" for f, v in USAGE_NUMBERS])
def test_a_bad_number_is_a_usage_error_and_nothing_is_sent(stub: Stub, flag: str, value: str) -> None:
    every = [] if flag == "--every" else ["--every", "300"]
    result = run(*CREATE, *every, f"{flag}={value}", url=stub.url)
    answered_sanely(result, (2,))
    assert flag in result.stderr
    assert stub.requests == []


FORWARDED_NUMBERS = [
    ("--max-runs", str(10**30), "max_runs", 10**30),
    ("--max-runs", "２", "max_runs", 2),  # Unicode digits are digits
    ("--every", str(10**30), "schedule.every_seconds", 10**30),
    ("--every", f"{10**30}d", "schedule.every_seconds", 10**30 * 86400),
]


@pytest.mark.parametrize(("flag", "value", "field", "sent"), FORWARDED_NUMBERS,
                         ids=["max-runs-10^30", "max-runs-fullwidth", "every-10^30", "every-10^30-days"])
def test_a_number_the_cli_cannot_judge_is_sent_exactly_and_the_apis_refusal_is_exit_1(
        stub: Stub, flag: str, value: str, field: str, sent: int) -> None:
    stub.answer("POST", "/agent-api/schedules", 400, error("invalid", f"{field}: out of range"))
    every = [] if flag == "--every" else ["--every", "300"]
    result = run(*CREATE, *every, flag, value, url=stub.url)
    answered_sanely(result, (1,))
    assert f"{field}: out of range (HTTP 400)" in result.stderr
    body = stub.requests[0].json
    got = body["max_runs"] if flag == "--max-runs" else body["schedule"]["every_seconds"]
    assert got == sent and isinstance(got, int)


# -- --at and --tz ------------------------------------------------------------------------------

USAGE_INSTANTS = ["garbage", "99999-01-01T00:00:00Z", "+10000-01-01T00:00:00Z", "10000-01-01T00:00:00Z",
                  "-1", "-0001-01-01T00:00:00Z", "2030-02-30T09:00:00Z", "2030-01-01T09:00:00", "",
                  "253402300800000", "+-5m", "+5y", "now", "2030-01-01T09:00:00+99:00"]


@pytest.mark.parametrize("at", USAGE_INSTANTS)
def test_a_bad_time_is_a_usage_error_and_nothing_is_sent(stub: Stub, at: str) -> None:
    result = run(*CREATE, f"--at={at}", url=stub.url)
    answered_sanely(result, (2,))
    assert "--at" in result.stderr
    assert stub.requests == []


@pytest.mark.parametrize("at", ["99999999999999999999", "+99999999999d", "+" + "9" * 30 + "s"],
                         ids=["unix-ms-10^20", "relative-10^11-days", "relative-10^30-s"])
def test_a_time_too_far_away_is_a_usage_error(stub: Stub, at: str) -> None:
    result = run(*CREATE, f"--at={at}", url=stub.url)
    answered_sanely(result, (2,))
    assert stub.requests == []


def test_the_last_instant_of_year_9999_with_a_negative_offset_is_left_to_the_api(stub: Stub) -> None:
    stub.answer("POST", "/agent-api/schedules", 400, error("invalid", "schedule.at: is not a valid date and time"))
    result = run(*CREATE, "--at", "9999-12-31T23:59:59-12:00", url=stub.url)
    answered_sanely(result, (1,))
    assert stub.requests[0].json["schedule"] == {"kind": "once", "at": "9999-12-31T23:59:59-12:00"}


@pytest.mark.parametrize("zone", ["../../etc/passwd", "/etc/localtime", "Europe/Paris\u202e", "x" * 100_000],
                         ids=["traversal", "absolute-path", "rtl-override", "100-KB"])
def test_a_hostile_zone_is_sent_as_text_never_read_as_a_file(stub: Stub, zone: str) -> None:
    stub.answer("POST", "/agent-api/schedules", 400, error("invalid", "schedule.timezone: is not an IANA zone"))
    result = run(*CREATE, "--cron", "0 9 * * *", "--tz", zone, url=stub.url)
    answered_sanely(result, (1,))
    assert "schedule.timezone: is not an IANA zone (HTTP 400)" in result.stderr
    seen = stub.requests[0]
    assert seen.json["schedule"]["timezone"] == zone
    assert b"root:" not in seen.raw
    sent_safely(stub)


# -- --prompt-file ----------------------------------------------------------------------------

@pytest.mark.parametrize("source", ["directory", "invalid-utf8", "dev-null", "missing"])
def test_an_unusable_prompt_file_is_a_usage_error(stub: Stub, tmp_path: Path, source: str) -> None:
    path = {"directory": tmp_path, "dev-null": Path(os.devnull), "missing": tmp_path / "nope",
            "invalid-utf8": tmp_path / "bad.txt"}[source]
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe\xc0\xaf prompt")
    result = run("create", "--name", "n", "--prompt-file", str(path), "--every", "300", url=stub.url)
    answered_sanely(result, (2,))
    assert stub.requests == []


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("source", ["dev-zero", "stdin-dev-zero", "one-megabyte-file", "fifo"])
def test_a_prompt_source_is_capped_and_never_hangs(stub: Stub, tmp_path: Path, fifo: Path, source: str) -> None:
    stub.answer("POST", "/agent-api/schedules", 413, error("too_large", "body: larger than 65536 bytes"))
    big = tmp_path / "big.md"
    big.write_text("p" * 1_000_000, encoding="utf-8")
    arg = {"dev-zero": "/dev/zero", "stdin-dev-zero": "-", "one-megabyte-file": str(big), "fifo": str(fifo)}[source]
    with open("/dev/zero", "rb") as zero:
        result = run("create", "--name", "n", "--prompt-file", arg, "--every", "300", url=stub.url,
                     stdin=zero if source == "stdin-dev-zero" else subprocess.DEVNULL,
                     timeout=3 if source == "fifo" else 10)
    answered_sanely(result, (2,))
    assert "prompt" in result.stderr
    assert stub.requests == []


# -- ids that look like paths -------------------------------------------------------------------

PATH_LIKE_IDS = ["../1", "1/../../x", "%2e%2e", "..", "1?x=1", "1#x", "1%2F..", "/1", "1/", "0", "-1", "+1",
                 "1.0", "1e3", "0x10", "12 13", "", "9" * 5000, "\u202e21", "1\u200b"]


@pytest.mark.parametrize("command", ["show", "delete", "resume"])
@pytest.mark.parametrize("value", PATH_LIKE_IDS, ids=[repr(v)[:16] for v in PATH_LIKE_IDS])
def test_an_id_that_is_not_a_positive_number_is_a_usage_error(stub: Stub, command: str, value: str) -> None:
    result = run(command, "--", value, url=stub.url)
    answered_sanely(result, (2,))
    assert "ID" in result.stderr
    assert stub.requests == []


@pytest.mark.parametrize(("value", "path_id"), [("１２", "12"), ("٣", "3"), (" 7 ", "7"), ("0012", "12"),
                                                ("9" * 40, "9" * 40)],
                         ids=["fullwidth", "arabic-indic", "padded", "leading-zeros", "40-digits"])
def test_an_id_in_other_digits_reaches_the_api_as_ascii_digits(stub: Stub, value: str, path_id: str) -> None:
    stub.answer("GET", f"/agent-api/schedules/{path_id}", 404, error("not_found", "tid: no such resource"))
    result = run("show", value, url=stub.url)
    answered_sanely(result, (1,))
    assert [r.path for r in stub.requests] == [f"/agent-api/schedules/{path_id}"]


# -- the API URL and the token ------------------------------------------------------------------

NOT_HTTP = ["file:///etc/passwd", "javascript:alert(1)", "ftp://127.0.0.1/", "data:text/plain,hi",
            "gopher://127.0.0.1:70/", "ws://127.0.0.1:3000", "127.0.0.1:3000", "//127.0.0.1:3000", "http:/x",
            "http://", "http:///agent-api", "  ", "\u202ehttp://127.0.0.1"]


@pytest.mark.parametrize("url", NOT_HTTP)
def test_a_url_that_is_not_http_is_exit_3(url: str) -> None:
    result = run("list", url=url)
    answered_sanely(result, (3,))
    assert "SCHEDULE_API_URL" in result.stderr


@pytest.mark.parametrize("suffix", [":abc", ":99999", ":0", "/%zz", "/\r\nX-Injected: 1", "/ space"],
                         ids=["port-letters", "port-too-big", "port-0", "bad-escape", "crlf", "space"])
def test_a_malformed_http_url_is_a_sentence(stub: Stub, suffix: str) -> None:
    base = stub.url.rsplit(":", 1)[0] if suffix.startswith(":") else stub.url
    result = run("list", url=base + suffix)
    answered_sanely(result, (1, 3))
    assert all("X-Injected" not in k for r in stub.requests for k in r.headers)


@pytest.mark.parametrize("userinfo", ["agent:s3cret-pw@", "s3cret-pw@", ":s3cret-pw@"])
def test_a_url_with_credentials_is_exit_3_without_echoing_them(stub: Stub, userinfo: str) -> None:
    result = run("list", url=stub.url.replace("http://", f"http://{userinfo}"))
    answered_sanely(result, (3,))
    assert "s3cret-pw" not in result.stderr + result.stdout
    assert stub.requests == []


@pytest.mark.parametrize("url", ["http://[::1", "http://[not-an-ip]:3000"])
def test_a_malformed_ipv6_url_is_exit_3_with_a_sentence(url: str) -> None:
    answered_sanely(run("list", url=url), (3,))


@pytest.mark.parametrize("token", ["ccg_a\r\nX-Injected: 1", "ccg_a\nb", "ccg_ü€"], ids=["crlf", "lf", "non-latin-1"])
def test_a_token_that_cannot_be_a_header_is_exit_3(stub: Stub, token: str) -> None:
    result = run("list", url=stub.url, token=token)
    answered_sanely(result, (3,))
    assert stub.requests == []


def test_a_token_with_spaces_is_sent_and_its_401_is_exit_3(stub: Stub) -> None:
    stub.answer("GET", "/agent-api/schedules", 401, error("unauthorized", "unknown schedule token"))
    result = run("list", url=stub.url, token="ccg_a b\tc")
    answered_sanely(result, (3,))
    assert "SCHEDULE_API_TOKEN" in result.stderr
    sent_safely(stub)
