"""Figures through the real web process (``reflex run --env prod``) and a real scheduler process.

Run: ``python -m tests.perf.bench_web [--quick]``. One web process and one scheduler per database,
started as tests/e2e/conftest.py does (same Chromium, same launch arguments), demo provider with
word delay 0.

* ``wake_latency_p95_ms``: ``POST /api/schedules/{id}/run-now`` with a personal token, the
  scheduler otherwise idle (its only other tasks are an hour away); from just before the request
  to the ``run_started`` event's ``created_at`` (same host clock). One sample at a time.
  Target ≤ 250 ms.
* ``ui_event_latency_p95_ms``: N Chromium pages (one logged-in browser context, N tabs) open on
  one chat; this process — not the web process — appends an assistant-text event through
  ``app.core.runs.append_output``; each page records ``Date.now()`` when a MutationObserver first
  sees the text. Latency = that instant − the instant just before the append; p95 over every
  (page, repeat) pair, and ``ui_event_latency_all_pages_p95_ms`` over the slowest page per repeat.
  Target ≤ 500 ms.
* ``api_list_rps``: ``GET /api/chats/{id}/schedules`` (50 schedules) with a personal token from
  16 client threads, each on its own keep-alive connection; median requests/s over windows.
"""

from __future__ import annotations

import contextlib
import dataclasses
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from sqlmodel import select

from app.core import auth, chats, runs
from app.core.models import Event, EventType, Run, RunSource, RunStatus
from app.schedules.service import Actor, TaskService
from tests import store
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, _wait_healthy
from tests.integration.procs import ROOT, Schedulers, wait_for
from tests.isolation import free_port
from tests.perf.bench_burst import make_tasks
from tests.perf.common import Bench, emit, main_for, median, percentile, prepared

WAKE_TARGET_MS = 250.0
UI_TARGET_MS = 500.0
PASSWORD = "password-1"
LIST_KEY = "schedules"
EVENT_SELECTOR = "[data-testid=event][data-type=assistant_text]"
# Installed in every page: note the first instant each bench marker ("mk<number>;") is in the DOM
# (a run's text chunks are shown joined in one reply, so markers are searched inside the text).
OBSERVER_JS = """() => {
  window.__marks = window.__marks || {};
  const scan = () => {
    for (const el of document.querySelectorAll('SELECTOR')) {
      for (const m of (el.textContent || '').matchAll(/mk[0-9]+;/g)) {
        if (!(m[0] in window.__marks)) window.__marks[m[0]] = Date.now();
      }
    }
  };
  new MutationObserver(scan).observe(document.body, {childList: true, subtree: true, characterData: true});
  scan();
}""".replace("SELECTOR", EVENT_SELECTOR)


@dataclasses.dataclass(frozen=True)
class Sizes:
    wake_samples: int
    pages: int
    ui_repeats: int
    rps_clients: int
    rps_windows: int
    rps_window_s: float


FULL = Sizes(wake_samples=30, pages=20, ui_repeats=20, rps_clients=16, rps_windows=3, rps_window_s=5.0)
QUICK = Sizes(wake_samples=5, pages=2, ui_repeats=3, rps_clients=4, rps_windows=2, rps_window_s=1.0)


@contextlib.contextmanager
def web_process(b: Bench) -> Iterator[str]:
    """``reflex run --env prod`` on a free port against ``b``'s database; yields its base URL."""
    with web_process_group(b) as (url, _):
        yield url


@contextlib.contextmanager
def web_process_group(b: Bench) -> Iterator[tuple[str, int]]:
    """As :func:`web_process`; yields (base URL, the process group id of every web process)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHATCRON_")}
    env.update({"CHATCRON_DATA_DIR": str(b.settings.data_dir), "CHATCRON_DATABASE_URL": b.url,
                "CHATCRON_DEMO_WORD_DELAY_SECONDS": "0", "CHATCRON_MAX_TASKS_PER_PROJECT": "0",
                "CHATCRON_API_URL": url, "PYTHONPATH": str(ROOT)})
    log = b.tmp / "web.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [str(Path(sys.executable).parent / "reflex"), "run", "--env", "prod", "--frontend-port", str(port),
             "--backend-port", str(port), "--backend-host", "127.0.0.1"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_healthy(url, proc, log)
        yield url, proc.pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def _request(url: str, token: str, method: str, path: str) -> dict:
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request(method, path, headers={"Authorization": f"Bearer {token}"})
        response = conn.getresponse()
        body = response.read()
        if response.status >= 300:
            raise RuntimeError(f"{method} {path} answered {response.status}: {body[:200]!r}")
        return json.loads(body or b"{}")
    finally:
        conn.close()


def _run_started(b: Bench, task_id: int) -> list[Event]:
    with b.core.db.read() as s:
        return list(s.exec(select(Event).join(Run, Run.id == Event.run_id).where(
            Run.task_id == task_id, Event.type == EventType.RUN_STARTED.value).order_by(Event.id)))


def wake_latency(b: Bench, url: str, token: str, samples: int, procs: list) -> list[float]:
    """Milliseconds from just before the HTTP run-now to the fire's run_started event."""
    chat = chats.create_chat(b.core.db, b.core.clock, b.user, b.project_id, "wake")
    body = {"name": "wake", "prompt": "go", "schedule": {"kind": "interval", "every_seconds": 3600}}
    task_id = TaskService(b.core.db, b.core.clock, b.settings).create(Actor(b.user), chat.id, body)[0].id
    latencies = []
    for i in range(samples):
        asked = b.core.clock.now()
        _request(url, token, "POST", f"/api/schedules/{task_id}/run-now")
        started = wait_for(lambda n=i: (e := _run_started(b, task_id)) and len(e) > n and e, 30,
                           f"wake sample {i + 1}", procs, every=0.005)
        latencies.append((started[i].created_at - asked).total_seconds() * 1000)
        wait_for(lambda: runs.live_run(b.core.db, b.core.clock, chat.id, 60) is None, 30, "the turn to end", procs)
        time.sleep(0.3)  # every sample starts from an idle scheduler
    return latencies


