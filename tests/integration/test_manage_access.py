"""Taking access away with the admin CLI (SPEC §17): ``delete-user``, ``revoke-access``, ``end-sessions``.

Real ``python -m app.manage`` subprocesses on SQLite and PostgreSQL. Every table is dumped before
and after each command: a refused command changes nothing, and a done one changes exactly the rows
it says (docs/SECURITY.md, "Taking access away").
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlmodel import SQLModel

from app.core import auth, chats
from app.core.clock import SystemClock
from app.core.db import Database
from app.core.errors import NotFound
from app.core.migrate import upgrade
from app.core.models import (
    Chat,
    Event,
    Grant,
    LoginAttempt,
    Membership,
    Project,
    Run,
    RunStatus,
    SessionKind,
    User,
)
from app.schedules.model import ScheduledTask, TaskRun
from scheduler.adapters import CoreDirectory
from scheduler.decisions import Auth
from tests.integration.managecli import Cli, ok, refused

pytestmark = pytest.mark.slow  # one admin CLI process per command: left out of `make check`

CLOCK = SystemClock()
T0 = CLOCK.now() - dt.timedelta(days=1)


def at(minutes: int) -> dt.datetime:
    return T0 + dt.timedelta(minutes=minutes)


Dump = dict[str, list[dict[str, Any]]]


def dump(store: Database) -> Dump:
    """Every row of every table the product models, ordered by primary key."""
    out: Dump = {}
    with store.engine.connect() as conn:
        for table in SQLModel.metadata.sorted_tables:
            order = list(table.primary_key.columns)
            out[table.name] = [dict(row._mapping) for row in conn.execute(sa.select(table).order_by(*order))]
    return out


@dataclasses.dataclass
class World:
    """Who and what exists before the commands run (ids by name)."""

    users: dict[str, int]
    projects: dict[str, int]
    chats: dict[str, int]
    tasks: dict[str, int]
    sessions: dict[str, str]  # user → a browser session token
    tokens: dict[str, str]  # user → a personal API token


def _user(s: Any, name: str, is_admin: bool = False) -> User:  # a Session
    user = User(email=f"{name}@example.com", password_hash="not-a-hash", is_admin=is_admin, created_at=T0)
    s.add(user)
    s.flush()
    return user


def _chat(s: Any, title: str, owner: User, project: Project | None, minute: int) -> Chat:
    chat = Chat(title=title, owner_id=owner.id, project_id=project.id if project else None, created_at=at(minute),
                updated_at=at(minute))
    s.add(chat)
    s.flush()
    run = Run(chat_id=chat.id, status=RunStatus.SUCCEEDED.value, prompt=f"hello {title}", output="hi",
              started_at=at(minute), heartbeat_at=at(minute), finished_at=at(minute + 1))
    s.add(run)
    s.flush()
    s.add(Event(chat_id=chat.id, run_id=run.id, type="prompt", text=f"hello {title}", created_at=at(minute)))
    s.add(Event(chat_id=chat.id, run_id=run.id, type="assistant_text", text="hi", created_at=at(minute + 1)))
    return chat


def _task(s: Any, name: str, chat: Chat, owner: User) -> ScheduledTask:
    task = ScheduledTask(chat_id=chat.id, project_id=chat.project_id, owner=owner.email, name=name, prompt="check",
                         schedule=json.dumps({"kind": "interval", "every_seconds": 3600}), status="active",
                         next_run_at=CLOCK.now() + dt.timedelta(hours=1), created_at=T0, updated_at=T0)
    s.add(task)
    s.flush()
    s.add(TaskRun(task_id=task.id, occurrence_at=at(30), claimed_at=at(30), status="succeeded", fire_number=1))
    return task


def _grant(s: Any, owner: User, chat: Chat) -> None:
    s.add(Grant(token_hash=auth.digest(f"grant {owner.email} {chat.title}"), scope="manage", owner_id=owner.id,
                chat_id=chat.id, project_id=chat.project_id, created_at=CLOCK.now(),
                expires_at=CLOCK.now() + dt.timedelta(hours=1)))


def build_world(store: Database, workspaces: Path) -> World:
    """alice (to be deleted) owns Shared (dave joined before carol), Solo (hers alone) and a loose chat,
    and has a chat in bob's project; everyone has sessions, tokens, attempts and grants."""
    with store.write() as s:
        alice, bob, carol, dave = (_user(s, name) for name in ("alice", "bob", "carol", "dave"))
        root = _user(s, "root", is_admin=True)
        shared, solo, bobs = (Project(name=name, owner_id=owner.id, created_at=T0)
                              for name, owner in (("Shared", alice), ("Solo", alice), ("Bob's", bob)))
        s.add_all([shared, solo, bobs])
        s.flush()
        for user, project, minute in ((alice, shared, 0), (dave, shared, 1), (carol, shared, 2), (alice, solo, 0),
                                      (bob, bobs, 0), (alice, bobs, 3), (root, bobs, 4)):
            s.add(Membership(user_id=user.id, project_id=project.id, created_at=at(minute)))
        rooms = {"alice in shared": _chat(s, "alice in shared", alice, shared, 10),
                 "dave in shared": _chat(s, "dave in shared", dave, shared, 12),
                 "solo": _chat(s, "solo", alice, solo, 14),
                 "alice in bob's": _chat(s, "alice in bob's", alice, bobs, 16),
                 "alice loose": _chat(s, "alice loose", alice, None, 18),
                 "bob loose": _chat(s, "bob loose", bob, None, 20)}
        tasks = {"shared": _task(s, "alice's watch", rooms["alice in shared"], alice),
                 "solo": _task(s, "alice's solo watch", rooms["solo"], alice),
                 "dave": _task(s, "dave's watch", rooms["dave in shared"], dave)}
        for owner, room in ((alice, "alice in shared"), (alice, "solo"), (carol, "dave in shared"),
                            (dave, "dave in shared")):
            _grant(s, owner, rooms[room])
        for email, minute in (("alice@example.com", 40), ("alice@example.com", 41), ("bob@example.com", 42)):
            s.add(LoginAttempt(email=email, address="10.0.0.1", succeeded=False, at=at(minute)))
        users = {u.email.split("@")[0]: u.id for u in (alice, bob, carol, dave, root)}
        world = World(users, {"shared": shared.id, "solo": solo.id, "bobs": bobs.id},
                      {name: chat.id for name, chat in rooms.items()}, {n: t.id for n, t in tasks.items()}, {}, {})
    for name in ("alice", "bob", "carol"):
        world.sessions[name] = auth.create_session(store, CLOCK, world.users[name], 3600)
        world.tokens[name] = auth.create_api_token(store, CLOCK, world.users[name], "laptop")
    auth.create_session(store, CLOCK, world.users["alice"], 3600)  # a second browser
    auth.create_login_ticket(store, CLOCK, world.users["alice"], "alice's browser")  # a login in flight
    for pid in world.projects.values():
        (workspaces / str(pid)).mkdir(parents=True)
        (workspaces / str(pid) / "notes.md").write_text("agent files")
    return world


