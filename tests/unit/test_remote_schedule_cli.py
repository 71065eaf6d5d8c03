"""The ``remote-schedule`` CLI (SPEC §7), run as a real subprocess against a stub agent API.

The stub is an ``http.server`` on 127.0.0.1 in a thread: it records every request and answers
with canned responses, so each test checks what the CLI sent (method, path, body, token) and
what it printed and returned.
"""

from __future__ import annotations

import ast
import dataclasses
import datetime as dt
import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.agents.workspace import ASSETS_DIR
from tests.isolation import free_port

CLI = ASSETS_DIR / "remote-schedule"
TOKEN = "ccg_test-token"
UTC = dt.UTC

TASK: dict[str, Any] = {
    "id": 12, "chat_id": 3, "project_id": 1, "owner": "owner@example.com", "name": "daily news",
    "prompt": "Goal: a news digest.\nEach fire: read three sources.", "session": "resume",
    "schedule": {"kind": "cron", "cron": "0 9 * * 1-5", "timezone": "Europe/Paris"},
    "description": "At 09:00, Monday through Friday (Europe/Paris)", "status": "draft", "enabled": False,
    "next_run_at": None, "last_run_at": None, "last_run_status": None, "last_error": None, "run_count": 0,
    "max_runs": None, "overlap": "queue_one", "created_by": "agent", "idempotency_key": None,
}


def task(**changes: Any) -> dict[str, Any]:
    return {**TASK, **changes}


def error(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


@dataclasses.dataclass
class Seen:
    """One request the stub received."""

    method: str
    path: str
    headers: dict[str, str]
    raw: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.raw) if self.raw else None


class Stub:
    """A recording HTTP server; ``answer`` sets the reply for (method, path)."""

    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self.replies: dict[tuple[str, str], tuple[int, Any]] = {}
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                stub.requests.append(Seen(self.command, self.path, dict(self.headers.items()), raw))
                status, body = stub.replies.get((self.command, self.path),
                                                (404, error("not_found", f"stub: no reply for {self.path}")))
                data = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
                self.send_response(status)
                if data:
                    ctype = "application/json" if not isinstance(body, bytes) else "text/html"
                    self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = do_PATCH = _handle

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def answer(self, method: str, path: str, status: int, body: Any = None) -> None:
        self.replies[(method, path)] = (status, body)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub() -> Iterator[Stub]:
    s = Stub()
    yield s
    s.close()


