"""The Schedules drawer in Debian's Chromium: an agent's draft armed, fired, paused, edited and
deleted by a user, every change seen live by a second browser; the dialog's inline validation;
refusals shown in the drawer; keyboard and screen-reader basics.

Set CHATCRON_UPDATE_SCREENSHOTS=1 to refresh docs/screenshots/ from ``test_drawer_screenshots``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, Locator, Page, expect

from app.core import auth, chats
from app.core.config import load_settings
from app.wiring import build_core
from tests.e2e.conftest import ROOT, login

pytestmark = pytest.mark.e2e
ZONE = "Europe/Paris"
VIEWPORT = {"width": 1280, "height": 800}
OVERLAY_VIEWPORT = {"width": 1000, "height": 800}  # narrower than 1100 px the drawer overlays the chat
FIRE = 20_000  # ms: a fire is claimed within 250 ms; the demo reply streams for a second or two
DRAWER_ANIMATION_MS = 600  # vaul slides the drawer in; screenshots wait for it to settle


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict) -> dict:
    return {**browser_context_args, "viewport": VIEWPORT, "timezone_id": ZONE}


def _new_chat(page: Page) -> str:
    """A fresh project chat (its own transcript and schedules); returns its URL."""
    login(page)
    first = page.url
    page.get_by_test_id("new-chat").first.click()
    page.wait_for_url(lambda url: "/chat/" in url and url != first)
    expect(page.get_by_test_id("chat-title")).to_have_text("New chat")
    return page.url


def _second_tab(page: Page, context: BrowserContext) -> Page:
    other = context.browser.new_context(base_url=page.url.split("/chat/")[0], viewport=VIEWPORT, timezone_id=ZONE)
    second = other.new_page()
    login(second)
    second.goto(page.url)
    expect(second.get_by_test_id("chat-title")).to_have_text("New chat")
    return second


def _open_drawer(page: Page) -> Locator:
    page.get_by_test_id("schedules-button").click()
    drawer = page.get_by_test_id("schedules-drawer")
    expect(drawer).to_be_visible()
    expect(page.get_by_test_id("schedules-timeline")).to_be_visible()
    return drawer


def _row(page: Page, task_id: str) -> Locator:
    return page.locator(f'[data-testid=schedule-row][data-schedule-id="{task_id}"]')


def _send(page: Page, text: str) -> None:
    page.get_by_test_id("composer-input").fill(text)
    page.get_by_test_id("composer-send").click()


def _expect_status(pages: list[Page], task_id: str, status: str) -> None:
    for p in pages:
        expect(_row(p, task_id)).to_have_attribute("data-status", status, timeout=FIRE)
        expect(_row(p, task_id).get_by_test_id("schedule-status")).to_have_text(status)


def _api(server, token: str, method: str, path: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        f"{server.url}{path}", data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"}, method=method,
    )
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read() or b"{}")


def _shot(page: Page, tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    page.screenshot(path=str(path))
    if os.environ.get("CHATCRON_UPDATE_SCREENSHOTS"):
        target = ROOT / "docs" / "screenshots" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)


def test_drawer_screenshots(page: Page, server, tmp_path: Path) -> None:
    """A lived-in chat: an agent's draft, an armed cron, a fired interval task, a failing one.
    (First in this module, so the sidebar is not yet full of other tests' chats.)"""
    url = _new_chat(page)
    chat_id = url.rstrip("/").split("/")[-1]
    token = server.manage("create-token", "--email", "demo@example.com")
    _api(server, token, "PATCH", f"/api/chats/{chat_id}", {"title": "Team updates"})
    page.reload()
    expect(page.get_by_test_id("chat-title")).to_have_text("Team updates")
    page.get_by_test_id("skill-scheduled-tasks").click()
    _send(page, '/schedule --name "release notes" --cron "0 17 * * 5" --tz "Europe/Paris" '
                '--prompt "draft the weekly release notes from merged PRs"')
    expect(page.locator("[data-testid=event][data-type=assistant_text]").last).to_contain_text(
        "Demo agent here.", timeout=FIRE)
    deploy = _api(server, token, "POST", f"/api/chats/{chat_id}/schedules", {
        "name": "deploy watch", "prompt": "check the canary deploy\n/fail", "overlap": "skip",
        "schedule": {"kind": "interval", "every_seconds": 6 * 3600}})
    standup = _api(server, token, "POST", f"/api/chats/{chat_id}/schedules", {
        "name": "standup", "prompt": "collect the news", "max_runs": 12,
        "schedule": {"kind": "interval", "every_seconds": 3 * 3600}})
    _api(server, token, "POST", f"/api/chats/{chat_id}/schedules", {
        "name": "morning digest", "prompt": "Summarise overnight alerts and open PRs.",
        "schedule": {"kind": "cron", "cron": "0 9 * * 1-5", "timezone": ZONE}})
    _api(server, token, "POST", f"/api/schedules/{standup['id']}/run-now")
    expect(page.locator("[data-testid=event][data-type=assistant_text]").last).to_contain_text(
        'fire 1/12', timeout=FIRE)
    _api(server, token, "POST", f"/api/schedules/{deploy['id']}/run-now")
    _open_drawer(page)
    expect(_row(page, str(deploy["id"])).get_by_test_id("schedule-last-error")).to_be_visible(timeout=FIRE)
    _row(page, str(standup["id"])).get_by_test_id("schedule-history-toggle").click()
    expect(_row(page, str(standup["id"])).get_by_test_id("schedule-run")).to_have_count(1)
    page.mouse.move(0, 0)
    page.wait_for_timeout(DRAWER_ANIMATION_MS)
    _shot(page, tmp_path, "drawer.png")

    _row(page, str(standup["id"])).get_by_test_id("schedule-edit").click()
    page.get_by_test_id("schedule-form-kind").get_by_role("radio", name="Cron").click()
    page.get_by_test_id("schedule-form-cron").fill("30 9 * * 1-5")
    expect(page.get_by_test_id("schedule-form-preview")).to_contain_text("At 09:30, Monday through Friday")
    page.wait_for_timeout(DRAWER_ANIMATION_MS)
    _shot(page, tmp_path, "dialog.png")
    page.keyboard.press("Escape")  # the dialog holds a change: it asks first
    page.get_by_test_id("schedule-discard").click()
    expect(page.get_by_test_id("schedule-form")).to_be_hidden()
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("schedules-drawer")).to_be_hidden()
    page.wait_for_timeout(DRAWER_ANIMATION_MS)
    _shot(page, tmp_path, "chat.png")


