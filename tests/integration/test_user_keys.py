"""A new account under a deleted user's email starts with nothing of theirs (SPEC §13, §17), on
SQLite and PostgreSQL: notifications follow user ids, never emails, and ids are never reused
(docs/SECURITY.md, "What delete-user leaves").

The user is deleted through ``accounts.delete_user`` with the schedule domain's ``forget_chats``,
exactly as ``python -m app.manage delete-user`` does it.
"""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa
from sqlmodel import select

from app.attention import inbox, reads
from app.attention.notify import channels, outbox
from app.core import accounts, auth, chats, projects
from app.core import attention_events as attention
from app.core.attention_tables import AttentionKind, Delivery
from app.core.context import Core
from app.core.db import Database
from app.core.errors import NotFound
from app.core.migrate import upgrade
from app.core.models import User
from app.schedules.service import forget_chats
from tests.integration.apiclient import add_user

ALICE = "alice@example.com"


def event(core: Core, email: str, chat_id: int) -> int:
    """An attention event about the user registered under ``email``, named the way the scheduler
    names a schedule's owner (by email); returns its id."""
    with core.db.write() as s:
        attention.record(s.connection(), [attention.row(
            core.clock.now(), AttentionKind.FIRE_FAILED, user_email=email, chat_id=chat_id, project_id=None,
            payload={"task": {"id": 7, "name": "Nightly"}, "run": {"outcome": "failed"}})])
        return s.connection().execute(sa.text("SELECT max(id) FROM attention_events")).scalar_one()


def deliveries(core: Core) -> list[Delivery]:
    with core.db.read() as s:
        return list(s.exec(select(Delivery).order_by(Delivery.id)))


def test_a_new_account_under_a_deleted_users_email_inherits_nothing(core: Core) -> None:
    db, clock, workspaces = core.db, core.clock, core.settings.workspaces_dir
    root = add_user(core, "root@example.com", is_admin=True)
    bob = add_user(core, "bob@example.com")
    bobs = projects.create_project(db, clock, workspaces, "Bob's", bob)
    bobs_chat = chats.create_chat(db, clock, bob, bobs.id, "Ops")
    # Alice comes last, so her user, project, chat, channel and events hold the largest ids: where
    # rowids restart at the largest left, the next ones would be hers again.
    alice = add_user(core, ALICE)
    projects.grant_access(db, clock, alice, bobs.id)
    shared = chats.create_chat(db, clock, alice, bobs.id, "Alice in Bob's")  # stays: it is the project's
    solo = projects.create_project(db, clock, workspaces, "Solo", alice)
    solo_chat = chats.create_chat(db, clock, alice, solo.id, "Solo")  # goes with her
    channel = channels.create(db, clock, core.settings, alice, {"kind": "webhook", "url": "http://127.0.0.1:9/a"})
    first = event(core, ALICE, shared.id)
    event(core, ALICE, solo_chat.id)
    outbox.fan_out(db, clock.now())
    assert [d.channel_id for d in deliveries(core)] == [channel.id, channel.id]
    queued = event(core, ALICE, shared.id)  # not yet fanned out when she goes
    newest = event(core, ALICE, solo_chat.id)
    reads.mark_inbox_read(db, clock.now(), alice, newest)
    reads.mark_chat_seen(db, clock.now(), alice, shared.id, 1)
    assert reads.mark_inbox_read(db, clock.now(), root, newest) == newest  # the admin has read everything

    accounts.delete_user(db, ALICE, workspaces, forget_chats)
    again = auth.create_user(db, clock, ALICE, "password-1")

    assert again.id > alice.id
    assert channels.list_channels(db, again) == []
    with pytest.raises(NotFound):
        channels.deliveries(db, again, channel.id)
    assert deliveries(core) == []  # hers went with her channel
    assert (reads.read_before(db, again), reads.chat_seen(db, again, shared.id)) == (0, None)
    page = inbox.inbox(db, again, now=clock.now())
    assert (page["items"], page["unread"], page["approvals"], page["errors"]) == ([], 0, [], [])

    fresh = channels.create(db, clock, core.settings, again, {"kind": "webhook", "url": "http://127.0.0.1:9/b"})
    assert fresh.id > channel.id
    # What was queued for her, and what her old schedule in Bob's project says next (the scheduler
    # names its owner by email), reach nobody: the new account cannot see that chat.
    late = event(core, ALICE, shared.id)
    outbox.fan_out(db, clock.now())
    assert deliveries(core) == []
    with db.read() as s:
        named = dict(s.connection().execute(sa.text("SELECT id, user_id FROM attention_events ORDER BY id")).all())
    # The project's history is nobody's now; the late one names the new account, which cannot see it.
    assert named == {first: None, queued: None, late: again.id}
    assert inbox.inbox(db, again, now=clock.now())["items"] == []

    # An event id is never given again: the admin's read mark does not swallow Bob's next event.
    after = event(core, bob.email, bobs_chat.id)
    assert after > newest and reads.inbox_unread(db, root) == 2  # `late` and Bob's
    assert projects.create_project(db, clock, workspaces, "Again", again).id > solo.id
    assert chats.create_chat(db, clock, again, None, "Loose").id > solo_chat.id


