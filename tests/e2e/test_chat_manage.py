"""Managing chats in the page (SPEC §16, issue point 6), in Chromium at 1280 × 800 and 390 × 844:
a new project from `project-new`, `chat-rename`, a new chat titled by its first message, the open
chat's `aria-current="page"` and highlight, and `composer-stop` for a long demo turn while Send is
not offered (with its reason).

Every wait is on a condition in the page; nothing sleeps as an assertion.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tests.e2e.conftest import DEMO_EMAIL, login, reveal_sidebar

pytestmark = pytest.mark.e2e
SIZES = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
BUSY_REASON = "The agent is working — stop it or wait"


@pytest.fixture(params=sorted(SIZES))
def sized(request: pytest.FixtureRequest, browser: Browser, server) -> Iterator[Page]:
    context = browser.new_context(base_url=server.url, viewport=SIZES[request.param])
    page = context.new_page()
    try:
        yield page
    finally:
        context.close()


def _sidebar(page: Page) -> None:
    """Make the sidebar's controls reachable: on a narrow screen it may sit behind `sidebar-toggle`."""
    reveal_sidebar(page)  # by the toggle's state: a sheet still sliding shut looks visible
    expect(page.get_by_test_id("new-chat").first).to_be_visible()


def _new_chat(page: Page) -> int:
    login(page)
    first = page.url
    _sidebar(page)
    page.get_by_test_id("new-chat").first.click()
    page.wait_for_url(lambda url: "/chat/" in url and url != first)
    expect(page.get_by_test_id("chat-title")).to_have_text("New chat")
    return int(page.url.rstrip("/").split("/")[-1])


def _item(page: Page, chat_id: int) -> Locator:
    return page.locator(f'[data-testid=chat-item][data-chat-id="{chat_id}"]')


def _send(page: Page, text: str) -> None:
    page.get_by_test_id("composer-input").fill(text)
    page.get_by_test_id("composer-send").click()


def _inside_viewport(page: Page, locator: Locator) -> None:
    box = locator.bounding_box()
    view = page.viewport_size
    assert box is not None and view is not None
    assert box["x"] >= 0 and box["y"] >= 0, box
    assert box["x"] + box["width"] <= view["width"] + 0.5 and box["y"] + box["height"] <= view["height"] + 0.5, box


def _apart(page: Page, controls: list[Locator]) -> None:
    """No two of these controls overlap."""
    boxes = [c.bounding_box() for c in controls]
    assert all(boxes), boxes
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert (a["x"] + a["width"] <= b["x"] + 0.5 or b["x"] + b["width"] <= a["x"] + 0.5
                    or a["y"] + a["height"] <= b["y"] + 0.5 or b["y"] + b["height"] <= a["y"] + 0.5), (a, b)


def _phone_layout_or_wide(page: Page) -> bool:
    """Whether the main column has the screen's width to offer: a wide screen, or a narrow one whose
    sidebar collapses behind `sidebar-toggle` (the frame's part of SPEC §16, measured by its own tests)."""
    view = page.viewport_size
    return bool(view and view["width"] >= 768) or page.get_by_test_id("sidebar-toggle").count() > 0


def test_a_project_is_created_in_the_page_and_shows_in_the_sidebar(sized: Page) -> None:
    login(sized)
    _sidebar(sized)
    sized.get_by_test_id("project-new").click()
    name_field = sized.get_by_test_id("project-new-name")
    expect(name_field).to_be_focused()
    sized.get_by_test_id("project-new-submit").click()
    expect(sized.get_by_test_id("project-new-error")).to_have_text("The name must not be empty.")
    _inside_viewport(sized, sized.get_by_test_id("project-new-submit"))
    name = f"Garden {secrets.token_hex(3)}"
    name_field.fill(f"  {name}  ")
    sized.get_by_test_id("project-new-submit").click()
    expect(sized.get_by_test_id("project-new-name")).to_be_hidden()
    _sidebar(sized)
    project = sized.get_by_test_id("project-item").filter(has_text=name)
    expect(project).to_have_count(1)
    project.get_by_test_id("new-chat").click()  # its creator is a member: a chat can be opened in it
    expect(sized.get_by_test_id("chat-title")).to_have_text("New chat")