def ui_latency(b: Bench, url: str, sizes: Sizes) -> tuple[list[float], list[float]]:
    """(every page's latency, the slowest page's per repeat), milliseconds."""
    from playwright.sync_api import sync_playwright

    chat = chats.create_chat(b.core.db, b.core.clock, b.user, b.project_id, "ui")
    every, slowest = [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(base_url=url)
            first = context.new_page()
            first.goto("/login")
            first.get_by_test_id("login-email").fill(b.user.email)
            first.get_by_test_id("login-password").fill(PASSWORD)
            first.get_by_test_id("login-submit").click()
            first.wait_for_url("**/chat/**")
            pages = [first] + [context.new_page() for _ in range(sizes.pages - 1)]
            for page in pages:
                page.goto(f"/chat/{chat.id}")
                page.get_by_test_id("chat-title").wait_for()
                page.evaluate(OBSERVER_JS)
            run = store.begin_run(b.core.db, b.core.clock, chat.id, "bench", source=RunSource.USER,
                                 lease_seconds=3600, instance="bench")
            time.sleep(1.0)  # every page has seen the prompt and is tailing
            for i in range(sizes.ui_repeats):
                mark = f"mk{i};"
                appended = time.time() * 1000
                runs.append_output(b.core.db, b.core.clock, run, f" {mark}")
                seen = []
                for page in pages:
                    page.wait_for_function(f"() => window.__marks && window.__marks['{mark}']", timeout=30_000)
                    seen.append(page.evaluate(f"() => window.__marks['{mark}']") - appended)
                every.extend(seen)
                slowest.append(max(seen))
                time.sleep(0.3)
            store.finish_run(b.core.db, b.core.clock, run, RunStatus.SUCCEEDED)
        finally:
            browser.close()
    return every, slowest


def _list_client(url: str, path: str, token: str, stop: threading.Event, counts: list[int], k: int,
                 errors: list[int]) -> None:
    """GET ``path`` on one keep-alive connection until ``stop``; counts[k] += 1 per 200."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        while not stop.is_set():
            conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                errors.append(response.status)
                return
            counts[k] += 1
    finally:
        conn.close()


def api_rps(b: Bench, url: str, token: str, sizes: Sizes) -> list[float]:
    """Requests per second per window, ``sizes.rps_clients`` threads on keep-alive connections."""
    chat_id = chats.create_chat(b.core.db, b.core.clock, b.user, b.project_id, "list").id
    svc = TaskService(b.core.db, b.core.clock, b.settings)
    for i in range(50):
        svc.create(Actor(b.user), chat_id, {"name": f"list {i}", "prompt": "go",
                                             "schedule": {"kind": "interval", "every_seconds": 3600}})
    path = f"/api/chats/{chat_id}/schedules"
    listed = _request(url, token, "GET", path)
    if len(listed.get(LIST_KEY, listed)) != 50:
        raise RuntimeError(f"expected 50 schedules, got {str(listed)[:200]}")
    rates = []
    for _ in range(sizes.rps_windows):
        stop, counts, errors = threading.Event(), [0] * sizes.rps_clients, []
        threads = [threading.Thread(target=_list_client, args=(url, path, token, stop, counts, k, errors))
                   for k in range(sizes.rps_clients)]
        started = time.monotonic()
        for t in threads:
            t.start()
        time.sleep(sizes.rps_window_s)
        stop.set()
        for t in threads:
            t.join(30)
        if errors:
            raise RuntimeError(f"list requests failed: {errors[:5]}")
        rates.append(sum(counts) / (time.monotonic() - started))
    return rates


def bench(kind: str, sizes: Sizes) -> None:
    with prepared(kind, "bench-web-") as b:
        token = auth.create_api_token(b.core.db, b.core.clock, b.user.id, "bench")
        make_tasks(b, 3)  # the scheduler has something to hold, an hour away
        group = Schedulers(b.url, b.settings.data_dir, b.tmp / "logs")
        try:
            proc = group.start(b.core.db, CHATCRON_RUN_LEASE_SECONDS=60, CHATCRON_MAX_CONCURRENT_RUNS=0)
            with web_process(b) as url:
                wake = wake_latency(b, url, token, sizes.wake_samples, [proc])
                emit("wake_latency_p50_ms", median(wake), "ms", WAKE_TARGET_MS, kind)
                emit("wake_latency_p95_ms", percentile(wake, 95), "ms", WAKE_TARGET_MS, kind)
                every, slowest = ui_latency(b, url, sizes)
                emit("ui_event_latency_p50_ms", median(every), "ms", UI_TARGET_MS, kind)
                emit("ui_event_latency_p95_ms", percentile(every, 95), "ms", UI_TARGET_MS, kind)
                emit("ui_event_latency_all_pages_p95_ms", percentile(slowest, 95), "ms", UI_TARGET_MS, kind)
                emit("api_list_rps", median(api_rps(b, url, token, sizes)), "req/s", None, kind,
                     higher_is_better=True)
        finally:
            group.close()


def main() -> None:
    main_for(__doc__, bench, FULL, QUICK)


if __name__ == "__main__":
    main()