T0 = dt.datetime(2026, 1, 5, 9, 0)  # naive UTC, as the columns store it


def test_the_upgrade_names_each_events_user_and_stops_reusing_ids(db_url: str) -> None:
    db = Database(db_url)
    try:
        upgrade(db, "0009_attention")
        with db.engine.begin() as conn:
            for email, hours in (("old@example.com", 0), ("alice@example.com", 1), ("late@example.com", 5)):
                conn.execute(sa.text("INSERT INTO users (email, password_hash, is_admin, created_at) "
                                     "VALUES (:e, 'x', false, :at)"),
                             {"e": email, "at": T0 + dt.timedelta(hours=hours)})
            ids = dict(conn.execute(sa.text("SELECT email, id FROM users")).all())
            alice = ids["alice@example.com"]
            chat = conn.execute(sa.text("INSERT INTO chats (owner_id, title, skills, created_at, updated_at, "
                                        "auto_title) VALUES (:o, 'c', '[]', :at, :at, false) RETURNING id"),
                                {"o": alice, "at": T0}).scalar_one()
            conn.execute(sa.text("INSERT INTO chat_reads (user_id, chat_id, last_event_id, updated_at) "
                                 "VALUES (:u, :c, 0, :at)"), {"u": alice, "c": chat, "at": T0})
            # alice's own event; one about late@ written before that account existed; one about nobody
            for email, hours in (("alice@example.com", 2), ("late@example.com", 3), ("gone@example.com", 4)):
                conn.execute(sa.text("INSERT INTO attention_events (kind, user_email, chat_id, notify, payload, "
                                     "created_at) VALUES ('fire.failed', :e, :c, true, '{}', :at)"),
                             {"e": email, "c": chat, "at": T0 + dt.timedelta(hours=hours)})
        upgrade(db)
        with db.engine.begin() as conn:
            named = conn.execute(sa.text("SELECT user_email, user_id FROM attention_events ORDER BY id")).all()
            assert [tuple(r) for r in named] == [("alice@example.com", alice), ("late@example.com", None),
                                                 ("gone@example.com", None)]
            assert conn.execute(sa.text("SELECT count(*) FROM chat_reads")).scalar() == 1  # rebuilt chats kept it
            if db.sqlite:
                ddl = dict(conn.exec_driver_sql("SELECT name, sql FROM sqlite_master WHERE type = 'table'").all())
                for table in ("users", "projects", "chats", "notification_channels", "deliveries", "approvals",
                              "attention_events"):
                    assert "AUTOINCREMENT" in ddl[table], table
                assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            newest = ids["late@example.com"]
            conn.execute(sa.text("DELETE FROM users WHERE id = :i"), {"i": newest})  # the newest user goes...
        with db.write() as s:
            user = User(email="late@example.com", password_hash="x", created_at=dt.datetime.now(dt.UTC))
            s.add(user)
            s.flush()
            assert user.id > newest  # ...and the next one gets a new id, not theirs
    finally:
        db.dispose()