def run(*args: str, url: str | None = None, token: str | None = TOKEN, stdin: str | None = None,
        cwd: Path | None = None, token_file: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI as an agent runs it; only the variables given here are set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCHEDULE_API_")}
    if url is not None:
        env["SCHEDULE_API_URL"] = url
    if token is not None:
        env["SCHEDULE_API_TOKEN"] = token
    if token_file is not None:
        env["SCHEDULE_API_TOKEN_FILE"] = str(token_file)
    return subprocess.run([sys.executable, str(CLI), *args], env=env, input=stdin, capture_output=True, text=True,
                          timeout=30, cwd=cwd, check=False)


def cli(stub: Stub, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return run(*args, url=stub.url, **kwargs)


def only_request(stub: Stub) -> Seen:
    assert len(stub.requests) == 1, stub.requests
    return stub.requests[0]


# -- the file itself ---------------------------------------------------------------------------

def test_the_cli_is_one_executable_stdlib_only_python3_file() -> None:
    text = CLI.read_text(encoding="utf-8")
    assert text.startswith("#!/usr/bin/env python3\n")
    assert os.access(CLI, os.X_OK)
    imported = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            imported.add(node.module.split(".")[0])
    assert imported and imported <= sys.stdlib_module_names, imported - sys.stdlib_module_names


# -- create: what is sent ----------------------------------------------------------------------

CREATE_CASES = [
    (["--cron", "0 9 * * 1-5", "--tz", "Europe/Paris"],
     {"schedule": {"kind": "cron", "cron": "0 9 * * 1-5", "timezone": "Europe/Paris"}}),
    (["--cron", "@daily", "--tz", "UTC"], {"schedule": {"kind": "cron", "cron": "@daily", "timezone": "UTC"}}),
    (["--at", "2026-03-02T09:00:00+01:00"], {"schedule": {"kind": "once", "at": "2026-03-02T09:00:00+01:00"}}),
    (["--at", "2026-03-02T08:00:00Z"], {"schedule": {"kind": "once", "at": "2026-03-02T08:00:00+00:00"}}),
    (["--at", "1772438400000"], {"schedule": {"kind": "once", "at": "2026-03-02T08:00:00.000Z"}}),
    (["--every", "900"], {"schedule": {"kind": "interval", "every_seconds": 900}}),
    (["--every", "15m"], {"schedule": {"kind": "interval", "every_seconds": 900}}),
    (["--every", "2h"], {"schedule": {"kind": "interval", "every_seconds": 7200}}),
    (["--every", "1d"], {"schedule": {"kind": "interval", "every_seconds": 86400}}),
    (["--every", "300", "--overlap", "skip", "--max-runs", "5", "--session", "fresh", "--notify", "always",
      "--idempotency-key", "k-1"],
     {"schedule": {"kind": "interval", "every_seconds": 300}, "overlap": "skip", "max_runs": 5,
      "session": "fresh", "notify": "always", "idempotency_key": "k-1"}),
    (["--every", "300", "--overlap", "queue_one"],
     {"schedule": {"kind": "interval", "every_seconds": 300}, "overlap": "queue_one"}),
    # SPEC §19: the new overlaps, the queue's cap, which fires tell people
    (["--every", "300", "--overlap", "queue_all", "--queue-cap", "5"],
     {"schedule": {"kind": "interval", "every_seconds": 300}, "overlap": "queue_all", "queue_cap": 5}),
    (["--every", "300", "--overlap", "replace"],
     {"schedule": {"kind": "interval", "every_seconds": 300}, "overlap": "replace"}),
    (["--every", "1h", "--notify-on", "changes"],
     {"schedule": {"kind": "interval", "every_seconds": 3600}, "notify_on": "changes"}),
    (["--every", "1h", "--notify-on", "failures", "--notify", "always"],
     {"schedule": {"kind": "interval", "every_seconds": 3600}, "notify_on": "failures", "notify": "always"}),
    (["--every", "2h30m"], {"schedule": {"kind": "interval", "every_seconds": 9000}}),
    # issue 23: catch-up window, jitter, active window (SPEC §14)
    (["--every", "1h", "--catchup", "15m"],
     {"schedule": {"kind": "interval", "every_seconds": 3600}, "catchup_window_seconds": 900}),
    (["--every", "1h", "--catchup", "300"],
     {"schedule": {"kind": "interval", "every_seconds": 3600}, "catchup_window_seconds": 300}),
    (["--every", "1h", "--catchup", "1d"],
     {"schedule": {"kind": "interval", "every_seconds": 3600}, "catchup_window_seconds": 86400}),
    (["--every", "1h", "--catchup", "none"],
     {"schedule": {"kind": "interval", "every_seconds": 3600}, "catchup_window_seconds": None}),
    (["--every", "1h", "--catchup", "NONE"],
     {"schedule": {"kind": "interval", "every_seconds": 3600}, "catchup_window_seconds": None}),
    (["--every", "1h", "--jitter", "0"],
     {"schedule": {"kind": "interval", "every_seconds": 3600}, "jitter_seconds": 0}),
    (["--every", "1h", "--jitter", "90s"],
     {"schedule": {"kind": "interval", "every_seconds": 3600}, "jitter_seconds": 90}),
    (["--cron", "0 9 * * *", "--tz", "UTC", "--jitter", "5m"],
     {"schedule": {"kind": "cron", "cron": "0 9 * * *", "timezone": "UTC"}, "jitter_seconds": 300}),
    (["--at", "2027-03-02T09:00:00+01:00", "--jitter", "10m", "--catchup", "2h"],
     {"schedule": {"kind": "once", "at": "2027-03-02T09:00:00+01:00"}, "jitter_seconds": 600,
      "catchup_window_seconds": 7200}),
    (["--cron", "0 9 * * 1-5", "--tz", "Europe/Paris", "--starts", "2027-01-04T00:00:00+01:00", "--ends",
      "2027-02-01T00:00:00Z"],
     {"schedule": {"kind": "cron", "cron": "0 9 * * 1-5", "timezone": "Europe/Paris"},
      "starts_at": "2027-01-04T00:00:00+01:00", "ends_at": "2027-02-01T00:00:00+00:00"}),
    (["--every", "30m", "--starts", "1798761600000"],
     {"schedule": {"kind": "interval", "every_seconds": 1800}, "starts_at": "2027-01-01T00:00:00.000Z"}),
    (["--every", "30m", "--ends", "2027-02-01T00:00:00Z"],
     {"schedule": {"kind": "interval", "every_seconds": 1800}, "ends_at": "2027-02-01T00:00:00+00:00"}),
    (["--every", "30m", "--max-runs", "4", "--catchup", "none", "--jitter", "1m", "--starts",
      "2027-01-04T08:00:00Z", "--ends", "2027-01-05T08:00:00Z", "--idempotency-key", "k-2"],
     {"schedule": {"kind": "interval", "every_seconds": 1800}, "max_runs": 4, "catchup_window_seconds": None,
      "jitter_seconds": 60, "starts_at": "2027-01-04T08:00:00+00:00", "ends_at": "2027-01-05T08:00:00+00:00",
      "idempotency_key": "k-2"}),
]


@pytest.mark.parametrize(("flags", "expected"), CREATE_CASES,
                         ids=["cron", "cron-macro", "at-offset", "at-z", "at-unix-ms", "every-seconds",
                              "every-minutes", "every-hours", "every-days", "all-options", "overlap-default-named",
                              "overlap-queue-all-cap", "overlap-replace", "notify-on-changes",
                              "notify-on-failures-and-notify", "every-compound",
                              "catchup-minutes", "catchup-seconds", "catchup-days", "catchup-none",
                              "catchup-none-upper", "jitter-zero", "jitter-seconds", "jitter-cron",
                              "once-jitter-catchup", "cron-window", "every-starts-unix-ms", "every-ends-only",
                              "every-everything"])
def test_create_sends_the_schedule_and_only_the_options_given(stub: Stub, flags: list[str],
                                                              expected: dict[str, Any]) -> None:
    stub.answer("POST", "/agent-api/schedules", 201, task())
    result = cli(stub, "create", "--name", "daily news", "--prompt", "Do the thing.", *flags)
    assert result.returncode == 0, result.stderr
    seen = only_request(stub)
    assert (seen.method, seen.path) == ("POST", "/agent-api/schedules")
    assert seen.headers["Authorization"] == f"Bearer {TOKEN}"
    assert seen.headers["Content-Type"] == "application/json"
    assert seen.json == {"name": "daily news", "prompt": "Do the thing.", **expected}


def test_create_at_relative_time_is_sent_as_an_absolute_utc_instant(stub: Stub) -> None:
    stub.answer("POST", "/agent-api/schedules", 201, task())
    before = dt.datetime.now(UTC).replace(microsecond=0)
    result = cli(stub, "create", "--name", "n", "--prompt", "p", "--at", "+30m")
    after = dt.datetime.now(UTC)
    assert result.returncode == 0, result.stderr
    sent = only_request(stub).json["schedule"]
    assert sent["kind"] == "once" and sent["at"].endswith("Z")
    at = dt.datetime.fromisoformat(sent["at"].replace("Z", "+00:00"))
    assert before + dt.timedelta(minutes=30) <= at <= after + dt.timedelta(minutes=30)


def test_create_human_output_says_draft_and_who_must_arm_it(stub: Stub) -> None:
    stub.answer("POST", "/agent-api/schedules", 201, task())
    result = cli(stub, "create", "--name", "daily news", "--prompt", "p", "--cron", "0 9 * * 1-5", "--tz",
                 "Europe/Paris")
    assert result.returncode == 0
    first, second = result.stdout.splitlines()[:2]
    assert first == 'created schedule 12 "daily news" (draft — a user must arm it in the Schedules drawer)'
    assert "At 09:00, Monday through Friday (Europe/Paris)" in second
    assert result.stderr == ""


def test_create_repeated_with_the_same_key_reports_the_existing_task(stub: Stub) -> None:
    stub.answer("POST", "/agent-api/schedules", 200, task(idempotency_key="k-1", status="active", enabled=True))
    result = cli(stub, "create", "--name", "daily news", "--prompt", "p", "--every", "300", "--idempotency-key",
                 "k-1")
    assert result.returncode == 0
    assert result.stdout.startswith('schedule 12 "daily news" already exists for idempotency key \'k-1\'')
    assert "nothing new was created" in result.stdout


@pytest.mark.parametrize("flag", ["--starts", "--ends"])
def test_a_relative_window_bound_is_sent_as_an_absolute_utc_instant(stub: Stub, flag: str) -> None:
    stub.answer("POST", "/agent-api/schedules", 201, task())
    before = dt.datetime.now(UTC).replace(microsecond=0)
    result = cli(stub, "create", "--name", "n", "--prompt", "p", "--every", "1h", flag, "+2h")
    after = dt.datetime.now(UTC)
    assert result.returncode == 0, result.stderr
    sent = only_request(stub).json
    key = {"--starts": "starts_at", "--ends": "ends_at"}[flag]
    assert sent[key].endswith("Z")
    assert ({"starts_at", "ends_at"} - {key}).isdisjoint(sent)
    moment = dt.datetime.fromisoformat(sent[key].replace("Z", "+00:00"))
    assert before + dt.timedelta(hours=2) <= moment <= after + dt.timedelta(hours=2)


def test_create_without_the_new_flags_sends_none_of_their_keys(stub: Stub) -> None:
    stub.answer("POST", "/agent-api/schedules", 201, task())
    result = cli(stub, "create", "--name", "n", "--prompt", "p", "--every", "1h")
    assert result.returncode == 0, result.stderr
    sent = only_request(stub).json
    assert {"catchup_window_seconds", "jitter_seconds", "starts_at", "ends_at", "notify_on", "queue_cap",
            "pace_min_seconds", "pace_max_seconds"}.isdisjoint(sent)


def test_create_refused_for_a_too_large_jitter_shows_the_apis_sentence(stub: Stub) -> None:
    stub.answer("POST", "/agent-api/schedules", 400,
                error("invalid", "jitter_seconds: at most 360 (a tenth of the schedule's smallest gap)"))
    result = cli(stub, "create", "--name", "n", "--prompt", "p", "--every", "1h", "--jitter", "10m")
    assert result.returncode == 1
    assert only_request(stub).json["jitter_seconds"] == 600
    assert "jitter_seconds: at most 360 (a tenth of the schedule's smallest gap) (HTTP 400)" in result.stderr


def test_prompt_file_is_read_as_utf8(stub: Stub, tmp_path: Path) -> None:
    stub.answer("POST", "/agent-api/schedules", 201, task())
    prompt = "Goal: résumé of the day — “quoted”.\nEach fire: check.\n"
    (tmp_path / "prompt.md").write_text(prompt, encoding="utf-8")
    result = cli(stub, "create", "--name", "n", "--prompt-file", "prompt.md", "--every", "60", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert only_request(stub).json["prompt"] == prompt


def test_prompt_file_dash_reads_stdin(stub: Stub) -> None:
    stub.answer("POST", "/agent-api/schedules", 201, task())
    prompt = "Line one\nLine two with 'quotes' and \"more\"\n"
    result = cli(stub, "create", "--name", "n", "--prompt-file", "-", "--every", "60", stdin=prompt)
    assert result.returncode == 0, result.stderr
    assert only_request(stub).json["prompt"] == prompt


# -- every command: what is sent, what is printed -----------------------------------------------

COMMAND_CASES = [
    (["show", "12"], "GET", "/agent-api/schedules/12", None, 200, task()),
    (["pause", "12"], "POST", "/agent-api/schedules/12/pause", None, 200, task(status="paused")),
    (["run-now", "12"], "POST", "/agent-api/schedules/12/run-now", None, 202, task(status="active")),
    (["delete", "12"], "DELETE", "/agent-api/schedules/12", None, 204, None),
    (["complete-current"], "POST", "/agent-api/schedules/current/complete", {}, 200, task(status="completed")),
    (["complete-current", "--reason", "v2 is out"], "POST", "/agent-api/schedules/current/complete",
     {"reason": "v2 is out"}, 200, task(status="completed")),
    (["whoami"], "GET", "/agent-api/whoami", None, 200,
     {"scope": "manage", "chat_id": 3, "project_id": 1, "task_id": None, "run_id": None,
      "expires_at": "2026-01-05T13:00:00.000Z", "owner": "owner@example.com"}),
    (["list"], "GET", "/agent-api/schedules", None, 200, {"schedules": [task()]}),
    (["run-now", "12", "--overlap", "replace"], "POST", "/agent-api/schedules/12/run-now", {"overlap": "replace"},
     202, task(status="active")),
    (["report", "--outcome", "changed"], "POST", "/agent-api/schedules/current/report", {"outcome": "changed"},
     200, {"task_id": 12, "run_id": 40, "outcome": "changed", "summary": None}),
    (["report", "--outcome", "no_change", "--summary", "no new release"], "POST",
     "/agent-api/schedules/current/report", {"outcome": "no_change", "summary": "no new release"}, 200,
     {"task_id": 12, "run_id": 40, "outcome": "no_change", "summary": "no new release"}),
    (["next", "--in", "4h"], "POST", "/agent-api/schedules/current/next", {"in_seconds": 14400}, 200,
     task(status="active", next_run_at="2027-01-04T12:00:00.000Z", next_paced=True)),
    (["next", "--at", "2027-01-04T12:00:00Z"], "POST", "/agent-api/schedules/current/next",
     {"at": "2027-01-04T12:00:00+00:00"}, 200,
     task(status="active", next_run_at="2027-01-04T12:00:00.000Z", next_paced=True)),
]
COMMAND_IDS = ["show", "pause", "run-now", "delete", "complete", "complete-reason", "whoami", "list",
               "run-now-overlap", "report", "report-summary", "next-in", "next-at"]


@pytest.mark.parametrize(("args", "method", "path", "body", "status", "reply"), COMMAND_CASES, ids=COMMAND_IDS)
def test_each_command_calls_its_endpoint(stub: Stub, args: list[str], method: str, path: str, body: Any,
                                         status: int, reply: Any) -> None:
    stub.answer(method, path, status, reply)
    result = cli(stub, *args)
    assert result.returncode == 0, result.stderr
    seen = only_request(stub)
    assert (seen.method, seen.path, seen.json) == (method, path, body)
    assert seen.headers["Authorization"] == f"Bearer {TOKEN}"
    assert result.stdout.strip() and result.stderr == ""


@pytest.mark.parametrize(("args", "method", "path", "body", "status", "reply"), COMMAND_CASES, ids=COMMAND_IDS)
@pytest.mark.parametrize("where", ["before", "after"])
def test_json_prints_the_apis_json_wherever_the_flag_is(stub: Stub, where: str, args: list[str], method: str,
                                                        path: str, body: Any, status: int, reply: Any) -> None:
    stub.answer(method, path, status, reply)
    argv = ["--json", *args] if where == "before" else [*args, "--json"]
    result = cli(stub, *argv)
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert printed == (reply if reply is not None else {"id": 12, "deleted": True})


HUMAN_CASES = [
    (["show", "12"], "GET", "/agent-api/schedules/12", task(last_error="boom", last_run_status="failed"),
     ['schedule:        12 "daily news"', "status:          draft — a user must arm it in the Schedules drawer",
      "when:            At 09:00, Monday through Friday (Europe/Paris)", "last error:      boom", "prompt:",
      "  Goal: a news digest.", "  Each fire: read three sources."]),
    (["pause", "12"], "POST", "/agent-api/schedules/12/pause", task(status="paused"),
     ['paused schedule 12 "daily news"']),
    (["run-now", "12"], "POST", "/agent-api/schedules/12/run-now", task(status="active"),
     ['asked schedule 12 "daily news" to fire as soon as possible', "status stays active"]),
    (["complete-current"], "POST", "/agent-api/schedules/current/complete", task(status="completed"),
     ['completed schedule 12 "daily news"; it will not fire again']),
    (["whoami"], "GET", "/agent-api/whoami",
     {"scope": "complete-self", "chat_id": 3, "project_id": 1, "task_id": 12, "run_id": 40,
      "expires_at": "2026-01-05T13:00:00.000Z", "owner": "owner@example.com"},
     ["scope:    complete-self", "chat:     3", "task:     12", "run:      40", "owner:    owner@example.com",
      "expires:  2026-01-05 13:00Z", "complete-current, report and next"]),
    (["run-now", "12", "--overlap", "queue_all"], "POST", "/agent-api/schedules/12/run-now", task(status="active"),
     ['asked schedule 12 "daily news" to fire as soon as possible, with overlap queue_all for this call']),
    (["report", "--outcome", "no_change", "--summary", "no new release"], "POST",
     "/agent-api/schedules/current/report",
     {"task_id": 12, "run_id": 40, "outcome": "no_change", "summary": "no new release"},
     ["reported no_change for this fire (schedule 12, run 40)", "  summary: no new release"]),
    (["next", "--in", "2h30m"], "POST", "/agent-api/schedules/current/next",
     task(status="active", next_run_at="2027-01-04T10:30:00.000Z", next_paced=True),
     ['schedule 12 "daily news": next run 2027-01-04 10:30Z (2027-01-04 11:30 Europe/Paris) (paced by the agent, '
      "once; the schedule itself is unchanged)"]),
]


@pytest.mark.parametrize(("args", "method", "path", "reply", "lines"), HUMAN_CASES,
                         ids=["show", "pause", "run-now", "complete", "whoami", "run-now-overlap", "report", "next"])
def test_human_output(stub: Stub, args: list[str], method: str, path: str, reply: Any, lines: list[str]) -> None:
    stub.answer(method, path, 200, reply)
    result = cli(stub, *args)
    assert result.returncode == 0, result.stderr
    for line in lines:
        assert line in result.stdout, (line, result.stdout)


def test_show_gives_the_next_run_in_utc_and_in_the_tasks_zone(stub: Stub) -> None:
    stub.answer("GET", "/agent-api/schedules/12", 200,
                task(status="active", next_run_at="2026-01-05T08:00:00.000Z"))
    result = cli(stub, "show", "12")
    assert "next run:        2026-01-05 08:00Z (2026-01-05 09:00 Europe/Paris)" in result.stdout


def test_list_is_a_table_with_id_status_name_next_run_and_description(stub: Stub) -> None:
    tasks = [task(), task(id=13, name="watch CI", status="active", next_run_at="2026-01-05T09:30:00.000Z",
                          run_count=2, max_runs=8, description="Every 30 minutes")]
    stub.answer("GET", "/agent-api/schedules", 200, {"schedules": tasks})
    lines = cli(stub, "list").stdout.splitlines()
    assert lines[0].split() == ["ID", "STATUS", "NAME", "NEXT", "RUN", "RUNS", "DESCRIPTION"]
    assert lines[1].split()[:4] == ["12", "draft", "daily", "news"]
    assert lines[1].endswith("At 09:00, Monday through Friday (Europe/Paris)")
    assert lines[2].split()[:7] == ["13", "active", "watch", "CI", "2026-01-05", "09:30Z", "2/8"]
    assert lines[2].endswith("Every 30 minutes")
    assert "drafts do not fire until a user arms them" in lines[3]


def test_list_of_an_empty_chat(stub: Stub) -> None:
    stub.answer("GET", "/agent-api/schedules", 200, {"schedules": []})
    result = cli(stub, "list")
    assert (result.returncode, result.stdout) == (0, "no schedules in this chat\n")


def test_delete_human_output(stub: Stub) -> None:
    stub.answer("DELETE", "/agent-api/schedules/12", 204)
    result = cli(stub, "delete", "12")
    assert (result.returncode, result.stdout) == (0, "deleted schedule 12\n")


@pytest.mark.parametrize("command", ["arm", "resume"])
def test_arm_and_resume_are_refused_with_the_apis_sentence(stub: Stub, command: str) -> None:
    stub.answer("POST", f"/agent-api/schedules/12/{command}", 403,
                error("forbidden", "only a user can arm or resume a schedule"))
    result = cli(stub, command, "12")
    assert result.returncode == 1
    assert only_request(stub).path == f"/agent-api/schedules/12/{command}"
    assert "only a user can arm or resume a schedule" in result.stderr
    assert "Schedules drawer" in result.stderr
    assert result.stdout == ""


# -- pause with a note and until, skip-next (SPEC §14) ---------------------------------------------

PAUSE_BODIES = [
    (["--note", "waiting for the v2 release"], {"note": "waiting for the v2 release"}),
    (["--until", "2027-01-04T08:00:00+01:00"], {"until": "2027-01-04T08:00:00+01:00"}),
    (["--until", "2027-01-04T07:00:00Z"], {"until": "2027-01-04T07:00:00+00:00"}),
    (["--until", "1798761600000"], {"until": "2027-01-01T00:00:00.000Z"}),
    (["--note", "holiday", "--until", "2027-01-04T07:00:00Z"],
     {"note": "holiday", "until": "2027-01-04T07:00:00+00:00"}),
    (["--note", "x" * 500], {"note": "x" * 500}),
]


@pytest.mark.parametrize(("flags", "body"), PAUSE_BODIES,
                         ids=["note", "until-offset", "until-z", "until-unix-ms", "note-and-until", "note-500"])
def test_pause_sends_only_the_note_and_until_given(stub: Stub, flags: list[str], body: dict[str, Any]) -> None:
    stub.answer("POST", "/agent-api/schedules/12/pause", 200, task(status="paused"))
    result = cli(stub, "pause", "12", *flags)
    assert result.returncode == 0, result.stderr
    seen = only_request(stub)
    assert (seen.method, seen.path, seen.json) == ("POST", "/agent-api/schedules/12/pause", body)
    assert seen.headers["Content-Type"] == "application/json"


def test_pause_until_relative_is_sent_as_an_absolute_utc_instant(stub: Stub) -> None:
    stub.answer("POST", "/agent-api/schedules/12/pause", 200, task(status="paused"))
    before = dt.datetime.now(UTC).replace(microsecond=0)
    result = cli(stub, "pause", "12", "--until", "+3d")
    after = dt.datetime.now(UTC)
    assert result.returncode == 0, result.stderr
    sent = only_request(stub).json
    assert set(sent) == {"until"} and sent["until"].endswith("Z")
    until = dt.datetime.fromisoformat(sent["until"].replace("Z", "+00:00"))
    assert before + dt.timedelta(days=3) <= until <= after + dt.timedelta(days=3)


def test_pause_until_says_when_it_resumes_by_itself(stub: Stub) -> None:
    stub.answer("POST", "/agent-api/schedules/12/pause", 200,
                task(status="paused", paused_by="agent", paused_until="2027-01-04T07:00:00.000Z",
                     pause_note="waiting for the v2 release"))
    result = cli(stub, "pause", "12", "--note", "waiting for the v2 release", "--until", "2027-01-04T07:00:00Z")
    assert result.returncode == 0, result.stderr
    first, second = result.stdout.splitlines()
    assert first == ('paused schedule 12 "daily news" until 2027-01-04 07:00Z (2027-01-04 08:00 Europe/Paris); '
                     "it resumes by itself then (a user can resume it sooner from the Schedules drawer)")
    assert second == "  note: waiting for the v2 release"
    assert result.stderr == ""


def test_pause_without_until_does_not_promise_a_resume(stub: Stub) -> None:
    stub.answer("POST", "/agent-api/schedules/12/pause", 200, task(status="paused", paused_by="agent"))
    result = cli(stub, "pause", "12")
    assert result.stdout == 'paused schedule 12 "daily news" (a user can resume it from the Schedules drawer)\n'


USERS_PAUSE = "a user paused this schedule; an agent cannot change that pause (its note or when it resumes)"


@pytest.mark.parametrize("flags", [["--until", "+1h"], ["--note", "n"], ["--note", "n", "--until", "+1d"]],
                         ids=["until", "note", "both"])
def test_changing_a_users_pause_is_refused_with_the_apis_message(stub: Stub, flags: list[str]) -> None:
    stub.answer("POST", "/agent-api/schedules/12/pause", 403, error("forbidden", USERS_PAUSE))
    result = cli(stub, "pause", "12", *flags)
    assert result.returncode == 1  # api_error: every 403 is exit 1 (only 401 is 3)
    assert f"remote-schedule: {USERS_PAUSE} (HTTP 403)" in result.stderr
    assert "arm or resume" not in result.stderr  # the arm/resume hint is not added to this refusal
    assert result.stdout == ""


def test_changing_a_users_pause_with_json_prints_the_apis_error_body(stub: Stub) -> None:
    body = error("forbidden", USERS_PAUSE)
    stub.answer("POST", "/agent-api/schedules/12/pause", 403, body)
    result = cli(stub, "--json", "pause", "12", "--until", "+1h")
    assert result.returncode == 1
    assert json.loads(result.stdout) == body
    assert USERS_PAUSE in result.stderr


def test_pause_until_in_the_past_is_refused_by_the_api(stub: Stub) -> None:
    stub.answer("POST", "/agent-api/schedules/12/pause", 400, error("invalid", "until: must be in the future"))
    result = cli(stub, "pause", "12", "--until", "2020-01-01T00:00:00Z")
    assert result.returncode == 1
    assert "until: must be in the future (HTTP 400)" in result.stderr


ACTIVE = {"status": "active", "enabled": True, "schedule": {"kind": "cron", "cron": "0 9 * * *", "timezone": "UTC"},
          "description": "At 09:00 (UTC)"}


def test_skip_next_posts_and_says_what_was_skipped_and_what_comes_next(stub: Stub) -> None:
    stub.answer("GET", "/agent-api/schedules/12", 200,
                task(**ACTIVE, next_run_at="2027-01-04T09:00:00.000Z", next_occurrence_at="2027-01-04T09:00:00.000Z"))
    stub.answer("POST", "/agent-api/schedules/12/skip-next", 200,
                task(**ACTIVE, next_run_at="2027-01-05T09:00:00.000Z", next_occurrence_at="2027-01-05T09:00:00.000Z"))
    result = cli(stub, "skip-next", "12")
    assert result.returncode == 0, result.stderr
    assert [(r.method, r.path, r.json) for r in stub.requests] == [
        ("GET", "/agent-api/schedules/12", None), ("POST", "/agent-api/schedules/12/skip-next", None)]
    assert result.stdout.splitlines() == [
        'schedule 12 "daily news": skipped the occurrence of 2027-01-04 09:00Z (2027-01-04 09:00 UTC) '
        "(recorded as skipped)",
        "  next run: 2027-01-05 09:00Z (2027-01-05 09:00 UTC)"]
    assert result.stderr == ""


def test_skip_next_names_the_nominal_occurrence_when_jitter_moves_the_run(stub: Stub) -> None:
    stub.answer("GET", "/agent-api/schedules/12", 200,
                task(**ACTIVE, jitter_seconds=600, next_run_at="2027-01-04T09:04:00.000Z",
                     next_occurrence_at="2027-01-04T09:00:00.000Z"))
    stub.answer("POST", "/agent-api/schedules/12/skip-next", 200,
                task(**ACTIVE, jitter_seconds=600, next_run_at="2027-01-05T09:07:30.000Z",
                     next_occurrence_at="2027-01-05T09:00:00.000Z"))
    lines = cli(stub, "skip-next", "12").stdout.splitlines()
    assert 'schedule 12 "daily news": skipped the occurrence of 2027-01-04 09:00Z (' in lines[0]
    assert lines[1] == ("  next run: 2027-01-05 09:07Z (2027-01-05 09:07 UTC) "
                        "(occurrence of 2027-01-05 09:00Z (2027-01-05 09:00 UTC), moved by jitter)")


def test_skip_next_of_the_last_occurrence_in_the_active_window(stub: Stub) -> None:
    stub.answer("GET", "/agent-api/schedules/12", 200,
                task(**ACTIVE, next_run_at="2027-01-04T09:00:00.000Z", ends_at="2027-01-05T00:00:00.000Z"))
    stub.answer("POST", "/agent-api/schedules/12/skip-next", 200,
                task(**ACTIVE, next_run_at=None, ends_at="2027-01-05T00:00:00.000Z"))
    result = cli(stub, "skip-next", "12")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1] == (
        "  no occurrence remains before its active window ends; it completes then")


def test_skip_next_json_prints_the_task_after_the_skip(stub: Stub) -> None:
    after = task(**ACTIVE, next_run_at="2027-01-05T09:00:00.000Z")
    stub.answer("GET", "/agent-api/schedules/12", 200, task(**ACTIVE, next_run_at="2027-01-04T09:00:00.000Z"))
    stub.answer("POST", "/agent-api/schedules/12/skip-next", 200, after)
    result = cli(stub, "skip-next", "12", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == after


@pytest.mark.parametrize("message", ["only an active schedule can skip its next occurrence",
                                     "a once schedule has no next occurrence to skip; pause or delete it"])
def test_skip_next_refused_with_409_exits_1_with_the_apis_sentence(stub: Stub, message: str) -> None:
    stub.answer("GET", "/agent-api/schedules/12", 200, task(status="paused"))
    stub.answer("POST", "/agent-api/schedules/12/skip-next", 409, error("conflict", message))
    result = cli(stub, "skip-next", "12")
    assert result.returncode == 1
    assert f"{message} (HTTP 409)" in result.stderr
    assert result.stdout == ""


def test_skip_next_of_an_unknown_schedule_stops_before_the_post(stub: Stub) -> None:
    stub.answer("GET", "/agent-api/schedules/12", 404, error("not_found", "no schedule with id 12"))
    result = cli(stub, "skip-next", "12")
    assert result.returncode == 1
    assert [r.method for r in stub.requests] == ["GET"]
    assert "no schedule with id 12 (HTTP 404)" in result.stderr


# -- show: the second-round fields -------------------------------------------------------------

def test_show_gives_catchup_jitter_window_pause_and_the_nominal_occurrence(stub: Stub) -> None:
    stub.answer("GET", "/agent-api/schedules/12", 200, task(
        status="paused", catchup_window_seconds=5400, jitter_seconds=300,
        next_run_at="2027-01-04T08:03:10.000Z", next_occurrence_at="2027-01-04T08:00:00.000Z",
        starts_at="2027-01-01T00:00:00.000Z", ends_at="2027-02-01T00:00:00.000Z",
        paused_by="user", paused_until="2027-01-03T23:00:00.000Z", pause_note="back on Monday"))
    result = cli(stub, "show", "12")
    assert result.returncode == 0, result.stderr
    for line in [
        "next run:        2027-01-04 08:03Z (2027-01-04 09:03 Europe/Paris)",
        "next occurrence: 2027-01-04 08:00Z (2027-01-04 09:00 Europe/Paris) (the next run is this plus its jitter)",
        "catch-up window: 1 h 30 min (an occurrence later than this is recorded missed)",
        "jitter:          up to 5 min after each occurrence",
        "active window:   from 2027-01-01 00:00Z (2027-01-01 01:00 Europe/Paris) "
        "until 2027-02-01 00:00Z (2027-02-01 01:00 Europe/Paris)",
        "paused by:       a user (only a user can change or lift this pause)",
        "paused until:    2027-01-03 23:00Z (2027-01-04 00:00 Europe/Paris) (then it resumes by itself)",
        "pause note:      back on Monday",
    ]:
        assert line in result.stdout.splitlines(), (line, result.stdout)


def test_show_an_unbounded_catchup_and_a_window_with_nothing_left(stub: Stub) -> None:
    stub.answer("GET", "/agent-api/schedules/12", 200, task(
        status="active", catchup_window_seconds=None, jitter_seconds=0, next_run_at=None, next_occurrence_at=None,
        starts_at=None, ends_at="2027-02-01T00:00:00.000Z"))
    lines = cli(stub, "show", "12").stdout.splitlines()
    assert "catch-up window: none (a late occurrence always fires once)" in lines
    assert ("active window:   until 2027-02-01 00:00Z (2027-02-01 01:00 Europe/Paris) (no occurrence remains "
            "before it ends; the task completes then)") in lines
    assert not any(line.startswith(("jitter:", "next occurrence:", "paused", "pause note:")) for line in lines)


def test_show_an_agents_own_pause(stub: Stub) -> None:
    stub.answer("GET", "/agent-api/schedules/12", 200, task(status="paused", paused_by="agent"))
    lines = cli(stub, "show", "12").stdout.splitlines()
    assert "paused by:       an agent (you may change its note and until)" in lines
    assert not any(line.startswith(("paused until:", "pause note:")) for line in lines)


def test_show_leaves_out_what_is_not_set(stub: Stub) -> None:
    stub.answer("GET", "/agent-api/schedules/12", 200, task(
        status="active", next_run_at="2027-01-04T08:00:00.000Z", next_occurrence_at="2027-01-04T08:00:00.000Z",
        jitter_seconds=0, starts_at=None, ends_at=None, pause_note=None, paused_until=None, paused_by=None))
    text = cli(stub, "show", "12").stdout
    for absent in ["next occurrence:", "jitter:", "active window:", "paused", "pause note:", "catch-up window:"]:
        assert absent not in text, absent


def test_list_stays_compact_with_the_new_fields(stub: Stub) -> None:
    busy = task(id=13, status="paused", catchup_window_seconds=None, jitter_seconds=300,
                starts_at="2027-01-01T00:00:00.000Z", ends_at="2027-02-01T00:00:00.000Z",
                pause_note="a long note " * 20, paused_until="2027-01-03T23:00:00.000Z", paused_by="agent",
                next_run_at=None, next_occurrence_at=None)
    stub.answer("GET", "/agent-api/schedules", 200, {"schedules": [busy]})
    lines = cli(stub, "list").stdout.splitlines()
    assert lines[0].split() == ["ID", "STATUS", "NAME", "NEXT", "RUN", "RUNS", "DESCRIPTION"]
    assert len(lines) == 2 and "note" not in lines[1] and len(lines[1]) < 160


def test_show_gives_notify_on_pacing_and_a_paced_next_run(stub: Stub) -> None:
    stub.answer("GET", "/agent-api/schedules/12", 200, task(
        status="active", next_run_at="2027-01-04T12:00:00.000Z", next_occurrence_at="2027-01-04T12:00:00.000Z",
        next_paced=True, notify_on="changes", overlap="queue_all", queue_cap=4, pace_min_seconds=1800,
        pace_max_seconds=86400))
    lines = cli(stub, "show", "12").stdout.splitlines()
    for line in [
        "next run:        2027-01-04 12:00Z (2027-01-04 13:00 Europe/Paris) (paced by the agent)",
        "notify on:       changes (a fire reported no_change tells nobody; failures always tell)",
        "overlap:         queue_all (at most 4 waiting; beyond that a fire is skipped)",
        "pacing:          the agent may move the next fire to 30 min – 1 d from now (`remote-schedule next`, "
        "during a fire)",
    ]:
        assert line in lines, (line, lines)


def test_show_of_a_task_that_may_not_pace_says_nothing_of_pacing(stub: Stub) -> None:
    stub.answer("GET", "/agent-api/schedules/12", 200, task(
        status="active", next_run_at="2027-01-04T08:00:00.000Z", next_paced=False, notify_on="always",
        pace_min_seconds=None, pace_max_seconds=None))
    text = cli(stub, "show", "12").stdout
    assert "paced" not in text and "pacing:" not in text
    assert "notify on:       always" in text


# -- report and next: during a fire (SPEC §19) --------------------------------------------------

def test_next_outside_the_bounds_exits_2_naming_the_bound(stub: Stub) -> None:
    message = "pace_max_seconds: the next fire may be moved no later than 14400 s from now"
    stub.answer("POST", "/agent-api/schedules/current/next", 400, error("invalid", message))
    result = cli(stub, "next", "--in", "1d")
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert only_request(stub).json == {"in_seconds": 86400}
    assert message in result.stderr
    assert "pace_max_seconds is the latest a user allows" in result.stderr
    assert "nothing was changed" in result.stderr and result.stdout == ""


def test_next_too_soon_exits_2_naming_the_lower_bound_and_json_prints_the_apis_error(stub: Stub) -> None:
    body = error("invalid", "pace_min_seconds: the next fire may be moved no sooner than 1800 s from now")
    stub.answer("POST", "/agent-api/schedules/current/next", 400, body)
    result = cli(stub, "--json", "next", "--in", "5m")
    assert result.returncode == 2
    assert json.loads(result.stdout) == body
    assert "pace_min_seconds is the soonest a user allows" in result.stderr


def test_next_with_a_value_the_api_refuses_is_an_ordinary_refusal(stub: Stub) -> None:
    stub.answer("POST", "/agent-api/schedules/current/next", 400,
                error("invalid", "in_seconds: must be a whole number of seconds from 1 to 31622400"))
    result = cli(stub, "next", "--in", "400d")
    assert result.returncode == 1
    assert "in_seconds: must be a whole number" in result.stderr


def test_next_on_a_task_that_may_not_pace_exits_1_with_the_apis_reason(stub: Stub) -> None:
    reason = "this task does not let its agent pace it; a user may allow it (pace_min_seconds / pace_max_seconds)"
    stub.answer("POST", "/agent-api/schedules/current/next", 403, error("forbidden", reason))
    result = cli(stub, "next", "--in", "4h")
    assert result.returncode == 1
    assert f"{reason} (HTTP 403)" in result.stderr


@pytest.mark.parametrize("command", [["report", "--outcome", "no_change"], ["next", "--in", "1h"]],
                         ids=["report", "next"])
def test_report_and_next_after_the_fire_ended_exit_1(stub: Stub, command: list[str]) -> None:
    path = f"/agent-api/schedules/current/{command[0]}"
    stub.answer("POST", path, 409, error("conflict", "this fire has already ended; nothing was changed"))
    result = cli(stub, *command)
    assert result.returncode == 1
    assert "this fire has already ended" in result.stderr


def test_next_at_a_relative_time_is_sent_as_an_absolute_utc_instant(stub: Stub) -> None:
    stub.answer("POST", "/agent-api/schedules/current/next", 200, task(status="active", next_paced=True))
    before = dt.datetime.now(UTC).replace(microsecond=0)
    result = cli(stub, "next", "--at", "+3h")
    after = dt.datetime.now(UTC)
    assert result.returncode == 0, result.stderr
    sent = only_request(stub).json
    assert set(sent) == {"at"} and sent["at"].endswith("Z")
    moment = dt.datetime.fromisoformat(sent["at"].replace("Z", "+00:00"))
    assert before + dt.timedelta(hours=3) <= moment <= after + dt.timedelta(hours=3)


@pytest.mark.parametrize(("duration", "seconds"), [("90s", 90), ("30m", 1800), ("4h", 14400), ("1d", 86400),
                                                   ("2h30m", 9000), ("1d 2h", 93600), ("600", 600)])
def test_next_in_takes_durations(stub: Stub, duration: str, seconds: int) -> None:
    stub.answer("POST", "/agent-api/schedules/current/next", 200, task(status="active", next_paced=True))
    assert cli(stub, "next", "--in", duration).returncode == 0
    assert only_request(stub).json == {"in_seconds": seconds}


# -- cancel by idempotency key ----------------------------------------------------------------

def test_cancel_deletes_the_task_with_that_key(stub: Stub) -> None:
    tasks = [task(id=5, idempotency_key="other"), task(id=12, idempotency_key="news"), task(id=14)]
    stub.answer("GET", "/agent-api/schedules", 200, {"schedules": tasks})
    stub.answer("DELETE", "/agent-api/schedules/12", 204)
    result = cli(stub, "cancel", "--idempotency-key", "news")
    assert result.returncode == 0, result.stderr
    assert [(r.method, r.path) for r in stub.requests] == [("GET", "/agent-api/schedules"),
                                                          ("DELETE", "/agent-api/schedules/12")]
    assert result.stdout == 'deleted schedule 12 "daily news" (idempotency key \'news\')\n'


def test_cancel_json(stub: Stub) -> None:
    stub.answer("GET", "/agent-api/schedules", 200, {"schedules": [task(idempotency_key="news")]})
    stub.answer("DELETE", "/agent-api/schedules/12", 204)
    printed = json.loads(cli(stub, "cancel", "--idempotency-key", "news", "--json").stdout)
    assert printed["id"] == 12 and printed["deleted"] is True and printed["idempotency_key"] == "news"


def test_cancel_of_an_unknown_key_deletes_nothing_and_exits_1(stub: Stub) -> None:
    stub.answer("GET", "/agent-api/schedules", 200, {"schedules": [task(idempotency_key="other")]})
    result = cli(stub, "cancel", "--idempotency-key", "news")
    assert result.returncode == 1
    assert [r.method for r in stub.requests] == ["GET"]
    assert "no schedule in this chat has idempotency key 'news'" in result.stderr


# -- API refusals: exit 1, or 3 for the token ---------------------------------------------------

REFUSALS = [
    (400, error("invalid", "schedule.timezone: unknown IANA timezone 'Mars/Olympus'"), 1,
     "schedule.timezone: unknown IANA timezone 'Mars/Olympus' (HTTP 400)"),
    (403, error("forbidden", "a scheduled fire's token can only complete its own task (complete-current)"), 1,
     "a scheduled fire's token can only complete its own task"),
    (404, error("not_found", "no schedule with id 12"), 1, "no schedule with id 12 (HTTP 404)"),
    (409, error("conflict", "a draft cannot run; a user must arm it first"), 1, "a draft cannot run"),
    (413, error("too_large", "request body over 65536 bytes"), 1, "request body over 65536 bytes (HTTP 413)"),
    (401, error("unauthorized", "this schedule token has expired"), 3, "this schedule token has expired"),
    (401, error("unauthorized", "unknown schedule token"), 3, "SCHEDULE_API_TOKEN"),
    (500, b"<html>Internal Server Error</html>", 1,
     "the schedule API answered Internal Server Error: <html>Internal Server Error</html> (HTTP 500)"),
    (502, b"", 1, "the schedule API answered Bad Gateway (HTTP 502)"),
]


@pytest.mark.parametrize(("status", "body", "code", "message"), REFUSALS,
                         ids=["400", "403", "404", "409", "413", "401-expired", "401-unknown", "500-html",
                              "502-empty"])
def test_api_refusals_map_to_exit_codes_with_the_message_on_stderr(stub: Stub, status: int, body: Any, code: int,
                                                                   message: str) -> None:
    stub.answer("GET", "/agent-api/schedules/12", status, body)
    result = cli(stub, "show", "12")
    assert result.returncode == code
    assert message in result.stderr
    assert result.stdout == ""


def test_json_refusal_prints_the_apis_error_body(stub: Stub) -> None:
    body = error("not_found", "no schedule with id 12")
    stub.answer("POST", "/agent-api/schedules/12/pause", 404, body)
    result = cli(stub, "--json", "pause", "12")
    assert result.returncode == 1
    assert json.loads(result.stdout) == body
    assert "no schedule with id 12" in result.stderr


def test_a_create_refused_by_the_api_exits_1(stub: Stub) -> None:
    stub.answer("POST", "/agent-api/schedules", 400, error("invalid", "schedule.every_seconds: below the minimum"))
    result = cli(stub, "create", "--name", "n", "--prompt", "p", "--every", "5")
    assert result.returncode == 1
    assert "schedule.every_seconds: below the minimum" in result.stderr


# -- environment and connectivity ----------------------------------------------------------------

def test_missing_url_exits_3_naming_the_variable(stub: Stub) -> None:
    result = run("list", url=None)
    assert result.returncode == 3
    assert "SCHEDULE_API_URL is not set" in result.stderr
    assert stub.requests == []


def test_missing_token_exits_3_naming_the_variable(stub: Stub) -> None:
    result = run("list", url=stub.url, token=None)
    assert result.returncode == 3
    assert "SCHEDULE_API_TOKEN is not set" in result.stderr
    assert stub.requests == []


def test_the_token_file_is_read_when_the_token_variable_is_unset(stub: Stub, tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("ccg_from-the-file\n", encoding="utf-8")
    stub.answer("GET", "/agent-api/schedules", 200, {"schedules": []})
    result = run("list", url=stub.url, token=None, token_file=path)
    assert result.returncode == 0, result.stderr
    assert only_request(stub).headers["Authorization"] == "Bearer ccg_from-the-file"


def test_the_token_variable_wins_over_the_file(stub: Stub, tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("ccg_from-the-file", encoding="utf-8")
    stub.answer("GET", "/agent-api/schedules", 200, {"schedules": []})
    result = run("list", url=stub.url, token=TOKEN, token_file=path)
    assert result.returncode == 0, result.stderr
    assert only_request(stub).headers["Authorization"] == f"Bearer {TOKEN}"


def test_a_missing_token_file_exits_3_saying_no_turn_is_running(stub: Stub, tmp_path: Path) -> None:
    result = run("list", url=stub.url, token=None, token_file=tmp_path / "absent")
    assert result.returncode == 3
    assert "SCHEDULE_API_TOKEN_FILE" in result.stderr and "only while a turn" in result.stderr
    assert stub.requests == []


@pytest.mark.parametrize("content", ["", "  \n", "x" * 5000], ids=["empty", "blank", "too-large"])
def test_an_unusable_token_file_exits_3_naming_the_variable(stub: Stub, tmp_path: Path, content: str) -> None:
    path = tmp_path / "token"
    path.write_text(content, encoding="utf-8")
    result = run("list", url=stub.url, token=None, token_file=path)
    assert result.returncode == 3
    assert "SCHEDULE_API_TOKEN_FILE" in result.stderr
    assert stub.requests == []


def test_url_that_is_not_http_exits_3() -> None:
    result = run("list", url="127.0.0.1:3000")
    assert result.returncode == 3
    assert "SCHEDULE_API_URL='127.0.0.1:3000' is not an http(s) URL" in result.stderr


def test_unreachable_api_exits_1_naming_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = run("list", url=url)
    assert result.returncode == 1
    assert f"cannot reach the schedule API at SCHEDULE_API_URL={url}" in result.stderr


@pytest.mark.parametrize("suffix", ["/", "/agent-api", "/agent-api/"])
def test_base_url_variants_reach_the_same_paths(stub: Stub, suffix: str) -> None:
    stub.answer("GET", "/agent-api/whoami", 200, {"scope": "manage"})
    result = run("whoami", url=stub.url + suffix)
    assert result.returncode == 0, result.stderr
    assert only_request(stub).path == "/agent-api/whoami"


# -- usage errors: exit 2, nothing sent -------------------------------------------------------

CREATE = ["create", "--name", "n"]
USAGE_ERRORS = [
    ([], "COMMAND"),
    (["frobnicate"], "invalid choice"),
    (["create", "--prompt", "p", "--every", "60"], "--name"),
    ([*CREATE, "--every", "60"], "one of the arguments --prompt --prompt-file is required"),
    ([*CREATE, "--prompt", "p", "--prompt-file", "f", "--every", "60"], "not allowed with argument"),
    ([*CREATE, "--prompt", "p"], "one of the arguments --when --cron --at --every is required"),
    ([*CREATE, "--prompt", "p", "--cron", "0 9 * * *"], "--cron needs --tz"),
    ([*CREATE, "--prompt", "p", "--every", "60", "--tz", "UTC"], "--tz only applies to --cron"),
    ([*CREATE, "--prompt", "p", "--every", "60", "--cron", "* * * * *", "--tz", "UTC"], "not allowed with argument"),
    ([*CREATE, "--prompt", "p", "--every", "60", "--at", "+1h"], "not allowed with argument"),
    ([*CREATE, "--prompt", "p", "--every", "60", "--max-runs", "0"], "--max-runs"),
    ([*CREATE, "--prompt", "p", "--every", "60", "--max-runs", "-1"], "--max-runs"),
    ([*CREATE, "--prompt", "p", "--every", "60", "--max-runs", "ten"], "--max-runs"),
    ([*CREATE, "--prompt", "p", "--every", "0"], "--every"),
    ([*CREATE, "--prompt", "p", "--every", "soon"], "--every"),
    ([*CREATE, "--prompt", "p", "--at", "2026-03-02T09:00:00"], "has no UTC offset"),
    ([*CREATE, "--prompt", "p", "--at", "tomorrow"], "is not a time"),
    ([*CREATE, "--prompt", "p", "--every", "60", "--overlap", "always"], "invalid choice"),
    ([*CREATE, "--prompt", "   ", "--every", "60"], "the prompt is empty"),
    ([*CREATE, "--prompt-file", "no-such-file.md", "--every", "60"], "cannot read 'no-such-file.md'"),
    ([*CREATE, "--prompt", "p", "--every", "1h", "--jitter", "abc"],
     "argument --jitter: must be a duration (0, 30, 90s, 5m, 1h), not 'abc'"),
    ([*CREATE, "--prompt", "p", "--every", "1h", "--jitter", "-5"], "argument --jitter: must be a duration"),
    ([*CREATE, "--prompt", "p", "--every", "1h", "--jitter", "2d"], "more than the largest jitter (1d)"),
    ([*CREATE, "--prompt", "p", "--every", "1h", "--jitter", "none"], "argument --jitter: must be a duration"),
    ([*CREATE, "--prompt", "p", "--every", "1h", "--catchup", "0"],
     "argument --catchup: must be a duration (300, 15m, 2h, 1d) or none, not '0'"),
    ([*CREATE, "--prompt", "p", "--every", "1h", "--catchup", "never"], "argument --catchup: must be a duration"),
    ([*CREATE, "--prompt", "p", "--every", "1h", "--catchup", "400d"], "longer than the longest catch-up window"),
    ([*CREATE, "--prompt", "p", "--every", "1h", "--starts", "2027-01-04T08:00:00"],
     "argument --starts: '2027-01-04T08:00:00' has no UTC offset"),
    ([*CREATE, "--prompt", "p", "--every", "1h", "--ends", "next week"], "argument --ends: 'next week' is not a time"),
    ([*CREATE, "--prompt", "p", "--at", "+1h", "--starts", "+10m"], "--starts and --ends only apply to --cron"),
    ([*CREATE, "--prompt", "p", "--at", "+1h", "--ends", "+2h"], "--starts and --ends only apply to --cron"),
    ([*CREATE, "--prompt", "p", "--every", "1h", "--starts", "2027-01-05T00:00:00Z", "--ends",
      "2027-01-05T01:00:00+01:00"], "--ends (2027-01-05T01:00:00+01:00) must be after --starts"),
    (["show"], "ID"),
    (["show", "twelve"], "must be a whole number"),
    (["pause", "0"], "must be a whole number"),
    (["pause", "12", "--until", "2027-01-04T08:00:00"], "argument --until: '2027-01-04T08:00:00' has no UTC offset"),
    (["pause", "12", "--until", "monday"], "argument --until: 'monday' is not a time"),
    (["pause", "12", "--until"], "argument --until: expected one argument"),
    (["pause", "12", "--note", "x" * 501], "argument --note: is 501 characters long; a pause note holds at most 500"),
    (["skip-next"], "ID"),
    (["skip-next", "0"], "must be a whole number"),
    (["skip-next", "12", "--until", "+1h"], "unrecognized arguments"),
    (["cancel"], "--idempotency-key"),
    (["list", "--verbose"], "unrecognized arguments"),
    ([*CREATE, "--prompt", "p", "--every", "60", "--notify-on", "never"], "argument --notify-on: invalid choice"),
    ([*CREATE, "--prompt", "p", "--every", "60", "--overlap", "queue_all", "--queue-cap", "0"], "--queue-cap"),
    (["run-now", "12", "--overlap", "always"], "argument --overlap: invalid choice"),
    (["report"], "the following arguments are required: --outcome"),
    (["report", "--outcome", "nothing"], "argument --outcome: invalid choice: 'nothing'"),
    (["report", "--outcome", "changed", "--summary", "x" * 2001],
     "argument --summary: is 2001 characters long; a summary holds at most 2000"),
    (["next"], "one of the arguments --in --at is required"),
    (["next", "--in", "1h", "--at", "+2h"], "argument --at: not allowed with argument --in"),
    (["next", "--in", "soon"], "argument --in: must be a number of seconds"),
    (["next", "--in", "0m"], "argument --in: must be a number of seconds"),
    (["next", "--at", "tomorrow"], "argument --at: 'tomorrow' is not a time"),
]


@pytest.mark.parametrize(("argv", "message"), USAGE_ERRORS,
                         ids=[" ".join(a)[:80] or "nothing" for a, _ in USAGE_ERRORS])
def test_usage_errors_exit_2_and_send_nothing(stub: Stub, tmp_path: Path, argv: list[str], message: str) -> None:
    result = cli(stub, *argv, cwd=tmp_path)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert message in result.stderr
    assert "usage:" in result.stderr
    assert stub.requests == []


def test_usage_errors_win_over_a_missing_environment() -> None:
    result = run("create", "--name", "n", url=None, token=None)
    assert result.returncode == 2


def test_empty_stdin_prompt_is_a_usage_error(stub: Stub) -> None:
    result = cli(stub, *CREATE, "--prompt-file", "-", "--every", "60", stdin="")
    assert result.returncode == 2 and "the prompt is empty" in result.stderr
    assert stub.requests == []


# -- help ----------------------------------------------------------------------------------------

COMMANDS = ["create", "list", "show", "pause", "skip-next", "arm", "resume", "run-now", "delete", "cancel",
            "complete-current", "report", "next", "whoami"]


def test_main_help_teaches_drafts_user_only_arming_and_exit_codes() -> None:
    result = run("--help", url=None, token=None)
    assert result.returncode == 0
    text = result.stdout
    for needle in ["DRAFTS", "Schedules drawer", "reserved for users", "SCHEDULE_API_URL", "SCHEDULE_API_TOKEN",
                   "--json", "exit codes:", "  0  success", "  1  the API refused", "  2  usage error",
                   "  3  no usable credentials", "examples:", "--cron \"0 9 * * 1-5\" --tz Europe/Paris",
                   *COMMANDS]:
        assert needle in text, needle


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_an_example_and_the_exit_codes(command: str) -> None:
    result = run(command, "--help", url=None, token=None)
    assert result.returncode == 0
    assert f"usage: remote-schedule {command}" in result.stdout
    assert f"remote-schedule {command}" in result.stdout.split("example", 1)[1]
    assert "exit codes:" in result.stdout and "3  no usable credentials" in result.stdout


def test_create_help_explains_drafts_timing_and_completion_conditions() -> None:
    text = run("create", "--help", url=None, token=None).stdout
    for needle in ["DRAFT", "Schedules drawer", "IANA timezone", "host's local time is never",
                   "--prompt-file", "'-' for stdin", "observable completion condition", "--max-runs",
                   "--idempotency-key", "+30m", "@daily"]:
        assert needle in text, needle


def test_create_help_explains_catchup_jitter_and_the_active_window() -> None:
    text = " ".join(run("create", "--help", url=None, token=None).stdout.split())
    for needle in ["--catchup SECONDS|none", "--jitter SECONDS", "--starts TIME", "--ends TIME", "missed",
                   "none = no limit", "a tenth of the schedule's smallest gap", "fires first AT --starts",
                   "active window ended", "Not with --at"]:
        assert needle in text, needle


def test_pause_help_explains_note_until_and_the_users_pause() -> None:
    text = " ".join(run("pause", "--help", url=None, token=None).stdout.split())
    for needle in ["--note TEXT", "--until TIME", "resumes by itself", "not replayed",
                   "A pause a user made can only be changed by a user", "+3d"]:
        assert needle in text, needle


def test_skip_next_help_says_what_is_refused() -> None:
    text = " ".join(run("skip-next", "--help", url=None, token=None).stdout.split())
    assert "recorded as skipped" in text and "not active" in text and "once schedule" in text


@pytest.mark.parametrize("command", ["arm", "resume"])
def test_arm_and_resume_help_say_they_are_for_users(command: str) -> None:
    text = run(command, "--help", url=None, token=None).stdout
    assert "reserved" in text and "user" in text and "exit 1" in text


def test_report_help_explains_quiet_fires() -> None:
    text = " ".join(run("report", "--help", url=None, token=None).stdout.split())
    for needle in ["changed", "no_change", "failed", "notify_on", "tells nobody", "no webhook, email, browser "
                   "notification or inbox item", '"nothing new" card', "A fire without a report counts as changed",
                   "always notifies"]:
        assert needle in text, needle


def test_next_help_explains_bounds_and_the_unchanged_schedule() -> None:
    text = " ".join(run("next", "--help", url=None, token=None).stdout.split())
    for needle in ["--in DURATION", "--at INSTANT", "2h30m", "once", "schedule itself is unchanged",
                   "paced by the agent", "exits 2 naming the bound", "pace_min_seconds", "pace_max_seconds"]:
        assert needle in text, needle


def test_create_help_explains_the_new_overlaps_and_notify_on() -> None:
    text = " ".join(run("create", "--help", url=None, token=None).stdout.split())
    for needle in ["queue_one|skip|replace|queue_all", "--queue-cap N", "queue full", "--notify-on",
                   "always|changes|failures", "tells nobody", '"nothing new" card']:
        assert needle in text, needle


# -- create --when: a schedule in words, read by the API (SPEC §20) ----------------------------

PARSE = "/agent-api/schedules/parse"
READING: dict[str, Any] = {
    "schedule": {"kind": "cron", "cron": "0 9 * * 1#1", "timezone": "Europe/Berlin"},
    "exclude_dates": ["2026-12-07"], "holidays": {"country": "US", "subdivision": None},
    "canonical": "0 9 * * 1#1", "description": "At 09:00, on the first Monday of the month (Europe/Berlin time)",
    "next": ["2027-01-04T08:00:00Z", "2027-02-01T08:00:00Z", "2027-03-01T08:00:00Z", "2027-04-05T07:00:00Z",
             "2027-05-03T07:00:00Z"],
    "fires": [{"utc": "2027-01-04T08:00:00Z", "local": "2027-01-04T09:00:00+01:00"},
              {"utc": "2027-02-01T08:00:00Z", "local": "2027-02-01T09:00:00+01:00"},
              {"utc": "2027-03-01T08:00:00Z", "local": "2027-03-01T09:00:00+01:00"},
              {"utc": "2027-04-05T07:00:00Z", "local": "2027-04-05T09:00:00+02:00"},
              {"utc": "2027-05-03T07:00:00Z", "local": "2027-05-03T09:00:00+02:00"}],
    "excluded": [{"utc": "2026-12-07T08:00:00Z", "local": "2026-12-07T09:00:00+01:00", "reason": "excluded date"}],
}
WHEN = "first Monday of every month at 9am excluding 2026-12-07 and US holidays"


def reading(**changes: Any) -> dict[str, Any]:
    return {**READING, **changes}


def test_create_when_reads_the_phrase_then_creates_what_it_read(stub: Stub) -> None:
    stub.answer("POST", PARSE, 200, reading())
    stub.answer("POST", "/agent-api/schedules", 201, task(schedule=READING["schedule"]))
    result = cli(stub, *CREATE, "--prompt", "p", "--when", WHEN, "--tz", "Europe/Berlin")
    assert result.returncode == 0, result.stderr
    parse, create = stub.requests
    assert (parse.method, parse.path, parse.json) == ("POST", PARSE, {"text": WHEN, "timezone": "Europe/Berlin"})
    assert parse.headers["Authorization"] == f"Bearer {TOKEN}"
    assert (create.method, create.path) == ("POST", "/agent-api/schedules")
    assert create.json == {"name": "n", "prompt": "p", "schedule": READING["schedule"],
                           "exclude_dates": ["2026-12-07"], "holidays": {"country": "US", "subdivision": None}}


def test_create_when_prints_the_read_back_in_the_zone(stub: Stub) -> None:
    stub.answer("POST", PARSE, 200, reading())
    stub.answer("POST", "/agent-api/schedules", 201, task(schedule=READING["schedule"]))
    result = cli(stub, *CREATE, "--prompt", "p", "--when", WHEN, "--tz", "Europe/Berlin")
    lines = result.stdout.splitlines()
    assert lines[0] == 'created schedule 12 "daily news" (draft — a user must arm it in the Schedules drawer)'
    assert lines[2:] == [
        "  read back:  0 9 * * 1#1",
        "  in English: At 09:00, on the first Monday of the month (Europe/Berlin time)",
        "  excluding:  2026-12-07, US public holidays",
        "  next 5 fires in Europe/Berlin:",
        "    Mon 2027-01-04 09:00 (+01:00)",
        "    Mon 2027-02-01 09:00 (+01:00)",
        "    Mon 2027-03-01 09:00 (+01:00)",
        "    Mon 2027-04-05 09:00 (+02:00)",
        "    Mon 2027-05-03 09:00 (+02:00)",
        "    (Mon 2026-12-07 09:00 (+01:00) is excluded: excluded date)",
    ]
    assert result.stderr == ""


def test_create_when_takes_timezone_for_tz_and_sends_no_empty_exclusions(stub: Stub) -> None:
    interval = reading(schedule={"kind": "interval", "every_seconds": 5400}, exclude_dates=[], holidays=None,
                       canonical="every 5400 s", description="Every 1 hour 30 minutes", excluded=[],
                       fires=READING["fires"][:2])
    stub.answer("POST", PARSE, 200, interval)
    stub.answer("POST", "/agent-api/schedules", 201, task(schedule=interval["schedule"]))
    result = cli(stub, *CREATE, "--prompt", "p", "--when", "every 90 minutes", "--timezone", "America/New_York")
    assert result.returncode == 0, result.stderr
    parse, create = stub.requests
    assert parse.json == {"text": "every 90 minutes", "timezone": "America/New_York"}
    assert create.json == {"name": "n", "prompt": "p", "schedule": {"kind": "interval", "every_seconds": 5400}}
    assert "  read back:  every 5400 s" in result.stdout and "excluding" not in result.stdout
    assert "next 2 fires in America/New_York (counted from now; the first comes one interval after a user arms " \
           "it):" in result.stdout


@pytest.mark.parametrize(("message", "shown"), [
    ('text: "fortnightly" is not understood; expected a schedule such as "every day at 9"',
     '--when: "fortnightly" is not understood; expected a schedule such as "every day at 9"; nothing was created'),
    ('text: "the sixth Monday": a month has at most five Mondays',
     '--when: "the sixth Monday": a month has at most five Mondays; nothing was created'),
    ("timezone: 'Mars/Base' is not a known IANA time zone (e.g. Europe/Paris)",
     "--tz: 'Mars/Base' is not a known IANA time zone (e.g. Europe/Paris); nothing was created"),
], ids=["not-understood", "sixth-monday", "bad-zone"])
def test_create_when_with_a_phrase_the_api_refuses_exits_2_with_its_message(stub: Stub, message: str,
                                                                           shown: str) -> None:
    stub.answer("POST", PARSE, 400, error("invalid", message))
    result = cli(stub, *CREATE, "--prompt", "p", "--when", "fortnightly", "--tz", "Europe/Berlin")
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr.strip() == f"remote-schedule: {shown}"
    assert only_request(stub).path == PARSE  # nothing was created
    assert result.stdout == ""


def test_create_when_refused_with_json_prints_the_apis_error_body(stub: Stub) -> None:
    body = error("invalid", 'text: "fortnightly" is not understood')
    stub.answer("POST", PARSE, 400, body)
    result = cli(stub, "--json", *CREATE, "--prompt", "p", "--when", "fortnightly", "--tz", "UTC")
    assert result.returncode == 2 and json.loads(result.stdout) == body


@pytest.mark.parametrize(("status", "code"), [(401, 3), (403, 1), (500, 1)])
def test_create_when_other_refusals_of_the_reading_keep_their_exit_codes(stub: Stub, status: int, code: int) -> None:
    stub.answer("POST", PARSE, status, error("x", "no"))
    result = cli(stub, *CREATE, "--prompt", "p", "--when", "every day", "--tz", "UTC")
    assert result.returncode == code
    assert only_request(stub).path == PARSE


def test_create_when_json_prints_the_created_task(stub: Stub) -> None:
    created = task(schedule=READING["schedule"])
    stub.answer("POST", PARSE, 200, reading())
    stub.answer("POST", "/agent-api/schedules", 201, created)
    result = cli(stub, *CREATE, "--prompt", "p", "--when", WHEN, "--tz", "Europe/Berlin", "--json")
    assert result.returncode == 0 and json.loads(result.stdout) == created


def test_create_when_repeated_with_the_same_key_prints_no_read_back(stub: Stub) -> None:
    stub.answer("POST", PARSE, 200, reading())
    stub.answer("POST", "/agent-api/schedules", 200, task(idempotency_key="k-1"))
    result = cli(stub, *CREATE, "--prompt", "p", "--when", WHEN, "--tz", "UTC", "--idempotency-key", "k-1")
    assert result.returncode == 0
    assert "already exists" in result.stdout and "read back" not in result.stdout


WHEN_USAGE_ERRORS = [
    ([*CREATE, "--prompt", "p", "--when", "every day", "--cron", "0 9 * * *", "--tz", "UTC"],
     "argument --cron: not allowed with argument --when"),
    ([*CREATE, "--prompt", "p", "--every", "1h", "--when", "every day", "--tz", "UTC"],
     "argument --when: not allowed with argument --every"),
    ([*CREATE, "--prompt", "p", "--when", "every day", "--at", "+1h"],
     "argument --at: not allowed with argument --when"),
    ([*CREATE, "--prompt", "p", "--when", "every day"], "--when needs --tz ZONE"),
    ([*CREATE, "--prompt", "p", "--when", "  ", "--tz", "UTC"], "--when is empty"),
    ([*CREATE, "--prompt", "p", "--when"], "argument --when: expected one argument"),
    ([*CREATE, "--prompt", "p", "--every", "60", "--timezone", "UTC"], "--tz only applies to --cron and --when"),
]


@pytest.mark.parametrize(("argv", "message"), WHEN_USAGE_ERRORS,
                         ids=[" ".join(a[4:])[:60] for a, _ in WHEN_USAGE_ERRORS])
def test_when_usage_errors_exit_2_with_a_sentence_and_send_nothing(stub: Stub, argv: list[str], message: str) -> None:
    result = cli(stub, *argv)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert message in result.stderr and "usage:" in result.stderr
    assert stub.requests == []


def test_create_help_explains_when() -> None:
    text = " ".join(run("create", "--help", url=None, token=None).stdout.split())
    for needle in ["--when PHRASE --tz ZONE", "--timezone", '"first Monday of every month at 9am"', "09:00",
                   '"excluding US holidays"', "read-back", "exits 2 naming the part; nothing is created"]:
        assert needle in text, needle
