"""The notification settings page (SPEC §13) in Chromium at 1280 × 800 and 390 × 844, against the
served processes: reached from the sidebar, a webhook added (its secret shown once), "Send test"
delivered by a running deliverer to a real receiver on loopback, and the delivery log showing it;
bad input answered in the page; a channel deleted. Screenshots go to /tmp."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from app.attention.notify import policy
from tests.e2e.conftest import api, login, reveal_sidebar
from tests.integration.receivers import webhook_receiver

pytestmark = pytest.mark.e2e
SIZES = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


@pytest.fixture(params=sorted(SIZES))
def sized(request: pytest.FixtureRequest, browser: Browser, server) -> Iterator[tuple[str, Page]]:
    context = browser.new_context(base_url=server.url, viewport=SIZES[request.param])
    page = context.new_page()
    try:
        yield request.param, page
    finally:
        context.close()


def test_a_webhook_is_added_tested_and_deleted_in_the_page(sized: tuple[str, Page]) -> None:
    size, page = sized
    login(page)
    reveal_sidebar(page)
    page.get_by_test_id("nav-notifications").click()
    page.wait_for_url("**/settings/notifications")
    page.get_by_test_id("webhook-url").fill("ftp://example.com/x")
    page.get_by_test_id("webhook-add").click()
    expect(page.get_by_test_id("channels-error")).to_contain_text("url:")
    with webhook_receiver() as receiver:
        url = f"{receiver.url}/{size}"
        page.get_by_test_id("webhook-url").fill(url)
        page.get_by_test_id("webhook-add").click()
        secret = page.get_by_test_id("channel-secret")
        expect(secret).to_be_visible()
        shown = secret.inner_text()
        assert len(shown) == 64
        row = page.locator("[data-testid=channel-row]").filter(has_text=url)
        expect(row).to_have_count(1)
        row.get_by_test_id("channel-send-test").click()
        expect(row.locator("[data-testid=delivery-row][data-state=delivered]")).to_have_count(1, timeout=15_000)
        [request] = receiver.wait_for(1)
        assert json.loads(request.body)["event"] == "test"
        assert policy.verify(shown, request.body, request.headers["X-Chatcron-Signature"])
        page.screenshot(path=f"/tmp/notifications-{size}.png", full_page=True)
        page.reload()
        expect(row).to_have_count(1)
        expect(page.get_by_test_id("channel-secret")).to_have_count(0)  # shown once only
        row.get_by_test_id("channel-delete").click()
        expect(row).to_have_count(0)


def test_the_schedule_dialog_sets_a_tasks_notify(sized: tuple[str, Page], server, token: str) -> None:
    size, page = sized
    login(page)
    first = page.url
    reveal_sidebar(page)
    page.get_by_test_id("new-chat").first.click()
    page.wait_for_url(lambda url: "/chat/" in url and url != first)
    chat_id = page.url.rstrip("/").split("/")[-1]
    page.get_by_test_id("schedules-button").click()
    expect(page.get_by_test_id("schedules-drawer")).to_be_visible(timeout=15_000)
    page.get_by_test_id("schedules-new").click()
    page.get_by_test_id("schedule-form-name").fill(f"Loud {size}")
    page.get_by_test_id("schedule-form-prompt").fill("Say hello.")
    expect(page.get_by_test_id("schedule-form-notify")).to_have_text("On failures")
    page.get_by_test_id("schedule-form-notify").click()
    page.get_by_role("option", name="Every fire").click()
    expect(page.get_by_test_id("schedule-form-notify")).to_have_text("Every fire")
    page.screenshot(path=f"/tmp/schedule-notify-{size}.png")
    page.get_by_test_id("schedule-form-save").click()
    expect(page.get_by_test_id("schedule-form")).to_be_hidden()
    [task] = api(server, token, "GET", f"/api/chats/{chat_id}/schedules")["schedules"]
    assert (task["name"], task["notify"]) == (f"Loud {size}", "always")


def test_without_a_session_the_page_sends_to_the_login_page(browser: Browser, server) -> None:
    context = browser.new_context(base_url=server.url, viewport=SIZES["desktop"])
    page = context.new_page()
    try:
        page.goto("/settings/notifications")
        page.wait_for_url(re.compile(r"/login/?$"))
        expect(page.get_by_test_id("login-prompt")).to_have_text("Please log in")
        expect(page.get_by_test_id("channel-row")).to_have_count(0)
    finally:
        context.close()