def test_agent_draft_is_armed_fired_paused_edited_and_deleted_live_in_two_tabs(
        page: Page, context: BrowserContext) -> None:
    _new_chat(page)
    second = _second_tab(page, context)
    _open_drawer(second)
    expect(second.get_by_test_id("schedules-empty")).to_be_visible()

    # The agent proposes a schedule through the real remote-schedule CLI; it arrives as a draft.
    page.get_by_test_id("skill-scheduled-tasks").click()
    expect(page.get_by_test_id("skill-scheduled-tasks")).to_have_attribute("data-state", "checked")
    _send(page, '/schedule --name "standup" --every 3600 --prompt "collect the news"')
    expect(second.get_by_test_id("schedule-row")).to_have_count(1, timeout=FIRE)
    _open_drawer(page)
    row = page.get_by_test_id("schedule-row")
    expect(row).to_have_count(1)
    task_id = row.get_attribute("data-schedule-id") or ""
    _expect_status([page, second], task_id, "draft")
    row = _row(page, task_id)
    expect(row.get_by_test_id("schedule-name")).to_have_text("standup")
    expect(row.get_by_test_id("schedule-owner")).to_have_text("demo@example.com")
    expect(row).to_contain_text("agent")
    expect(row.get_by_test_id("schedule-pause")).to_have_count(0)
    expect(row.get_by_test_id("schedule-resume")).to_have_count(0)
    expect(row.get_by_test_id("schedule-run-now")).to_be_disabled()
    expect(row.get_by_test_id("schedule-next-run")).to_have_text("—")

    # Arm: the next run counts down in the viewer's zone; the timeline shows the week's fires.
    row.get_by_test_id("schedule-arm").click()
    _expect_status([page, second], task_id, "active")
    expect(row.get_by_test_id("schedule-arm")).to_have_count(0)
    next_run = row.get_by_test_id("schedule-next-run")
    expect(next_run).to_have_text(re.compile(r"^in (59 min|1 h)\s*· \w{3} \d\d:\d\d$"))  # and its wall time
    expect(next_run).to_have_attribute("title", re.compile(rf"\({ZONE}\)$"))
    # hourly: 168 fires a week, aggregated per day (a band with its count) rather than 168 dots
    expect(second.get_by_test_id("timeline-band").first).to_have_attribute("aria-label", re.compile(r"^standup · "))

    # Run now: the fire streams into both transcripts and the row's last run updates live.
    row.get_by_test_id("schedule-run-now").click()
    for p in (page, second):
        fired = p.locator("[data-testid=event][data-type=scheduled_prompt]").last
        expect(fired.get_by_test_id("scheduled-header")).to_have_text(re.compile(r"Scheduled task standup\s*fire 1/∞"),
                                                                       timeout=FIRE)
        expect(fired).to_contain_text('[scheduled task "standup", fire 1/∞]')  # the folded envelope
        expect(p.locator("[data-testid=event][data-type=assistant_text]").last).to_have_text(
            'Demo agent here. Scheduled task "standup", fire 1/∞. You said: collect the news', timeout=FIRE)
        last = _row(p, task_id).get_by_test_id("schedule-last-run")
        expect(last).to_contain_text("succeeded", timeout=FIRE)
        expect(last).to_contain_text(re.compile(r"(now|\d+ s ago)"))
        expect(_row(p, task_id).get_by_test_id("schedule-run-count")).to_have_text("1 / ∞")

    # History: a fire links to its turn in the transcript.
    row.get_by_test_id("schedule-history-toggle").click()
    fire = row.get_by_test_id("schedule-run")
    expect(fire).to_have_count(1)
    expect(fire).to_have_attribute("data-status", "succeeded")
    expect(fire).to_contain_text("run now")
    run_id = fire.get_attribute("data-run-id")
    assert run_id, "a fire that started a turn names its chat run"
    fire.click()
    expect(page.locator(f'[data-testid=event][data-type=scheduled_prompt][data-run-id="{run_id}"]')).to_be_in_viewport()

    row.get_by_test_id("schedule-pause").click()
    _expect_status([page, second], task_id, "paused")
    expect(row.get_by_test_id("schedule-next-run")).to_have_text("—")
    row.get_by_test_id("schedule-resume").click()
    _expect_status([page, second], task_id, "active")

    # Edit into a cron schedule: the preview follows the typing, in the task's zone.
    row.get_by_test_id("schedule-edit").click()
    expect(page.get_by_test_id("schedule-form-name")).to_have_value("standup")
    expect(page.get_by_test_id("schedule-form-every")).to_have_value("1")
    expect(page.get_by_test_id("schedule-form-every-unit")).to_have_value("hours")
    preview = page.get_by_test_id("schedule-form-preview")
    expect(preview).to_contain_text("Every hour")
    page.get_by_test_id("schedule-form-kind").get_by_role("radio", name="Cron").click()
    expect(page.get_by_test_id("schedule-form-timezone")).to_have_value(ZONE)
    page.get_by_test_id("schedule-form-cron").fill("*/5 * * * *")
    expect(preview).to_contain_text(f"Every 5 minutes ({ZONE} time)")
    fires = page.get_by_test_id("schedule-form-fire")
    expect(fires).to_have_count(5)
    minutes = [int(re.search(r"\d\d:(\d\d)", text).group(1)) for text in fires.all_text_contents()]
    assert all(m % 5 == 0 for m in minutes) and len(set(minutes)) == 5, minutes
    page.get_by_test_id("schedule-form-save").click()
    expect(page.get_by_test_id("schedule-form")).to_be_hidden()
    for p in (page, second):
        expect(_row(p, task_id).get_by_test_id("schedule-when")).to_have_text(f"Every 5 minutes ({ZONE} time)")
        expect(_row(p, task_id).get_by_test_id("schedule-next-run")).to_have_text(
            re.compile(r"^(now|in \d+ s|in [0-5] min)\s*· \w{3} \d\d:\d\d$"))

    # Delete, after a confirmation.
    row.get_by_test_id("schedule-delete").click()
    page.get_by_test_id("schedule-delete-cancel").click()
    expect(row).to_be_visible()
    row.get_by_test_id("schedule-delete").click()
    expect(page.get_by_role("alertdialog")).to_contain_text("Delete “standup”?")
    page.get_by_test_id("schedule-delete-confirm").click()
    for p in (page, second):
        expect(p.get_by_test_id("schedule-row")).to_have_count(0)
        expect(p.get_by_test_id("schedules-empty")).to_be_visible()
    second.context.close()


