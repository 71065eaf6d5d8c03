"""The inbox (SPEC §13) on both stores: who sees what, paging, read marks per user, unread counts
per chat and their reset on a visit, and the HTTP API's answers to good and bad input."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from app.api import create_api
from app.attention import approvals, inbox, reads
from app.core import attention_events as attention
from app.core import auth, chats, projects, runs
from app.core.attention_tables import AttentionKind
from app.core.context import Core
from app.core.models import Chat, Run, RunSource, RunStatus, User
from app.core.wake import NullWaker
from app.schedules.service import Actor, TaskService
from tests.store import begin_run, finish_run

DAILY = {"kind": "cron", "cron": "0 9 * * *", "timezone": "UTC"}


def _user(core: Core, email: str, admin: bool = False) -> User:
    return auth.create_user(core.db, core.clock, email, "password-1", is_admin=admin)


def _fire_event(core: Core, chat: Chat, owner: str, *, run_id: int | None = None, text: str = "All good\nmore",
                kind: AttentionKind = AttentionKind.FIRE_FINISHED) -> None:
    payload = {"task": {"id": 7, "name": "standup"},
               "run": {"id": run_id, "task_run_id": 1, "outcome": "succeeded", "error": None,
                       "first_line": attention.first_line(text)}}
    with core.db.write() as s:
        attention.record(s.connection(), [attention.row(
            core.clock.now(), kind, user_email=owner, chat_id=chat.id, project_id=chat.project_id,
            task_id=7, run_id=run_id, payload=payload)])


def _turn(core: Core, chat_id: int) -> int:
    run = begin_run(core.db, core.clock, chat_id, "hi", source=RunSource.USER, lease_seconds=30, instance="t")
    finish_run(core.db, core.clock, run, RunStatus.SUCCEEDED)
    return run.id


@pytest.fixture
def world(core: Core) -> dict:
    """alice in project A, bob in A and B, carol (admin) in none; a chat in each project and a loose one."""
    alice, bob, carol = _user(core, "alice@example.com"), _user(core, "bob@example.com"), \
        _user(core, "carol@example.com", admin=True)
    a = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, "A", alice)
    b = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, "B", bob)
    projects.grant_access(core.db, core.clock, bob, a.id)
    chat_a = chats.create_chat(core.db, core.clock, alice, a.id, "in A")
    chat_b = chats.create_chat(core.db, core.clock, bob, b.id, "in B")
    loose = chats.create_chat(core.db, core.clock, bob, None, "bob's own")
    return {"alice": alice, "bob": bob, "carol": carol, "a": chat_a, "b": chat_b, "loose": loose}


def test_each_user_sees_only_the_chats_they_can_see(core: Core, world: dict) -> None:
    for chat in (world["a"], world["b"], world["loose"]):
        _fire_event(core, chat, "bob@example.com")
    seen = {who: [i["chat_title"] for i in inbox.inbox(core.db, world[who])["items"]]
            for who in ("alice", "bob", "carol")}
    assert seen == {"alice": ["in A"], "bob": ["bob's own", "in B", "in A"], "carol": ["bob's own", "in B", "in A"]}
    assert [inbox.inbox(core.db, world[w])["unread"] for w in ("alice", "bob", "carol")] == [1, 3, 3]


def test_items_carry_task_chat_outcome_first_line_and_usage(core: Core, world: dict) -> None:
    run_id = _turn(core, world["a"].id)
    with core.db.write() as s:
        row = s.get(Run, run_id)
        row.usage = json.dumps({"input_tokens": 12, "output_tokens": 3, "cost_usd": 0.5})
    _fire_event(core, world["a"], "alice@example.com", run_id=run_id)
    item = inbox.inbox(core.db, world["alice"])["items"][0]
    assert (item["kind"], item["task_name"], item["chat_id"], item["chat_title"], item["outcome"],
            item["first_line"], item["unread"]) == \
        ("fire.finished", "standup", world["a"].id, "in A", "succeeded", "All good", True)
    assert item["usage"] == {"input_tokens": 12, "output_tokens": 3, "cost_usd": 0.5}


def test_the_feed_pages_by_id_newest_first(core: Core, world: dict) -> None:
    for _ in range(5):
        _fire_event(core, world["a"], "alice@example.com")
    first = inbox.inbox(core.db, world["alice"], inbox.Page(limit=2))
    second = inbox.inbox(core.db, world["alice"], inbox.Page(first["next_before"], 2))
    third = inbox.inbox(core.db, world["alice"], inbox.Page(second["next_before"], 2))
    ids = [i["id"] for page in (first, second, third) for i in page["items"]]
    assert ids == sorted(ids, reverse=True) and len(set(ids)) == 5
    assert third["next_before"] is None and len(third["items"]) == 1


def test_read_marks_are_per_user_and_never_move_back(core: Core, world: dict) -> None:
    for _ in range(3):
        _fire_event(core, world["a"], "alice@example.com")
    ids = sorted(i["id"] for i in inbox.inbox(core.db, world["alice"])["items"])
    reads.mark_inbox_read(core.db, core.clock.now(), world["alice"], ids[1])
    assert reads.mark_inbox_read(core.db, core.clock.now(), world["alice"], ids[0]) == ids[1]  # not back
    alice, bob = inbox.inbox(core.db, world["alice"]), inbox.inbox(core.db, world["bob"])
    assert [i["unread"] for i in alice["items"]] == [True, False, False] and alice["unread"] == 1
    assert [i["unread"] for i in bob["items"]] == [True, True, True] and bob["unread"] == 3


def test_chat_unread_counts_finished_turns_after_the_visit_and_reset_on_it(core: Core, world: dict) -> None:
    alice, bob, chat = world["alice"], world["bob"], world["a"]
    _turn(core, chat.id)
    reads.mark_chat_seen(core.db, core.clock.now(), alice, chat.id, _newest(core, chat.id))
    _turn(core, chat.id)
    _turn(core, chat.id)
    assert reads.chat_unread_counts(core.db, alice) == {chat.id: 2}
    assert reads.chat_unread_counts(core.db, bob) == {chat.id: 3}  # never opened it: every finished turn
    assert world["b"].id not in reads.chat_unread_counts(core.db, alice)  # not hers to see
    reads.mark_chat_seen(core.db, core.clock.now(), alice, chat.id, _newest(core, chat.id))
    reads.mark_chat_seen(core.db, core.clock.now(), alice, chat.id, 1)  # an old tab: no step back
    assert reads.chat_unread_counts(core.db, alice) == {}
    assert reads.chat_seen(core.db, alice, chat.id) == _newest(core, chat.id)
    assert reads.chat_unread_counts(core.db, bob) == {chat.id: 3}


def _newest(core: Core, chat_id: int) -> int:
    return runs.list_events(core.db, chat_id, 0, runs.MAX_PAGE)[-1].id


def test_drafts_errors_and_pending_approvals_are_sections(core: Core, world: dict) -> None:
    service = TaskService(core.db, core.clock, core.settings, NullWaker())
    draft, _ = service.create(Actor(world["alice"], agent_chat_id=world["a"].id), world["a"].id,
                              {"name": "agent idea", "prompt": "p", "schedule": DAILY})
    approvals.create(core.db, core.clock.now(), approvals.Request(
        chat_id=world["b"].id, project_id=world["b"].project_id, run_id=1, task_id=None,
        requested_for="bob@example.com", tool_call_id="c1", title="rm -rf build", input={"cmd": "rm"},
        options=[{"option_id": "ok", "name": "Allow", "kind": "allow_once"}]), 900)
    alice, bob = inbox.inbox(core.db, world["alice"]), inbox.inbox(core.db, world["bob"])
    assert [d["name"] for d in alice["drafts"]] == ["agent idea"] and alice["approvals"] == []
    assert [a["title"] for a in bob["approvals"]] == ["rm -rf build"] and bob["approvals"][0]["chat_title"] == "in B"
    assert {i["kind"] for i in bob["items"]} == {"draft.created", "approval.requested"}
    # a draft's card shows what arming starts: its schedule and prompt
    assert (alice["drafts"][0]["schedule"], alice["drafts"][0]["prompt"]) == (DAILY, "p")
    # items say what became of what they asked for: nothing yet
    assert {i["kind"]: i["resolved"] for i in bob["items"]} == {"draft.created": "", "approval.requested": ""}
    service.arm(Actor(world["alice"]), draft.id)
    assert inbox.inbox(core.db, world["alice"])["drafts"] == []
    [asked] = bob["approvals"]
    approvals.answer(core.db, core.clock.now(), world["bob"], asked["id"], "ok")
    settled = {i["kind"]: i["resolved"] for i in inbox.inbox(core.db, world["bob"])["items"]}
    assert settled == {"draft.created": "armed", "approval.requested": "allowed"}
    service.delete(Actor(world["alice"]), draft.id)
    assert [i["resolved"] for i in inbox.inbox(core.db, world["alice"])["items"]
            if i["kind"] == "draft.created"] == ["deleted"]


def _client(core: Core, user: User) -> tuple[TestClient, dict]:
    token = auth.create_api_token(core.db, core.clock, user.id, "t")
    return TestClient(create_api(lambda: core, core.settings.request_max_bytes)), {"Authorization": f"Bearer {token}"}


def test_the_api_answers_and_marks_read(core: Core, world: dict) -> None:
    for _ in range(3):
        _fire_event(core, world["a"], "alice@example.com")
    client, headers = _client(core, world["alice"])
    page = client.get("/api/inbox?limit=2", headers=headers).json()
    assert set(page) >= {"approvals", "drafts", "errors", "items", "unread", "next_before"}
    assert page["unread"] == 3 and len(page["items"]) == 2
    rest = client.get(f"/api/inbox?before={page['next_before']}", headers=headers).json()
    assert len(rest["items"]) == 1 and rest["next_before"] is None
    newest = page["items"][0]["id"]
    done = client.post("/api/inbox/read", json={"before": newest}, headers=headers)
    assert done.status_code == 200 and done.json() == {"read_before": newest, "unread": 0}
    assert client.get("/api/inbox", headers=headers).json()["unread"] == 0
    assert client.get("/api/inbox").status_code == 401


def test_a_chat_says_how_many_finished_turns_are_new_to_you(core: Core, world: dict) -> None:
    chat = world["a"]
    _turn(core, chat.id)
    client, headers = _client(core, world["alice"])
    assert client.get(f"/api/chats/{chat.id}", headers=headers).json()["unread"] == 1
    reads.mark_chat_seen(core.db, core.clock.now(), world["alice"], chat.id, _newest(core, chat.id))
    assert client.get(f"/api/chats/{chat.id}", headers=headers).json()["unread"] == 0


@pytest.mark.parametrize(("method", "url", "body", "field"), [
    ("get", "/api/inbox?before=abc", None, "before"), ("get", "/api/inbox?before=0", None, "before"),
    ("get", "/api/inbox?before=-1", None, "before"), ("get", "/api/inbox?before=1.5", None, "before"),
    ("get", "/api/inbox?before=99999999999999999999999", None, "before"),
    ("get", "/api/inbox?limit=0", None, "limit"), ("get", "/api/inbox?limit=100000", None, "limit"),
    ("post", "/api/inbox/read", {}, "before"), ("post", "/api/inbox/read", {"before": "5"}, "before"),
    ("post", "/api/inbox/read", {"before": 0}, "before"), ("post", "/api/inbox/read", {"before": None}, "before"),
    ("post", "/api/inbox/read", {"before": 1.5}, "before"), ("post", "/api/inbox/read", {"before": True}, "before"),
    ("post", "/api/inbox/read", {"before": 2**40}, "before"), ("post", "/api/inbox/read", None, "before"),
    ("post", "/api/inbox/read", [1], "body"), ("post", "/api/inbox/read", {"before": 1, "x": 2}, "x"),
], ids=lambda v: str(v)[:30])
def test_bad_input_is_a_400_naming_the_field(core: Core, world: dict, method: str, url: str, body: object,
                                             field: str) -> None:
    client, headers = _client(core, world["alice"])
    answer = client.request(method.upper(), url, json=body, headers=headers) if body is not None else \
        client.request(method.upper(), url, headers=headers)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["message"].startswith(field), answer.text


def test_a_raw_garbage_body_is_a_400(core: Core, world: dict) -> None:
    client, headers = _client(core, world["alice"])
    answer = client.post("/api/inbox/read", content=b"{not json",
                         headers={**headers, "Content-Type": "application/json"})
    assert answer.status_code == 400


def test_an_approval_whose_time_ran_out_is_not_offered(core: Core, world: dict) -> None:
    asked = approvals.create(core.db, core.clock.now(), approvals.Request(
        chat_id=world["a"].id, project_id=world["a"].project_id, run_id=1, task_id=None,
        requested_for="alice@example.com", tool_call_id="c2", title="curl", input={},
        options=[{"option_id": "ok", "name": "Allow", "kind": "allow_once"}]), 60)
    later = asked.expires_at
    assert [a["id"] for a in inbox.inbox(core.db, world["alice"], now=core.clock.now())["approvals"]] == [asked.id]
    assert inbox.inbox(core.db, world["alice"], now=later)["approvals"] == []
