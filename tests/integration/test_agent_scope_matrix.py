"""The agent API's authorization matrix (SPEC §5, §6), on SQLite and PostgreSQL.

Every agent endpoint × every kind of caller, each cell one exact HTTP code, through the real
FastAPI app in-process. The target is an armed task of Alice's chat whose fire is in flight (a
TaskRun claim recorded as its ``active_run_id``), rebuilt for every cell. A refused call must
change nothing: every table of the database is snapshotted before and after. A call that is
allowed must change exactly what it says. ``docs/SECURITY.md`` shows the same matrix; a test
below keeps the two equal.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hmac
import inspect
import itertools
import json
import os
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlmodel import select

from app.agents.workspace import ASSETS_DIR
from app.api import create_api
from app.core import auth, chats, grants, projects
from app.core.clock import FakeClock, rfc3339
from app.core.context import Core
from app.core.grants import PREFIX, Scope, resolve_grant
from app.core.models import Grant, User
from app.schedules.model import RunOutcome, ScheduledTask, TaskRun, TaskStatus
from app.schedules.service import Actor, TaskService
from tests.conftest import database_core
from tests.integration.apiclient import BROWSER_NONCE, add_user, client_for, table_contents
from tests.store import issue_grant, revoke_grant

REPO = Path(__file__).resolve().parents[2]
HOUR = {"kind": "interval", "every_seconds": 3600}
CREATE_BODY = {"name": "Agent's idea", "prompt": "Check CI and report.", "schedule": HOUR}


# -- the matrix --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Endpoint:
    id: str
    method: str
    path: str  # as routed; {tid} is the target task's id
    body: dict[str, Any] | None = None
    note: str = ""  # tells the two PATCH rows apart in docs/SECURITY.md

    @property
    def label(self) -> str:
        return f"{self.method} {self.path.replace('{tid}', '{id}')}{self.note}"


ENDPOINTS = [
    Endpoint("whoami", "GET", "/agent-api/whoami"),
    Endpoint("list", "GET", "/agent-api/schedules"),
    Endpoint("create", "POST", "/agent-api/schedules", CREATE_BODY),
    Endpoint("get", "GET", "/agent-api/schedules/{tid}"),
    Endpoint("patch-name", "PATCH", "/agent-api/schedules/{tid}", {"name": "Renamed by the agent"}, " (name)"),
    Endpoint("patch-prompt", "PATCH", "/agent-api/schedules/{tid}", {"prompt": "Do more."}, " (prompt)"),
    Endpoint("delete", "DELETE", "/agent-api/schedules/{tid}"),
    Endpoint("pause", "POST", "/agent-api/schedules/{tid}/pause"),
    Endpoint("run-now", "POST", "/agent-api/schedules/{tid}/run-now"),
    Endpoint("skip-next", "POST", "/agent-api/schedules/{tid}/skip-next"),
    Endpoint("arm", "POST", "/agent-api/schedules/{tid}/arm"),
    Endpoint("resume", "POST", "/agent-api/schedules/{tid}/resume"),
    Endpoint("complete", "POST", "/agent-api/schedules/current/complete", {"reason": "the goal is reached"}),
    Endpoint("report", "POST", "/agent-api/schedules/current/report", {"outcome": "no_change", "summary": "same"}),
    Endpoint("next", "POST", "/agent-api/schedules/current/next", {"in_seconds": 7200}),
    Endpoint("parse", "POST", "/agent-api/schedules/parse", {"text": "every weekday at 9", "timezone": "UTC"}),
]

# Callers, as the columns of docs/SECURITY.md name them.
CALLER_LABELS = {
    "manage": "manage",  # the manage grant of an interactive turn in the task's chat
    "complete-self": "complete-self",  # the grant of the task's fire: task + the task's active claim
    "stale-fire": "complete-self, claim moved on",  # a fire's grant whose claim is no longer the task's
    "other-chat": "other chat",  # manage grant of another chat of the same project (same user)
    "other-project": "other project",  # manage grant of a chat of another project (same user)
    "other-user": "other user",  # manage grant of another user's chat in that user's project
    "expired": "expired",  # the task chat's manage grant, past its TTL
    "revoked": "revoked",  # the task chat's manage grant, revoked (its turn ended)
    "forged": "unknown token",  # well-formed grant token that was never issued
    "user-token": "user API token",  # the owner's personal API token
    "no-token": "no token",
}

#                 whoami list create get patch   patch   delete pause run-  skip- arm  resume complete report next parse
#                                        name    prompt               now   next
EXPECTED: dict[str, tuple[int, ...]] = {
    "manage":        (200, 200, 201, 200, 200, 403, 204, 200, 202, 200, 403, 403, 403, 403, 403, 200),
    "complete-self": (200, 403, 403, 403, 403, 403, 403, 403, 403, 403, 403, 403, 200, 200, 200, 403),
    "stale-fire":    (200, 403, 403, 403, 403, 403, 403, 403, 403, 403, 403, 403, 409, 409, 409, 403),
    "other-chat":    (200, 200, 201, 404, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 403, 200),
    "other-project": (200, 200, 201, 404, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 403, 200),
    "other-user":    (200, 200, 201, 404, 404, 404, 404, 404, 404, 404, 403, 403, 403, 403, 403, 200),
    "expired":       (401,) * 16,
    "revoked":       (401,) * 16,
    "forged":        (401,) * 16,
    "user-token":    (401,) * 16,
    "no-token":      (401,) * 16,
}  # fmt: skip

ERROR_CODES = {401: "unauthorized", 403: "forbidden", 404: "not_found", 409: "conflict"}
WHY_401 = {"expired": "expired", "revoked": "revoked", "forged": "unknown schedule token",
           "user-token": "not a schedule token", "no-token": "missing bearer token"}
USER_ONLY = "only a user can arm or resume a schedule"
FIRE_ONLY = "can only complete its own task"

CELLS = [pytest.param(e, caller, EXPECTED[caller][i], id=f"{e.id}-as-{caller}")
         for caller in CALLER_LABELS for i, e in enumerate(ENDPOINTS)]


# -- the world ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Place:
    """A chat a grant can be bound to."""

    chat: int
    project: int
    owner: User


@dataclasses.dataclass(frozen=True)
class Target:
    """Alice's armed task in a chat of its own, whose second fire is in flight."""

    place: Place
    task: int
    claim: int  # TaskRun id of the fire in flight: the task's active_run_id
    previous: int  # TaskRun id of the first fire, whose claim has moved on