@pytest.fixture
def world(cli: Cli, store: Database) -> World:
    upgrade(store)
    return build_world(store, cli.data_dir / "workspaces")


def user_of(store: Database, token: str) -> str | None:
    user = auth.user_for_session(store, CLOCK, token)
    return user.email if user else None


# -- refused commands change nothing -----------------------------------------------------------


def test_refused_commands_exit_1_and_change_nothing(cli: Cli, store: Database, world: World) -> None:
    before = dump(store)
    shared = str(world.projects["shared"])
    results = cli.run_all(
        ("delete-user", "--email", "nobody@example.com"),
        ("delete-user", "--email", "not-an-email"),
        ("revoke-access", "--email", "nobody@example.com", "--project", shared),
        ("revoke-access", "--email", "alice@example.com", "--project", "987654"),
        ("revoke-access", "--email", "alice@example.com", "--project", "99999999999999999999"),
        ("revoke-access", "--email", "alice@example.com", "--project", "0"),
        ("revoke-access", "--email", "bob@example.com", "--project", shared),
        ("end-sessions", "--email", "nobody@example.com"),
    )
    words = [("nobody@example.com",), ("email", "not-an-email"), ("nobody@example.com",), ("987654",),
             ("99999999999999999999",), ("no project with id 0",),
             ("bob@example.com", "not a member", shared), ("nobody@example.com",)]
    for result, expected in zip(results, words, strict=True):
        refused(result, *expected)
    assert dump(store) == before


def test_usage_errors_exit_2_and_change_nothing(cli: Cli, store: Database, world: World) -> None:
    before = dump(store)
    for result in cli.run_all(("revoke-access", "--email", "alice@example.com"),
                              ("revoke-access", "--email", "alice@example.com", "--project", "abc"),
                              ("delete-user",), ("end-sessions", "--email")):
        assert result.code == 2 and "usage:" in result.err and result.out == "", result
    assert dump(store) == before


