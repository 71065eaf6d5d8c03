"""The All schedules page (SPEC §13) in Debian's Chromium at 1280 × 800 and 390 × 844: tasks of two
chats listed with their project and chat, another user's task absent, the status filter, bulk
pause of two tasks (their rows turn paused), a bulk resume that is refused for an active task and
says so, a change made elsewhere shown by the page's own refresh, and the chat link.

The server is shared with the other browser tests, so each test makes its own project and reads
the page filtered to it. Every wait is on a condition in the page.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tests.e2e.conftest import ROOT, api, login, reveal_sidebar

pytestmark = pytest.mark.e2e
SIZES = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
EVERY_HOUR = {"kind": "interval", "every_seconds": 3600}
REFRESH = 15_000  # ms: the page re-reads its list every 5 s


@pytest.fixture(params=sorted(SIZES))
def sized(request: pytest.FixtureRequest, browser: Browser, server) -> Iterator[tuple[str, Page]]:
    context = browser.new_context(base_url=server.url, viewport=SIZES[request.param], timezone_id="Europe/Paris")
    page = context.new_page()
    try:
        yield request.param, page
    finally:
        context.close()


@pytest.fixture(scope="module")
def outsiders_task(server) -> str:
    """A task of another user, in a project the demo user is not a member of; returns its name."""
    email = f"outsider-{secrets.token_hex(3)}@example.com"
    server.manage("create-user", "--email", email, "--password", "outsider-password")
    pid = int(server.manage("create-project", "--name", "Outsider's", "--owner", email))
    token = server.manage("create-token", "--email", email)
    chat = api(server, token, "POST", f"/api/projects/{pid}/chats", {"title": "Outsider's plans"})["id"]
    name = f"outsider secret {secrets.token_hex(3)}"
    api(server, token, "POST", f"/api/chats/{chat}/schedules", {"name": name, "prompt": "x", "schedule": EVERY_HOUR})
    return name


def _project(server, token: str) -> tuple[int, dict[str, int], dict[str, int]]:
    """A fresh project with two chats and three tasks: (project id, chat ids, task ids)."""
    pid = api(server, token, "POST", "/api/projects", {"name": f"Fleet {secrets.token_hex(3)}"})["id"]
    chats = {title: api(server, token, "POST", f"/api/projects/{pid}/chats", {"title": title})["id"]
             for title in ("Builds", "Alerts")}
    tasks = {}
    for name, chat in (("nightly", "Builds"), ("digest", "Builds"), ("canary", "Alerts")):
        tasks[name] = api(server, token, "POST", f"/api/chats/{chats[chat]}/schedules",
                          {"name": name, "prompt": f"{name} report", "schedule": EVERY_HOUR})["id"]
    return pid, chats, tasks


def _shot(page: Page, tmp_path: Path, size: str) -> None:
    """A screenshot beside the test; the desktop one refreshes the README's with
    CHATCRON_UPDATE_SCREENSHOTS=1."""
    path = tmp_path / f"all-schedules-{size}.png"
    page.screenshot(path=str(path))
    if size == "desktop" and os.environ.get("CHATCRON_UPDATE_SCREENSHOTS"):
        shutil.copyfile(path, ROOT / "docs" / "screenshots" / "all-schedules.png")


def _row(page: Page, task_id: int) -> Locator:
    return page.locator(f'[data-testid=all-schedules-row][data-schedule-id="{task_id}"]')


def _open(page: Page, pid: int) -> None:
    """From the chat the login lands on, through the sidebar's link, then filtered to the project."""
    login(page)
    reveal_sidebar(page)
    page.get_by_test_id("nav-schedules").click()
    page.wait_for_url("**/schedules")
    expect(page.get_by_test_id("nav-schedules")).to_have_attribute("aria-current", "page")
    expect(page.get_by_test_id("all-schedules-row").first).to_be_visible()
    page.get_by_test_id("all-schedules-filter-project").select_option(str(pid))
    expect(page.get_by_test_id("all-schedules-row")).to_have_count(3)


def _within_width(page: Page, locator: Locator) -> None:
    box = locator.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= page.viewport_size["width"] + 1, box