@dataclasses.dataclass
class World:
    """Alice: two projects; Bob: one. A chat with a task of its owner's in each ``elsewhere`` place."""

    core: Core
    clock: FakeClock
    client: TestClient
    alice: User
    project: int
    elsewhere: dict[str, Place]  # caller id → the chat its grant is for
    user_token: str

    @property
    def tasks(self) -> TaskService:
        return TaskService(self.core.db, self.clock, self.core.settings)

    def grant(self, scope: Scope, place: Place, *, task: int | None = None, run: int | None = None,
              clock: FakeClock | None = None) -> str:
        token, _ = issue_grant(self.core.db, clock or self.clock, self.core.settings.grant_ttl_seconds, scope,
                               place.owner.id, place.chat, place.project, task_id=task, task_run_id=run)
        return token

    def target(self) -> Target:
        place = Place(chats.create_chat(self.core.db, self.clock, self.alice, self.project, "Plans").id,
                      self.project, self.alice)
        task, created = self.tasks.create(Actor(self.alice), place.chat,
                                          {"name": "Watch CI", "prompt": "Check CI.", "schedule": HOUR,
                                           "pace_min_seconds": 600, "pace_max_seconds": 86400})
        assert created and task.status == TaskStatus.ACTIVE.value
        now = self.clock.now()
        with self.core.db.write() as s:
            previous = TaskRun(task_id=task.id, occurrence_at=now - dt.timedelta(hours=1), fire_number=1,
                               status=RunOutcome.SUCCEEDED.value, claimed_at=now - dt.timedelta(hours=1),
                               finished_at=now - dt.timedelta(minutes=59))
            claim = TaskRun(task_id=task.id, occurrence_at=now, status=RunOutcome.RUNNING.value, fire_number=2,
                            claimed_at=now, started_at=now)
            s.add_all([previous, claim])
            s.flush()
            row = s.get(ScheduledTask, task.id)
            row.active_run_id, row.run_count, row.last_run_status = claim.id, 2, RunOutcome.RUNNING.value
            s.add(row)
            return Target(place, task.id, claim.id, previous.id)

    def call(self, endpoint: Endpoint, target: Target, token: str | None) -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        return self.client.request(endpoint.method, endpoint.path.format(tid=target.task), json=endpoint.body,
                                   headers=headers)


