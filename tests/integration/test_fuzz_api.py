"""Generated requests against the served OpenAPI of the user API and the agent API (SPEC §5).

schemathesis reads ``/openapi.json`` from the real app and, for every operation, sends requests
built from the schema — valid ones, deliberately invalid ones, and probes with other methods —
with a real personal token on ``/api`` and a real ``manage`` grant on ``/agent-api`` (same chat).

What every answer must be:
* never a 5xx (``not_a_server_error``);
* a 2xx body that matches the operation's declared response schema (``response_schema_conformance``);
* a refusal (4xx) for schema-invalid data (``negative_data_rejection``);
* for a 4xx: one of the codes SPEC §5 names, as JSON ``{"error": {"code", "message"}}``.

``status_code_conformance`` is not run: FastAPI's generated schema declares only 2xx and 422, and
the API answers 400/401/403/404/409/413 (never 422) as SPEC §5 demands (docs/RELIABILITY.md lists
the schema changes that would let the stricter check run).

Schedule bodies are declared ``Any`` in the schema, so pure schema generation almost never forms
a valid schedule; a hook mixes in bodies drawn from a near-valid grammar (real and bogus zones,
cron fields, instants from year 1 to 10000, huge and negative numbers) so that the validation
and timing code is fuzzed too. Each operation starts from a fresh, seeded SQLite database (the
schema and the checks do not depend on the store; test_bad_input.py covers both databases).
The routes the schema leaves out (``/auth/*``, ``/metrics``) get a plain hypothesis test.

CI runs ``CHATCRON_FUZZ_EXAMPLES`` (default 25) derandomized examples per operation; the big run
is ``CHATCRON_FUZZ_EXAMPLES=300`` (random), with ``CHATCRON_FUZZ_REPORT=FILE`` for its tally.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import negative_data_rejection, response_schema_conformance

from app.api import create_api
from app.core import auth, chats, projects
from app.core.clock import SystemClock
from app.core.config import Settings
from app.core.context import Core
from app.core.grants import Scope
from app.schedules.service import Actor, TaskService
from tests.conftest import make_core
from tests.integration.apiclient import add_user
from tests.store import issue_grant

pytestmark = pytest.mark.slow  # schemathesis over both APIs: left out of `make check`

EXAMPLES_ENV = "CHATCRON_FUZZ_EXAMPLES"
EXAMPLES = int(os.environ.get(EXAMPLES_ENV, "25"))
LIMIT = 65536
ERROR_STATUSES = {400, 401, 403, 404, 405, 409, 413, 415}
SEEDED_IDS = st.sampled_from([1, 1, 1, 2, 3, 4, 5, 6])  # rows of a fresh world; 1 is always Alice's


def _schema_app() -> FastAPI:
    def no_core() -> Core:
        raise AssertionError("this app only serves /openapi.json; requests go to the world's app")

    return create_api(no_core, LIMIT)


schema = schemathesis.openapi.from_asgi("/openapi.json", _schema_app())

# -- near-valid schedule bodies ------------------------------------------------------------------

BIG = 2**70
FLOATS = st.floats(allow_nan=False, allow_infinity=False)  # JSON has no NaN or infinity
ZONES = st.sampled_from(["UTC", "Europe/Paris", "America/New_York", "Asia/Kathmandu", "Australia/Lord_Howe",
                         "Pacific/Kiritimati", "Etc/GMT+12", "Nowhere/Town", "", " ", "utc", "../../etc/passwd",
                         "/etc/localtime", "posix/Europe/Paris", "Europe/Paris\x00", "localtime", "Z"])
GOOD_ZONES = st.sampled_from(["UTC", "Europe/Paris", "America/New_York", "Asia/Kathmandu", "Australia/Lord_Howe",
                              "Pacific/Kiritimati", "America/St_Johns"])
CRON_FIELD = st.one_of(
    st.sampled_from(["*", "*/5", "*/0", "0", "7", "59", "60", "24", "1-5", "5-1", "1-31/2", "mon", "MON-fri", "jan",
                     "L", "?", "#", ",", "-", "/", "0,30", "1-7/0", "99999999999999999999999"]),
    st.integers(-5, 100).map(str),
    st.text(max_size=4),
)
CRON = st.one_of(
    st.lists(CRON_FIELD, min_size=0, max_size=7).map(" ".join),
    st.sampled_from(["@daily", "@hourly", "@weekly", "@monthly", "@yearly", "@reboot", "@every 5m", "0 9 * * 1-5",
                     "0 0 31 2 *", "0 0 29 2 *", "30 2 * * *"]),
    st.text(max_size=30),
)
INSTANT = st.one_of(
    st.integers(-BIG, BIG),
    st.integers(0, 253_402_300_799_999),
    st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31),
                 timezones=st.sampled_from([dt.UTC, dt.timezone(dt.timedelta(hours=14)),
                                            dt.timezone(-dt.timedelta(hours=12))])).map(dt.datetime.isoformat),
    st.sampled_from(["9999-12-31T23:59:59Z", "9999-12-31T23:59:59-12:00", "10000-01-01T00:00:00Z",
                     "0001-01-01T00:00:00Z", "0001-01-01T00:00:00+14:00", "2030-02-30T00:00:00Z",
                     "2030-01-01T24:00:00Z", "2030-01-01T09:00:00+99:00", "2030-01-01T09:00:00", "tomorrow"]),
    FLOATS, st.booleans(), st.none(), st.text(max_size=30),
)
NUMBER = st.one_of(st.integers(-BIG, BIG), st.integers(-2, 10**7), FLOATS, st.booleans(),
                   st.none(), st.text(max_size=5), st.lists(st.integers(), max_size=2))
SCHEDULE = st.one_of(
    st.fixed_dictionaries({"kind": st.just("once"), "at": INSTANT}),
    st.fixed_dictionaries({"kind": st.just("cron"), "cron": CRON}, optional={"timezone": ZONES}),
    st.fixed_dictionaries({"kind": st.just("interval"), "every_seconds": NUMBER}),
    st.fixed_dictionaries({}, optional={"kind": st.one_of(st.text(max_size=8), NUMBER), "at": INSTANT,
                                        "cron": CRON, "timezone": ZONES, "every_seconds": NUMBER}),
    NUMBER,
)
PLAIN = st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), min_size=1, max_size=120)
VALID_SCHEDULE = st.one_of(  # mostly accepted: reaches the create/update/timing code past validation
    st.fixed_dictionaries({"kind": st.just("once"), "at": st.one_of(
        st.integers(4_102_444_800_000, 253_402_300_799_999),  # 2100 .. 9999-12-31T23:59:59.999Z
        st.datetimes(min_value=dt.datetime(2100, 1, 1), max_value=dt.datetime(9999, 12, 31),
                     timezones=st.just(dt.UTC)).map(dt.datetime.isoformat))}),
    st.fixed_dictionaries({"kind": st.just("cron"), "timezone": GOOD_ZONES, "cron": st.tuples(
        st.integers(0, 59).map(str), st.sampled_from(["*", "9", "*/6", "1-5", "2"]),
        st.sampled_from(["*", "1", "29", "31", "1-15"]), st.sampled_from(["*", "2", "feb", "1-6", "12"]),
        st.sampled_from(["*", "1-5", "0", "7", "sun", "mon-fri"])).map(" ".join)}),
    st.fixed_dictionaries({"kind": st.just("interval"), "every_seconds": st.integers(60, 252_460_800)}),
)
TEXT = st.one_of(PLAIN, st.text(max_size=3), NUMBER)
OPTIONS = {"overlap": st.sampled_from(["queue_one", "skip", "parallel", None, 1]),
           "max_runs": st.one_of(st.integers(1, 1_000_000), NUMBER),
           "session": st.sampled_from(["resume", "fresh", "new", None])}
NOISY_CREATE = st.fixed_dictionaries({"name": TEXT, "prompt": TEXT, "schedule": st.one_of(SCHEDULE, VALID_SCHEDULE)},
                                     optional={**OPTIONS, "idempotency_key": TEXT})
VALID_CREATE = st.fixed_dictionaries({"name": PLAIN, "prompt": PLAIN, "schedule": VALID_SCHEDULE},
                                     optional={"overlap": st.sampled_from(["queue_one", "skip"]),
                                               "max_runs": st.one_of(st.none(), st.integers(1, 1_000_000)),
                                               "session": st.sampled_from(["resume", "fresh"]),
                                               "idempotency_key": PLAIN})
PATCH = st.one_of(
    st.fixed_dictionaries({}, optional={"name": PLAIN, "prompt": PLAIN, "schedule": VALID_SCHEDULE}),
    st.fixed_dictionaries({}, optional={"name": TEXT, "prompt": TEXT, "schedule": st.one_of(SCHEDULE, VALID_SCHEDULE),
                                        **OPTIONS}),
)
BODIES = {
    "POST /api/chats/{cid}/schedules": st.one_of(VALID_CREATE, NOISY_CREATE),
    "PATCH /api/schedules/{tid}": PATCH,
    "POST /api/schedules/preview": st.fixed_dictionaries({"schedule": st.one_of(VALID_SCHEDULE, SCHEDULE)}),
    "PATCH /agent-api/schedules/{tid}": PATCH,
    "POST /api/schedules/bulk": st.one_of(
        st.fixed_dictionaries({"action": st.sampled_from(["pause", "resume"]),
                               "ids": st.lists(SEEDED_IDS, min_size=1, max_size=4)}),
        st.fixed_dictionaries({"action": st.sampled_from(["pause", "resume", "arm", None, 1]),
                               "ids": st.one_of(st.lists(st.one_of(SEEDED_IDS, NUMBER), max_size=6), TEXT)})),
}
BODIES["POST /agent-api/schedules"] = BODIES["POST /api/chats/{cid}/schedules"]


@schema.hook
def flatmap_case(context: schemathesis.HookContext, case: schemathesis.Case) -> Any:
    """Mix into the valid cases some that reach real rows (seeded ids) and near-valid schedule bodies.

    Negative cases are left alone: their description of what was made invalid must stay true.
    """
    if case.meta is None or not case.meta.generation.mode.is_positive:
        return st.just(case)
    options = [st.just(case)]
    if case.path_parameters:
        options.append(SEEDED_IDS.map(lambda i: _derived(case, path_parameters=dict.fromkeys(case.path_parameters, i))))
    body = BODIES.get(f"{case.method} {case.path}")
    if body is not None:  # twice: most valid cases of these operations get a body that can pass validation
        seeded_body = st.tuples(SEEDED_IDS, body).map(
            lambda pair: _derived(case, path_parameters=dict.fromkeys(case.path_parameters, pair[0]), body=pair[1]))
        options += [seeded_body, seeded_body]
    return st.one_of(options)


def _derived(case: schemathesis.Case, **changes: Any) -> schemathesis.Case:
    derived = case.derive(keep_auth=True)
    for name, value in changes.items():
        setattr(derived, name, value)
    return derived


# -- the world -----------------------------------------------------------------------------------

TALLY: Counter[tuple[str, str, int]] = Counter()  # (operation, generation mode, status) → requests


@pytest.fixture(scope="module", autouse=True)
def report() -> Iterator[None]:
    """With CHATCRON_FUZZ_REPORT=FILE, write what was sent and answered (docs/RELIABILITY.md quotes it)."""
    TALLY.clear()
    yield
    target = os.environ.get("CHATCRON_FUZZ_REPORT")
    if target:
        rows = [{"operation": op, "mode": mode, "status": status, "requests": n}
                for (op, mode, status), n in sorted(TALLY.items())]
        summary = {"examples": EXAMPLES, "requests": sum(TALLY.values()),
                   "server_errors": sum(n for (_, _, status), n in TALLY.items() if status >= 500), "rows": rows}
        Path(target).write_text(json.dumps(summary, indent=1), encoding="utf-8")


@dataclasses.dataclass
class World:
    core: Core
    app: FastAPI
    user_token: str
    grant_token: str

    def headers_for(self, path: str) -> dict[str, str]:
        token = self.grant_token if path.startswith("/agent-api/") else self.user_token
        return {"Authorization": f"Bearer {token}"}


def build_world(tmp: Path) -> World:
    """Alice's project chat (with the skill), Bob's project and chat, a loose chat, four tasks, a run."""
    core = make_core(Settings(data_dir=tmp / "data", database_url=f"sqlite:///{tmp / 'fuzz.db'}",
                              api_url="http://127.0.0.1:9", demo_word_delay_seconds=0.0, run_lease_seconds=5,
                              min_interval_seconds=60), SystemClock())
    db, clock, workspaces = core.db, core.clock, core.settings.workspaces_dir
    alice, bob = add_user(core, "alice@example.com"), add_user(core, "bob@example.com")
    project = projects.create_project(db, clock, workspaces, "Fuzzed", alice)
    bobs = projects.create_project(db, clock, workspaces, "Bob's", bob)
    chat = chats.create_chat(db, clock, alice, project.id, "Fuzzed chat")
    chats.update_chat(db, clock, alice, chat.id, skills=["scheduled-tasks"])
    chats.create_chat(db, clock, bob, bobs.id, "Bob's chat")
    chats.create_chat(db, clock, alice, None, "Loose")
    tasks = TaskService(db, clock, core.settings)
    user, agent = Actor(alice), Actor(alice, agent_chat_id=chat.id)
    base = {"name": "seeded", "prompt": "Check and report."}
    tasks.create(user, chat.id, {**base, "schedule": {"kind": "interval", "every_seconds": 300}, "max_runs": 3})
    tasks.create(agent, chat.id, {**base, "schedule": {"kind": "cron", "cron": "0 9 * * 1-5",
                                                       "timezone": "Europe/Paris"}})
    paused, _ = tasks.create(user, chat.id, {**base, "schedule": {"kind": "once", "at": "2100-01-01T00:00:00Z"}})
    tasks.pause(user, paused.id)
    tasks.create(user, chat.id, {**base, "schedule": {"kind": "cron", "cron": "@daily", "timezone": "UTC"},
                                 "idempotency_key": "seeded"})
    result = core.prompts.start(chat.id, "hello").wait(10)
    assert result is not None, "the seeded turn did not finish"
    user_token = auth.create_api_token(db, clock, alice.id)
    grant_token, _ = issue_grant(db, clock, 3600, Scope.MANAGE, alice.id, chat.id, project.id)
    return World(core, create_api(lambda: core, LIMIT), user_token, grant_token)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    """A fresh world per operation, so a generated DELETE cannot starve the next operation."""
    w = build_world(tmp_path)
    yield w
    w.core.prompts.shutdown(5.0)
    w.core.db.dispose()


# -- checks and the test -------------------------------------------------------------------------

def documented_error_body(ctx: Any, response: schemathesis.Response, case: schemathesis.Case) -> bool | None:
    """A 4xx is one of the codes SPEC §5 names, with ``{"error": {"code", "message"}}`` as JSON."""
    status = response.status_code
    if status < 400:
        return None
    where = f"{case.method} {case.formatted_path}"
    assert status in ERROR_STATUSES, f"{where}: undocumented status {status}: {response.text[:300]}"
    ctype = response.headers.get("content-type", [""])[0]
    assert ctype.startswith("application/json"), f"{where}: {status} with content-type {ctype!r}"
    body = response.json()
    assert isinstance(body, dict) and set(body) == {"error"}, f"{where}: {body!r}"
    error = body["error"]
    assert isinstance(error, dict) and set(error) == {"code", "message"}, f"{where}: {body!r}"
    assert all(isinstance(v, str) and v.strip() for v in error.values()), f"{where}: {body!r}"
    return None


CHECKS = [not_a_server_error, response_schema_conformance, negative_data_rejection, documented_error_body]


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES_ENV not in os.environ,
          suppress_health_check=list(HealthCheck))
def test_generated_requests_get_no_server_error_and_documented_answers(case: schemathesis.Case,
                                                                        world: World) -> None:
    response = case.call(app=world.app, headers=world.headers_for(case.path))
    mode = case.meta.generation.mode.value if case.meta else "explicit"
    TALLY[(case.operation.label, mode, response.status_code)] += 1
    case.validate_response(response, checks=CHECKS)


# -- routes the schema leaves out: browser auth and metrics ---------------------------------------

COOKIE_TEXT = st.text(st.characters(min_codepoint=33, max_codepoint=126, exclude_characters=';,"\\'), max_size=80)


@given(ticket=st.text(max_size=200), cookie=COOKIE_TEXT, query=st.dictionaries(st.text(max_size=8),
                                                                              st.text(max_size=20), max_size=3))
@settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES_ENV not in os.environ,
          suppress_health_check=list(HealthCheck))
def test_auth_and_metrics_routes_answer_any_ticket_cookie_or_query_without_a_server_error(
        world: World, ticket: str, cookie: str, query: dict[str, str]) -> None:
    with TestClient(world.app, raise_server_exceptions=False, follow_redirects=False,
                    cookies={auth.SESSION_COOKIE: cookie}) as client:
        claim = client.get("/auth/claim", params={"ticket": ticket, **query})
        logouts = [client.request(method, "/auth/logout", params=query, headers=headers)
                   for method, headers in (("GET", {}), ("POST", {"Origin": "http://testserver"}))]
        metrics = client.get("/metrics", params=query)
    for label, response in zip(("GET /auth/claim", "GET /auth/logout", "POST /auth/logout", "GET /metrics"),
                               (claim, *logouts, metrics), strict=True):
        TALLY[(label, "hypothesis", response.status_code)] += 1
    assert (claim.status_code, claim.headers["location"]) == (303, "/login?error=expired")
    assert logouts[0].status_code == 405  # logout is a POST from the page
    assert (logouts[1].status_code, logouts[1].headers["location"]) == (303, "/login")
    assert metrics.status_code == 200 and metrics.text.startswith("# HELP")