def test_the_page_lists_filters_and_pauses_in_bulk(sized: tuple[str, Page], server, token: str,
                                                   outsiders_task: str, tmp_path: Path) -> None:
    size, page = sized
    pid, chats, tasks = _project(server, token)
    _open(page, pid)
    nightly, digest, canary = (_row(page, tasks[n]) for n in ("nightly", "digest", "canary"))
    for row, chat in ((nightly, "Builds"), (digest, "Builds"), (canary, "Alerts")):
        expect(row).to_have_attribute("data-status", "active")
        expect(row.get_by_test_id("all-schedules-status")).to_have_text("active")
        expect(row.get_by_test_id("all-schedules-chat-link")).to_have_text(chat)
        expect(row.get_by_test_id("all-schedules-chat-link")).to_have_attribute(
            "href", f"/chat/{chats[chat]}")
        expect(row.get_by_test_id("all-schedules-next-run")).to_contain_text(re.compile(r"in (5\d min|1 h)"))
        _within_width(page, row.get_by_test_id("all-schedules-chat-link"))
    page.get_by_test_id("all-schedules-filter-project").select_option("all")
    expect(nightly).to_be_visible()
    expect(page.get_by_text(outsiders_task)).to_have_count(0)  # another user's project is not shown
    page.get_by_test_id("all-schedules-filter-project").select_option(str(pid))
    expect(page.get_by_test_id("all-schedules-row")).to_have_count(3)

    expect(page.get_by_test_id("all-schedules-pause")).to_be_disabled()
    nightly.get_by_test_id("all-schedules-select").click()
    # as a user clicks the next box once the first one shows ticked (its answer re-renders the rows)
    expect(page.get_by_test_id("all-schedules-selected")).to_have_text("1 selected")
    canary.get_by_test_id("all-schedules-select").click()
    expect(page.get_by_test_id("all-schedules-selected")).to_have_text("2 selected")
    page.get_by_test_id("all-schedules-pause").click()
    expect(page.get_by_test_id("all-schedules-notice")).to_have_text("Paused 2 of 2.")
    for row, status in ((nightly, "paused"), (canary, "paused"), (digest, "active")):
        expect(row).to_have_attribute("data-status", status)
        expect(row.get_by_test_id("all-schedules-status")).to_have_text(status)
    assert api(server, token, "GET", f"/api/schedules/{tasks['nightly']}")["status"] == "paused"
    _shot(page, tmp_path, size)

    page.get_by_test_id("all-schedules-filter-status").select_option("paused")
    expect(page.get_by_test_id("all-schedules-row")).to_have_count(2)
    expect(digest).to_have_count(0)
    page.get_by_test_id("all-schedules-filter-status").select_option("all")
    expect(page.get_by_test_id("all-schedules-row")).to_have_count(3)

    # resume a paused and an active task: the first is resumed, the second refused, and the page says so
    nightly.get_by_test_id("all-schedules-select").click()
    digest.get_by_test_id("all-schedules-select").click()
    page.get_by_test_id("all-schedules-resume").click()
    notice = page.get_by_test_id("all-schedules-notice")
    expect(notice).to_contain_text("Resumed 1 of 2.")
    expect(notice).to_contain_text("digest: only a paused, error or exhausted schedule can be resumed")
    expect(nightly).to_have_attribute("data-status", "active")
    expect(digest).to_have_attribute("data-status", "active")

    # a change made elsewhere (the API, another tab) shows without a reload
    api(server, token, "POST", f"/api/schedules/{tasks['digest']}/pause")
    expect(digest).to_have_attribute("data-status", "paused", timeout=REFRESH)

    canary.get_by_test_id("all-schedules-chat-link").click()
    page.wait_for_url(f"**/chat/{chats['Alerts']}")
    expect(page.get_by_test_id("chat-title")).to_have_text("Alerts")


def test_the_bulk_controls_fit_a_phone(browser: Browser, server, token: str) -> None:
    context = browser.new_context(base_url=server.url, viewport=SIZES["phone"])
    page = context.new_page()
    try:
        pid, _, tasks = _project(server, token)
        _open(page, pid)
        for testid in ("all-schedules-filter-status", "all-schedules-filter-project", "all-schedules-pause",
                       "all-schedules-resume", "all-schedules-refresh"):
            expect(page.get_by_test_id(testid)).to_be_visible()
            _within_width(page, page.get_by_test_id(testid))
        row = _row(page, tasks["nightly"])
        # stacked: the next run sits below the name, not beside it
        name_box = row.get_by_test_id("all-schedules-name").bounding_box()
        next_box = row.get_by_test_id("all-schedules-next-run").bounding_box()
        assert next_box["y"] > name_box["y"] + name_box["height"] - 1, (name_box, next_box)
        _within_width(page, row)
    finally:
        context.close()


def test_a_visitor_without_a_session_is_sent_to_the_login_page(browser: Browser, server) -> None:
    context = browser.new_context(base_url=server.url)
    page = context.new_page()
    try:
        page.goto("/schedules")
        page.wait_for_url("**/login")
        expect(page.get_by_text("Please log in")).to_be_visible()
        expect(page.get_by_test_id("all-schedules-row")).to_have_count(0)
    finally:
        context.close()
