"""The inbox in Debian's Chromium (SPEC §13): an agent's draft armed from the inbox, a fire that
finishes while the page is open shows in the feed and the sidebar's counts without a reload,
"Mark all read", and the "New since your last visit" divider in a chat. Screenshots go to the temporary folder."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from app.attention import approvals
from app.core import attention_events as attention
from app.core import auth
from app.core.attention_tables import AttentionKind
from app.core.config import load_settings
from app.wiring import build_core
from tests.e2e.conftest import Server, api, login, reveal_sidebar

pytestmark = pytest.mark.e2e
FIRE = 20_000  # ms: a fire is claimed within 250 ms; the demo reply streams for a second or two
WIDE = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
SHOTS = Path(tempfile.gettempdir())  # screenshots to look at after a run


def _chat_with_draft(server: Server, token: str, name: str) -> tuple[int, int]:
    """A project chat whose agent proposed an hourly schedule (a draft): (chat id, task id)."""
    project = api(server, token, "GET", "/api/projects")["projects"][0]["id"]
    chat = api(server, token, "POST", f"/api/projects/{project}/chats", {"title": f"inbox {name}"})["id"]
    api(server, token, "PATCH", f"/api/chats/{chat}", {"skills": ["scheduled-tasks"]})
    api(server, token, "POST", f"/api/chats/{chat}/prompts",
        {"text": f'/schedule --name "{name}" --every 3600 --prompt "collect the news"'})
    deadline = time.monotonic() + FIRE / 1000
    while time.monotonic() < deadline:
        drafts = [d for d in api(server, token, "GET", "/api/inbox")["drafts"] if d["chat_id"] == chat]
        if drafts:
            return chat, drafts[0]["id"]
        time.sleep(0.2)
    raise AssertionError("the agent's draft never reached the inbox")


def _approval_item(server: Server, token: str, approval_id: int) -> int:
    """The id of the feed item that asked for this approval."""
    items = api(server, token, "GET", "/api/inbox")["items"]
    return next(i["id"] for i in items if i["kind"] == "approval.requested" and i["approval_id"] == approval_id)


def _badge(page: Page, chat_id: int):
    return page.locator(f'[data-testid="chat-item"][data-chat-id="{chat_id}"] [data-testid="chat-unread"]')


def test_a_draft_is_armed_and_a_fire_shows_live_then_is_marked_read(page: Page, server: Server,
                                                                    token: str) -> None:
    page.set_viewport_size(WIDE)
    chat, task = _chat_with_draft(server, token, "inbox-standup")
    login(page)
    page.get_by_test_id("nav-inbox").click()
    page.wait_for_url("**/inbox")
    draft = page.locator(f'[data-testid="inbox-draft"][data-task-id="{task}"]')
    expect(draft).to_contain_text("inbox-standup")
    # what Arm would start is read before arming: the schedule and the prompt
    expect(draft.get_by_test_id("inbox-draft-when")).to_have_text("Every hour")
    expect(draft.get_by_test_id("inbox-draft-prompt")).to_have_text("collect the news")
    drafted = page.locator('[data-testid="inbox-item"][data-kind="draft.created"]').first
    expect(drafted).to_be_visible()
    expect(drafted.get_by_test_id("inbox-item-label")).to_have_text("Draft to arm")
    page.screenshot(path=SHOTS / "inbox-draft-1280.png", full_page=True)

    draft.get_by_test_id("inbox-arm").click()
    expect(draft).to_have_count(0)
    expect(page.get_by_test_id("inbox-armed")).to_contain_text("Armed “inbox-standup”: first fire in 59 min")
    assert api(server, token, "GET", f"/api/schedules/{task}")["status"] == "active"
    # the draft's item no longer asks for anything
    expect(drafted).to_have_attribute("data-resolved", "armed")
    expect(drafted.get_by_test_id("inbox-item-label")).to_have_text("Draft armed")

    # Mark what is there read; then a fire finishes while the page is open.
    page.get_by_test_id("inbox-mark-read").click()
    expect(page.locator('[data-testid="inbox-item"][data-unread="true"]')).to_have_count(0)
    expect(page.get_by_test_id("inbox-unread-count")).to_have_count(0)
    api(server, token, "POST", f"/api/schedules/{task}/run-now")
    fired = page.locator('[data-testid="inbox-item"][data-kind="fire.finished"]').first
    expect(fired).to_have_attribute("data-unread", "true", timeout=FIRE)
    expect(fired).to_contain_text("inbox-standup")
    expect(fired.get_by_test_id("inbox-item-line")).to_contain_text("Demo agent here.")
    expect(fired.get_by_test_id("inbox-chat-link")).to_have_attribute("href", f"/chat/{chat}")
    expect(page.get_by_test_id("inbox-unread-count")).to_have_text("1", timeout=FIRE)
    expect(_badge(page, chat)).to_be_visible(timeout=FIRE)  # never opened in a browser: every finished turn
    page.screenshot(path=SHOTS / "inbox-live-1280.png", full_page=True)

    page.get_by_test_id("inbox-mark-read").click()
    expect(fired).to_have_attribute("data-unread", "false")
    expect(page.get_by_test_id("inbox-unread-count")).to_have_count(0)


def test_a_chat_shows_what_is_new_since_the_last_visit(page: Page, server: Server, token: str) -> None:
    page.set_viewport_size(WIDE)
    chat, task = _chat_with_draft(server, token, "divider-check")
    api(server, token, "POST", f"/api/schedules/{task}/arm")
    login(page)
    page.goto(f"/chat/{chat}")
    expect(page.locator("[data-testid=event][data-type=assistant_text]").first).to_be_visible()
    expect(page.get_by_test_id("unread-divider")).to_have_count(0)  # seen now
    page.goto("/inbox")
    expect(_badge(page, chat)).to_have_count(0)
    api(server, token, "POST", f"/api/schedules/{task}/run-now")
    expect(_badge(page, chat)).to_have_text("1", timeout=FIRE)

    page.goto(f"/chat/{chat}")
    divider = page.get_by_test_id("unread-divider")
    expect(divider).to_be_visible()
    # the divider stands right above the fire's prompt
    following = divider.locator("xpath=following-sibling::*[1]")
    expect(following).to_have_attribute("data-type", "scheduled_prompt")
    expect(_badge(page, chat)).to_have_count(0)  # the open chat is being read
    page.screenshot(path=SHOTS / "inbox-divider-1280.png", full_page=True)
    page.goto("/inbox")
    expect(page.get_by_test_id("inbox")).to_be_visible()
    expect(_badge(page, chat)).to_have_count(0)  # the visit reset it


def test_an_approval_is_answered_from_the_inbox(page: Page, server: Server, token: str) -> None:
    page.set_viewport_size(WIDE)
    project = api(server, token, "GET", "/api/projects")["projects"][0]["id"]
    chat = api(server, token, "POST", f"/api/projects/{project}/chats", {"title": "asks first"})["id"]
    core = build_core(load_settings(server.env))
    try:
        asked = approvals.create(core.db, core.clock.now(), approvals.Request(
            chat_id=chat, project_id=project, run_id=1, task_id=None, requested_for="demo@example.com",
            tool_call_id="call-1", title="Run: rm -rf build", input={"command": "rm -rf build"},
            options=[{"option_id": "yes", "name": "Allow once", "kind": "allow_once"},
                     {"option_id": "no", "name": "Reject", "kind": "reject_once"}]), 900)
        login(page)
        page.goto("/inbox")
        card = page.locator(f'[data-testid="inbox-approval"][data-approval-id="{asked.id}"]')
        expect(card).to_contain_text("Run: rm -rf build")
        expect(card.get_by_test_id("approval-option")).to_have_count(2)
        page.screenshot(path=SHOTS / "inbox-approval-1280.png", full_page=True)
        asked_item = page.locator(f'[data-testid="inbox-item"][data-kind="approval.requested"]'
                                  f'[data-item-id="{_approval_item(server, token, asked.id)}"]')
        expect(asked_item.get_by_test_id("inbox-item-label")).to_have_text("Approval asked")
        expect(asked_item.get_by_test_id("inbox-item-usage")).to_have_count(0)  # the turn's tokens are its fire's
        card.locator('[data-testid="approval-option"][data-option-id="yes"]').click()
        expect(card).to_have_count(0)
        expect(asked_item).to_have_attribute("data-resolved", "allowed")
        expect(asked_item.get_by_test_id("inbox-item-label")).to_have_text("Approval: allowed")
        answered = approvals.get(core.db, asked.id)
        assert answered is not None and (answered.state, answered.option_id, answered.decided_by) == \
            ("allowed", "yes", auth.find_user(core.db, "demo@example.com").email)
    finally:
        core.prompts.shutdown(2.0)
        core.db.dispose()


def test_older_items_page_in(page: Page, server: Server, token: str) -> None:
    page.set_viewport_size(WIDE)
    project = api(server, token, "GET", "/api/projects")["projects"][0]["id"]
    chat = api(server, token, "POST", f"/api/projects/{project}/chats", {"title": "busy feed"})["id"]
    core = build_core(load_settings(server.env))
    try:
        with core.db.write() as s:
            attention.record(s.connection(), [attention.row(
                core.clock.now(), AttentionKind.FIRE_FAILED, user_email="demo@example.com", chat_id=chat,
                project_id=project, payload={"task": {"name": f"job {n}"}, "run": {"outcome": "failed",
                                                                              "error": f"exit {n}"}})
                for n in range(40)])
    finally:
        core.prompts.shutdown(2.0)
        core.db.dispose()
    login(page)
    page.goto("/inbox")
    items = page.get_by_test_id("inbox-item")
    expect(items).to_have_count(30)  # one page
    expect(items.first).to_contain_text("job 39")
    expect(items.first).to_contain_text("exit 39")
    page.get_by_test_id("inbox-older").click()
    expect(items.nth(39)).to_contain_text("job 0")
    while page.get_by_test_id("inbox-older").count():
        page.get_by_test_id("inbox-older").click()
        page.wait_for_timeout(300)
    ids = [int(i) for i in items.evaluate_all("els => els.map(e => e.dataset.itemId)")]
    assert ids == sorted(ids, reverse=True) and len(set(ids)) == len(ids)


RECORD_NOTIFICATIONS = """
window.__notes = [];
window.Notification = class {  // the permission persists like the browser's own
  static get permission() { return localStorage.getItem("test-permission") || "default"; }
  static async requestPermission() { localStorage.setItem("test-permission", "granted"); return "granted"; }
  constructor(title, options) { window.__notes.push({title, body: (options || {}).body}); }
};
"""


def test_browser_notifications_once_turned_on(page: Page, server: Server, token: str) -> None:
    page.set_viewport_size(WIDE)
    page.add_init_script(RECORD_NOTIFICATIONS)  # the browser's Notification, recorded
    login(page)
    page.goto("/inbox")
    toggle = page.get_by_test_id("browser-notify-toggle")
    expect(toggle).to_have_attribute("data-state", "unchecked")
    toggle.click()
    expect(toggle).to_have_attribute("data-state", "checked")
    page.wait_for_function("localStorage.getItem('chatcron-notify') === 'on'")  # written after the switch is drawn
    _chat_with_draft(server, token, "notified-draft")  # drafts reach the channels whatever the task's notify
    page.wait_for_function("window.__notes.some(n => n.title.includes('notified-draft'))", timeout=FIRE)
    page.reload()  # the choice stays in this browser
    expect(page.get_by_test_id("browser-notify-toggle")).to_have_attribute("data-state", "checked")


def test_the_inbox_at_phone_width(page: Page, server: Server, token: str) -> None:
    page.set_viewport_size(PHONE)
    login(page)
    page.goto("/inbox")
    expect(page.get_by_test_id("inbox")).to_be_visible()
    toggle = page.get_by_test_id("browser-notify-toggle")
    expect(toggle).to_be_visible()
    box = toggle.bounding_box()
    assert box is not None and box["x"] + box["width"] <= PHONE["width"]
    page.screenshot(path=SHOTS / "inbox-390.png", full_page=True)
    reveal_sidebar(page)
    expect(page.get_by_test_id("nav-inbox")).to_be_visible()
    page.wait_for_timeout(600)  # the sheet slides in
    page.screenshot(path=SHOTS / "inbox-sidebar-390.png")
