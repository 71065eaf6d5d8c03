"""Drawer details (issue 15, point 8) in Chromium at 1280 × 800 and 390 × 844: a once task fires
"fire 1/1" and, completed, offers no Run now; a dense interval's week is aggregated with a readable
cadence; the Schedules button signals an agent's draft without opening the drawer; a `/marker`
reply shows a "completed" badge and not the raw marker line; the Scheduled tasks switch explains
itself on focus and hover.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tests.e2e.conftest import api as _api
from tests.e2e.conftest import login

pytestmark = pytest.mark.e2e
SIZES = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
ZONE = "Europe/Paris"
FIRE = 20_000  # ms: a fire is claimed within 250 ms; the demo reply streams for a second or two
COUNT_POLL = 15_000  # ms: with the drawer closed the button's counts are read every 5 s
REPLY = "[data-testid=event][data-type=assistant_text]"


@pytest.fixture(params=sorted(SIZES))
def sized(request: pytest.FixtureRequest, browser: Browser, server) -> Iterator[Page]:
    context = browser.new_context(base_url=server.url, viewport=SIZES[request.param], timezone_id=ZONE)
    page = context.new_page()
    try:
        login(page)
        yield page
    finally:
        context.close()


def _chat(page: Page, server, token: str, title: str) -> int:
    """A fresh project chat, opened in ``page``."""
    project = _api(server, token, "GET", "/api/projects")["projects"][0]["id"]
    chat = _api(server, token, "POST", f"/api/projects/{project}/chats", {"title": title})["id"]
    page.goto(f"/chat/{chat}")
    expect(page.get_by_test_id("chat-title")).to_have_text(title)
    return chat


SETTLED_JS = """() => {
  const d = document.querySelector('[data-testid="schedules-drawer"]');
  if (!d || d.getAnimations().length) return false;
  const x = d.getBoundingClientRect().x;
  const still = window.__drawerX === x;
  window.__drawerX = x;
  return still;
}"""


def _open_drawer(page: Page) -> Locator:
    """Open the drawer and wait until it stopped sliding (boxes are measured after that)."""
    page.get_by_test_id("schedules-button").click()
    drawer = page.get_by_test_id("schedules-drawer")
    expect(drawer).to_be_visible()
    page.wait_for_function(SETTLED_JS, polling=100)
    return drawer


def _inside_viewport(page: Page, locator: Locator) -> None:
    box = locator.bounding_box()
    width = page.viewport_size["width"]
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5, (box, width)


def test_a_once_task_fires_1_of_1_and_completed_offers_no_run_now(sized: Page, server, token: str) -> None:
    chat = _chat(sized, server, token, "Once")
    at = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=6)).strftime("%Y-%m-%dT%H:%M:%SZ")
    task = _api(server, token, "POST", f"/api/chats/{chat}/schedules", {
        "name": "ping", "prompt": "say hello once", "schedule": {"kind": "once", "at": at}})
    fired = sized.locator("[data-testid=event][data-type=scheduled_prompt]").last
    expect(fired.get_by_test_id("scheduled-header")).to_have_text(re.compile(r"Scheduled task ping\s*fire 1/1\b"),
                                                                   timeout=FIRE)
    expect(fired).to_contain_text('[scheduled task "ping", fire 1/1]')  # the envelope the agent got
    expect(sized.locator(REPLY).last).to_contain_text('Scheduled task "ping", fire 1/1.', timeout=FIRE)

    _open_drawer(sized)
    row = sized.locator(f'[data-testid=schedule-row][data-schedule-id="{task["id"]}"]')
    expect(row).to_have_attribute("data-status", "completed", timeout=FIRE)
    expect(row.get_by_test_id("schedule-run-count")).to_have_text("1 / 1")
    expect(row.get_by_test_id("schedule-run-now")).to_have_count(0)
    expect(row.get_by_test_id("schedule-last-run")).to_contain_text("succeeded")
    expect(row.get_by_test_id("schedule-last-run")).not_to_contain_text("never")
    _inside_viewport(sized, row.get_by_test_id("schedule-status"))


def test_a_dense_interval_is_aggregated_on_the_timeline(sized: Page, server, token: str) -> None:
    chat = _chat(sized, server, token, "Dense")
    _api(server, token, "POST", f"/api/chats/{chat}/schedules", {
        "name": "heartbeat", "prompt": "check the queue", "schedule": {"kind": "interval", "every_seconds": 600}})
    _open_drawer(sized)
    timeline = sized.get_by_test_id("schedules-timeline")
    expect(timeline.get_by_test_id("timeline-aggregate")).to_have_text("heartbeat: every 10 min · 144/day")
    expect(timeline.get_by_test_id("timeline-marker")).to_have_count(0)  # no solid bar of dots
    bands = timeline.get_by_test_id("timeline-band")
    expect(bands.first).to_have_attribute("aria-label", re.compile(r"^heartbeat · \w{3} \d+ \w{3} · \d+ fires?$"))
    counts = [int(c or 0) for c in bands.evaluate_all("els => els.map(e => e.dataset.count)")]
    assert len(counts) in (7, 8) and sum(counts) in (1007, 1008) and max(counts) == 144, counts
    lane = timeline.bounding_box()
    assert lane is not None
    for index in range(bands.count()):
        box = bands.nth(index).bounding_box()
        assert box and box["x"] >= lane["x"] - 0.5 and box["x"] + box["width"] <= lane["x"] + lane["width"] + 0.5
    next_run = sized.get_by_test_id("schedule-next-run")
    expect(next_run).to_have_text(re.compile(r"^in (9|10) min\s*· \w{3} \d\d:\d\d$"))  # in the viewer's zone
    _inside_viewport(sized, next_run)
    _controls_inside(sized.get_by_test_id("schedule-row"))


def _controls_inside(row: Locator) -> None:
    """Every control of a card lies inside the card (a narrow card wraps its controls, never clips them)."""
    card = row.bounding_box()
    assert card is not None
    for control in row.get_by_role("button").all():
        box = control.bounding_box()
        assert box and box["x"] >= card["x"] - 0.5 and box["x"] + box["width"] <= card["x"] + card["width"] + 0.5, \
            (control.get_attribute("aria-label"), box, card)


def test_the_schedules_button_signals_an_agents_draft(sized: Page, server, token: str) -> None:
    _chat(sized, server, token, "Agent draft")
    button = sized.get_by_test_id("schedules-button")
    expect(button.get_by_test_id("schedules-drafts")).to_have_count(0)
    sized.get_by_test_id("skill-scheduled-tasks").click()
    expect(sized.get_by_test_id("skill-scheduled-tasks")).to_have_attribute("data-state", "checked")
    sized.get_by_test_id("composer-input").fill('/schedule --name "standup" --every 3600 --prompt "collect the news"')
    sized.get_by_test_id("composer-send").click()
    expect(sized.locator(REPLY).last).to_contain_text("Demo agent here.", timeout=FIRE)
    # the drawer stays closed: the button alone says a draft waits
    drafts = button.get_by_test_id("schedules-drafts")
    expect(drafts).to_be_visible(timeout=COUNT_POLL)
    phone = sized.viewport_size["width"] < 768
    expect(drafts).to_have_js_property("innerText", "1" if phone else "1 draft to arm")  # what is shown
    expect(drafts).to_have_attribute("title", "1 draft to arm")
    expect(button.get_by_test_id("schedules-count")).to_have_text("1")
    expect(button).to_have_attribute("aria-label", re.compile(r"\(1 draft to arm\)$"))
    badge = drafts.bounding_box()
    assert badge and badge["width"] <= (48 if phone else 140), badge  # a phone's header gets the short form
    assert button.evaluate("b => b.scrollWidth <= b.clientWidth"), "the button's contents overflow it"

    _open_drawer(sized)
    row = sized.get_by_test_id("schedule-row")
    expect(row).to_have_attribute("data-status", "draft")
    row.get_by_test_id("schedule-arm").click()
    expect(row).to_have_attribute("data-status", "active")
    expect(button.get_by_test_id("schedules-drafts")).to_have_count(0)
    expect(button.get_by_test_id("schedules-count")).to_have_text("1")


def test_a_marker_reply_shows_a_completed_badge_not_the_raw_line(sized: Page, server, token: str) -> None:
    _chat(sized, server, token, "Marker")
    sized.get_by_test_id("composer-input").fill("wrap it up\n/marker")
    sized.get_by_test_id("composer-send").click()
    reply = sized.locator(REPLY).last
    expect(reply.get_by_test_id("event-completed")).to_be_visible(timeout=FIRE)
    expect(reply).to_contain_text("Demo agent here. You said: wrap it up")
    expect(reply).not_to_contain_text("SCHEDULE_STATUS")
    _inside_viewport(sized, reply.get_by_test_id("event-completed"))


def test_the_scheduled_tasks_switch_explains_itself(sized: Page, server, token: str) -> None:
    _chat(sized, server, token, "Switch help")
    switch = sized.get_by_test_id("skill-scheduled-tasks")
    switch.focus()  # keyboard users get the explanation too
    tip = sized.get_by_role("tooltip")
    expect(tip).to_contain_text("Lets the agent create schedules in this chat")
    expect(tip).to_contain_text("nothing fires until you arm it")
    _inside_viewport(sized, sized.locator("[data-radix-popper-content-wrapper]").first)
    sized.get_by_test_id("composer-input").focus()
    expect(tip).to_have_count(0)
    switch.hover()
    expect(tip).to_contain_text("a draft")