def _fill_form(page: Page, name: str, prompt: str) -> None:
    page.get_by_test_id("schedules-new").click()
    expect(page.get_by_test_id("schedule-form")).to_be_visible()
    page.get_by_test_id("schedule-form-name").fill(name)
    page.get_by_test_id("schedule-form-prompt").fill(prompt)


def _expect_error(page: Page, field: str, text: str, input_id: str) -> None:
    expect(page.get_by_test_id("schedule-form-error")).to_contain_text(f"{field}: ")
    expect(page.get_by_test_id("schedule-form-error")).to_contain_text(text)
    expect(page.get_by_test_id("schedule-form-save")).to_be_disabled()
    expect(page.get_by_test_id(input_id)).to_have_attribute("aria-invalid", "true")


def test_form_errors_are_inline_name_the_field_and_block_save(page: Page) -> None:
    _new_chat(page)
    _open_drawer(page)
    _fill_form(page, "nightly", "tidy the backlog")
    page.get_by_test_id("schedule-form-kind").get_by_role("radio", name="Cron").click()
    save = page.get_by_test_id("schedule-form-save")
    expect(save).to_be_enabled()

    page.get_by_test_id("schedule-form-cron").fill("61 * * * *")
    _expect_error(page, "Cron expression", "61 is out of range", "schedule-form-cron")
    expect(page.get_by_test_id("schedule-form-fire")).to_have_count(0)
    page.get_by_test_id("schedule-form-cron").fill("30 2 * * *")
    expect(page.get_by_test_id("schedule-form-error")).to_be_hidden()
    expect(save).to_be_enabled()

    page.get_by_test_id("schedule-form-timezone").fill("Mars/Olympus_Mons")
    _expect_error(page, "Time zone", "Mars/Olympus_Mons", "schedule-form-timezone")
    page.get_by_test_id("schedule-form-timezone").fill("Asia/Tokyo")
    expect(page.get_by_test_id("schedule-form-preview")).to_contain_text("At 02:30 (Asia/Tokyo time)")
    expect(save).to_be_enabled()

    page.get_by_test_id("schedule-form-kind").get_by_role("radio", name="Interval").click()
    page.get_by_test_id("schedule-form-every-unit").select_option("seconds")
    page.get_by_test_id("schedule-form-every").fill("30")
    _expect_error(page, "Interval", "must be at least 1 minute", "schedule-form-every")
    page.get_by_test_id("schedule-form-every").fill("900")
    page.get_by_test_id("schedule-form-name").fill("")
    _expect_error(page, "Name", "must not be empty", "schedule-form-name")
    page.get_by_test_id("schedule-form-name").fill("nightly")
    expect(save).to_be_enabled()
    save.click()
    expect(page.get_by_test_id("schedule-row")).to_have_count(1)
    expect(page.get_by_test_id("schedule-row")).to_have_attribute("data-status", "active")
    expect(page.get_by_test_id("schedule-when")).to_have_text("Every 15 minutes")


