"""The schedule dialog as a person meets it (issue 15, point 7), at 1280 × 800 and 390 × 844:
errors that name their field once, a past date in the zone it was typed in, the interval floor
in minutes with a unit selector, no preview rows beside a schedule error, the spring-forward note,
the reason Create is disabled, "Discard changes?" before losing typing, and after Create a
confirmation with the new card in view inside the drawer.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.conftest import login, reveal_sidebar

pytestmark = pytest.mark.e2e
ZONE = "Europe/Paris"
SIZES = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


@pytest.fixture(params=list(SIZES))
def sized(request: pytest.FixtureRequest, browser: Browser, base_url: str) -> Iterator[Page]:
    context = browser.new_context(base_url=base_url, viewport=SIZES[request.param], timezone_id=ZONE)
    page = context.new_page()
    yield page
    context.close()


def _new_chat(page: Page) -> str:
    """Log in, open a fresh project chat and its drawer; returns the chat id."""
    login(page)
    first = page.url
    reveal_sidebar(page)
    page.get_by_test_id("new-chat").first.click()
    page.wait_for_url(lambda url: "/chat/" in url and url != first)
    expect(page.get_by_test_id("chat-title")).to_have_text("New chat")
    return page.url.rstrip("/").split("/")[-1]


def _open_drawer(page: Page) -> None:
    page.get_by_test_id("schedules-button").click()
    expect(page.get_by_test_id("schedules-drawer")).to_be_visible(timeout=15_000)


def _open_dialog(page: Page, name: str = "", prompt: str = "") -> None:
    page.get_by_test_id("schedules-new").click()
    expect(page.get_by_test_id("schedule-form")).to_be_visible()
    if name:
        page.get_by_test_id("schedule-form-name").fill(name)
    if prompt:
        page.get_by_test_id("schedule-form-prompt").fill(prompt)


def _kind(page: Page, label: str) -> None:
    page.get_by_test_id("schedule-form-kind").get_by_role("radio", name=label).click()


def _error(page: Page) -> object:
    return page.get_by_test_id("schedule-form-error")


def test_a_cron_error_names_its_field_once_and_hides_the_preview_rows(sized: Page) -> None:
    page = sized
    _new_chat(page)
    _open_drawer(page)
    _open_dialog(page, "weekdays", "say good morning")
    _kind(page, "Cron")
    expect(page.get_by_test_id("schedule-form-fire")).to_have_count(5)
    page.get_by_test_id("schedule-form-cron").fill("0 9 * *")
    expect(_error(page)).to_contain_text("Cron expression: expected 5 fields")
    assert _error(page).inner_text().count("expression") == 1, _error(page).inner_text()
    expect(page.get_by_test_id("schedule-form-fire")).to_have_count(0)
    expect(page.get_by_test_id("schedule-form-cron")).to_have_attribute("aria-invalid", "true")


def test_a_past_date_is_told_in_the_zone_it_was_typed_in(sized: Page) -> None:
    page = sized
    _new_chat(page)
    _open_drawer(page)
    _open_dialog(page, "reminder", "the dentist")
    _kind(page, "Once")
    page.get_by_test_id("schedule-form-timezone").fill("America/New_York")
    page.get_by_test_id("schedule-form-at").fill("2020-03-01T09:00")
    expect(_error(page)).to_have_text("Date and time: 2020-03-01 09:00 (America/New_York) is in the past")
    expect(page.get_by_test_id("schedule-form-fire")).to_have_count(0)
    expect(page.get_by_test_id("schedule-form-save")).to_be_disabled()


def test_the_interval_floor_is_said_and_minutes_or_hours_can_be_picked(sized: Page) -> None:
    page = sized
    _new_chat(page)
    _open_drawer(page)
    _open_dialog(page, "poll", "check the queue")
    every, unit = page.get_by_test_id("schedule-form-every"), page.get_by_test_id("schedule-form-every-unit")
    expect(unit).to_have_value("hours")
    expect(page.get_by_test_id("schedule-form-preview")).to_contain_text("Every hour")
    expect(page.get_by_test_id("schedule-form")).to_contain_text("At least 1 minute")

    every.fill("0")
    expect(_error(page)).to_have_text("Interval: must be at least 1 minute")
    expect(page.get_by_test_id("schedule-form-fire")).to_have_count(0)
    unit.select_option("seconds")
    every.fill("1")
    expect(_error(page)).to_have_text("Interval: must be at least 1 minute (1 second is too short)")
    expect(page.get_by_test_id("schedule-form-fire")).to_have_count(0)  # no five "now" rows
    assert "between 1 and" not in page.get_by_test_id("schedule-form").inner_text()

    unit.select_option("minutes")
    every.fill("15")
    expect(_error(page)).to_be_hidden()
    expect(page.get_by_test_id("schedule-form-preview")).to_contain_text("Every 15 minutes")
    expect(page.get_by_test_id("schedule-form-fire")).to_have_count(5)
    page.get_by_test_id("schedule-form-save").click()
    expect(page.get_by_test_id("schedule-when")).to_have_text("Every 15 minutes")


def test_the_preview_says_when_a_time_does_not_exist(sized: Page) -> None:
    page = sized
    _new_chat(page)
    _open_drawer(page)
    _open_dialog(page, "spring", "wake up")
    _kind(page, "Cron")
    page.get_by_test_id("schedule-form-timezone").fill("America/New_York")
    page.get_by_test_id("schedule-form-cron").fill("30 2 14 3 *")  # 2027-03-14: New York springs forward
    first = page.get_by_test_id("schedule-form-fire").first
    expect(first).to_contain_text("14 Mar, 03:00")
    expect(first.get_by_test_id("schedule-form-fire-note")).to_have_text(
        "02:30 does not exist on this day (clocks go forward); it runs at 03:00")
    expect(page.get_by_test_id("schedule-form-fire-note")).to_have_count(1)  # the other years have 02:30

    _kind(page, "Once")
    page.get_by_test_id("schedule-form-at").fill("2027-03-14T02:30")
    expect(page.get_by_test_id("schedule-form-fire")).to_have_count(1)
    expect(page.get_by_test_id("schedule-form-fire")).to_contain_text("03:30")
    expect(page.get_by_test_id("schedule-form-fire-note")).to_have_text(
        "02:30 does not exist on this day (clocks go forward); it runs at 03:30")


def test_a_disabled_create_says_why(sized: Page) -> None:
    page = sized
    _new_chat(page)
    _open_drawer(page)
    _open_dialog(page)
    save, reason = page.get_by_test_id("schedule-form-save"), page.get_by_test_id("schedule-form-blocked")
    expect(save).to_be_disabled()
    expect(reason).to_have_text("Name is missing")
    expect(save).to_have_attribute("aria-describedby", "schedule-form-blocked")
    _fields_side_by_side(page, save, reason)
    page.get_by_test_id("schedule-form-name").fill("digest")
    expect(reason).to_have_text("Prompt is missing")
    page.get_by_test_id("schedule-form-prompt").fill("summarise the day")
    expect(save).to_be_enabled()
    expect(reason).to_be_hidden()
    page.get_by_test_id("schedule-form-every").fill("0")
    expect(reason).to_have_text("Interval needs fixing (see the message above)")
    expect(save).to_be_disabled()


def _fields_side_by_side(page: Page, save, reason) -> None:
    """The reason sits in the button's row, inside the dialog and the screen."""
    form, button, said = (x.bounding_box() for x in (page.get_by_test_id("schedule-form"), save, reason))
    width = page.viewport_size["width"]
    for box in (button, said):
        assert form["x"] - 1 <= box["x"] and box["x"] + box["width"] <= min(form["x"] + form["width"], width) + 1
    assert abs((said["y"] + said["height"] / 2) - (button["y"] + button["height"] / 2)) < button["height"] \
        or said["y"] + said["height"] <= button["y"] + 1  # beside it, or just above it when the row wraps