def expired_clock(w: World) -> FakeClock:
    """A clock one TTL and an hour in the past: a grant issued on it expired an hour ago."""
    return FakeClock(w.clock.now() - dt.timedelta(seconds=w.core.settings.grant_ttl_seconds + 3600))


def revoked(w: World, t: Target) -> str:
    token, grant_id = issue_grant(w.core.db, w.clock, w.core.settings.grant_ttl_seconds, Scope.MANAGE, w.alice.id,
                                  t.place.chat, t.place.project)
    revoke_grant(w.core.db, w.clock, grant_id)
    return token


# caller id → (token or None, the chat the caller acts in)
CALLERS: dict[str, Callable[[World, Target], tuple[str | None, Place]]] = {
    "manage": lambda w, t: (w.grant(Scope.MANAGE, t.place), t.place),
    "complete-self": lambda w, t: (w.grant(Scope.COMPLETE_SELF, t.place, task=t.task, run=t.claim), t.place),
    "stale-fire": lambda w, t: (w.grant(Scope.COMPLETE_SELF, t.place, task=t.task, run=t.previous), t.place),
    "other-chat": lambda w, t: (w.grant(Scope.MANAGE, w.elsewhere["other-chat"]), w.elsewhere["other-chat"]),
    "other-project": lambda w, t: (w.grant(Scope.MANAGE, w.elsewhere["other-project"]),
                                   w.elsewhere["other-project"]),
    "other-user": lambda w, t: (w.grant(Scope.MANAGE, w.elsewhere["other-user"]), w.elsewhere["other-user"]),
    "expired": lambda w, t: (w.grant(Scope.MANAGE, t.place, clock=expired_clock(w)), t.place),
    "revoked": lambda w, t: (revoked(w, t), t.place),
    "forged": lambda w, t: (PREFIX + secrets.token_urlsafe(32), t.place),
    "user-token": lambda w, t: (w.user_token, t.place),
    "no-token": lambda w, t: (None, t.place),
}


def build_world(core: Core, clock: FakeClock, client: TestClient) -> World:
    db, root = core.db, core.settings.workspaces_dir
    alice, bob = add_user(core, "alice@example.com"), add_user(core, "bob@example.com")
    project = projects.create_project(db, clock, root, "Alice's", alice).id
    second = projects.create_project(db, clock, root, "Alice's second", alice).id
    bobs = projects.create_project(db, clock, root, "Bob's", bob).id
    elsewhere = {
        "other-chat": Place(chats.create_chat(db, clock, alice, project, "Other").id, project, alice),
        "other-project": Place(chats.create_chat(db, clock, alice, second, "Second").id, second, alice),
        "other-user": Place(chats.create_chat(db, clock, bob, bobs, "Bob's chat").id, bobs, bob),
    }
    w = World(core, clock, client, alice, project, elsewhere, auth.create_api_token(db, clock, alice.id))
    for place in elsewhere.values():  # so that a fenced list has something of its own to show
        w.tasks.create(Actor(place.owner), place.chat, {"name": "Theirs", "prompt": "p", "schedule": HOUR})
    return w


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """One world per database; every cell builds its own target task in a fresh chat."""
    # no schedule quotas: the cells of one module add ~150 tasks to Alice's project
    with database_core(request, tmp_path_factory, "agent-matrix", FakeClock(), max_tasks_per_project=0,
                       max_tasks_per_user=0) as core, \
            client_for(core) as client:
        yield build_world(core, core.clock, client)


