"""The life of an approval (SPEC §13) and its API, on SQLite and PostgreSQL, on a FakeClock.

Answer twice → the second is a conflict naming who decided; answer after the expiry → conflict;
an option the agent did not offer → 400 naming option_id; a turn that ends cancels its approvals.
The API answers bad input with 4xx naming the field, never 500.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlmodel import select

from app.attention import approvals
from app.core import auth, chats, projects, runs
from app.core.attention_tables import ApprovalState, AttentionEvent
from app.core.clock import FakeClock
from app.core.context import Core
from app.core.errors import Conflict, InvalidInput, NotFound
from app.core.models import RunSource, User
from tests.integration.apiclient import add_user, bearer, client_for
from tests.store import begin_run

OPTIONS = [{"option_id": "allow_always", "name": "Always Allow", "kind": "allow_always"},
           {"option_id": "allow", "name": "Allow", "kind": "allow_once"},
           {"option_id": "reject", "name": "Reject", "kind": "reject_once"}]
TIMEOUT = 900


@dataclasses.dataclass
class World:
    core: Core
    clock: FakeClock
    client: TestClient
    alice: User
    bob: User
    chat: int
    tokens: dict[str, str]

    def ask(self, run_id: int = 1) -> int:
        request = approvals.Request(chat_id=self.chat, project_id=None, run_id=run_id, task_id=None,
                                    requested_for=self.alice.email, tool_call_id=f"call-{run_id}",
                                    title="touch notes.txt", input={"command": "touch notes.txt"}, options=OPTIONS)
        return approvals.create(self.core.db, self.clock.now(), request, TIMEOUT).id

    def post(self, approval_id: object, body: object, who: str = "alice"):
        return self.client.post(f"/api/approvals/{approval_id}", json=body, headers=bearer(self.tokens[who]))


@pytest.fixture
def world(clocked_core: Core, fake_clock: FakeClock) -> Iterator[World]:
    core, db = clocked_core, clocked_core.db
    alice, bob = add_user(core, "alice@example.com"), add_user(core, "bob@example.com")
    project = projects.create_project(db, fake_clock, core.settings.workspaces_dir, "Alice's", alice)
    chat = chats.create_chat(db, fake_clock, alice, project.id, "Plans")
    tokens = {who: auth.create_api_token(db, fake_clock, u.id) for who, u in (("alice", alice), ("bob", bob))}
    with client_for(core, raise_server_exceptions=False) as client:
        yield World(core, fake_clock, client, alice, bob, chat.id, tokens)


def test_a_request_is_pending_with_its_attention_event(world: World) -> None:
    approval_id = world.ask()
    row = approvals.get(world.core.db, approval_id)
    assert row.state == ApprovalState.PENDING.value and row.requested_for == "alice@example.com"
    assert approvals.view(row)["options"] == OPTIONS
    with world.core.db.read() as s:
        [event] = s.exec(select(AttentionEvent).where(AttentionEvent.approval_id == approval_id))
    assert (event.kind, event.user_email, event.chat_id) == ("approval.requested", "alice@example.com", world.chat)


def test_answering_twice_is_a_conflict_naming_who_decided(world: World) -> None:
    approval_id = world.ask()
    row = approvals.answer(world.core.db, world.clock.now(), world.alice, approval_id, "allow")
    assert (row.state, row.option_id, row.decided_by) == ("allowed", "allow", "alice@example.com")
    with pytest.raises(Conflict, match="already allowed by alice@example.com"):
        approvals.answer(world.core.db, world.clock.now(), world.alice, approval_id, "reject")
    assert approvals.get(world.core.db, approval_id).option_id == "allow"


def test_a_reject_option_rejects(world: World) -> None:
    approval_id = world.ask()
    row = approvals.answer(world.core.db, world.clock.now(), world.alice, approval_id, "reject")
    assert (row.state, row.option_id) == ("rejected", "reject")


def test_an_answer_after_the_expiry_is_a_conflict_and_the_approval_expired(world: World) -> None:
    approval_id = world.ask()
    world.clock.advance(TIMEOUT)
    with pytest.raises(Conflict, match="has expired"):
        approvals.answer(world.core.db, world.clock.now(), world.alice, approval_id, "allow")
    row = approvals.get(world.core.db, approval_id)
    assert row.state == ApprovalState.EXPIRED.value and row.option_id is None and row.decided_by is None


def test_settle_expires_only_when_the_time_is_up(world: World) -> None:
    approval_id = world.ask()
    world.clock.advance(TIMEOUT - 1)
    assert approvals.settle(world.core.db, world.clock.now(), approval_id).state == "pending"
    world.clock.advance(1)
    assert approvals.settle(world.core.db, world.clock.now(), approval_id).state == "expired"


@pytest.mark.parametrize("option", ["maybe", "", None, 3, ["allow"]], ids=repr)
def test_an_option_the_agent_did_not_offer_is_refused_naming_option_id(world: World, option: object) -> None:
    approval_id = world.ask()
    with pytest.raises(InvalidInput) as caught:
        approvals.answer(world.core.db, world.clock.now(), world.alice, approval_id, option)
    assert caught.value.field == "option_id" and "allow_always, allow, reject" in caught.value.message
    assert approvals.get(world.core.db, approval_id).state == "pending"


def test_a_turn_that_ends_cancels_its_pending_approvals_only(world: World) -> None:
    mine, decided, other_run = world.ask(run_id=7), world.ask(run_id=7), world.ask(run_id=8)
    approvals.answer(world.core.db, world.clock.now(), world.alice, decided, "allow")
    assert approvals.cancel_for_run(world.core.db, world.clock.now(), 7) == 1
    states = {i: approvals.get(world.core.db, i).state for i in (mine, decided, other_run)}
    assert states == {mine: "cancelled", decided: "allowed", other_run: "pending"}
    with pytest.raises(Conflict, match="was cancelled: its turn ended"):
        approvals.answer(world.core.db, world.clock.now(), world.alice, mine, "allow")


def test_a_run_abandoned_by_a_dead_process_cancels_its_approvals(world: World) -> None:
    run = begin_run(world.core.db, world.clock, world.chat, "create notes.txt", source=RunSource.USER,
                    lease_seconds=30, instance="a-process-that-dies")
    approval_id = world.ask(run_id=run.id)
    world.clock.advance(31)
    assert [r.id for r in runs.abandon_stale_runs(world.core.db, world.clock, 30)] == [run.id]
    assert approvals.get(world.core.db, approval_id).state == "cancelled"


def test_someone_who_cannot_see_the_chat_cannot_see_or_answer(world: World) -> None:
    approval_id = world.ask()
    with pytest.raises(NotFound):
        approvals.answer(world.core.db, world.clock.now(), world.bob, approval_id, "allow")
    assert approvals.list_for(world.core.db, world.bob, "pending") == []
    assert [a.id for a in approvals.list_for(world.core.db, world.alice, "pending")] == [approval_id]


# -- the API ------------------------------------------------------------------------------------

def test_api_lists_and_answers(world: World) -> None:
    first, second = world.ask(run_id=1), world.ask(run_id=2)
    listed = world.client.get("/api/approvals?state=pending", headers=bearer(world.tokens["alice"]))
    assert listed.status_code == 200 and [a["id"] for a in listed.json()["approvals"]] == [second, first]
    answered = world.post(first, {"option_id": "allow"})
    assert answered.status_code == 200, answered.text
    view = answered.json()
    assert (view["id"], view["state"], view["option_id"], view["decided_by"]) == (
        first, "allowed", "allow", "alice@example.com")
    pending = world.client.get("/api/approvals", params={"state": "pending"}, headers=bearer(world.tokens["alice"]))
    assert [a["id"] for a in pending.json()["approvals"]] == [second]
    every = world.client.get("/api/approvals", headers=bearer(world.tokens["alice"]))
    assert {a["id"]: a["state"] for a in every.json()["approvals"]} == {first: "allowed", second: "pending"}
    assert world.client.get("/api/approvals", headers=bearer(world.tokens["bob"])).json() == {
        "approvals": [], "next_before": None}


@pytest.mark.parametrize(("body", "status", "field"), [
    ({}, 400, "option_id"),
    ({"option_id": "maybe"}, 400, "option_id"),
    ({"option_id": 5}, 400, "option_id"),
    ({"option_id": None}, 400, "option_id"),
    ({"option_id": "allow", "remember": True}, 400, "remember"),
    (["allow"], 400, "body"),
    ("allow", 400, "body"),
], ids=["missing", "not-offered", "number", "null", "unknown-field", "list", "string"])
def test_api_bad_answers_are_400_naming_the_field(world: World, body: object, status: int, field: str) -> None:
    approval_id = world.ask()
    answer = world.post(approval_id, body)
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert error["code"] == "invalid" and error["message"].startswith(field), error
    assert approvals.get(world.core.db, approval_id).state == "pending"


def test_api_conflicts_say_who_decided_and_unknown_ids_are_404(world: World) -> None:
    approval_id = world.ask()
    assert world.post(approval_id, {"option_id": "reject"}).status_code == 200
    again = world.post(approval_id, {"option_id": "allow"})
    assert again.status_code == 409 and "already rejected by alice@example.com" in again.json()["error"]["message"]
    expiring = world.ask(run_id=2)
    world.clock.advance(TIMEOUT + 1)
    late = world.post(expiring, {"option_id": "allow"})
    assert late.status_code == 409 and "expired" in late.json()["error"]["message"]
    for missing in (987654, 0, "abc", "1.0", 2**40):
        assert world.post(missing, {"option_id": "allow"}).status_code == 404, missing
    hidden = world.post(world.ask(run_id=3), {"option_id": "allow"}, who="bob")
    assert hidden.status_code == 404 and hidden.json()["error"]["code"] == "not_found"


def test_api_state_filter_is_checked_and_a_token_is_required(world: World) -> None:
    bad = world.client.get("/api/approvals?state=open", headers=bearer(world.tokens["alice"]))
    assert bad.status_code == 400 and bad.json()["error"]["message"].startswith("state")
    assert world.client.get("/api/approvals").status_code == 401
    assert world.client.post("/api/approvals/1", json={"option_id": "allow"}).status_code == 401