def test_a_refused_action_is_explained_in_the_drawer(page: Page) -> None:
    _new_chat(page)
    _open_drawer(page)
    _fill_form(page, "one shot", "say hello once")
    page.get_by_test_id("schedule-form-max-runs").fill("1")
    expect(page.get_by_test_id("schedule-form-save")).to_be_enabled()
    page.get_by_test_id("schedule-form-save").click()
    row = page.get_by_test_id("schedule-row")
    expect(row).to_have_attribute("data-status", "active")
    row.get_by_test_id("schedule-run-now").click()
    expect(row).to_have_attribute("data-status", "exhausted", timeout=FIRE)
    expect(row.get_by_test_id("schedule-run-count")).to_have_text("1 / 1")
    expect(page.get_by_test_id("schedules-notice")).to_be_hidden()
    row.get_by_test_id("schedule-resume").click()  # the rules allow resuming exhausted tasks with runs left
    expect(page.get_by_test_id("schedules-notice")).to_contain_text("it has used all 1 runs; raise max_runs first")
    expect(row).to_have_attribute("data-status", "exhausted")


def _focus_inside(page: Page, testid: str) -> bool:
    return page.evaluate(
        "id => !!document.activeElement && !!document.activeElement.closest(`[data-testid=\"${id}\"]`)", testid)


