"""The page on a phone and beside the Schedules drawer (SPEC §16), measured in Chromium at
1280 × 800, 1000 × 800 and 390 × 844: element boxes of the header, composer, sidebar, drawer and
drawer cards inside the viewport and not overlapping; the sidebar behind `sidebar-toggle` on a
phone; the drawer full-width on a phone, beside the transcript at 1280 (the chat stays usable)
and over it at 1000 (focus and typing stay in the drawer).

Set CHATCRON_UPDATE_SCREENSHOTS=1 to refresh docs/screenshots/phone-chat.png and phone-drawer.png.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tests.e2e.conftest import ROOT, login
from tests.e2e.conftest import api as _api

pytestmark = pytest.mark.e2e
ZONE = "Europe/Paris"
DESKTOP, NARROW, PHONE = {"width": 1280, "height": 800}, {"width": 1000, "height": 800}, {"width": 390, "height": 844}
FIRE = 20_000  # ms: a fire is claimed within 250 ms; the demo reply streams for a second or two
TITLE = "Weekly release notes and the deploy follow-ups of the platform team"
REPLY = "[data-testid=event][data-type=assistant_text]"
SWITCH_LABEL = "label:has([data-testid=skill-scheduled-tasks])"
HEADER = ["sidebar-toggle", "chat-title", SWITCH_LABEL, "schedules-button"]
CARD_PARTS = ["schedule-name", "schedule-status", "schedule-when", "schedule-next-run", "schedule-last-run",
              "schedule-run-count", "schedule-pause", "schedule-pause-options", "schedule-skip-next",
              "schedule-run-now", "schedule-owner",
              "schedule-history-toggle", "schedule-edit", "schedule-delete"]
GHOST_ICONS = {"schedule-history-toggle", "schedule-edit", "schedule-delete", "schedules-close", "sidebar-toggle"}
SETTLED_JS = """sel => [...document.querySelectorAll(sel)].every(
    el => el.getAnimations({subtree: true}).every(a => a.playState !== 'running'))"""
FOCUS_IN_JS = "sel => !!document.activeElement && !!document.activeElement.closest(sel)"


@pytest.fixture(scope="module")
def chat_url(server, token: str) -> str:
    """A project chat with a long title and two tasks, one of them fired once (every card part)."""
    project = _api(server, token, "GET", "/api/projects")["projects"][0]["id"]
    chat = _api(server, token, "POST", f"/api/projects/{project}/chats", {"title": TITLE})["id"]
    standup = _api(server, token, "POST", f"/api/chats/{chat}/schedules", {
        "name": "standup notes for the whole platform team", "prompt": "collect the news", "max_runs": 12,
        "schedule": {"kind": "interval", "every_seconds": 3 * 3600}})
    _api(server, token, "POST", f"/api/chats/{chat}/schedules", {
        "name": "morning digest", "prompt": "Summarise overnight alerts.",
        "schedule": {"kind": "cron", "cron": "0 9 * * 1-5", "timezone": ZONE}})
    _api(server, token, "POST", f"/api/schedules/{standup['id']}/run-now")
    return f"/chat/{chat}"


@pytest.fixture
def browser_page(browser: Browser, server, request: pytest.FixtureRequest) -> Iterator[Page]:
    context = browser.new_context(base_url=server.url, viewport=request.param, timezone_id=ZONE)
    page = context.new_page()
    try:
        yield page
    finally:
        context.close()


def _sized(size: dict):
    return pytest.mark.parametrize("browser_page", [size], indirect=True, ids=[f"{size['width']}x{size['height']}"])


def _open_chat(page: Page, url: str) -> None:
    login(page)
    page.goto(url)
    expect(page.get_by_test_id("chat-title")).to_have_text(TITLE)
    expect(page.locator(REPLY).filter(has_text="fire 1/12")).to_have_count(1, timeout=FIRE)


def _loc(page: Page, name: str, scope: Locator | None = None) -> Locator:
    where = scope or page
    return where.locator(name) if name[0] in ".[" or " " in name or ":" in name else where.get_by_test_id(name)


def _part(page: Page, name: str, scope: Locator | None = None) -> Locator:
    """What must show: a ghost icon button's icon (Radix pulls ghost buttons' padding into the gap)."""
    found = _loc(page, name, scope)
    return found.locator("svg").first if name in GHOST_ICONS else found


def _box(locator: Locator) -> dict:
    box = locator.bounding_box()
    assert box, f"{locator} has no box (not rendered)"
    return box


def _settle(page: Page, selector: str) -> None:
    page.wait_for_function(SETTLED_JS, arg=selector)


def _inside(box: dict, outer: dict, what: str) -> None:
    eps = 0.5
    assert (box["x"] >= outer["x"] - eps and box["y"] >= outer["y"] - eps
            and box["x"] + box["width"] <= outer["x"] + outer["width"] + eps
            and box["y"] + box["height"] <= outer["y"] + outer["height"] + eps), f"{what} {box} sticks out of {outer}"


def _intersect(a: dict, b: dict) -> bool:
    eps = 0.5
    return (a["x"] + a["width"] > b["x"] + eps and b["x"] + b["width"] > a["x"] + eps
            and a["y"] + a["height"] > b["y"] + eps and b["y"] + b["height"] > a["y"] + eps)


def _laid_out(page: Page, names: list[str], scope: Locator | None = None) -> dict[str, dict]:
    """Each named element is rendered inside the viewport (and the scope) and overlaps no other."""
    view = {"x": 0, "y": 0, **page.viewport_size}
    outer = _box(scope) if scope else view
    boxes = {name: _box(_part(page, name, scope)) for name in names}
    for name, box in boxes.items():
        _inside(box, view, f"{name} (viewport)")
        _inside(box, outer, f"{name} (container)")
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert not _intersect(boxes[a], boxes[b]), f"{a} {boxes[a]} overlaps {b} {boxes[b]}"
    return boxes


def _shot(page: Page, tmp_path: Path, name: str, publish: bool = False) -> None:
    path = tmp_path / name
    page.screenshot(path=str(path))
    if publish and os.environ.get("CHATCRON_UPDATE_SCREENSHOTS"):
        target = ROOT / "docs" / "screenshots" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)


def _open_drawer(page: Page) -> Locator:
    page.get_by_test_id("schedules-button").click()
    drawer = page.get_by_test_id("schedules-drawer")
    expect(drawer).to_be_visible()
    expect(page.get_by_test_id("schedule-row")).to_have_count(2)
    _settle(page, "[data-testid=schedules-drawer]")
    timeline = page.get_by_test_id("schedules-timeline")
    assert timeline.evaluate("el => el.scrollHeight <= el.clientHeight + 1"), "the timeline is squeezed"
    assert page.evaluate(FOCUS_IN_JS, "[data-testid=schedules-drawer]"), "the focus did not move into the drawer"
    return drawer


def _tab_stays_in(page: Page, selector: str, presses: int = 20) -> None:
    for press in range(presses):
        page.keyboard.press("Shift+Tab" if press % 5 == 4 else "Tab")
        assert page.evaluate(FOCUS_IN_JS, selector), f"Tab {press + 1} left {selector}"


def _close_with_escape(page: Page) -> None:
    """From a control without a tooltip (Escape closes an open tooltip first, as Radix layers do)."""
    page.get_by_test_id("schedules-new").focus()
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("schedules-drawer")).to_have_count(0)
    expect(page.get_by_test_id("schedules-button")).to_be_focused()


@_sized(PHONE)
def test_phone_sidebar_waits_behind_its_toggle_and_the_chat_fits(browser_page: Page, chat_url: str,
                                                                 tmp_path: Path) -> None:
    page = browser_page
    _open_chat(page, chat_url)
    sidebar = page.locator(".cc-sidebar")
    expect(sidebar).to_be_hidden()
    _laid_out(page, HEADER)
    _laid_out(page, ["composer-input", "composer-send"])
    transcript = _box(page.get_by_test_id("transcript"))
    assert transcript["x"] == 0 and transcript["width"] == PHONE["width"], f"the chat is not full-width: {transcript}"
    reply = _box(page.locator(REPLY).last)  # 'Demo agent here. Scheduled task "standup…", fire 1/12. …'
    assert reply["width"] > PHONE["width"] * 0.6, f"the reply wraps into a narrow column: {reply}"
    title = page.get_by_test_id("chat-title")
    assert title.evaluate("el => el.scrollWidth > el.clientWidth"), "the long title is expected to be shortened"
    _shot(page, tmp_path, "phone-chat.png", publish=True)

    toggle = page.get_by_test_id("sidebar-toggle")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    toggle.click()
    expect(sidebar).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    _settle(page, ".cc-sidebar")
    _laid_out(page, [".cc-sidebar"])
    assert page.evaluate(FOCUS_IN_JS, ".cc-sidebar"), "the focus did not move into the sidebar"
    _tab_stays_in(page, ".cc-sidebar", presses=8)
    _shot(page, tmp_path, "phone-sidebar.png")
    page.locator("[data-testid=chat-item]", has_text="Demo chat").first.click()
    expect(page.get_by_test_id("chat-title")).to_have_text("Demo chat")
    expect(sidebar).to_be_hidden()

    toggle.click()
    expect(sidebar).to_be_visible()
    page.keyboard.press("Escape")
    expect(sidebar).to_be_hidden()
    expect(toggle).to_be_focused()

    toggle.click()  # leaving the page from the sheet (here: logging out) leaves it closed behind
    page.get_by_test_id("logout").click()
    page.wait_for_url("**/login**")
    login(page)
    expect(page.get_by_test_id("sidebar-toggle")).to_be_visible()
    expect(sidebar).to_be_hidden()


@_sized(PHONE)
def test_phone_drawer_is_full_width_and_its_cards_fit(browser_page: Page, chat_url: str, tmp_path: Path) -> None:
    page = browser_page
    _open_chat(page, chat_url)
    drawer = _open_drawer(page)
    box = _box(drawer)
    assert (box["x"], box["width"]) == (0, PHONE["width"]), f"the drawer is not full-width: {box}"
    _laid_out(page, ["schedules-new", "schedules-refresh", "schedules-close"], drawer)
    for row in page.get_by_test_id("schedule-row").all():
        parts = [name for name in CARD_PARTS if _loc(page, name, row).count()]
        assert {"schedule-name", "schedule-status", "schedule-run-count", "schedule-delete"} <= set(parts)
        _laid_out(page, parts, row)
    _shot(page, tmp_path, "phone-drawer.png", publish=True)
    _tab_stays_in(page, "[data-testid=schedules-drawer]")
    _close_with_escape(page)


@_sized(DESKTOP)
def test_wide_drawer_sits_beside_the_chat_which_stays_usable(browser_page: Page, chat_url: str,
                                                             tmp_path: Path) -> None:
    page = browser_page
    _open_chat(page, chat_url)
    expect(page.get_by_test_id("sidebar-toggle")).to_be_hidden()
    _laid_out(page, [".cc-sidebar", "transcript", "composer-input", "composer-send"])
    _laid_out(page, HEADER[1:])
    drawer = _open_drawer(page)
    _laid_out(page, [".cc-sidebar", "transcript", "composer-input", "composer-send", "[data-testid=schedules-drawer]",
                     "schedules-button"])
    for row in page.get_by_test_id("schedule-row").all():
        _laid_out(page, [name for name in CARD_PARTS if _loc(page, name, row).count()], row)
    _shot(page, tmp_path, "desktop-drawer.png")

    # The chat stays usable: a message sent with the drawer open shows up in view, the drawer stays.
    page.get_by_test_id("composer-input").fill("typed beside the drawer\n" + "\n".join("abcdefghijklmnop"))
    page.get_by_test_id("composer-send").click()  # a tall message: the transcript now scrolls
    expect(page.locator(REPLY).last).to_contain_text("You said: typed beside the drawer", timeout=FIRE)
    expect(page.locator(REPLY).last).to_be_in_viewport()
    expect(drawer).to_be_visible()

    # Run now streams where the user sees it.
    row = page.get_by_test_id("schedule-row").filter(has_text="morning digest")
    row.get_by_test_id("schedule-run-now").click()
    fired = page.locator("[data-testid=event][data-type=scheduled_prompt]").last
    expect(fired).to_contain_text("morning digest", timeout=FIRE)
    expect(page.locator(REPLY).last).to_contain_text("You said: Summarise overnight alerts.", timeout=FIRE)
    expect(page.locator(REPLY).last).to_be_in_viewport()
    assert not _intersect(_box(page.locator(REPLY).last), _box(drawer)), "the new reply is under the drawer"

    # A fire picked in the run history is scrolled into the visible transcript; the drawer stays.
    row.get_by_test_id("schedule-history-toggle").click()
    run = row.get_by_test_id("schedule-run").first
    run_id = run.get_attribute("data-run-id")
    page.get_by_test_id("transcript").evaluate("el => { el.scrollTop = 0; }")
    run.click()
    shown = page.locator(f'[data-testid=event][data-type=scheduled_prompt][data-run-id="{run_id}"]')
    expect(shown).to_be_in_viewport()
    expect(drawer).to_be_visible()
    page.wait_for_function("() => document.querySelector('[data-testid=transcript]').scrollTop > 0")
    assert not _intersect(_box(shown), _box(drawer)), "the fire shown is under the drawer"

    _close_with_escape(page)


@_sized(NARROW)
def test_narrow_drawer_overlays_and_keeps_the_keyboard(browser_page: Page, chat_url: str, tmp_path: Path) -> None:
    page = browser_page
    _open_chat(page, chat_url)
    drawer = _open_drawer(page)
    box = _box(drawer)
    assert _intersect(box, _box(page.get_by_test_id("transcript"))), f"at 1000 px the drawer overlays: {box}"
    assert box["x"] + box["width"] == NARROW["width"], f"the drawer is not at the right edge: {box}"
    for row in page.get_by_test_id("schedule-row").all():
        _laid_out(page, [name for name in CARD_PARTS if _loc(page, name, row).count()], row)
    _shot(page, tmp_path, "narrow-drawer.png")
    _tab_stays_in(page, "[data-testid=schedules-drawer]")
    drawer.focus()  # on the drawer itself: typed keys have no control to act on, and reach nothing behind
    page.keyboard.type("hello")
    expect(page.get_by_test_id("composer-input")).to_have_value("")
    _close_with_escape(page)
    page.get_by_test_id("schedules-button").click()
    expect(drawer).to_be_visible()
    page.locator(".cc-drawer-backdrop").click(position={"x": 20, "y": 400})
    expect(drawer).to_have_count(0)

    # A fire picked in the run history is shown in the chat: the overlaying drawer steps aside.
    _open_drawer(page)
    row = page.get_by_test_id("schedule-row").filter(has_text="standup")
    row.get_by_test_id("schedule-history-toggle").click()
    fire = row.get_by_test_id("schedule-run").first
    run_id = fire.get_attribute("data-run-id")
    assert run_id, "the fire started a turn"
    page.get_by_test_id("transcript").evaluate("el => { el.scrollTop = el.scrollHeight; }")
    fire.click()
    expect(drawer).to_have_count(0)
    expect(page.locator(f'[data-testid=event][data-type=scheduled_prompt][data-run-id="{run_id}"]')).to_be_in_viewport()


@_sized(PHONE)
def test_phone_home_without_chats_offers_the_toggle_and_a_new_chat_closes_the_sheet(
        browser_page: Page, server) -> None:
    page = browser_page
    server.manage("create-user", "--email", "fresh@example.com", "--password", "fresh-password-1")
    server.manage("create-project", "--name", "Empty project", "--owner", "fresh@example.com")
    page.goto("/login")
    page.get_by_test_id("login-email").fill("fresh@example.com")
    page.get_by_test_id("login-password").fill("fresh-password-1")
    page.get_by_test_id("login-submit").click()
    expect(page.get_by_role("heading", name="Pick a chat")).to_be_visible()
    sidebar = page.locator(".cc-sidebar")
    expect(sidebar).to_be_hidden()
    _laid_out(page, ["sidebar-toggle"])
    page.get_by_test_id("sidebar-toggle").click()
    expect(sidebar).to_be_visible()
    page.get_by_test_id("new-chat").click()
    page.wait_for_url("**/chat/**")
    expect(page.get_by_test_id("chat-title")).to_have_text("New chat")
    expect(sidebar).to_be_hidden()
    _laid_out(page, HEADER)
