"""A new user's first minutes, in Debian's Chromium against the production build."""

from __future__ import annotations

import json
import urllib.request

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import login

pytestmark = pytest.mark.e2e
REPLY = '[data-testid=event][data-type=assistant_text]'


def test_wrong_password_is_refused_without_saying_which_part(page: Page) -> None:
    page.goto("/login")
    page.get_by_test_id("login-email").fill("demo@example.com")
    page.get_by_test_id("login-password").fill("not-the-password")
    page.get_by_test_id("login-submit").click()
    expect(page.get_by_test_id("login-error")).to_have_text("Wrong email or password.")
    page.get_by_test_id("login-email").fill("nobody@example.com")
    page.get_by_test_id("login-submit").click()
    expect(page.get_by_test_id("login-error")).to_have_text("Wrong email or password.")
    assert "/login" in page.url


def test_pages_need_a_login(page: Page) -> None:
    page.goto("/chat/1")
    page.wait_for_url("**/login**")


def test_reply_streams_into_the_open_page(page: Page) -> None:
    login(page)
    expect(page.get_by_test_id("chat-title")).to_have_text("Demo chat")
    words = " ".join(f"word{i}" for i in range(30))
    page.get_by_test_id("composer-input").fill(words)
    page.get_by_test_id("composer-send").click()
    reply = page.locator(REPLY).last
    expect(page.get_by_test_id("agent-working")).to_be_visible()
    seen: set[int] = set()
    final = f"Demo agent here. You said: {words}"
    for _ in range(400):
        text = reply.text_content() if reply.count() else ""
        seen.add(len(text or ""))
        if text == final:
            break
        page.wait_for_timeout(25)
    assert (reply.text_content() or "") == final
    partial = {n for n in seen if 0 < n < len(final)}
    assert len(partial) >= 2, f"the reply arrived in one piece, not streamed: lengths seen {sorted(seen)}"
    expect(page.get_by_test_id("agent-working")).to_be_hidden()


def test_a_second_tab_sees_the_same_turn_live(page: Page, context, browser) -> None:
    login(page)
    other = browser.new_context(base_url=page.url.split("/chat/")[0])
    second = other.new_page()
    login(second)
    second.goto(page.url)
    expect(second.get_by_test_id("chat-title")).to_have_text("Demo chat")
    page.get_by_test_id("composer-input").fill("hello from tab one")
    page.get_by_test_id("composer-send").click()
    expect(second.locator('[data-testid=event][data-type=prompt]').last).to_have_text("hello from tab one")
    expect(second.locator(REPLY).last).to_have_text("Demo agent here. You said: hello from tab one")
    other.close()


def _api(server, token: str, method: str, path: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        f"{server.url}{path}", data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"}, method=method,
    )
    with urllib.request.urlopen(request) as response:
        assert response.status in (200, 201, 202, 204)
        return json.loads(response.read() or b"{}")


def test_a_turn_started_through_the_api_appears_live(page: Page, server) -> None:
    login(page)
    chat_id = page.url.rstrip("/").split("/")[-1]
    token = server.manage("create-token", "--email", "demo@example.com")
    _api(server, token, "POST", f"/api/chats/{chat_id}/prompts", {"text": "sent by another process"})
    expect(page.locator(REPLY).last).to_have_text("Demo agent here. You said: sent by another process")


def test_a_scheduled_fire_streams_into_the_open_page(page: Page, server) -> None:
    login(page)
    chat_id = page.url.rstrip("/").split("/")[-1]
    token = server.manage("create-token", "--email", "demo@example.com")
    task = _api(server, token, "POST", f"/api/chats/{chat_id}/schedules", {
        "name": "standup", "prompt": "collect the news", "schedule": {"kind": "interval", "every_seconds": 3600}})
    _api(server, token, "POST", f"/api/schedules/{task['id']}/run-now")
    fired = page.locator('[data-testid=event][data-type=scheduled_prompt]').last
    expect(fired).to_contain_text('[scheduled task "standup", fire 1/∞]')
    expect(page.locator(REPLY).last).to_have_text(
        'Demo agent here. Scheduled task "standup", fire 1/∞. You said: collect the news')
    _api(server, token, "DELETE", f"/api/schedules/{task['id']}")


def test_a_prompt_while_the_agent_works_is_refused_visibly(page: Page) -> None:
    login(page)
    page.get_by_test_id("composer-input").fill("/sleep 3")
    page.get_by_test_id("composer-send").click()
    expect(page.get_by_test_id("agent-working")).to_be_visible()
    # Send is not offered while the agent works (SPEC §16); Enter in the composer is still refused visibly.
    expect(page.get_by_test_id("composer-send")).to_be_disabled()
    page.get_by_test_id("composer-input").fill("are you there?")
    page.get_by_test_id("composer-input").press("Enter")
    expect(page.get_by_test_id("composer-error")).to_contain_text("still working")
    expect(page.get_by_test_id("composer-input")).to_have_value("are you there?")
    expect(page.get_by_test_id("agent-working")).to_be_hidden(timeout=15_000)


def test_new_chat_and_logout(page: Page) -> None:
    login(page)
    before = page.get_by_test_id("chat-item").count()
    first_url = page.url
    page.get_by_test_id("new-chat").first.click()
    page.wait_for_url(lambda url: "/chat/" in url and url != first_url)
    expect(page.get_by_test_id("chat-title")).to_have_text("New chat")
    expect(page.get_by_test_id("chat-item")).to_have_count(before + 1)
    page.get_by_test_id("logout").click()
    page.wait_for_url("**/login**")
    page.goto("/")
    page.wait_for_url("**/login**")
