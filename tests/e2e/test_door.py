"""The door and the clock (SPEC §16), in Chromium at 1280 × 800 and 390 × 844 against prod.

A visitor without a session is sent to the login page, which says "Please log in", and never sees
Reflex's error toast; every transcript event shows its time in the viewer's zone (emulated with
Playwright's ``timezone_id``) and a fire card says when it was planned and how late it started;
an empty chat explains itself; an empty login form says what is missing; an unknown address has a
way back.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Iterator
from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import Browser, BrowserContext, Locator, expect

from tests.e2e import sockets
from tests.e2e.conftest import DEMO_EMAIL, Server, api, login

pytestmark = pytest.mark.e2e
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
SIZES = [pytest.param(DESKTOP, id="desktop"), pytest.param(PHONE, id="phone")]
LABEL_WAIT = 10.0  # s: a re-rendered row's time label is drawn by assets/event_time.js after it mounts
FIRE = 20_000  # ms: a fire is claimed within 250 ms; the demo reply streams for a second or two
ERROR_TEXT = re.compile(r"An error occurred|Contact the website administrator|session has ended", re.I)
# Records, from the first byte of every page, any moment the page showed an error text or a toast.
WATCH = """
window.__ccBad = [];
new MutationObserver(() => {
  const body = document.body;
  if (!body) return;
  const text = body.innerText || "";
  const hit = text.match(/An error occurred|Contact the website administrator|session has ended/i);
  if (hit) window.__ccBad.push("text: " + hit[0]);
  const toast = document.querySelector("[data-sonner-toast]");
  if (toast) window.__ccBad.push("toast: " + (toast.textContent || "").slice(0, 200));
}).observe(document, {subtree: true, childList: true, characterData: true});
"""


class Tab:
    """A page in its own browser context (own cookies, size and zone) that records what went wrong."""

    def __init__(self, context: BrowserContext) -> None:
        self.context = context
        self.context.add_init_script(WATCH)
        self.page = context.new_page()
        self.frames = sockets.Frames(self.page)  # to wait for hydration: an event sent before it may be dropped
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))

    def calm(self) -> None:
        """Nothing in the page, its toasts or its console said an error occurred."""
        assert self.page.evaluate("window.__ccBad") == []
        assert self.errors == []
        expect(self.page.get_by_text(ERROR_TEXT)).to_have_count(0)


@pytest.fixture
def tabs(browser: Browser, server: Server) -> Iterator[list[Tab]]:
    opened: list[Tab] = []
    yield opened
    for tab in opened:
        tab.context.close()


def open_tab(browser: Browser, server: Server, tabs: list[Tab], size: dict, zone: str = "UTC") -> Tab:
    tab = Tab(browser.new_context(base_url=server.url, viewport=size, timezone_id=zone, locale="en-US"))
    tabs.append(tab)
    return tab


def new_chat(server: Server, token: str, title: str) -> int:
    project = api(server, token, "GET", "/api/projects")["projects"][0]
    return api(server, token, "POST", f"/api/projects/{project['id']}/chats", {"title": title})["id"]


def at_login(tab: Tab) -> None:
    tab.page.wait_for_url(re.compile(r"/login/?$"))
    expect(tab.page.get_by_test_id("login-prompt")).to_have_text("Please log in")
    expect(tab.page.get_by_test_id("login-submit")).to_be_visible()
    tab.calm()


@pytest.mark.parametrize("size", SIZES)
def test_a_visitor_without_a_session_is_sent_quietly_to_the_login_page(
        browser: Browser, server: Server, token: str, tabs: list[Tab], size: dict) -> None:
    chat = new_chat(server, token, "Door")
    tab = open_tab(browser, server, tabs, size)
    for path in ("/", f"/chat/{chat}"):  # never logged in
        tab.page.goto(path)
        at_login(tab)

    login(tab.page)
    tab.page.goto(f"/chat/{chat}")
    expect(tab.page.get_by_test_id("chat-title")).to_have_text("Door")
    tab.page.get_by_test_id("logout").evaluate("el => el.click()")  # on a phone the sidebar may be folded away
    at_login(tab)
    for path in ("/", f"/chat/{chat}"):  # after logging out
        tab.page.goto(path)
        at_login(tab)

    for path in ("/", f"/chat/{chat}"):  # the session was ended elsewhere, the cookie is still there
        login(tab.page)
        server.manage("end-sessions", "--email", DEMO_EMAIL)
        tab.page.goto(path)
        at_login(tab)


def test_a_session_ended_under_an_open_chat_leaves_quietly_too(
        browser: Browser, server: Server, token: str, tabs: list[Tab]) -> None:
    chat = new_chat(server, token, "Open when ended")
    tab = open_tab(browser, server, tabs, DESKTOP)
    login(tab.page)
    tab.page.goto(f"/chat/{chat}")
    expect(tab.page.get_by_test_id("chat-title")).to_have_text("Open when ended")
    server.manage("end-sessions", "--email", DEMO_EMAIL)
    at_login(tab)  # the tail notices within a second
    tab.page.get_by_test_id("login-submit").click()  # and the login page works as ever
    expect(tab.page.get_by_test_id("login-error")).to_have_text("Enter your email and password.")


def shown_time(instant: dt.datetime, zone: str) -> str:
    return f"{instant.astimezone(ZoneInfo(zone)):%H:%M}"


def shown(stamp: Locator) -> str:
    """What a <time> shows: assets/event_time.js's label, drawn as its ::after content."""
    return stamp.evaluate("el => getComputedStyle(el, '::after').content")


