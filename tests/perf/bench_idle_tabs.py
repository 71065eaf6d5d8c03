"""What idle browser tabs cost the web process: CPU while N logged-in chat tabs sit open.

Run: ``python -m tests.perf.bench_idle_tabs [--quick]``.

One web process (``reflex run --env prod``, as bench_web starts it) and one Chromium; N tabs, each
its own logged-in browser context (its own session and socket, as N users would), each open on its
own chat of the same project, with a reply in it. Nothing happens meanwhile: no turn, no fire.
After the tabs settle, the CPU time of every process of the web process's group (``/proc/<pid>/stat``
utime + stime) is read over consecutive windows; ``idle_tabs_web_cpu_percent`` is the median
window's CPU in percent of one core. ``idle_tab_frames_per_s`` is what one tab's socket received
per second over the same time (socket.io pings included). Target ≤ 2 % for 20 tabs.
``idle_web_cpu_percent`` is the same process after the browser closed and the chats' feeds stopped:
what the web process costs with no tab at all (its notification deliverer, the ASGI server).
"""

from __future__ import annotations

import dataclasses
import os
import time

from app.core import chats, runs
from app.core.models import RunSource, RunStatus
from tests import store
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS
from tests.perf.bench_web import PASSWORD, web_process_group
from tests.perf.common import Bench, emit, main_for, median, prepared

CPU_TARGET_PERCENT = 2.0
TICKS = os.sysconf("SC_CLK_TCK")


@dataclasses.dataclass(frozen=True)
class Sizes:
    tabs: int
    windows: int
    window_s: float
    settle_s: float
    baseline_settle_s: float  # after the browser closed: the chats' feeds stop 30 s after their last tab


FULL = Sizes(tabs=20, windows=6, window_s=10.0, settle_s=10.0, baseline_settle_s=35.0)
QUICK = Sizes(tabs=2, windows=2, window_s=2.0, settle_s=2.0, baseline_settle_s=1.0)


def group_cpu_seconds(pgid: int) -> float:
    """CPU seconds (user + system) of every live process in the process group ``pgid``."""
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # pgrp
            total += (int(fields[11]) + int(fields[12])) / TICKS
    return total


def _chat_with_a_reply(b: Bench, n: int) -> int:
    chat = chats.create_chat(b.core.db, b.core.clock, b.user, b.project_id, f"idle {n}")
    run = store.begin_run(b.core.db, b.core.clock, chat.id, "hello", source=RunSource.USER,
                          lease_seconds=60, instance="bench")
    runs.append_output(b.core.db, b.core.clock, run, "A reply that stays on screen.")
    store.finish_run(b.core.db, b.core.clock, run, RunStatus.SUCCEEDED)
    return chat.id


def idle_cpu(b: Bench, url: str, pgid: int, sizes: Sizes) -> tuple[list[float], float]:
    """CPU percent per window, and frames per second one tab's socket received meanwhile."""
    from playwright.sync_api import sync_playwright

    chat_ids = [_chat_with_a_reply(b, n) for n in range(sizes.tabs)]
    frames: list[float] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            first = None
            for n, chat_id in enumerate(chat_ids):
                page = browser.new_context(base_url=url).new_page()
                first = first or page
                if n == 0:
                    page.on("websocket", lambda ws: ws.on("framereceived", lambda _: frames.append(time.monotonic())))
                page.goto("/login")
                page.get_by_test_id("login-email").fill(b.user.email)
                page.get_by_test_id("login-password").fill(PASSWORD)
                page.get_by_test_id("login-submit").click()
                page.wait_for_url("**/chat/**")
                page.goto(f"/chat/{chat_id}")
                page.get_by_text("A reply that stays on screen.").wait_for()
            wait = first.wait_for_timeout if first else (lambda ms: time.sleep(ms / 1000))
            wait(sizes.settle_s * 1000)  # (Playwright delivers frame events while it waits)
            cpu, started_all = [], time.monotonic()
            for _ in range(sizes.windows):
                started, used = time.monotonic(), group_cpu_seconds(pgid)
                wait(sizes.window_s * 1000)
                cpu.append(100 * (group_cpu_seconds(pgid) - used) / (time.monotonic() - started))
            elapsed = time.monotonic() - started_all
            received = sum(1 for at in frames if at >= started_all)
        finally:
            browser.close()
    return cpu, received / elapsed


def bench(kind: str, sizes: Sizes) -> None:
    with prepared(kind, "bench-idle-tabs-") as b, web_process_group(b) as (url, pgid):
        cpu, frames = idle_cpu(b, url, pgid, sizes)
        baseline, _ = idle_cpu(b, url, pgid, dataclasses.replace(sizes, tabs=0, settle_s=sizes.baseline_settle_s))
    emit(f"idle_tabs_web_cpu_percent ({sizes.tabs} tabs)", median(cpu), "%", CPU_TARGET_PERCENT, kind)
    emit("idle_web_cpu_percent (no tab)", median(baseline), "%", None, kind)
    emit("idle_tab_frames_per_s", frames, "frames/s", None, kind)


def main() -> None:
    main_for(__doc__, bench, FULL, QUICK)


if __name__ == "__main__":
    main()