def test_escape_asks_before_discarding_typed_changes(sized: Page) -> None:
    page = sized
    _new_chat(page)
    _open_drawer(page)
    form, question = page.get_by_test_id("schedule-form"), page.get_by_test_id("schedule-discard-confirm")
    _open_dialog(page)
    page.keyboard.press("Escape")  # untouched: closes at once
    expect(form).to_be_hidden()
    expect(question).to_be_hidden()

    _open_dialog(page, "half done")
    expect(page.get_by_test_id("schedule-form-blocked")).to_have_text("Prompt is missing")  # the name arrived
    page.keyboard.press("Escape")
    expect(question).to_be_visible()
    expect(question).to_contain_text("Discard changes?")
    expect(form).to_be_visible()
    expect(page.get_by_test_id("schedule-discard-keep")).to_be_focused()
    page.keyboard.press("Escape")  # Escape on the question keeps editing
    expect(question).to_be_hidden()
    expect(page.get_by_test_id("schedule-form-name")).to_have_value("half done")

    page.get_by_test_id("schedule-form-cancel").click()
    expect(question).to_be_visible()
    page.get_by_test_id("schedule-discard-keep").click()
    expect(question).to_be_hidden()
    expect(form).to_be_visible()

    page.keyboard.press("Escape")
    page.get_by_test_id("schedule-discard").click()
    expect(form).to_be_hidden()
    expect(page.get_by_test_id("schedules-drawer")).to_be_visible(timeout=15_000)
    _open_dialog(page)
    expect(page.get_by_test_id("schedule-form-name")).to_have_value("")  # nothing of the discarded form