def expect_shown(stamp: Locator, instant: dt.datetime, zone: str) -> None:
    expected = shown_time(instant, zone)
    expect(stamp).to_have_attribute("data-shown", re.compile(re.escape(expected) + "$"))
    # the row may be re-rendered between the two reads (a reload's rows replace the first ones): the
    # label is read again until it is drawn, within a generous deadline
    pattern, deadline = re.compile(re.escape(expected) + '"$'), time.monotonic() + LABEL_WAIT
    while not pattern.search(label := shown(stamp)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pattern.search(label), label
    expect(stamp).to_be_visible()


def check_times(events: Locator, zone: str) -> None:
    """Every event has one <time> whose datetime is an instant of the last minute, shown in ``zone``."""
    now = dt.datetime.now(dt.UTC)
    expect(events.first).to_be_visible()  # waits: the transcript may still be re-rendering its rows
    for index in range(events.count()):
        stamp = events.nth(index).get_by_test_id("event-time")
        expect(stamp).to_have_count(1)
        instant = dt.datetime.fromisoformat(stamp.get_attribute("datetime") or "")
        assert instant.tzinfo is not None and abs((now - instant).total_seconds()) < 60, instant
        expect_shown(stamp, instant, zone)
        expect(stamp).to_have_attribute("title", re.compile(str(instant.astimezone(ZoneInfo(zone)).year)))


@pytest.mark.parametrize(("size", "zone"), [pytest.param(DESKTOP, "America/New_York", id="desktop-new-york"),
                                            pytest.param(PHONE, "Asia/Kolkata", id="phone-kolkata")])
def test_an_empty_chat_explains_itself_and_every_event_shows_its_time_in_the_viewers_zone(
        browser: Browser, server: Server, token: str, tabs: list[Tab], size: dict, zone: str) -> None:
    chat = new_chat(server, token, f"Times in {zone}")
    tab = open_tab(browser, server, tabs, size, zone)
    page = tab.page
    login(page)
    page.goto(f"/chat/{chat}")
    help_box = page.get_by_test_id("empty-chat-help")
    expect(help_box).to_be_visible()
    expect(help_box).to_contain_text("/schedule")
    expect(help_box).to_contain_text("/sleep")
    expect(help_box).to_contain_text("/fail")
    expect(help_box).to_contain_text("/marker")
    expect(help_box).to_contain_text("Schedules")
    box = help_box.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= size["width"] + 0.5, box

    page.get_by_test_id("composer-input").fill("what time is it")
    page.get_by_test_id("composer-send").click()
    expect(help_box).to_have_count(0)
    reply = page.locator("[data-testid=event][data-type=assistant_text]")
    expect(reply).to_have_text("Demo agent here. You said: what time is it", timeout=FIRE)
    expect(page.get_by_test_id("agent-working")).to_be_hidden(timeout=FIRE)
    check_times(page.get_by_test_id("transcript").get_by_test_id("event"), zone)
    page.reload()  # read back from the log, the same
    expect(reply).to_have_text("Demo agent here. You said: what time is it")
    expect(help_box).to_have_count(0)
    check_times(page.get_by_test_id("transcript").get_by_test_id("event"), zone)
    tab.calm()


@pytest.mark.parametrize("zone", ["America/New_York", "Asia/Kolkata"])
def test_older_events_show_their_date_too(browser: Browser, server: Server, tabs: list[Tab], zone: str) -> None:
    """The browser's formatter, with fixed instants: today the time only, earlier the date too."""
    tab = open_tab(browser, server, tabs, DESKTOP, zone)
    tab.page.goto("/login")
    tab.page.wait_for_function("window.chatcronTime !== undefined")
    now = dt.datetime(2026, 12, 2, 12, 0, tzinfo=dt.UTC)
    for instant in (now - dt.timedelta(hours=3), now - dt.timedelta(days=1), now - dt.timedelta(days=300)):
        local, today = instant.astimezone(ZoneInfo(zone)), now.astimezone(ZoneInfo(zone))
        if local.date() == today.date():
            expected = f"{local:%H:%M}"
        elif local.year == today.year:
            expected = f"{local:%b} {local.day}, {local:%H:%M}"
        else:
            expected = f"{local:%b} {local.day}, {local.year}, {local:%H:%M}"
        label = tab.page.evaluate("([when, now]) => window.chatcronTime.label(when, now)",
                                  [instant.isoformat(), now.isoformat()])
        assert label == expected, (instant, label)


@pytest.mark.parametrize("size", SIZES)
def test_a_fire_card_says_when_it_was_planned_and_how_late_it_started_or_who_ran_it_now(
        browser: Browser, server: Server, token: str, tabs: list[Tab], size: dict) -> None:
    zone = "Asia/Kolkata"
    chat = new_chat(server, token, "Fire times")
    tab = open_tab(browser, server, tabs, size, zone)
    page = tab.page
    login(page)
    page.goto(f"/chat/{chat}")
    expect(page.get_by_test_id("empty-chat-help")).to_be_visible()
    at = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=4)).replace(microsecond=0)
    api(server, token, "POST", f"/api/chats/{chat}/schedules", {
        "name": "standup", "prompt": "collect the news",
        "schedule": {"kind": "once", "at": at.isoformat().replace("+00:00", "Z")}})
    card = page.locator("[data-testid=event][data-type=scheduled_prompt]")
    expect(card).to_have_count(1, timeout=FIRE)
    expect(page.get_by_test_id("empty-chat-help")).to_have_count(0)
    planned = card.get_by_test_id("fire-at")
    expect(planned).to_have_attribute("datetime", at.isoformat().replace("+00:00", "Z"))
    expect_shown(planned, at, zone)
    expect(card.get_by_test_id("fire-lateness")).to_have_text(re.compile(r"^(on time|\d+ s late|\d+ min late)$"))
    expect(card.get_by_test_id("fire-start")).to_contain_text("Planned")
    expect(card.get_by_test_id("fire-start")).to_contain_text("started")
    box, view = card.get_by_test_id("fire-start").bounding_box(), page.viewport_size
    assert box is not None and view is not None and box["x"] + box["width"] <= view["width"] + 0.5
    expect(page.locator("[data-testid=event][data-type=assistant_text]")).to_contain_text(
        "Demo agent here.", timeout=FIRE)
    # a run-now had no planned time to be late for: its card says who asked
    task = api(server, token, "POST", f"/api/chats/{chat}/schedules", {
        "name": "digest", "prompt": "sum it up", "schedule": {"kind": "interval", "every_seconds": 3600}})
    api(server, token, "POST", f"/api/schedules/{task['id']}/run-now")
    expect(card).to_have_count(2, timeout=FIRE)
    forced = card.nth(1)
    expect(forced.get_by_test_id("fire-start")).to_contain_text(f"Run now by {DEMO_EMAIL} · started")
    expect(forced.get_by_test_id("fire-at")).to_have_count(0)
    expect(forced.get_by_test_id("fire-lateness")).to_have_count(0)
    expect(page.locator("[data-testid=event][data-type=assistant_text]")).to_have_count(2, timeout=FIRE)
    check_times(page.get_by_test_id("transcript").get_by_test_id("event"), zone)
    tab.calm()


