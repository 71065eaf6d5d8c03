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