def _api(server, token: str, method: str, path: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        f"{server.url}{path}", data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"}, method=method,
    )
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read() or b"{}")


WATCH_HIGHLIGHT_JS = """() => { window.__highlighted = [];
    new MutationObserver(changes => { for (const c of changes) {
        const id = c.target.getAttribute('data-schedule-id');
        if (c.target.getAttribute('data-highlight') === 'true' && !window.__highlighted.includes(id))
            window.__highlighted.push(id); } })
    .observe(document.body, {subtree: true, attributes: true, attributeFilter: ['data-highlight']}); }"""


def test_create_confirms_and_shows_the_new_card(sized: Page, server) -> None:
    page = sized
    chat_id = _new_chat(page)
    token = server.manage("create-token", "--email", "demo@example.com")
    for i in range(8):  # enough cards that the new one lands below the drawer's fold
        _api(server, token, "POST", f"/api/chats/{chat_id}/schedules", {
            "name": f"older {i}", "prompt": "p", "schedule": {"kind": "interval", "every_seconds": 86400 * (i + 1)}})
    _open_drawer(page)
    expect(page.get_by_test_id("schedule-row")).to_have_count(8)
    _open_dialog(page, "the newest", "say it")
    page.evaluate(WATCH_HIGHLIGHT_JS)  # notes every row that gets outlined, however briefly
    page.get_by_test_id("schedule-form-save").click()
    expect(page.get_by_test_id("schedule-form")).to_be_hidden()
    expect(page.get_by_text("Created “the newest”")).to_be_visible()
    card = page.get_by_test_id("schedule-row").filter(has_text="the newest")
    expect(card).to_have_count(1)
    new_id = card.get_attribute("data-schedule-id")
    page.wait_for_function("id => window.__highlighted.includes(id)", arg=new_id, timeout=10_000)
    page.wait_for_function("""() => {
        const card = [...document.querySelectorAll('[data-testid=schedule-row]')]
            .find(el => el.textContent.includes('the newest'));
        const drawer = document.querySelector('[data-testid=schedules-drawer]');
        if (!card || !drawer) return false;
        const c = card.getBoundingClientRect(), d = drawer.getBoundingClientRect();
        const top = Math.max(d.top, 0), bottom = Math.min(d.bottom, innerHeight);
        const left = Math.max(d.left, 0), right = Math.min(d.right, innerWidth);
        return c.top >= top - 1 && c.bottom <= bottom + 1 && c.left >= left - 1 && c.right <= right + 1;
    }""", timeout=10_000)
    expect(card).not_to_have_attribute("data-highlight", "true", timeout=10_000)  # the flash is brief
    assert page.evaluate("window.__highlighted") == [new_id]  # only the new card
    scrolled = page.evaluate("""id => { let el = document.querySelector(`[data-schedule-id="${id}"]`);
        while (el && el.scrollTop === 0) el = el.parentElement; return !!el; }""", new_id)
    assert scrolled, "the drawer was scrolled to reach the new card"