def test_a_chat_is_renamed_with_errors_inline_and_the_name_kept(sized: Page) -> None:
    chat_id = _new_chat(sized)
    sized.get_by_test_id("chat-rename").click()
    field = sized.get_by_test_id("chat-rename-input")
    expect(field).to_have_value("New chat")
    field.fill("   ")
    sized.get_by_test_id("chat-rename-save").click()
    expect(sized.get_by_test_id("chat-rename-error")).to_have_text("The name must not be empty.")
    _inside_viewport(sized, sized.get_by_test_id("chat-rename-save"))
    name = f"Holiday plans {secrets.token_hex(2)}"
    field.fill(name)
    field.press("Enter")
    expect(sized.get_by_test_id("chat-title")).to_have_text(name)
    expect(sized.get_by_test_id("chat-rename-error")).to_be_hidden()
    expect(_item(sized, chat_id)).to_have_text(name)
    _send(sized, "a first message does not rename a renamed chat")
    expect(sized.get_by_test_id("composer-send")).to_be_enabled(timeout=15_000)
    sized.reload()
    expect(sized.get_by_test_id("chat-title")).to_have_text(name)


def test_a_new_chat_takes_its_title_from_its_first_message(sized: Page) -> None:
    chat_id = _new_chat(sized)
    _send(sized, "Plan the spring garden\nwith tomatoes and beans")
    expect(sized.get_by_test_id("chat-title")).to_have_text("Plan the spring garden")
    expect(_item(sized, chat_id)).to_have_text("Plan the spring garden")
    expect(sized.get_by_test_id("composer-send")).to_be_enabled(timeout=15_000)
    _send(sized, "a second message changes nothing")
    expect(sized.locator("[data-testid=event][data-type=prompt]")).to_have_count(2)
    expect(sized.get_by_test_id("chat-title")).to_have_text("Plan the spring garden")


def test_the_open_chat_is_marked_current_and_highlighted(sized: Page) -> None:
    chat_id = _new_chat(sized)
    _sidebar(sized)
    current = _item(sized, chat_id)
    expect(current).to_have_attribute("aria-current", "page")
    expect(sized.locator('[data-testid=chat-item][aria-current="page"]')).to_have_count(1)
    other = sized.locator('[data-testid=chat-item]:not([aria-current="page"])').first
    background = "el => getComputedStyle(el).backgroundColor"
    assert current.evaluate(background) != other.evaluate(background)
    other_id = int(other.get_attribute("data-chat-id") or 0)
    other.click()
    sized.wait_for_url(f"**/chat/{other_id}")
    _sidebar(sized)
    expect(_item(sized, other_id)).to_have_attribute("aria-current", "page")
    expect(_item(sized, chat_id)).not_to_have_attribute("aria-current", "page")


def test_a_long_turn_is_stopped_and_send_waits_for_it_with_its_reason(sized: Page) -> None:
    _new_chat(sized)
    send = sized.get_by_test_id("composer-send")
    expect(send).to_be_enabled()
    expect(sized.get_by_test_id("composer-stop")).to_have_count(0)
    _send(sized, "/sleep 60")
    expect(send).to_be_disabled()
    expect(sized.get_by_test_id("composer-busy")).to_have_text(BUSY_REASON)
    expect(send).to_have_attribute("title", BUSY_REASON)
    stop = sized.get_by_test_id("composer-stop")
    expect(stop).to_be_visible()
    _apart(sized, [stop, send, sized.get_by_test_id("composer-input")])
    if _phone_layout_or_wide(sized):
        for control in (stop, send, sized.get_by_test_id("composer-busy")):
            _inside_viewport(sized, control)
    stop.click()
    error = sized.locator("[data-testid=event][data-type=error]")
    expect(error).to_contain_text(f"stopped by {DEMO_EMAIL}", timeout=10_000)
    expect(send).to_be_enabled()
    expect(sized.get_by_test_id("composer-busy")).to_be_hidden()
    expect(stop).to_have_count(0)
    _send(sized, "hello again")  # the chat is free: the next turn runs
    expect(sized.locator("[data-testid=event][data-type=assistant_text]").last).to_have_text(
        "Demo agent here. You said: hello again", timeout=15_000)
