"""Hostile input to both HTTP APIs (SPEC §5), on SQLite and PostgreSQL.

Oversized bodies, deep JSON, invalid UTF-8, huge cron strings, unknown zones, instants at the
edges of the calendar, and numbers of every wrong size and type. Each must get a clear 4xx in
the documented error shape — 400 naming the field, 404 for an id, 413 for size — and a refused
request changes nothing: every row of every table is compared before and after.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.core import auth, chats, projects
from app.core.clock import FakeClock
from app.core.context import Core
from app.core.grants import Scope
from app.schedules.service import Actor, TaskService
from tests.conftest import database_core
from tests.integration.apiclient import add_user, bearer, client_for, table_contents
from tests.store import issue_grant

LIMIT = 65536  # CHATCRON_REQUEST_MAX_BYTES default
BIG_LIMIT = 2_000_000  # a deployment that raised the limit: the parser must still cope
EVERY_5_MIN = {"kind": "interval", "every_seconds": 300}
MAX_UNIX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z

# Long cron strings must be refused or evaluated in linear time. A super-linear evaluation takes
# minutes on these inputs, so a generous bound tells the two apart on a loaded machine; the time
# itself is measured by the cron benchmark (tests/perf), not asserted here.
BLOWUP_GUARD_SECONDS = 10.0


def create_body(**changes: Any) -> dict[str, Any]:
    return {"name": "n", "prompt": "p", "schedule": EVERY_5_MIN, **changes}


@dataclasses.dataclass
class World:
    """Alice's project chat (with the skill) holding an active task; a loose chat; a manage grant."""

    core: Core
    client: TestClient
    big_client: TestClient
    token: str
    grant: str
    project: int
    chat: int
    loose: int
    task: int

    def headers(self, path: str) -> dict[str, str]:
        return bearer(self.grant if path.startswith("/agent-api/") else self.token)

    def path(self, template: str, value: Any = None) -> str:
        ids = {"project": self.project, "chat": self.chat, "task": self.task}
        if value is not None:
            ids = dict.fromkeys(ids, value)
        return template.format(**ids)

    def send(self, method: str, template: str, body: Any = None, *, raw: bytes | Any = None,
             client: TestClient | None = None, headers: dict[str, str] | None = None, id_value: Any = None) -> Any:
        path = self.path(template, id_value)
        sent = {**self.headers(path), **(headers or {})}
        if raw is None and body is not None:
            raw = json.dumps(body).encode()
        if raw is not None:
            sent.setdefault("content-type", "application/json")
        return (client or self.client).request(method, path, content=raw, headers=sent)

    def refused(self, method: str, template: str, body: Any = None, **kwargs: Any) -> tuple[int, dict[str, str]]:
        """Send; check a 4xx in the error shape that changed no row, and that the process still answers."""
        before = table_contents(self.core)
        response = self.send(method, template, body, **kwargs)
        assert 400 <= response.status_code < 500, (response.status_code, response.text[:500])
        error = error_of(response)
        assert table_contents(self.core) == before
        assert self.client.get(f"/api/chats/{self.chat}", headers=bearer(self.token)).status_code == 200
        return response.status_code, error


def error_of(response: Any) -> dict[str, str]:
    payload = response.json()
    assert set(payload) == {"error"} and set(payload["error"]) == {"code", "message"}, payload
    assert all(isinstance(v, str) and v for v in payload["error"].values()), payload
    return payload["error"]