@pytest.mark.parametrize("size", SIZES)
def test_an_empty_login_form_says_what_is_missing(
        browser: Browser, server: Server, tabs: list[Tab], size: dict) -> None:
    tab = open_tab(browser, server, tabs, size)
    page = tab.page
    page.goto("/login")
    tab.frames.hydrated(page)
    page.get_by_test_id("login-submit").click()
    expect(page.get_by_test_id("login-error")).to_have_text("Enter your email and password.")
    page.get_by_test_id("login-email").fill(DEMO_EMAIL)
    page.get_by_test_id("login-submit").click()
    expect(page.get_by_test_id("login-error")).to_have_text("Enter your password.")
    assert re.search(r"/login/?$", page.url)
    login(page)  # and the filled form logs in
    tab.calm()


@pytest.mark.parametrize("size", SIZES)
def test_an_unknown_address_has_a_way_back_to_the_chats(
        browser: Browser, server: Server, tabs: list[Tab], size: dict) -> None:
    tab = open_tab(browser, server, tabs, size)
    page = tab.page
    assert page.goto("/no/such/page").status == 404
    expect(page.get_by_test_id("not-found")).to_have_text("Page not found")
    tab.errors.remove("Failed to load resource: the server responded with a status of 404 (Not Found)")
    page.get_by_test_id("not-found-home").click()
    at_login(tab)  # the chats need a login first
    login(page)
    page.goto("/no/such/page")
    back = page.get_by_test_id("not-found-home")
    box = back.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= size["width"]
    back.click()
    page.wait_for_url("**/chat/**")
    expect(page.get_by_test_id("chat-title")).to_be_visible()
