"""Group commit (``Database.combined``) on both databases: results per caller, fewer COMMITs than
calls, and a failing unit that fails only its own caller.

To make a group deterministic, the first caller's unit blocks inside its transaction until the
others have queued behind it; they are then written together by the next caller. COMMITs are
counted with a SQLAlchemy ``commit`` listener on the engine.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlmodel import Session, select

from app.core import chats
from app.core.context import Core
from app.core.db import GROUP_MAX, Database
from app.core.models import Chat, Event
from tests.integration.apiclient import add_user

WAIT = 30.0


class UnitFailed(Exception):
    """Raised by a unit on purpose."""

    def __init__(self, label: str) -> None:
        super().__init__(f"unit {label} failed")
        self.label = label


class Commits:
    """Counts COMMITs on an engine (every connection, including the writer's option engine)."""

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine
        self.count = 0
        self._lock = threading.Lock()
        sa.event.listen(engine, "commit", self._on_commit)

    def _on_commit(self, _conn: sa.Connection) -> None:
        with self._lock:
            self.count += 1

    def close(self) -> None:
        sa.event.remove(self.engine, "commit", self._on_commit)


@pytest.fixture
def chat_id(core: Core) -> int:
    owner = add_user(core, "owner@example.com")
    return chats.create_chat(core.db, core.clock, owner, None, "Group commit").id


@pytest.fixture
def commits(core: Core, chat_id: int) -> Iterator[Commits]:
    counter = Commits(core.db.engine)
    yield counter
    counter.close()


def insert_event(chat_id: int, text: str, now: Any) -> Callable[[Session], int]:  # a datetime
    """A unit that inserts one status event and returns its id."""

    def work(s: Session) -> int:
        event = Event(chat_id=chat_id, type="status", text=text, created_at=now)
        s.add(event)
        s.flush()
        return event.id

    return work


def event_texts(db: Database, chat_id: int) -> list[str]:
    with db.read() as s:
        return list(s.exec(select(Event.text).where(Event.chat_id == chat_id).order_by(Event.id)))


def queued(db: Database) -> int:
    with db._group:
        return len(db._group_queue)


def wait_until(condition: Callable[[], bool], timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.002)


class Calls:
    """Runs ``combined`` calls in threads and keeps what each returned or raised."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.results: dict[str, Any] = {}
        self.errors: dict[str, BaseException] = {}
        self.threads: list[threading.Thread] = []

    def call(self, label: str, work: Callable[[Session], Any], barrier: threading.Barrier | None = None) -> None:
        def run() -> None:
            if barrier is not None:
                barrier.wait(WAIT)
            try:
                self.results[label] = self.db.combined(work)
            except BaseException as exc:  # noqa: BLE001 - kept for the test's assertions
                self.errors[label] = exc

        thread = threading.Thread(target=run, name=f"unit-{label}")
        self.threads.append(thread)
        thread.start()

    def join(self) -> None:
        for thread in self.threads:
            thread.join(WAIT)
            assert not thread.is_alive(), f"{thread.name} never returned from combined()"


def blocked_first(db: Database, calls: Calls, chat_id: int, now: Any) -> threading.Event:
    """Start a unit that holds the writer's turn until the returned event is set."""
    entered, release = threading.Event(), threading.Event()
    insert = insert_event(chat_id, "blocker", now)

    def blocker(s: Session) -> int:
        entered.set()
        assert release.wait(WAIT)
        return insert(s)

    calls.call("blocker", blocker)
    assert entered.wait(WAIT)
    return release


def test_a_single_call_returns_what_its_unit_returns_once_committed(core: Core, chat_id: int,
                                                                   commits: Commits) -> None:
    event_id = core.db.combined(insert_event(chat_id, "alone", core.clock.now()))
    assert commits.count == 1
    with core.db.read() as s:
        row = s.get(Event, event_id)
    assert (row.chat_id, row.text) == (chat_id, "alone")
    assert core.db.combined(lambda s: None) is None
    assert core.db.combined(lambda s: {"value": 42}) == {"value": 42}


def test_a_single_failing_call_raises_its_own_exception_and_writes_nothing(core: Core, chat_id: int) -> None:
    def failing(s: Session) -> None:
        insert_event(chat_id, "never", core.clock.now())(s)
        raise UnitFailed("alone")

    with pytest.raises(UnitFailed) as raised:
        core.db.combined(failing)
    assert raised.value.label == "alone"
    with pytest.raises(KeyError):
        core.db.combined(lambda s: {}["missing"])
    assert event_texts(core.db, chat_id) == []


def test_fifty_concurrent_calls_all_commit_with_fewer_commits_than_calls(core: Core, chat_id: int,
                                                                         commits: Commits) -> None:
    n = 50
    now = core.clock.now()
    calls = Calls(core.db)
    barrier = threading.Barrier(n)
    for i in range(n):
        calls.call(f"u{i}", insert_event(chat_id, f"u{i}", now), barrier)
    calls.join()
    assert calls.errors == {}
    texts = event_texts(core.db, chat_id)
    assert sorted(texts) == sorted(f"u{i}" for i in range(n))  # each once: none lost, none duplicated
    with core.db.read() as s:  # every caller got the id of its own row
        by_id = {e.id: e.text for e in s.exec(select(Event).where(Event.chat_id == chat_id))}
    assert {label: by_id[event_id] for label, event_id in calls.results.items()} == {f"u{i}": f"u{i}" for i in range(n)}
    assert 1 <= commits.count < n


def test_calls_queued_behind_a_transaction_are_written_in_one_commit(core: Core, chat_id: int,
                                                                     commits: Commits) -> None:
    n = 49
    now = core.clock.now()
    calls = Calls(core.db)
    release = blocked_first(core.db, calls, chat_id, now)
    for i in range(n):
        calls.call(f"u{i}", insert_event(chat_id, f"u{i}", now))
    wait_until(lambda: queued(core.db) == n)
    assert commits.count == 0 and event_texts(core.db, chat_id) == []  # nothing committed while the writer works
    release.set()
    calls.join()
    assert calls.errors == {}
    assert commits.count == 2  # the blocker's transaction, then the 49 queued calls together
    assert sorted(event_texts(core.db, chat_id)) == sorted(["blocker", *(f"u{i}" for i in range(n))])
    with core.db.read() as s:
        by_id = {e.id: e.text for e in s.exec(select(Event).where(Event.chat_id == chat_id))}
    assert all(by_id[event_id] == label for label, event_id in calls.results.items())


def test_a_group_holds_at_most_group_max_units(core: Core, chat_id: int, commits: Commits) -> None:
    n = GROUP_MAX + 50
    now = core.clock.now()
    calls = Calls(core.db)
    release = blocked_first(core.db, calls, chat_id, now)
    for i in range(n):
        calls.call(f"u{i}", insert_event(chat_id, f"u{i}", now))
    wait_until(lambda: queued(core.db) == n)
    release.set()
    calls.join()
    assert calls.errors == {}
    assert commits.count == 1 + math.ceil(n / GROUP_MAX)
    assert len(event_texts(core.db, chat_id)) == n + 1


def test_a_failing_unit_fails_only_its_caller_and_the_rest_of_its_group_commits_once(
        core: Core, chat_id: int, commits: Commits) -> None:
    now = core.clock.now()
    runs: dict[str, int] = {}
    runs_lock = threading.Lock()

    def counted(label: str, work: Callable[[Session], Any]) -> Callable[[Session], Any]:
        def unit(s: Session) -> Any:
            with runs_lock:
                runs[label] = runs.get(label, 0) + 1
            return work(s)
        return unit

    def failing(s: Session) -> None:
        insert_event(chat_id, "bad", now)(s)  # written, then the unit raises: must not survive
        raise UnitFailed("bad")

    calls = Calls(core.db)
    release = blocked_first(core.db, calls, chat_id, now)
    good = [f"g{i}" for i in range(10)]
    for label in good[:5]:
        calls.call(label, counted(label, insert_event(chat_id, label, now)))
    wait_until(lambda: queued(core.db) == 5)
    calls.call("bad", counted("bad", failing))  # in the middle of the group
    wait_until(lambda: queued(core.db) == 6)
    for label in good[5:]:
        calls.call(label, counted(label, insert_event(chat_id, label, now)))
    wait_until(lambda: queued(core.db) == 11)
    release.set()
    calls.join()

    assert set(calls.errors) == {"bad"}
    error = calls.errors["bad"]
    assert type(error) is UnitFailed and error.label == "bad" and str(error) == "unit bad failed"
    assert set(calls.results) == {"blocker", *good}
    texts = event_texts(core.db, chat_id)
    assert sorted(texts) == sorted(["blocker", *good])  # each good row exactly once, the bad one never
    with core.db.read() as s:
        by_id = {e.id: e.text for e in s.exec(select(Event).where(Event.chat_id == chat_id))}
    assert all(by_id[calls.results[label]] == label for label in good)
    assert all(runs[label] >= 1 for label in good) and runs["bad"] >= 1
    # the blocker, then each unit of the failed group again on its own: the good ones commit
    assert commits.count == 1 + len(good)


def test_units_updating_rows_get_their_values_and_a_failure_rolls_back_only_its_own_update(
        core: Core, chat_id: int) -> None:
    owner = add_user(core, "second@example.com")
    other = chats.create_chat(core.db, core.clock, owner, None, "Other").id

    def retitle(target: int, title: str, fail: bool = False) -> Callable[[Session], str]:
        def work(s: Session) -> str:
            chat = s.get(Chat, target)
            previous = chat.title
            chat.title = title
            s.add(chat)
            s.flush()
            if fail:
                raise ValueError(f"refused {title}")
            return previous

        return work

    calls = Calls(core.db)
    release = blocked_first(core.db, calls, chat_id, core.clock.now())
    calls.call("first", retitle(chat_id, "Renamed"))
    wait_until(lambda: queued(core.db) == 1)
    calls.call("refused", retitle(other, "Never", fail=True))
    wait_until(lambda: queued(core.db) == 2)
    release.set()
    calls.join()
    assert calls.results["first"] == "Group commit"
    assert isinstance(calls.errors["refused"], ValueError) and str(calls.errors["refused"]) == "refused Never"
    with core.db.read() as s:
        assert (s.get(Chat, chat_id).title, s.get(Chat, other).title) == ("Renamed", "Other")


def test_two_units_of_one_group_that_conflict_the_first_wins_the_second_fails(core: Core, chat_id: int) -> None:
    """Both insert the same primary key: together the group fails; alone, the first commits."""
    now = core.clock.now()
    with core.db.read() as s:
        next_id = (s.exec(select(sa.func.max(Event.id))).one() or 0) + 1000

    def insert_with_id(text: str) -> Callable[[Session], int]:
        def work(s: Session) -> int:
            s.add(Event(id=next_id, chat_id=chat_id, type="status", text=text, created_at=now))
            s.flush()
            return next_id

        return work

    calls = Calls(core.db)
    release = blocked_first(core.db, calls, chat_id, now)
    calls.call("first", insert_with_id("first"))
    wait_until(lambda: queued(core.db) == 1)
    calls.call("second", insert_with_id("second"))
    wait_until(lambda: queued(core.db) == 2)
    release.set()
    calls.join()
    assert calls.results.get("first") == next_id
    assert isinstance(calls.errors.get("second"), sa.exc.IntegrityError)
    with core.db.read() as s:
        assert s.get(Event, next_id).text == "first"
    assert sorted(event_texts(core.db, chat_id)) == ["blocker", "first"]