def test_delete_user_waits_for_a_turn_or_fire_in_a_chat_it_would_delete(cli: Cli, store: Database,
                                                                          world: World) -> None:
    with store.write() as s:
        s.add(Run(chat_id=world.chats["alice loose"], status=RunStatus.RUNNING.value, started_at=CLOCK.now(),
                  heartbeat_at=CLOCK.now()))
    before = dump(store)
    refused(cli.run("delete-user", "--email", "alice@example.com"),
            f"a turn is running in chat {world.chats['alice loose']}")
    assert dump(store) == before

    with store.write() as s:
        s.exec(sa.update(Run).where(Run.status == RunStatus.RUNNING.value).values(status="succeeded"))
        s.exec(sa.update(ScheduledTask).where(ScheduledTask.id == world.tasks["solo"]).values(active_run_id=1))
    before = dump(store)
    refused(cli.run("delete-user", "--email", "alice@example.com"), f"schedule {world.tasks['solo']}", "in flight")
    assert dump(store) == before


# -- end-sessions ------------------------------------------------------------------------------


def test_end_sessions_ends_browser_sessions_and_tickets_only(cli: Cli, store: Database, world: World) -> None:
    before = dump(store)
    ended = ok(cli.run("end-sessions", "--email", "ALICE@example.com"))
    assert ended == "ended 3 browser session(s) of alice@example.com"
    after = dump(store)
    alice = world.users["alice"]
    assert after["web_sessions"] == [row for row in before["web_sessions"] if row["user_id"] != alice]
    assert {k: v for k, v in after.items() if k != "web_sessions"} == {
        k: v for k, v in before.items() if k != "web_sessions"}
    assert user_of(store, world.sessions["alice"]) is None
    assert user_of(store, world.sessions["bob"]) == "bob@example.com"
    assert auth.user_for_token(store, CLOCK, world.tokens["alice"]).email == "alice@example.com"  # revoke-tokens' job
    again = ok(cli.run("end-sessions", "--email", "alice@example.com"))
    assert again == "ended 0 browser session(s) of alice@example.com"
    assert dump(store) == after


# -- revoke-access -----------------------------------------------------------------------------


def test_revoke_access_removes_the_membership_and_the_users_grants_there(cli: Cli, store: Database,
                                                                         world: World) -> None:
    before = dump(store)
    shared, carol = world.projects["shared"], world.users["carol"]
    carol_user = auth.find_user(store, "carol@example.com")
    assert chats.get_chat(store, carol_user, world.chats["dave in shared"]).id == world.chats["dave in shared"]

    assert ok(cli.run("revoke-access", "--email", "carol@example.com", "--project", str(shared))) == (
        f"carol@example.com can no longer use project {shared}")
    after = dump(store)
    assert after["memberships"] == [m for m in before["memberships"]
                                    if (m["user_id"], m["project_id"]) != (carol, shared)]
    revoked = [g for g in after["grants"] if g["revoked_at"] is not None]
    assert [(g["owner_id"], g["project_id"]) for g in revoked] == [(carol, shared)]
    assert [{**g, "revoked_at": None} for g in after["grants"]] == before["grants"]
    assert [(a["project_id"], a["actor_email"], a["action"], a["detail"]) for a in after["project_audit"]] == [
        (shared, "admin CLI", "member.remove", '{"email": "carol@example.com"}')]  # the owners' record (SPEC §18)
    unchanged = set(before) - {"memberships", "grants", "project_audit"}
    assert {k: after[k] for k in unchanged} == {k: before[k] for k in unchanged}
    with pytest.raises(NotFound):  # what a tab's next read checks
        chats.get_chat(store, carol_user, world.chats["dave in shared"])
    assert user_of(store, world.sessions["carol"]) == "carol@example.com"  # still logged in, sees nothing there

    refused(cli.run("revoke-access", "--email", "carol@example.com", "--project", str(shared)), "not a member")
    assert dump(store) == after


def test_revoke_access_of_an_admin_says_they_still_see_everything(cli: Cli, store: Database, world: World) -> None:
    bobs = world.projects["bobs"]
    assert ok(cli.run("revoke-access", "--email", "root@example.com", "--project", str(bobs))) == (
        f"root@example.com can no longer use project {bobs} as a member "
        "(root@example.com is an admin and still sees every project)")
    with store.read() as s:
        assert s.get(Membership, (world.users["root"], bobs)) is None