# -- snapshots ---------------------------------------------------------------------------------


def task_rows(core: Core) -> dict[int, dict[str, Any]]:
    with core.db.read() as s:
        return {t.id: t.model_dump() for t in s.exec(select(ScheduledTask))}


def run_rows(core: Core) -> dict[int, dict[str, Any]]:
    with core.db.read() as s:
        return {r.id: r.model_dump() for r in s.exec(select(TaskRun))}


@dataclasses.dataclass(frozen=True)
class Snapshot:
    tables: dict[str, list[tuple[Any, ...]]]
    tasks: dict[int, dict[str, Any]]
    runs: dict[int, dict[str, Any]]

    @classmethod
    def take(cls, core: Core) -> Snapshot:
        return cls(table_contents(core), task_rows(core), run_rows(core))

    def outside_tasks(self) -> dict[str, list[tuple[Any, ...]]]:
        return {k: v for k, v in self.tables.items() if k not in ("scheduled_tasks", "task_runs")}


def error_of(response: Any) -> dict[str, str]:
    payload = response.json()
    assert set(payload) == {"error"} and set(payload["error"]) == {"code", "message"}, payload
    return payload["error"]


# -- what an allowed call must have done -------------------------------------------------------


def _reads(w: World, t: Target, caller: str, place: Place, response: Any, before: Snapshot) -> None:
    """whoami, list and get answer from the grant and change nothing."""
    assert Snapshot.take(w.core).tables == before.tables, "a read changed the database"
    body = response.json()
    if "scope" in body:  # whoami
        fire = caller in ("complete-self", "stale-fire")
        assert body["scope"] == (Scope.COMPLETE_SELF if fire else Scope.MANAGE).value
        assert (body["chat_id"], body["project_id"], body["owner"]) == (place.chat, place.project, place.owner.email)
        run = {"complete-self": t.claim, "stale-fire": t.previous}.get(caller)
        assert (body["task_id"], body["run_id"]) == ((t.task, run) if fire else (None, None))
        assert body["expires_at"] == rfc3339(w.clock.now() + dt.timedelta(seconds=w.core.settings.grant_ttl_seconds))
    elif "schedules" in body:  # list: exactly the tasks of the grant's own chat
        ids = [s["id"] for s in body["schedules"]]
        assert ids == sorted(i for i, row in before.tasks.items() if row["chat_id"] == place.chat)
        assert (t.task in ids) == (place.chat == t.place.chat)
    else:
        assert body["id"] == t.task and body["chat_id"] == t.place.chat


def _created(w: World, t: Target, caller: str, place: Place, response: Any, before: Snapshot) -> None:
    after = Snapshot.take(w.core)
    events = "attention_events"  # a draft is announced to its owner (SPEC §13): one draft.created event, below
    assert {k: v for k, v in after.outside_tasks().items() if k != events} == \
        {k: v for k, v in before.outside_tasks().items() if k != events} and after.runs == before.runs
    [new] = set(after.tasks) - set(before.tasks)
    [announced] = set(after.tables[events]) - set(before.tables[events])
    assert "draft.created" in announced and new in announced and place.owner.email in announced
    assert {i: after.tasks[i] for i in before.tasks} == before.tasks, "creating changed another task"
    row = after.tasks[new]
    assert (row["status"], row["created_by"], row["next_run_at"], row["armed_at"]) == ("draft", "agent", None, None)
    assert (row["chat_id"], row["project_id"], row["owner"]) == (place.chat, place.project, place.owner.email)
    assert response.json()["id"] == new and response.json()["enabled"] is False