def build_world(core: Core) -> Iterator[World]:
    db, clock = core.db, core.clock
    alice = add_user(core, "alice@example.com")
    project = projects.create_project(db, clock, core.settings.workspaces_dir, "Alice's", alice)
    chat = chats.create_chat(db, clock, alice, project.id, "Plans")
    chats.update_chat(db, clock, alice, chat.id, skills=["scheduled-tasks"])
    loose = chats.create_chat(db, clock, alice, None, "Loose")
    task, _ = TaskService(db, clock, core.settings).create(Actor(alice), chat.id, create_body(name="standing"))
    token = auth.create_api_token(db, clock, alice.id)
    grant, _ = issue_grant(db, clock, 3600, Scope.MANAGE, alice.id, chat.id, project.id)
    with client_for(core, raise_server_exceptions=False) as client, \
            client_for(core, BIG_LIMIT, raise_server_exceptions=False) as big:
        yield World(core, client, big, token, grant, project.id, chat.id, loose.id, task.id)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def shared(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """One world per database for the many requests that must change nothing (each checks it)."""
    with database_core(request, tmp_path_factory, "bad-input", FakeClock(), min_interval_seconds=60) as core:
        yield from build_world(core)


@pytest.fixture
def fresh(clocked_core: Core) -> Iterator[World]:
    """A world of its own, for requests that are accepted."""
    yield from build_world(clocked_core)


# Every endpoint that reads a JSON body, with a body it accepts (or refuses for another reason).
JSON_ENDPOINTS = [
    ("POST", "/api/projects", {"name": "x"}),
    ("POST", "/api/projects/{project}/chats", {"title": "x"}),
    ("PATCH", "/api/chats/{chat}", {"title": "x"}),
    ("POST", "/api/chats/{chat}/prompts", {"text": "x"}),
    ("POST", "/api/chats/{chat}/schedules", create_body()),
    ("PATCH", "/api/schedules/{task}", {"name": "x"}),
    ("POST", "/api/schedules/preview", {"schedule": EVERY_5_MIN}),
    ("POST", "/agent-api/schedules", create_body()),
    ("PATCH", "/agent-api/schedules/{task}", {"name": "x"}),
    ("POST", "/agent-api/schedules/current/complete", {"reason": "done"}),
]
JSON_IDS = [f"{m} {p}" for m, p, _ in JSON_ENDPOINTS]
# Endpoints without a body: a body sent to them is still subject to the limit.
BODYLESS_ENDPOINTS = [
    ("POST", "/api/schedules/{task}/pause"), ("POST", "/api/schedules/{task}/run-now"),
    ("DELETE", "/api/schedules/{task}"), ("POST", "/agent-api/schedules/{task}/pause"),
    ("POST", "/agent-api/schedules/{task}/run-now"), ("DELETE", "/agent-api/schedules/{task}"),
]
BODYLESS_IDS = [f"{m} {p}" for m, p in BODYLESS_ENDPOINTS]
SCHEDULE_WRITES = [("POST", "/api/chats/{chat}/schedules"), ("POST", "/agent-api/schedules")]


def padded(body: Any, size: int) -> bytes:
    data = json.dumps(body).encode()
    return data + b" " * (size - len(data))


def chunked(data: bytes, size: int = 4096) -> Iterator[bytes]:
    """A body sent without Content-Length (Transfer-Encoding: chunked)."""
    for i in range(0, len(data), size):
        yield data[i:i + size]


# -- oversized bodies: 413 ---------------------------------------------------------------------


@pytest.mark.parametrize("how", ["content-length", "chunked"])
@pytest.mark.parametrize(("method", "path", "body"), JSON_ENDPOINTS, ids=JSON_IDS)
def test_a_body_over_the_limit_is_413(shared: World, method: str, path: str, body: Any, how: str) -> None:
    data = padded(body, LIMIT + 1)
    status, error = shared.refused(method, path, raw=data if how == "content-length" else chunked(data))
    assert (status, error) == (413, {"code": "too_large", "message": f"body: larger than {LIMIT} bytes"})


@pytest.mark.parametrize(("method", "path", "body"), JSON_ENDPOINTS[:1] + JSON_ENDPOINTS[4:5],
                         ids=JSON_IDS[:1] + JSON_IDS[4:5])
def test_a_ten_megabyte_stream_is_cut_off_with_413(shared: World, method: str, path: str, body: Any) -> None:
    started = time.perf_counter()
    status, error = shared.refused(method, path, raw=chunked(padded(body, 10_000_000), 65536))
    assert status == 413 and error["code"] == "too_large"
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize(("method", "path"), BODYLESS_ENDPOINTS, ids=BODYLESS_IDS)
def test_a_body_over_the_limit_on_a_bodyless_endpoint_is_413_by_content_length(shared: World, method: str,
                                                                               path: str) -> None:
    status, error = shared.refused(method, path, raw=b" " * (LIMIT + 1))
    assert status == 413 and error["code"] == "too_large"


@pytest.mark.parametrize(("method", "path"), BODYLESS_ENDPOINTS, ids=BODYLESS_IDS)
def test_a_chunked_body_over_the_limit_on_a_bodyless_endpoint_is_413(fresh: World, method: str,
                                                                     path: str) -> None:
    status, error = fresh.refused(method, path, raw=chunked(b" " * (LIMIT + 1)))
    assert status == 413 and error["code"] == "too_large"


@pytest.mark.parametrize("length", ["abc", "-1", "1e9", "65536 ", ""], ids=["letters", "negative", "float",
                                                                            "trailing-space", "empty"])
def test_a_malformed_content_length_is_refused(shared: World, length: str) -> None:
    status, _ = shared.refused("POST", "/api/projects", raw=b'{"name": "x"}', headers={"content-length": length})
    assert status in (400, 413)


# -- deep JSON, invalid UTF-8 and other unparseable bodies: 400 --------------------------------

def nested_arrays(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def nested_objects(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


DEEP_BODIES = [
    ("arrays-32000", nested_arrays(32_000)),  # just under the 64 KiB limit
    ("objects-10000", nested_objects(10_000)),
    ("in-a-field", b'{"name": ' + nested_arrays(30_000) + b"}"),
    ("in-the-schedule", b'{"name": "n", "prompt": "p", "schedule": {"kind": ' + nested_arrays(30_000) + b"}}"),
]


@pytest.mark.parametrize("raw", [b for _, b in DEEP_BODIES], ids=[i for i, _ in DEEP_BODIES])
@pytest.mark.parametrize(("method", "path", "body"), JSON_ENDPOINTS, ids=JSON_IDS)
def test_deep_json_is_400_and_the_process_keeps_answering(shared: World, method: str, path: str, body: Any,
                                                          raw: bytes) -> None:
    status, error = shared.refused(method, path, raw=raw)
    assert status == 400 and error["code"] == "invalid"


@pytest.mark.parametrize("raw", [nested_arrays(100_000), nested_objects(100_000)], ids=["arrays", "objects"])
def test_a_hundred_thousand_levels_are_413_at_the_default_limit_and_400_above_it(shared: World,
                                                                                raw: bytes) -> None:
    assert shared.refused("POST", "/api/chats/{chat}/schedules", raw=raw)[0] == 413
    status, error = shared.refused("POST", "/api/chats/{chat}/schedules", raw=raw, client=shared.big_client)
    assert status == 400 and error["code"] == "invalid"


INVALID_UTF8 = [
    ("lone-continuation", b'{"name": "\x80"}'),
    ("ff-fe", b'{"name": "\xff\xfe"}'),
    ("overlong-slash", b'{"name": "\xc0\xaf"}'),
    ("truncated-sequence", b'{"name": "\xe2\x82"}'),
    ("in-a-key", b'{"\xc3\x28": "x"}'),
    ("outside-a-string", b'{"name": "x"}\xff'),
]


@pytest.mark.parametrize("raw", [b for _, b in INVALID_UTF8], ids=[i for i, _ in INVALID_UTF8])
@pytest.mark.parametrize(("method", "path", "body"), JSON_ENDPOINTS, ids=JSON_IDS)
def test_invalid_utf8_is_400(shared: World, method: str, path: str, body: Any, raw: bytes) -> None:
    status, error = shared.refused(method, path, raw=raw)
    assert status == 400 and error["code"] == "invalid"


def test_a_utf8_encoded_surrogate_is_400_naming_the_field(shared: World) -> None:
    status, error = shared.refused("POST", "/api/projects", raw=b'{"name": "\xed\xa0\x80"}')
    assert status == 400 and error["message"].startswith("name:")


UNPARSEABLE = [
    ("deep", nested_arrays(32_000), {}),
    ("invalid-utf8", b'{"name": "\xff"}', {}),
    ("number-of-5000-digits", json.dumps(create_body(max_runs=0)).replace("0", "9" * 5000, 1).encode(), {}),
    ("declared-latin-1", b'{"name": "caf\xe9"}', {"content-type": "application/json; charset=latin-1"}),
]


@pytest.mark.parametrize(("raw", "headers"), [c[1:] for c in UNPARSEABLE], ids=[c[0] for c in UNPARSEABLE])
def test_an_unparseable_body_is_400(shared: World, raw: bytes, headers: dict[str, str]) -> None:
    status, error = shared.refused("POST", "/api/chats/{chat}/schedules", raw=raw, headers=headers)
    assert status == 400 and error["code"] == "invalid"


@pytest.mark.parametrize(("raw", "headers"), [c[1:] for c in UNPARSEABLE], ids=[c[0] for c in UNPARSEABLE])
def test_an_unparseable_body_is_400_naming_the_body(shared: World, raw: bytes, headers: dict[str, str]) -> None:
    _, error = shared.refused("POST", "/api/chats/{chat}/schedules", raw=raw, headers=headers)
    assert error["message"].startswith("body:"), error


# -- huge cron strings and unknown zones --------------------------------------------------------

def cron_of(size: int) -> dict[str, str]:
    """Cron expressions of about ``size`` bytes, each shaped to stress a different part of the parser."""
    return {
        "minute-list": "0," * (size // 2) + "0 * * * *",
        "digits": "9" * size + " * * * *",
        "spaces": "0 " + " " * size + "* * * *",
        "ranges": "0 0 " + "1-31/1," * (size // 7) + "1 * *",
        "names": "0 0 * * " + "mon-sun," * (size // 8) + "mon",
        "letters": "x" * size,
    }


@pytest.mark.parametrize("shape", list(cron_of(10)))
@pytest.mark.parametrize(("method", "path"), [*SCHEDULE_WRITES, ("POST", "/api/schedules/preview"),
                                              ("PATCH", "/api/schedules/{task}")],
                         ids=["create", "agent-create", "preview", "patch"])
def test_a_60_kb_cron_string_is_400_naming_schedule_cron_without_blowup(shared: World, method: str, path: str,
                                                                           shape: str) -> None:
    schedule = {"kind": "cron", "cron": cron_of(60_000)[shape], "timezone": "UTC"}
    body = {"schedule": schedule} if "preview" in path or method == "PATCH" else create_body(schedule=schedule)
    started = time.perf_counter()
    status, error = shared.refused(method, path, body)
    assert time.perf_counter() - started < BLOWUP_GUARD_SECONDS
    assert status == 400 and error["message"].startswith("schedule.cron:"), error


@pytest.mark.parametrize("shape", list(cron_of(10)))
def test_a_100_kb_cron_string_is_413_and_400_naming_schedule_cron_above_the_limit(shared: World,
                                                                                  shape: str) -> None:
    body = create_body(schedule={"kind": "cron", "cron": cron_of(100_000)[shape], "timezone": "UTC"})
    assert shared.refused("POST", "/api/chats/{chat}/schedules", body)[0] == 413
    started = time.perf_counter()
    status, error = shared.refused("POST", "/api/chats/{chat}/schedules", body, client=shared.big_client)
    assert time.perf_counter() - started < BLOWUP_GUARD_SECONDS
    assert status == 400 and error["message"].startswith("schedule.cron:"), error


@pytest.mark.parametrize("zone", ["UTC", "Australia/Lord_Howe", "America/St_Johns"])
def test_a_cron_string_just_under_the_length_cap_is_evaluated_without_blowup(shared: World, zone: str) -> None:
    """Every field a long list with duplicate ranges, in zones with whole-hour and half-hour DST."""
    def listed(values: range, pad: str, size: int) -> str:
        text = ",".join(str(v) for v in values)
        while len(text) + len(pad) + 1 <= size:
            text += "," + pad
        return text

    fields = [listed(range(60), "0-59", 400), listed(range(24), "0-23", 200), listed(range(1, 32), "1-31", 200),
              listed(range(1, 13), "1-12", 90), listed(range(8), "0-7", 90)]
    expr = " ".join(fields)
    assert 950 <= len(expr) <= 1000
    for method, path in (("POST", "/api/schedules/preview"), ("POST", "/api/chats/{chat}/schedules")):
        schedule = {"kind": "cron", "cron": expr, "timezone": zone}
        started = time.perf_counter()
        response = shared.send(method, path, {"schedule": schedule} if "preview" in path else
                               create_body(schedule=schedule, overlap="nonsense"))  # refused after the timing checks
        assert time.perf_counter() - started < BLOWUP_GUARD_SECONDS
        if "preview" in path:
            assert response.status_code == 200 and len(response.json()["fires"]) == 5, response.text
        else:
            assert response.status_code == 400 and error_of(response)["message"].startswith("overlap:"), response.text


UNKNOWN_ZONES = ["Mars/Olympus_Mons", "../../etc/passwd", "/etc/localtime", "Europe/../Europe/Paris",
                 "Europe/Paris\x00", "Europe/Paris ", "europe/paris", "", " ", "localtime", "posixrules",
                 "posix/Europe/Paris", "right/UTC", "Etc/GMT+14", "Europe\\Paris", "z" * 60_000, 5, True, None,
                 ["UTC"], {"name": "UTC"}]


@pytest.mark.parametrize("zone", UNKNOWN_ZONES, ids=[repr(z)[:30] for z in UNKNOWN_ZONES])
@pytest.mark.parametrize(("method", "path"), [*SCHEDULE_WRITES, ("POST", "/api/schedules/preview")],
                         ids=["create", "agent-create", "preview"])
def test_an_unknown_zone_is_400_naming_schedule_timezone(shared: World, method: str, path: str, zone: Any) -> None:
    schedule = {"kind": "cron", "cron": "0 9 * * *", "timezone": zone}
    body = {"schedule": schedule} if "preview" in path else create_body(schedule=schedule)
    status, error = shared.refused(method, path, body)
    assert status == 400 and error["message"].startswith("schedule.timezone:"), error


# -- instants: year 1, year 9999, year 10000, negative Unix milliseconds ------------------------

REFUSED_INSTANTS = ["9999-12-31T23:59:59-12:00",  # year 10000 in UTC
                    "10000-01-01T00:00:00Z", "+10000-01-01T00:00:00Z", "99999-01-01T00:00:00Z",
                    "0001-01-01T00:00:00Z", "0001-01-01T00:00:00+14:00", "0000-01-01T00:00:00Z",
                    "-0001-01-01T00:00:00Z", "1969-12-31T23:59:59Z", 0, -1, -86_400_000, -(2**63),
                    MAX_UNIX_MS + 1, 2**63, 2**64, 10**30]


@pytest.mark.parametrize("at", REFUSED_INSTANTS, ids=[str(a) for a in REFUSED_INSTANTS])
@pytest.mark.parametrize(("method", "path"), [*SCHEDULE_WRITES, ("POST", "/api/schedules/preview"),
                                              ("PATCH", "/api/schedules/{task}")],
                         ids=["create", "agent-create", "preview", "patch"])
def test_an_instant_outside_the_future_years_1_to_9999_is_400_naming_schedule_at(shared: World, method: str,
                                                                                  path: str, at: Any) -> None:
    schedule = {"kind": "once", "at": at}
    body = {"schedule": schedule} if "preview" in path or method == "PATCH" else create_body(schedule=schedule)
    status, error = shared.refused(method, path, body)
    assert status == 400 and error["message"].startswith("schedule.at:"), error


ACCEPTED_INSTANTS = [("9999-12-31T23:59:59Z", "9999-12-31T23:59:59.000Z"),
                     ("9999-12-31T23:59:59.999999Z", "9999-12-31T23:59:59.999Z"),
                     ("9999-12-31T23:59:59+14:00", "9999-12-31T09:59:59.000Z"),
                     (MAX_UNIX_MS, "9999-12-31T23:59:59.999Z")]


@pytest.mark.parametrize(("at", "shown"), ACCEPTED_INSTANTS, ids=[str(a) for a, _ in ACCEPTED_INSTANTS])
def test_the_last_instant_of_year_9999_is_accepted_stored_and_shown(fresh: World, at: Any, shown: str) -> None:
    created = fresh.send("POST", "/api/chats/{chat}/schedules", create_body(schedule={"kind": "once", "at": at}))
    assert created.status_code == 201, created.text
    task = created.json()
    assert task["next_run_at"] == shown
    assert fresh.send("GET", f"/api/schedules/{task['id']}").json() == task
    listed = fresh.send("GET", "/api/chats/{chat}/schedules").json()["schedules"]
    assert task in listed
    assert fresh.send("GET", "/agent-api/schedules").json()["schedules"] == listed
    patched = fresh.send("PATCH", "/api/schedules/{task}", {"schedule": {"kind": "once", "at": at}})
    assert patched.status_code == 200 and patched.json()["next_run_at"] == shown
    preview = fresh.send("POST", "/api/schedules/preview", {"schedule": {"kind": "once", "at": at}})
    assert preview.status_code == 200 and preview.json()["fires"][0]["utc"].startswith("9999-12-31T")


# -- numbers of every wrong size and type --------------------------------------------------------

HUGE = [0, -1, -(2**31), -(2**63), 2**31, 2**63, 2**64, 10**30, 10**300]
BAD_NUMBERS = [  # (field path the message must start with, body change)
    *[("max_runs", {"max_runs": v}) for v in [*HUGE, 1_000_001]],
    *[("schedule.every_seconds", {"schedule": {"kind": "interval", "every_seconds": v}})
      for v in [*HUGE, 252_460_801]],
    # floats where an int is expected
    ("max_runs", {"max_runs": 2.0}), ("max_runs", {"max_runs": 2.5}), ("max_runs", {"max_runs": 1e3}),
    ("max_runs", {"max_runs": 1e400}),  # Python's json reads 1e400 as infinity
    ("schedule.every_seconds", {"schedule": {"kind": "interval", "every_seconds": 300.0}}),
    ("schedule.every_seconds", {"schedule": {"kind": "interval", "every_seconds": 3e2}}),
    ("schedule.at", {"schedule": {"kind": "once", "at": 4_102_444_800_000.0}}),
    # booleans where a number is expected
    ("max_runs", {"max_runs": True}), ("max_runs", {"max_runs": False}),
    ("schedule.every_seconds", {"schedule": {"kind": "interval", "every_seconds": True}}),
    ("schedule.at", {"schedule": {"kind": "once", "at": True}}),
    # numbers where a string is expected
    ("name", {"name": 1}), ("prompt", {"prompt": 2.5}), ("idempotency_key", {"idempotency_key": 10**30}),
    ("overlap", {"overlap": 0}), ("session", {"session": 1}), ("schedule.kind", {"schedule": {"kind": 1}}),
    ("schedule.cron", {"schedule": {"kind": "cron", "cron": 5, "timezone": "UTC"}}),
]
NUMBER_IDS = [f"{field}={json.dumps(change)[:40]}" for field, change in BAD_NUMBERS]


@pytest.mark.parametrize(("field", "change"), BAD_NUMBERS, ids=NUMBER_IDS)
@pytest.mark.parametrize(("method", "path"), SCHEDULE_WRITES, ids=["create", "agent-create"])
def test_a_number_of_the_wrong_size_or_type_is_400_naming_the_field(shared: World, method: str, path: str,
                                                                    field: str, change: dict[str, Any]) -> None:
    raw = json.dumps(create_body(**change)).replace("Infinity", "1e400").encode()
    status, error = shared.refused(method, path, raw=raw)
    assert status == 400 and error["message"].startswith(f"{field}:"), error


@pytest.mark.parametrize(("field", "change"), [c for c in BAD_NUMBERS if c[0] not in ("idempotency_key",)],
                         ids=[i for i, c in zip(NUMBER_IDS, BAD_NUMBERS, strict=True) if c[0] != "idempotency_key"])
def test_a_number_of_the_wrong_size_or_type_in_a_patch_is_400_naming_the_field(shared: World, field: str,
                                                                               change: dict[str, Any]) -> None:
    raw = json.dumps(change).replace("Infinity", "1e400").encode()
    status, error = shared.refused("PATCH", "/api/schedules/{task}", raw=raw)
    assert status == 400 and error["message"].startswith(f"{field}:"), error


QUERY_NUMBERS = [
    ("/api/chats/{chat}/events", "limit", v) for v in ["-1", "0", "1001", str(2**31), str(2**63), "1" + "0" * 30,
                                                       "2.5", "1e3", "true", "", "0x10", "NaN"]
] + [
    ("/api/chats/{chat}/events", "after", v) for v in ["-1", str(2**31), str(2**63), "1" + "0" * 30, "1.5",
                                                       "false", "-0.5"]
] + [
    ("/api/schedules/{task}/runs", "limit", v) for v in ["-1", "0", "501", str(2**63), "1" + "0" * 30, "2.5",
                                                         "true"]
]


@pytest.mark.parametrize(("path", "name", "value"), QUERY_NUMBERS, ids=[f"{p.split('/')[-1]}-{n}={v[:12]}"
                                                                        for p, n, v in QUERY_NUMBERS])
def test_a_bad_number_in_the_query_is_400_naming_the_parameter(shared: World, path: str, name: str,
                                                               value: str) -> None:
    status, error = shared.refused("GET", f"{path}?{name}={value}")
    assert status == 400 and error["message"].startswith(f"{name}:"), error


@pytest.mark.parametrize("url", ["/api/chats/{chat}/events?limit=2.0", "/api/chats/{chat}/events?after=0.0",
                                 "/api/schedules/{task}/runs?limit=2.0", "/api/chats/{chat}.0"],
                         ids=["events-limit", "events-after", "runs-limit", "path-id"])
def test_a_float_with_a_zero_fraction_in_the_query_or_path_is_refused(shared: World, url: str) -> None:
    shared.refused("GET", url)


ID_ENDPOINTS = [
    ("GET", "/api/projects/{project}/chats"), ("POST", "/api/projects/{project}/chats"),
    ("GET", "/api/chats/{chat}"), ("PATCH", "/api/chats/{chat}"), ("GET", "/api/chats/{chat}/events"),
    ("POST", "/api/chats/{chat}/prompts"), ("GET", "/api/chats/{chat}/schedules"),
    ("POST", "/api/chats/{chat}/schedules"), ("GET", "/api/runs/{chat}"), ("GET", "/api/schedules/{task}"),
    ("PATCH", "/api/schedules/{task}"), ("DELETE", "/api/schedules/{task}"), ("POST", "/api/schedules/{task}/arm"),
    ("POST", "/api/schedules/{task}/pause"), ("POST", "/api/schedules/{task}/resume"),
    ("POST", "/api/schedules/{task}/run-now"), ("GET", "/api/schedules/{task}/runs"),
    ("GET", "/agent-api/schedules/{task}"), ("PATCH", "/agent-api/schedules/{task}"),
    ("DELETE", "/agent-api/schedules/{task}"), ("POST", "/agent-api/schedules/{task}/pause"),
    ("POST", "/agent-api/schedules/{task}/run-now"),
]
BAD_IDS = ["-1", "0", str(2**31), "1" + "0" * 30, "true", "0x1", "%2e%2e", "١"]
VALID_BODY = {"POST /api/projects/{project}/chats": {"title": "x"}, "PATCH /api/chats/{chat}": {"title": "x"},
              "POST /api/chats/{chat}/prompts": {"text": "x"}, "POST /api/chats/{chat}/schedules": create_body(),
              "PATCH /api/schedules/{task}": {"name": "x"}, "PATCH /agent-api/schedules/{task}": {"name": "x"}}


@pytest.mark.parametrize("value", BAD_IDS)
@pytest.mark.parametrize(("method", "path"), ID_ENDPOINTS, ids=[f"{m} {p}" for m, p in ID_ENDPOINTS])
def test_an_impossible_id_in_the_path_is_404_naming_the_parameter(shared: World, method: str, path: str,
                                                                  value: str) -> None:
    body = VALID_BODY.get(f"{method} {path}")
    status, error = shared.refused(method, path, body, id_value=value)
    name = path.split("{")[1].split("}")[0]
    param = {"project": "pid", "chat": "rid" if path.startswith("/api/runs") else "cid", "task": "tid"}[name]
    assert (status, error["code"]) == (404, "not_found")
    assert error["message"].startswith(f"{param}:"), error


@pytest.mark.parametrize("value", BAD_IDS)
@pytest.mark.parametrize("action", ["arm", "resume"])
def test_an_agents_arm_or_resume_is_403_whatever_the_id(shared: World, action: str, value: str) -> None:
    status, error = shared.refused("POST", f"/agent-api/schedules/{{task}}/{action}", id_value=value)
    assert status in (403, 404), error


# -- nulls, and the wrong JSON types -------------------------------------------------------------

NULL_FIELDS = [  # (method, path, body, field the message must start with)
    *[("POST", p, create_body(**{f: None}), f) for _, p in SCHEDULE_WRITES
      for f in ("name", "prompt", "schedule", "overlap", "session")],
    *[("POST", "/api/chats/{chat}/schedules", create_body(schedule=s), f) for s, f in [
        ({"kind": None}, "schedule.kind"), ({"kind": "once", "at": None}, "schedule.at"),
        ({"kind": "cron", "cron": None, "timezone": "UTC"}, "schedule.cron"),
        ({"kind": "cron", "cron": "0 9 * * *", "timezone": None}, "schedule.timezone"),
        ({"kind": "interval", "every_seconds": None}, "schedule.every_seconds")]],
    *[("PATCH", "/api/schedules/{task}", {f: None}, f) for f in ("name", "prompt", "schedule", "overlap", "session")],
    ("PATCH", "/agent-api/schedules/{task}", {"name": None}, "name"),
    ("POST", "/api/schedules/preview", {"schedule": None}, "schedule"),
    ("POST", "/api/projects", {"name": None}, "name"),
    ("POST", "/api/projects/{project}/chats", {"title": None}, "title"),
    ("PATCH", "/api/chats/{chat}", {"title": None}, "title"),
    ("PATCH", "/api/chats/{chat}", {"skills": None}, "skills"),
    ("PATCH", "/api/chats/{chat}", {"skills": [None]}, "skills.0"),
    ("POST", "/api/chats/{chat}/prompts", {"text": None}, "text"),
]


@pytest.mark.parametrize(("method", "path", "body", "field"), NULL_FIELDS,
                         ids=[f"{m} {p} {f}" for m, p, _, f in NULL_FIELDS])
def test_null_where_a_value_is_required_is_400_naming_the_field(shared: World, method: str, path: str, body: Any,
                                                                field: str) -> None:
    status, error = shared.refused(method, path, body)
    assert status == 400 and error["message"].startswith(f"{field}:"), error


def test_null_max_runs_and_idempotency_key_mean_unbounded_and_none(fresh: World) -> None:
    created = fresh.send("POST", "/api/chats/{chat}/schedules", create_body(max_runs=None, idempotency_key=None))
    assert created.status_code == 201, created.text
    assert (created.json()["max_runs"], created.json()["idempotency_key"]) == (None, None)


NOT_AN_OBJECT = [None, [], [{}], "x", "", 5, -1.5, True, False]


@pytest.mark.parametrize("body", NOT_AN_OBJECT, ids=[json.dumps(b) for b in NOT_AN_OBJECT])
@pytest.mark.parametrize(("method", "path", "valid"), JSON_ENDPOINTS, ids=JSON_IDS)
def test_a_body_that_is_not_an_object_is_400_naming_the_body(shared: World, method: str, path: str, valid: Any,
                                                             body: Any) -> None:
    status, error = shared.refused(method, path, raw=json.dumps(body).encode())
    assert status == 400 and error["message"].startswith("body:"), error


WRONG_CONTAINERS = [
    *[("POST", "/api/chats/{chat}/schedules", create_body(schedule=s), "schedule")
      for s in ([], [EVERY_5_MIN], "every 5 minutes", "", 300, True)],
    *[("POST", "/api/schedules/preview", {"schedule": s}, "schedule") for s in ([], "x", 5)],
    ("PATCH", "/api/schedules/{task}", {"schedule": [EVERY_5_MIN]}, "schedule"),
    ("POST", "/agent-api/schedules", create_body(schedule="x"), "schedule"),
    ("POST", "/api/chats/{chat}/schedules", create_body(name=["n"]), "name"),
    ("POST", "/api/chats/{chat}/schedules", create_body(prompt={"text": "p"}), "prompt"),
    ("POST", "/api/chats/{chat}/schedules", create_body(overlap=["skip"]), "overlap"),
    ("POST", "/api/chats/{chat}/schedules", create_body(max_runs=[3]), "max_runs"),
    ("POST", "/api/chats/{chat}/schedules", create_body(max_runs={"n": 3}), "max_runs"),
    ("POST", "/api/chats/{chat}/schedules", create_body(idempotency_key=["k"]), "idempotency_key"),
    ("PATCH", "/api/chats/{chat}", {"skills": "scheduled-tasks"}, "skills"),
    ("PATCH", "/api/chats/{chat}", {"skills": {"scheduled-tasks": True}}, "skills"),
    ("PATCH", "/api/chats/{chat}", {"title": ["x"]}, "title"),
    ("POST", "/api/projects", {"name": {"first": "x"}}, "name"),
    ("POST", "/api/chats/{chat}/prompts", {"text": ["hello"]}, "text"),
    ("PATCH", "/agent-api/schedules/{task}", {"name": {"x": 1}}, "name"),
]


@pytest.mark.parametrize(("method", "path", "body", "field"), WRONG_CONTAINERS,
                         ids=[f"{m} {p} {f}={json.dumps(b.get(f))[:20]}" for m, p, b, f in WRONG_CONTAINERS])
def test_an_array_or_string_where_an_object_is_expected_is_400_naming_the_field(shared: World, method: str,
                                                                                path: str, body: Any,
                                                                                field: str) -> None:
    status, error = shared.refused(method, path, body)
    assert status == 400 and error["message"].startswith(f"{field}"), error
