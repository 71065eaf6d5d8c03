"""The multi-node topology of docs/DEPLOY.md, for real, on one machine.

PostgreSQL (a schema of its own), Redis (a database number of its own), one web process with two
granian workers sharing Reflex's state through Redis, and two schedulers — every process with its
own data folder, as on separate hosts. In one test, in order:

1. the web process really runs two workers, and two browser tabs whose websockets are held by
   different workers both see a user's turn stream live;
2. a burst of once-tasks due at the same instant fires each occurrence exactly once, split
   across both schedulers;
3. ``kill -9`` of a scheduler in the middle of its turns: the survivor abandons the dead one's
   claims within the lease, re-fires nothing, and its own turns finish.

Skipped (loudly) only without CHATCRON_TEST_POSTGRES_URL or a reachable Redis; CI has both.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import shutil
import signal
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect
from sqlmodel import select

from app.core import auth, chats
from app.core.clock import SystemClock
from app.core.config import Settings
from app.core.context import Core
from app.core.models import Chat, Run, RunSource, RunStatus, User
from app.core.wake import DatabaseWaker
from app.schedules.model import RunOutcome, ScheduledTask, TaskRun, TaskStatus
from app.schedules.service import Actor, TaskService
from app.wiring import build_core
from scheduler.decisions import ABANDONED_REASON
from tests.conftest import _drop_schema, _pg_schema_url
from tests.e2e import multinode as mn
from tests.e2e.conftest import DEMO_EMAIL, login
from tests.integration.procs import SchedulerProc, Schedulers, wait_for, wait_ready
from tests.isolation import web_dir

pytestmark = pytest.mark.e2e
LEASE = 3  # CHATCRON_RUN_LEASE_SECONDS of every process: a dead scheduler's claims are free within seconds
WEB_WORKERS = 2
BURST = 100
SLEEPERS = 4
REPLY = '[data-testid=event][data-type=assistant_text]'


@dataclasses.dataclass
class Cluster:
    web: mn.WebProcess
    schedulers: list[SchedulerProc]
    core: Core  # this test's own view of the database (TaskService, reads)
    redis_url: str
    user: User
    project_id: int


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    pg_base = mn.postgres_url_or_skip()
    redis_url = mn.redis_url_or_skip()
    root = tmp_path_factory.mktemp("multinode")
    db_url, schema = _pg_schema_url(pg_base)
    mn.flush_redis(redis_url)
    common = {"CHATCRON_DATABASE_URL": db_url, "CHATCRON_RUN_LEASE_SECONDS": str(LEASE), "PYTHONPATH": str(mn.ROOT)}
    web_env = {**mn.base_env(), **common, "CHATCRON_DATA_DIR": str(root / "web-host"),
               "CHATCRON_DEMO_WORD_DELAY_SECONDS": "0.15", "REFLEX_REDIS_URL": redis_url}
    mn.manage(web_env, "migrate")
    mn.manage(web_env, "seed-demo")
    web = mn.WebProcess(web_env, root / "web.log", WEB_WORKERS, web_dir("multinode"))
    group = Schedulers(db_url, root / "unused", root / "logs")
    settings = Settings(data_dir=root / "test-host", database_url=db_url, run_lease_seconds=LEASE,
                        max_tasks_per_project=0, max_tasks_per_user=0, demo_word_delay_seconds=0.0)
    core = build_core(settings, SystemClock())
    try:
        web.start()
        procs = [group.spawn(CHATCRON_DATA_DIR=root / f"scheduler-host-{i}", CHATCRON_RUN_LEASE_SECONDS=LEASE,
                             CHATCRON_MAX_CONCURRENT_RUNS=8) for i in (1, 2)]
        wait_ready(core.db, procs, 60)
        user = auth.find_user(core.db, DEMO_EMAIL)
        with core.db.read() as s:
            project_id = s.exec(select(Chat).where(Chat.title == "Demo chat")).one().project_id
        yield Cluster(web, procs, core, redis_url, user, project_id)
    finally:
        group.close()
        web.stop()
        core.prompts.shutdown(2.0)
        core.db.dispose()
        mn.flush_redis(redis_url)
        _drop_schema(pg_base, schema)
        shutil.rmtree(root / "web-build", ignore_errors=True)  # ~150 MB of node_modules


@pytest.mark.long  # builds and starts two web workers and two schedulers: about 45 s
def test_two_web_workers_two_schedulers_on_postgresql(cluster: Cluster, browser: Browser) -> None:
    t0 = time.monotonic()
    try:
        _web_runs_two_workers_and_health_sees_the_schedulers(cluster)
        _a_turn_streams_live_to_tabs_on_both_workers(cluster, browser)
        _a_burst_fires_each_occurrence_once_across_both_schedulers(cluster)
        _a_killed_schedulers_claims_are_recovered_by_the_other(cluster)
    except BaseException:
        print(f"\n--- web process log (tail) ---\n{mn.tail(cluster.web.log_path)}")
        for proc in cluster.schedulers:
            print(f"--- scheduler pid {proc.pid} (tail) ---\n{proc.log_tail()}")
        raise
    print(f"\nmulti-node scenario took {time.monotonic() - t0:.1f} s after start-up")


# -- 1. web workers ---------------------------------------------------------------------------------
def _web_runs_two_workers_and_health_sees_the_schedulers(c: Cluster) -> None:
    workers = c.web.worker_pids()
    assert len(workers) == WEB_WORKERS, f"expected {WEB_WORKERS} granian workers under reflex run, got {workers}"
    health = wait_for(lambda: _alive_health(c), 4 * LEASE, "/api/health to report a live scheduler", c.schedulers)
    assert health["status"] == "ok" and health["db"] == "ok", health
    with urllib.request.urlopen(c.web.url + "/metrics", timeout=5) as r:
        assert r.status == 200 and b"# TYPE" in r.read()


def _a_turn_streams_live_to_tabs_on_both_workers(c: Cluster, browser: Browser) -> None:
    tabs: dict[str, Page] = {}  # Reflex worker instance -> a logged-in tab whose websocket it holds
    contexts = []
    chat_url = None
    try:
        for _ in range(10):  # the kernel spreads connections over the workers; a few tabs reach both
            context = browser.new_context(base_url=c.web.url)
            contexts.append(context)
            page = context.new_page()
            login(page)
            if chat_url is None:
                chat_url = page.url
            elif page.url != chat_url:  # a reload of the page login landed on only races its own on_load
                page.goto(chat_url)
            # the chat loads over this tab's websocket while three other workers run tests: allow for load
            expect(page.get_by_test_id("chat-title")).to_have_text("Demo chat", timeout=20_000)
            token = page.evaluate("window.sessionStorage.getItem('token')")
            tabs.setdefault(mn.socket_instance(c.redis_url, token), page)
            if len(tabs) == WEB_WORKERS:
                break
        assert len(tabs) == WEB_WORKERS, f"{len(contexts)} tabs all landed on the same worker"
        sender, watcher = tabs.values()
        # a word every 0.15 s (the web env): ~5 s of streaming, which each tab still sees in pieces while
        # three other workers load the machine (at 0.06 s a tab once saw a single piece)
        words = " ".join(f"word{i}" for i in range(30))
        final = f"Demo agent here. You said: {words}"
        sender.get_by_test_id("composer-input").fill(words)
        sender.get_by_test_id("composer-send").click()
        seen: dict[int, set[int]] = {0: set(), 1: set()}
        for _ in range(600):
            texts = [_last_reply(p) for p in (sender, watcher)]
            for i, text in enumerate(texts):
                seen[i].add(len(text))
            if texts == [final, final]:
                break
            time.sleep(0.02)
        assert [_last_reply(p) for p in (sender, watcher)] == [final, final]
        for i, who in enumerate(("the sending tab", "the tab on the other worker")):
            partial = {n for n in seen[i] if 0 < n < len(final)}
            assert len(partial) >= 2, f"{who} got the reply in one piece, not streamed: {sorted(seen[i])}"
        expect(watcher.locator('[data-testid=event][data-type=prompt]').last).to_have_text(words)
        print(f"\nlive turn seen on tabs held by {len(tabs)} workers (of {len(contexts)} tabs opened)")
    finally:
        for context in contexts:
            context.close()


def _last_reply(page: Page) -> str:
    reply = page.locator(REPLY)
    return (reply.last.text_content() or "") if reply.count() else ""


# -- 2. burst ---------------------------------------------------------------------------------------
def _a_burst_fires_each_occurrence_once_across_both_schedulers(c: Cluster) -> None:
    instant, task_ids = _once_tasks(c, BURST, "burst", "a burst fire", lead=3)
    assert _task_runs(c, task_ids) == [], "nothing fires before its instant"
    wait_for(lambda: sum(r.status == RunOutcome.SUCCEEDED.value for r in _task_runs(c, task_ids)) >= BURST,
             90, f"{BURST} fires to succeed", c.schedulers, every=0.5)
    rows = _task_runs(c, task_ids)
    per_occurrence = Counter((r.task_id, r.occurrence_at) for r in rows)
    assert len(rows) == BURST and set(per_occurrence.values()) == {1}, "each occurrence fires exactly once"
    assert {r.task_id for r in rows} == set(task_ids) and {r.occurrence_at for r in rows} == {instant}
    assert {r.status for r in rows} == {RunOutcome.SUCCEEDED.value}
    with c.core.db.read() as s:
        fired = list(s.exec(select(Run).where(Run.task_run_id.in_([r.id for r in rows]))))
        tasks = list(s.exec(select(ScheduledTask).where(ScheduledTask.id.in_(task_ids))))
    assert len(fired) == BURST and {r.status for r in fired} == {RunStatus.SUCCEEDED.value}
    assert {r.source for r in fired} == {RunSource.SCHEDULE.value}
    assert {(t.status, t.run_count) for t in tasks} == {(TaskStatus.COMPLETED.value, 1)}
    by_scheduler = Counter(_pid_of(r.instance) for r in rows)
    assert set(by_scheduler) == {p.pid for p in c.schedulers}, f"one scheduler fired everything: {by_scheduler}"
    last = max(r.finished_at for r in rows)
    took = (last - instant).total_seconds()
    print(f"\n{BURST} occurrences due at one instant: fired once each, all done {took:.1f} s after it; "
          f"fires per scheduler pid {dict(by_scheduler)}")


# -- 3. kill -9 -------------------------------------------------------------------------------------
def _a_killed_schedulers_claims_are_recovered_by_the_other(c: Cluster) -> None:
    _, task_ids = _once_tasks(c, SLEEPERS, "sleeper", "/sleep 20", lead=3)
    rows = wait_for(lambda: _all_started(c, task_ids), 20, f"{SLEEPERS} sleeping fires to start", c.schedulers)
    held = Counter(_pid_of(r.instance) for r in rows)
    victim = next(p for p in c.schedulers if p.pid == held.most_common(1)[0][0])
    survivor = next(p for p in c.schedulers if p is not victim)
    victim_rows = [r for r in rows if _pid_of(r.instance) == victim.pid]
    survivor_rows = [r for r in rows if _pid_of(r.instance) == survivor.pid]
    victim.kill(signal.SIGKILL)
    victim.wait_exit(10)
    killed_at = c.core.clock.now()

    def abandoned() -> list[TaskRun] | None:
        now = {r.id: r for r in _task_runs(c, task_ids)}
        gone = [now[r.id] for r in victim_rows if now[r.id].status == RunOutcome.ABANDONED.value]
        return gone if len(gone) == len(victim_rows) else None

    gone = wait_for(abandoned, 4 * LEASE + 5, "the survivor to abandon the dead scheduler's claims", [survivor])
    recovered_after = (max(r.finished_at for r in gone) - killed_at).total_seconds()
    assert all(r.error == ABANDONED_REASON for r in gone)
    assert recovered_after < 3 * LEASE, f"recovery took {recovered_after:.1f} s with a {LEASE} s lease"
    # The dead turns' chat Runs are abandoned too, so their chats are free again.
    wait_for(lambda: all(_run_of(c, r).status == RunStatus.ABANDONED.value for r in gone), 3 * LEASE,
             "the dead turns' Runs to be abandoned", [survivor])
    # The survivor's own turns were not touched and finish.
    for row in survivor_rows:
        done = wait_for(lambda r=row: _succeeded(c, r), 30, "the survivor's own turn to finish", [survivor])
        assert done.id == row.id
    # Nothing re-fired: one TaskRun per task, a lease after recovery.
    mark = c.core.clock.now() + dt.timedelta(seconds=LEASE)
    wait_for(lambda: _beats_past(c, survivor, mark), 3 * LEASE, "the survivor to beat for another lease", [survivor])
    final = _task_runs(c, task_ids)
    assert len(final) == SLEEPERS and Counter(r.task_id for r in final) == Counter(task_ids)
    print(f"\nkill -9 of scheduler pid {victim.pid} holding {len(victim_rows)} of {SLEEPERS} turns: abandoned "
          f"{recovered_after:.1f} s later by pid {survivor.pid} (lease {LEASE} s), nothing re-fired; "
          f"{len(survivor_rows)} turns of the survivor finished")


# -- helpers ----------------------------------------------------------------------------------------
def _once_tasks(c: Cluster, n: int, label: str, prompt: str, lead: float) -> tuple[dt.datetime, list[int]]:
    """``n`` chats with one once-task each, created through TaskService (wake hints on), all due at
    one instant: ``lead`` seconds after the chats exist plus 0.15 s per task (about three times what
    one takes on a loaded machine), so that the last task is made before the instant."""
    svc = TaskService(c.core.db, c.core.clock, c.core.settings, DatabaseWaker(c.core.db))
    made = [chats.create_chat(c.core.db, c.core.clock, c.user, c.project_id, f"{label} {i}") for i in range(n)]
    at = (c.core.clock.now() + dt.timedelta(seconds=lead + n * 0.15)).replace(microsecond=0)
    ids = []
    for i, chat in enumerate(made):
        body = {"name": f"{label} {i}", "prompt": prompt, "schedule": {"kind": "once", "at": at.isoformat()}}
        task, created = svc.create(Actor(c.user), chat.id, body)
        assert created
        ids.append(task.id)
    assert c.core.clock.now() < at, f"creating {n} tasks took past their instant: raise the lead"
    return at, ids


def _task_runs(c: Cluster, task_ids: list[int]) -> list[TaskRun]:
    with c.core.db.read() as s:
        return list(s.exec(select(TaskRun).where(TaskRun.task_id.in_(task_ids)).order_by(TaskRun.id)))


def _all_started(c: Cluster, task_ids: list[int]) -> list[TaskRun] | None:
    rows = _task_runs(c, task_ids)
    ok = len(rows) == len(task_ids) and all(r.status == RunOutcome.RUNNING.value and r.started_at for r in rows)
    return rows if ok else None


def _succeeded(c: Cluster, row: TaskRun) -> TaskRun | None:
    with c.core.db.read() as s:
        now = s.get(TaskRun, row.id)
    return now if now.status == RunOutcome.SUCCEEDED.value else None


def _run_of(c: Cluster, row: TaskRun) -> Run:
    with c.core.db.read() as s:
        return s.get(Run, row.run_id)


def _beats_past(c: Cluster, proc: SchedulerProc, instant: dt.datetime) -> bool:
    row = proc.instance(c.core.db)
    return row is not None and row.heartbeat_at > instant


def _pid_of(instance: str | None) -> int:
    """The pid inside a scheduler instance id (``sched:<host>:<pid>:<nonce>``)."""
    assert instance, "a TaskRun without the instance that claimed it"
    return int(instance.split(":")[2])


def _alive_health(c: Cluster) -> dict | None:
    health = _get_json(c.web.url + "/api/health")
    return health if health["scheduler"]["alive"] is True else None


def _get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())