def _changed(**fields: Any) -> Callable[..., None]:
    """The target row changed exactly these fields (``updated_at`` aside); nothing else changed."""

    def check(w: World, t: Target, caller: str, place: Place, response: Any, before: Snapshot,
              after: Snapshot | None = None) -> None:
        after = after or Snapshot.take(w.core)
        assert after.outside_tasks() == before.outside_tasks() and after.runs == before.runs
        wanted = {**before.tasks[t.task], **fields}
        assert {**after.tasks[t.task], "updated_at": None} == {**wanted, "updated_at": None}
        assert {i: r for i, r in after.tasks.items() if i != t.task} == \
               {i: r for i, r in before.tasks.items() if i != t.task}
        if response.status_code == 200:
            assert response.json()["id"] == t.task

    return check


def _deleted(w: World, t: Target, caller: str, place: Place, response: Any, before: Snapshot) -> None:
    after = Snapshot.take(w.core)
    assert after.outside_tasks() == before.outside_tasks()
    assert after.tasks == {i: r for i, r in before.tasks.items() if i != t.task}
    assert after.runs == {i: r for i, r in before.runs.items() if r["task_id"] != t.task}
    assert response.content == b""


def _run_now(w: World, t: Target, caller: str, place: Place, response: Any, before: Snapshot) -> None:
    _changed(pending_run=True, pending_forced="run_now_agent", pending_occurrence_at=w.clock.now(),
             retry_at=None)(w, t, caller, place, response, before)


def _skipped(w: World, t: Target, caller: str, place: Place, response: Any, before: Snapshot) -> None:
    """One ``skipped`` record for the task's next occurrence, which moves to the one after; nothing else."""
    after = Snapshot.take(w.core)
    old_next = before.tasks[t.task]["next_run_at"]
    [record] = [r for i, r in after.runs.items() if i not in before.runs]
    assert (record["task_id"], record["status"], record["error"]) == (t.task, "skipped", "skipped by the agent")
    assert record["occurrence_at"] == old_next and {i: after.runs[i] for i in before.runs} == before.runs
    new_next = after.tasks[t.task]["next_run_at"]
    assert new_next > old_next
    patched = Snapshot(tables=after.tables, tasks=after.tasks, runs=before.runs)
    _changed(next_run_at=new_next)(w, t, caller, place, response, before, after=patched)


def _completed(w: World, t: Target, caller: str, place: Place, response: Any, before: Snapshot) -> None:
    """The task is completed and the chat's transcript says so, with the agent's reason; nothing else changed."""
    after = Snapshot.take(w.core)
    new_events = [e for e in after.tables["events"] if e not in before.tables["events"]]
    assert len(new_events) == 1 and new_events[0][3] == "status", new_events
    assert new_events[0][4].endswith("marked complete by the agent: the goal is reached"), new_events
    without_events = {**after.tables, "events": before.tables["events"]}
    patched = Snapshot(tables=without_events, tasks=after.tasks, runs=after.runs)
    _changed(status="completed", next_run_at=None, pending_run=False, pending_forced=None, retry_at=None,
             last_error=None)(w, t, caller, place, response, before, after=patched)


def _reported(w: World, t: Target, caller: str, place: Place, response: Any, before: Snapshot) -> None:
    """Only the fire's own record changed: its outcome and summary."""
    after = Snapshot.take(w.core)
    assert after.outside_tasks() == before.outside_tasks() and after.tasks == before.tasks
    others = [{i: r for i, r in snap.runs.items() if i != t.claim} for snap in (before, after)]
    assert others[0] == others[1]
    assert {**after.runs[t.claim], "outcome": None, "summary": None} == \
           {**before.runs[t.claim], "outcome": None, "summary": None}
    assert (after.runs[t.claim]["outcome"], after.runs[t.claim]["summary"]) == ("no_change", "same")
    assert response.json()["run_id"] == t.claim


def _parsed(w: World, t: Target, caller: str, place: Place, response: Any, before: Snapshot) -> None:
    """A phrase read back (SPEC §20) stores nothing."""
    assert Snapshot.take(w.core).tables == before.tables, "parsing a phrase changed the database"
    assert response.json()["schedule"] == {"kind": "cron", "cron": "0 9 * * 1-5", "timezone": "UTC"}