def _unnamed_buttons(page: Page, testid: str) -> list[str]:
    return page.evaluate("""id => [...document.querySelectorAll(`[data-testid="${id}"] button`)]
        .filter(b => !(b.getAttribute('aria-label') || b.textContent.trim()))
        .map(b => b.outerHTML.slice(0, 120))""", testid)


def test_drawer_and_dialog_trap_focus_close_on_escape_and_name_their_buttons(page: Page) -> None:
    page.set_viewport_size(OVERLAY_VIEWPORT)  # at 1100 px and wider the drawer sits beside the chat: no trap
    _new_chat(page)
    _open_drawer(page)
    _fill_form(page, "keyboard", "only keys")
    page.get_by_test_id("schedule-form-save").click()
    expect(page.get_by_test_id("schedule-row")).to_have_count(1)
    page.get_by_test_id("schedule-history-toggle").click()
    assert _unnamed_buttons(page, "schedules-drawer") == []
    for _ in range(25):
        page.keyboard.press("Tab")
        assert _focus_inside(page, "schedules-drawer")

    page.get_by_test_id("schedule-edit").click()
    expect(page.get_by_test_id("schedule-form")).to_be_visible()
    assert _unnamed_buttons(page, "schedule-form") == []
    for _ in range(25):
        page.keyboard.press("Tab")
        assert _focus_inside(page, "schedule-form")
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("schedule-form")).to_be_hidden()
    expect(page.get_by_test_id("schedules-drawer")).to_be_visible()  # Escape closes only the top layer
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("schedules-drawer")).to_be_hidden()
    expect(page.get_by_test_id("schedules-button")).to_be_focused()


def test_loose_chats_have_no_schedules_button(page: Page, server) -> None:
    core = build_core(load_settings(server.env))
    user = auth.find_user(core.db, "demo@example.com")
    loose = chats.create_chat(core.db, core.clock, user, None, "Loose notes")
    login(page)
    expect(page.get_by_test_id("schedules-button")).to_be_visible()
    page.goto(f"/chat/{loose.id}")
    expect(page.get_by_test_id("chat-title")).to_have_text("Loose notes")
    expect(page.get_by_test_id("skill-scheduled-tasks")).to_have_count(0)
    expect(page.get_by_test_id("schedules-button")).to_have_count(0)


def test_the_drawer_follows_the_chat_it_belongs_to(page: Page) -> None:
    url = _new_chat(page)
    _open_drawer(page)
    _fill_form(page, "only here", "belongs to one chat")
    page.get_by_test_id("schedule-form-save").click()
    expect(page.get_by_test_id("schedule-row")).to_have_count(1)
    expect(page.get_by_test_id("schedule-form")).to_be_hidden()
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("schedules-drawer")).to_be_hidden()

    page.locator('[data-testid=chat-item]', has_text="Demo chat").click()  # client-side navigation
    expect(page.get_by_test_id("chat-title")).to_have_text("Demo chat")
    _open_drawer(page)
    expect(page.get_by_test_id("schedules-timeline")).to_be_visible()
    expect(page.get_by_test_id("schedule-name").filter(has_text="only here")).to_have_count(0)

    page.go_back()  # with the drawer open: the new page load closes it and watches the other chat
    page.wait_for_url(url)
    expect(page.get_by_test_id("chat-title")).to_have_text("New chat")
    expect(page.get_by_test_id("schedules-drawer")).to_be_hidden()
    _open_drawer(page)
    expect(page.get_by_test_id("schedule-name")).to_have_text(["only here"])
