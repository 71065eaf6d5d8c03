"""The shared chat feed of the web worker: one poll for every tab, tabs behind it read the log."""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses

import pytest

from app.ui import feed as feeds


@dataclasses.dataclass(frozen=True)
class Ev:
    id: int


class Log:
    """A chat's event log that counts how often it is read."""

    def __init__(self) -> None:
        self.events: list[Ev] = []
        self.reads = 0

    def append(self, count: int = 1) -> None:
        start = self.events[-1].id if self.events else 0
        self.events.extend(Ev(start + i + 1) for i in range(count))

    async def fetch(self, chat_id: int, after: int) -> list[Ev]:
        self.reads += 1
        return [e for e in self.events if e.id > after][:1000]


def run(coro):
    """Run a scenario on a fresh event loop in its own thread: the browser tests of the same session
    may leave a loop running in the main thread."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def test_many_tabs_share_one_read_per_change(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(feeds, "POLL_SECONDS", 0.01)

    async def scenario() -> None:
        log = Log()
        feed = feeds.feed_for(1, 0, log.fetch)
        waiting = [asyncio.create_task(feed.after(0, 5.0)) for _ in range(20)]
        await asyncio.sleep(0.05)  # every tab is waiting; the feed polls an empty log
        reads_before = log.reads
        log.append(3)
        got = await asyncio.gather(*waiting)
        assert all([e.id for e in events] == [1, 2, 3] for events in got)
        assert log.reads - reads_before <= 2  # one read found the events for all 20 tabs
        assert feeds.feed_for(1, 0, log.fetch) is feed  # the same feed while it runs
        feed._task.cancel()

    run(scenario())


def test_a_wait_without_news_times_out_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(feeds, "POLL_SECONDS", 0.01)

    async def scenario() -> None:
        log = Log()
        log.append(2)
        feed = feeds.feed_for(2, 2, log.fetch)
        assert await feed.after(2, 0.05) == []
        log.append()
        assert [e.id for e in await feed.after(2, 5.0)] == [3]
        feed._task.cancel()

    run(scenario())


def test_a_tab_behind_what_the_feed_keeps_reads_the_log_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(feeds, "POLL_SECONDS", 0.01)
    monkeypatch.setattr(feeds, "KEEP", 5)

    async def scenario() -> None:
        log = Log()
        feed = feeds.feed_for(3, 0, log.fetch)
        log.append(12)
        assert [e.id for e in await feed.after(11, 5.0)] == [12]
        assert feed.base == 7 and [e.id for e in feed.recent] == [8, 9, 10, 11, 12]
        assert await feed.after(3, 0.01) is None  # events 4..7 are no longer kept
        assert [e.id for e in await feed.after(7, 0.01)] == [8, 9, 10, 11, 12]
        feed._task.cancel()

    run(scenario())


def test_an_unwatched_feed_stops_and_is_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(feeds, "POLL_SECONDS", 0.01)
    monkeypatch.setattr(feeds, "IDLE_SECONDS", 0.05)

    async def scenario() -> None:
        log = Log()
        feed = feeds.feed_for(4, 0, log.fetch)
        await asyncio.wait_for(feed._task, 5.0)
        assert 4 not in feeds._feeds
        assert await feed.after(0, 0.01) is None  # a stopped feed sends its tab back to the log
        assert feeds.feed_for(4, 0, log.fetch) is not feed
        feeds._feeds[4]._task.cancel()

    run(scenario())


def test_a_failing_read_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(feeds, "POLL_SECONDS", 0.01)

    async def scenario() -> None:
        log, calls = Log(), []

        async def flaky(chat_id: int, after: int) -> list[Ev]:
            calls.append(after)
            if len(calls) < 3:
                raise OSError("database is locked")
            return await log.fetch(chat_id, after)

        log.append()
        feed = feeds.feed_for(5, 0, flaky)
        assert [e.id for e in await feed.after(0, 5.0)] == [1]
        assert len(calls) >= 3
        feed._task.cancel()

    run(scenario())


def test_idle_chats_share_one_read_of_the_newest_id(monkeypatch: pytest.MonkeyPatch) -> None:
    """Twenty open, idle chats: the worker reads the store's newest id once per poll, and a chat's own
    log only when that id moved (and every RESCAN_SECONDS); a new event still reaches its chat."""
    monkeypatch.setattr(feeds, "POLL_SECONDS", 0.01)
    monkeypatch.setattr(feeds, "_pulse", feeds.Pulse())

    async def scenario() -> None:
        logs = {chat: Log() for chat in range(100, 120)}
        newest_reads = [0]

        async def newest() -> int:
            newest_reads[0] += 1
            return max((log.events[-1].id for log in logs.values() if log.events), default=0)

        feeds_ = [feeds.feed_for(chat, 0, log.fetch, newest, rescan=None) for chat, log in logs.items()]
        await asyncio.sleep(0.3)  # about 30 polls of every feed, nothing happening
        assert all(log.reads == 1 for log in logs.values()), [log.reads for log in logs.values()]
        assert newest_reads[0] <= 0.3 / 0.01 + 5  # one shared read per poll, not one per chat
        waiting = asyncio.create_task(feeds_[7].after(0, 5.0))
        logs[107].append(2)
        assert [e.id for e in await waiting] == [1, 2]
        assert sum(log.reads for log in logs.values()) <= 20 + 2 * 20  # the move woke one read of each chat
        for feed in feeds_:
            feed._task.cancel()

    run(scenario())


def test_a_late_commit_below_the_newest_id_is_read_at_the_next_rescan(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(feeds, "POLL_SECONDS", 0.01)
    monkeypatch.setattr(feeds, "_pulse", feeds.Pulse())

    async def scenario() -> None:
        log = Log()

        async def newest() -> int:
            return 50  # another chat's newer event committed first; this chat's id 1 commits later

        feed = feeds.feed_for(200, 0, log.fetch, newest, rescan=0.1)  # (PostgreSQL's rescans)
        await asyncio.sleep(0.05)
        log.append(1)
        got = await feed.after(0, 1.0)
        assert [e.id for e in got] == [1]
        feed._task.cancel()

    run(scenario())