def _paced(w: World, t: Target, caller: str, place: Place, response: Any, before: Snapshot) -> None:
    target = w.clock.now() + dt.timedelta(seconds=7200)
    _changed(next_run_at=target, next_occurrence_at=None, paced_at=target)(w, t, caller, place, response, before)
    assert response.json()["next_paced"] is True


EFFECTS: dict[str, Callable[..., None]] = {
    "whoami": _reads, "list": _reads, "get": _reads, "create": _created, "delete": _deleted,
    "patch-name": _changed(name="Renamed by the agent"), "pause": _changed(status="paused", paused_by="agent"),
    "run-now": _run_now, "skip-next": _skipped,
    "complete": _completed, "report": _reported, "next": _paced, "parse": _parsed,
}


# -- the matrix, cell by cell ------------------------------------------------------------------


@pytest.mark.parametrize(("endpoint", "caller", "expected"), CELLS)
def test_cell(world: World, endpoint: Endpoint, caller: str, expected: int) -> None:
    target = world.target()
    token, place = CALLERS[caller](world, target)
    before = Snapshot.take(world.core)

    response = world.call(endpoint, target, token)

    assert response.status_code == expected, response.text
    if expected < 300:
        EFFECTS[endpoint.id](world, target, caller, place, response, before)
        return
    assert Snapshot.take(world.core).tables == before.tables, "a refused call changed the database"
    error = error_of(response)
    assert error["code"] == ERROR_CODES[expected], error
    if expected == 401:
        assert response.headers["www-authenticate"] == "Bearer"
        assert WHY_401[caller] in error["message"], error
    elif endpoint.id in ("arm", "resume"):
        assert USER_ONLY in error["message"], error
    elif expected == 403 and caller in ("complete-self", "stale-fire"):
        assert FIRE_ONLY in error["message"], error
    elif expected == 404:
        assert f"no schedule with id {target.task}" == error["message"], error
    elif expected == 409:
        assert "no longer holds the schedule's claim" in error["message"], error


def agent_routes() -> list[tuple[str, str]]:
    """(method, path) of every operation the app publishes under /agent-api (read from its OpenAPI schema)."""
    api = create_api(lambda: None, 65536)  # never called: only the routing table is read
    return sorted((method.upper(), path) for path, operations in api.openapi()["paths"].items()
                  if path.startswith("/agent-api") for method in operations)


def test_the_matrix_covers_every_agent_route() -> None:
    """A new agent endpoint fails here until it has a row in the matrix (and in docs/SECURITY.md)."""
    assert set(agent_routes()) == {(e.method, e.path) for e in ENDPOINTS}


# -- the guarantees behind the matrix ----------------------------------------------------------