# -- delete-user -------------------------------------------------------------------------------


def test_delete_user_removes_what_only_they_used_and_hands_on_the_rest(cli: Cli, store: Database,
                                                                       world: World) -> None:
    before = dump(store)
    alice, dave, bob = world.users["alice"], world.users["dave"], world.users["bob"]
    shared, solo = world.projects["shared"], world.projects["solo"]
    gone_chats = {world.chats["solo"], world.chats["alice loose"]}
    new_owner = {world.chats["alice in shared"]: dave, world.chats["alice in bob's"]: bob}

    assert ok(cli.run("delete-user", "--email", "Alice@Example.com")) == (
        f"deleted user alice@example.com; deleted project(s) nobody else used: {solo}; "
        f"passed on: project {shared} to dave@example.com; 2 chat(s) deleted")
    after = dump(store)

    def kept(table: str, keep: Any) -> list[dict[str, Any]]:  # a predicate
        return [row for row in before[table] if keep(row)]

    solo_tasks = {world.tasks["solo"]}
    assert after["users"] == kept("users", lambda r: r["id"] != alice)
    assert after["projects"] == [{**r, "owner_id": dave} if r["id"] == shared else r
                                 for r in kept("projects", lambda r: r["id"] != solo)]
    assert after["memberships"] == kept("memberships", lambda r: r["user_id"] != alice and r["project_id"] != solo)
    assert after["chats"] == [{**r, "owner_id": new_owner.get(r["id"], r["owner_id"])}
                              for r in kept("chats", lambda r: r["id"] not in gone_chats)]
    for table in ("runs", "events"):
        assert after[table] == kept(table, lambda r: r["chat_id"] not in gone_chats), table
    assert after["scheduled_tasks"] == kept("scheduled_tasks", lambda r: r["id"] not in solo_tasks)
    assert after["task_runs"] == kept("task_runs", lambda r: r["task_id"] not in solo_tasks)
    assert after["grants"] == kept("grants", lambda r: r["owner_id"] != alice)
    for table in ("api_tokens", "web_sessions"):
        assert after[table] == kept(table, lambda r: r["user_id"] != alice), table
    assert after["login_attempts"] == kept("login_attempts", lambda r: r["email"] != "alice@example.com")
    assert after["login_attempts"] and after["grants"] and after["web_sessions"]  # others' rows are still there

    workspaces = cli.data_dir / "workspaces"
    assert not (workspaces / str(solo)).exists()  # a later project reusing the id finds no old files
    assert (workspaces / str(shared) / "notes.md").read_text() == "agent files"

    assert user_of(store, world.sessions["alice"]) is None  # what an open tab's next read checks
    assert auth.user_for_token(store, CLOCK, world.tokens["alice"]) is None
    key = (world.chats["alice in shared"], shared, "alice@example.com")  # her schedule that stayed
    assert CoreDirectory(store).check_many([key]) == {
        key: (Auth.PERMANENT, "the owner alice@example.com is no longer registered")}

    refused(cli.run("delete-user", "--email", "alice@example.com"), "alice@example.com")
    assert dump(store) == after


def test_deleting_every_member_in_turn_leaves_consistent_tables(cli: Cli, store: Database, world: World) -> None:
    """Shared passes alice → dave → carol, then goes with carol; nothing dangles on either database."""
    for name in ("alice", "dave", "carol", "bob", "root"):
        ok(cli.run("delete-user", "--email", f"{name}@example.com"))
    after = dump(store)
    assert {table: rows for table, rows in after.items() if rows} == {}
    assert sorted(p.name for p in (cli.data_dir / "workspaces").iterdir()) == []


def test_a_ticket_of_a_deleted_user_cannot_be_claimed(cli: Cli, store: Database, world: World) -> None:
    ticket = auth.create_login_ticket(store, CLOCK, world.users["dave"], "dave's browser")
    ok(cli.run("delete-user", "--email", "dave@example.com"))
    tickets = [row for row in dump(store)["web_sessions"] if row["kind"] == SessionKind.TICKET.value]
    assert [row["user_id"] for row in tickets] == [world.users["alice"]]  # dave's went with him
    assert auth.redeem_login_ticket(store, CLOCK, ticket, "dave's browser", 3600) == auth.TicketRefusal.EXPIRED