def test_a_fires_grant_can_only_complete_its_own_task_and_say_who_it_is(world: World) -> None:
    """Generated from the routes, not the matrix: whatever endpoint is added, a fire's token cannot use it
    (but to complete, report on or pace its own fire)."""
    target = world.target()
    token, _ = CALLERS["complete-self"](world, target)
    bodies = {("POST", "/agent-api/schedules"): CREATE_BODY, ("PATCH", "/agent-api/schedules/{tid}"): {"name": "x"}}
    allowed = {("GET", "/agent-api/whoami"), ("POST", "/agent-api/schedules/current/complete"),
               ("POST", "/agent-api/schedules/current/report"), ("POST", "/agent-api/schedules/current/next")}
    before = Snapshot.take(world.core)
    refused = [(method, path) for method, path in agent_routes() if (method, path) not in allowed]
    assert len(refused) >= 9
    for method, path in refused:
        response = world.client.request(method, path.format(tid=target.task), json=bodies.get((method, path)),
                                        headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 403, (method, path, response.text)
    assert Snapshot.take(world.core).tables == before.tables


def test_an_agent_creates_nothing_but_drafts(world: World) -> None:
    target = world.target()
    token, place = CALLERS["manage"](world, target)
    headers = {"Authorization": f"Bearer {token}"}
    before = Snapshot.take(world.core)
    # a body that asks for an enabled task is refused, not obeyed
    for extra in ({"status": "active"}, {"enabled": True}, {"created_by": "user"}, {"next_run_at": 0}):
        response = world.client.post("/agent-api/schedules", json={**CREATE_BODY, **extra}, headers=headers)
        assert response.status_code == 400 and "unknown field" in error_of(response)["message"], extra
    assert Snapshot.take(world.core).tables == before.tables

    kinds = [HOUR, {"kind": "cron", "cron": "0 9 * * 1-5", "timezone": "Europe/Paris"},
             {"kind": "once", "at": (world.clock.now() + dt.timedelta(days=1)).isoformat()}]
    made = []
    for i, schedule in enumerate(kinds):
        response = world.client.post("/agent-api/schedules", headers=headers,
                                     json={**CREATE_BODY, "schedule": schedule, "idempotency_key": f"k{i}"})
        assert response.status_code == 201, response.text
        made.append(response.json()["id"])
    again = world.client.post("/agent-api/schedules", json={**CREATE_BODY, "idempotency_key": "k0"}, headers=headers)
    assert again.status_code == 200 and again.json()["id"] == made[0]
    # neither the agent API nor the agent's token on the user API can enable a draft
    for path in (f"/agent-api/schedules/{made[0]}/arm", f"/agent-api/schedules/{made[0]}/resume",
                 f"/api/schedules/{made[0]}/arm"):
        assert world.client.post(path, headers=headers).status_code in (401, 403), path
    sneaky = world.client.patch(f"/agent-api/schedules/{made[0]}", json={"name": "x", "status": "active"},
                                headers=headers)
    assert sneaky.status_code == 400 and "status: unknown field" in sneaky.text, sneaky.text
    rows = task_rows(world.core)
    assert [(rows[i]["status"], rows[i]["created_by"], rows[i]["next_run_at"]) for i in made] == \
           [("draft", "agent", None)] * 3
    assert all(r["status"] == "draft" for r in rows.values() if r["created_by"] == "agent")


def test_an_agent_patch_with_an_unknown_field_is_400_naming_it(world: World) -> None:
    """SPEC §5: unknown fields → 400; only *definition* fields are the agent's 403."""
    target = world.target()
    token, _ = CALLERS["manage"](world, target)
    before = Snapshot.take(world.core)
    response = world.client.patch(f"/agent-api/schedules/{target.task}", json={"colour": "blue"},
                                  headers={"Authorization": f"Bearer {token}"})
    assert Snapshot.take(world.core).tables == before.tables
    assert response.status_code == 400, response.text
    assert error_of(response)["message"] == "colour: unknown field"


def test_a_grant_is_not_a_user_api_token(world: World) -> None:
    """The user API (where arm and resume live) refuses every grant with 401."""
    target = world.target()
    tokens = [CALLERS[caller](world, target)[0] for caller in ("manage", "complete-self")]
    before = Snapshot.take(world.core)
    for token in tokens:
        for method, path in (("GET", f"/api/schedules/{target.task}"), ("POST", f"/api/schedules/{target.task}/arm"),
                             ("POST", f"/api/schedules/{target.task}/resume"),
                             ("POST", f"/api/schedules/{target.task}/run-now"),
                             ("GET", f"/api/chats/{target.place.chat}/schedules")):
            response = world.client.request(method, path, headers={"Authorization": f"Bearer {token}"})
            assert response.status_code == 401, (method, path, response.text)
    assert Snapshot.take(world.core).tables == before.tables


def test_grants_are_random_hashed_bound_and_expiring(world: World) -> None:
    target = world.target()
    token, grant_id = issue_grant(world.core.db, world.clock, world.core.settings.grant_ttl_seconds,
                                  Scope.COMPLETE_SELF, world.alice.id, target.place.chat, world.project,
                                  task_id=target.task, task_run_id=target.claim)
    assert token.startswith(PREFIX) and len(token) - len(PREFIX) >= 43  # 32 random bytes, URL-safe base64
    with world.core.db.read() as s:
        row = s.get(Grant, grant_id)
    assert row.token_hash == auth.digest(token) and len(row.token_hash) == 64
    assert token not in json.dumps(table_contents(world.core), default=str), "the plain token was stored"
    assert (row.scope, row.owner_id, row.chat_id, row.project_id, row.task_id, row.task_run_id) == (
        "complete-self", world.alice.id, target.place.chat, world.project, target.task, target.claim)
    assert row.expires_at - row.created_at == dt.timedelta(seconds=14400)  # CHATCRON_GRANT_TTL_SECONDS default
    # valid until the last instant of its TTL, not at it
    assert resolve_grant(world.core.db, FakeClock(row.expires_at - dt.timedelta(milliseconds=1)), token).id == grant_id
    with pytest.raises(grants.Unauthorized, match="expired"):
        resolve_grant(world.core.db, FakeClock(row.expires_at), token)


def test_grant_lookup_compares_digests_in_constant_time(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by its digest in SQL, then checked with hmac.compare_digest (a guard against a plain ==)."""
    source = inspect.getsource(resolve_grant)
    assert "hmac.compare_digest(" in source and "token_hash ==" not in source.replace("Grant.token_hash ==", "")
    calls: list[tuple[str, str]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(grants.hmac, "compare_digest", spy)
    token = world.grant(Scope.MANAGE, world.elsewhere["other-chat"])
    resolve_grant(world.core.db, world.clock, token)
    assert calls == [(auth.digest(token), auth.digest(token))]


# -- docs/SECURITY.md shows this matrix and the CLI's help -------------------------------------


def documented_matrix() -> dict[str, dict[str, int]]:
    """The matrix table of docs/SECURITY.md: endpoint label → caller label → code."""
    lines = (REPO / "docs" / "SECURITY.md").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| endpoint |"))
    table = itertools.takewhile(lambda line: line.startswith("|"), lines[start:])
    cells = [[c.strip().strip("`") for c in line.strip().strip("|").split("|")] for line in table]
    header, rows = cells[0], cells[2:]
    return {r[0]: dict(zip(header[1:], (int(c) for c in r[1:]), strict=True)) for r in rows}


def test_docs_security_shows_this_matrix() -> None:
    expected = {e.label: {CALLER_LABELS[c]: EXPECTED[c][i] for c in CALLER_LABELS} for i, e in enumerate(ENDPOINTS)}
    assert documented_matrix() == expected


def test_docs_security_quotes_the_cli_help_verbatim() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCHEDULE_API_")} | {"COLUMNS": "80"}
    done = subprocess.run([sys.executable, str(ASSETS_DIR / "remote-schedule"), "--help"], env=env,
                          capture_output=True, text=True, timeout=30, check=True)
    doc = (REPO / "docs" / "SECURITY.md").read_text(encoding="utf-8")
    assert f"```text\n$ remote-schedule --help\n{done.stdout}```" in doc


def test_the_browser_session_cookie_is_httponly_and_samesite_lax(world: World) -> None:
    ticket = auth.create_login_ticket(world.core.db, world.clock, world.alice.id, BROWSER_NONCE)
    response = world.client.get("/auth/claim", params={"ticket": ticket}, follow_redirects=False)
    assert response.status_code == 303
    header = response.headers["set-cookie"]
    attributes = {a.strip().split("=")[0].lower(): a.strip() for a in header.split(";")[1:]}
    assert "httponly" in attributes and attributes["samesite"].lower() == "samesite=lax", header
    session = response.cookies[auth.SESSION_COOKIE]
    with world.core.db.engine.connect() as conn:
        stored = set(conn.execute(sa.text("SELECT token_hash FROM web_sessions")).scalars())
    assert auth.digest(session) in stored and session not in stored
