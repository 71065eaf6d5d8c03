"""SPEC §14 in Chromium: a task with a jitter and an end made through the dialog, whose preview
shows each fire's spread and stops at the end (and, once saved, its exact jittered instants); a
pause with a note and an end seen on the drawer row; skip-next leaving a skipped record in the
history; a loose chat made and opened from the sidebar.

Set CHATCRON_UPDATE_SCREENSHOTS=1 to refresh docs/screenshots/schedule-timing-{1280,390}.png and
paused-row-{1280,390}.png.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tests.e2e.conftest import api, login, open_drawer, open_new_chat, save_shot

pytestmark = pytest.mark.e2e
ZONE = "Europe/Paris"
SIZES = {1280: {"width": 1280, "height": 800}, 390: {"width": 390, "height": 844}}
SETTLE_MS = 600  # the drawer slides in; a screenshot waits for it (REFLEX_NOTES.md)


@pytest.fixture
def sized(request: pytest.FixtureRequest, browser: Browser, base_url: str) -> Iterator[Page]:
    context = browser.new_context(base_url=base_url, viewport=SIZES[getattr(request, "param", 1280)],
                                  timezone_id=ZONE)
    page = context.new_page()
    yield page
    context.close()


def _by_size(*widths: int):
    return pytest.mark.parametrize("sized", list(widths), indirect=True, ids=[f"{w}px" for w in widths])


def _hourly_in_new_chat(page: Page, server, token: str, name: str, prompt: str) -> tuple[str, dict]:
    """A fresh chat holding an hourly task made through the API, its drawer open: (chat id, task)."""
    chat_id = open_new_chat(page)
    task = api(server, token, "POST", f"/api/chats/{chat_id}/schedules", {
        "name": name, "prompt": prompt, "schedule": {"kind": "interval", "every_seconds": 3600}})
    open_drawer(page)
    return chat_id, task


def _row(page: Page, task_id: int) -> Locator:
    return page.locator(f'[data-testid=schedule-row][data-schedule-id="{task_id}"]')


def _wall(instant: dt.datetime) -> str:
    """A datetime-local value in the browser's zone."""
    return f"{instant.astimezone(ZoneInfo(ZONE)):%Y-%m-%dT%H:%M}"


def _nines_before(end_local: dt.datetime) -> int:
    """How many 09:00 Paris occurrences lie between now and ``end_local`` (excluded)."""
    now = dt.datetime.now(ZoneInfo(ZONE))
    day, count = now.replace(hour=9, minute=0, second=0, microsecond=0), 0
    while day < end_local:
        count += day > now
        day = (day + dt.timedelta(days=1)).replace(hour=9)
    return count


def _fill_timed_task(page: Page, ends: dt.datetime) -> None:
    page.get_by_test_id("schedules-new").click()
    expect(page.get_by_test_id("schedule-form")).to_be_visible()
    page.get_by_test_id("schedule-form-name").fill("morning digest")
    page.get_by_test_id("schedule-form-prompt").fill("summarise the night")
    page.get_by_test_id("schedule-form-kind").get_by_role("radio", name="Cron").click()
    page.get_by_test_id("schedule-form-cron").fill("0 9 * * *")
    expect(page.get_by_test_id("schedule-form-jitter")).to_have_count(0)  # the simple case stays simple
    page.get_by_test_id("schedule-form-advanced").click()
    expect(page.get_by_test_id("schedule-form-catchup")).to_have_value("1")  # the default: 1 hour
    page.get_by_test_id("schedule-form-jitter").fill("30")
    page.get_by_test_id("schedule-form-ends").fill(_wall(ends))


def test_the_dialog_previews_the_spread_and_stops_at_the_end(sized: Page, server, token: str) -> None:
    page = sized
    open_new_chat(page)
    open_drawer(page)
    ends = (dt.datetime.now(ZoneInfo(ZONE)) + dt.timedelta(days=3)).replace(hour=9, minute=0, second=0,
                                                                            microsecond=0)
    _fill_timed_task(page, ends)
    fires = page.get_by_test_id("schedule-form-fire")
    expect(fires).to_have_count(_nines_before(ends))  # fewer than five: none at or after the end
    for fire in fires.all():
        expect(fire).to_contain_text(re.compile(r", 09:00 – 09:00:30 CES?T"))
    expect(page.get_by_test_id("schedule-form-window")).to_contain_text(
        f"Ends {ends:%a} {ends.day} {ends:%b}, 09:00")
    expect(page.get_by_test_id("schedule-form")).to_contain_text("At most a tenth of the smallest gap: up to")
    page.get_by_test_id("schedule-form-save").click()
    expect(page.get_by_test_id("schedule-form")).to_be_hidden()

    row = page.get_by_test_id("schedule-row").filter(has_text="morning digest")
    expect(row.get_by_test_id("schedule-window")).to_have_text(f"until {ends:%a} {ends.day} {ends:%b}, 09:00")
    expect(row.get_by_test_id("schedule-timing")).to_have_text("jitter up to 30 s")
    task_id = int(row.get_attribute("data-schedule-id") or 0)
    task = api(server, token, "GET", f"/api/schedules/{task_id}")
    assert task["jitter_seconds"] == 30 and task["ends_at"] is not None

    # Saved, the task has an id: the preview shows the exact instants it fires at.
    row.get_by_test_id("schedule-edit").click()
    first = dt.datetime.fromisoformat(task["next_run_at"].replace("Z", "+00:00")).astimezone(ZoneInfo(ZONE))
    expect(fires.first).to_contain_text(f"{first:%H:%M:%S}")
    expect(fires.first).not_to_contain_text("–")
    expect(fires).to_have_count(_nines_before(ends))


@_by_size(1280, 390)
def test_timing_dialog_screenshot(sized: Page, tmp_path: Path) -> None:
    page = sized
    open_new_chat(page)
    open_drawer(page)
    ends = (dt.datetime.now(ZoneInfo(ZONE)) + dt.timedelta(days=3)).replace(hour=18, minute=0)
    _fill_timed_task(page, ends)
    page.get_by_test_id("schedule-form-catchup").fill("10")
    page.get_by_test_id("schedule-form-catchup-unit").select_option("minutes")
    expect(page.get_by_test_id("schedule-form-window")).to_be_visible()
    expect(page.get_by_test_id("schedule-form-error")).to_be_hidden()
    page.get_by_test_id("schedule-form-advanced").evaluate("el => el.scrollIntoView({block: 'start'})")
    save_shot(page, tmp_path, f"schedule-timing-{page.viewport_size['width']}.png", SETTLE_MS)
    form = page.get_by_test_id("schedule-form").bounding_box()
    assert form and form["x"] >= 0 and form["x"] + form["width"] <= page.viewport_size["width"]


def test_a_bad_jitter_is_told_by_its_field(sized: Page) -> None:
    page = sized
    open_new_chat(page)
    open_drawer(page)
    page.get_by_test_id("schedules-new").click()
    page.get_by_test_id("schedule-form-name").fill("poll")
    page.get_by_test_id("schedule-form-prompt").fill("check")
    page.get_by_test_id("schedule-form-advanced").click()
    page.get_by_test_id("schedule-form-jitter").fill("400")  # every hour: at most 360 s
    expect(page.get_by_test_id("schedule-form-error")).to_have_text(
        "Jitter: 400 s is more than a tenth of the schedule's smallest gap (360 s)")
    expect(page.get_by_test_id("schedule-form-jitter")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_test_id("schedule-form-save")).to_be_disabled()


@_by_size(1280, 390)
def test_pause_with_a_note_and_an_end(sized: Page, server, token: str, tmp_path: Path) -> None:
    page = sized
    chat_id, task = _hourly_in_new_chat(page, server, token, "deploy watch", "check the canary")
    row = _row(page, task["id"])
    expect(row).to_have_attribute("data-status", "active")
    row.get_by_test_id("schedule-pause-options").click()
    form = row.get_by_test_id("pause-form")
    expect(form).to_be_visible()
    until = (dt.datetime.now(ZoneInfo(ZONE)) + dt.timedelta(days=2)).replace(hour=9, minute=0, second=0,
                                                                             microsecond=0)
    form.get_by_test_id("pause-form-note").fill("waiting for the release branch")
    form.get_by_test_id("pause-form-until").fill(_wall(until))
    form.get_by_test_id("pause-form-save").click()
    expect(row).to_have_attribute("data-status", "paused")
    expect(form).to_be_hidden()
    expect(row.get_by_test_id("schedule-pause-note")).to_have_text("waiting for the release branch")
    expect(row.get_by_test_id("schedule-resumes")).to_have_text(f"resumes {until:%a} {until.day} {until:%b}, 09:00")
    stored = api(server, token, "GET", f"/api/schedules/{task['id']}")
    assert (stored["pause_note"], stored["paused_by"]) == ("waiting for the release branch", "user")
    assert dt.datetime.fromisoformat(stored["paused_until"].replace("Z", "+00:00")) == until
    row.scroll_into_view_if_needed()
    save_shot(page, tmp_path, f"paused-row-{page.viewport_size['width']}.png", SETTLE_MS)
    box, drawer = row.bounding_box(), page.get_by_test_id("schedules-drawer").bounding_box()
    assert box and drawer and box["x"] >= drawer["x"] and box["x"] + box["width"] <= page.viewport_size["width"]

    row.get_by_test_id("schedule-resume").click()  # a user's resume clears the note and the end
    expect(row).to_have_attribute("data-status", "active")
    expect(row.get_by_test_id("schedule-pause-note")).to_have_count(0)


def test_a_plain_pause_is_still_one_click_and_an_empty_form_pauses_plainly(sized: Page, server,
                                                                            token: str) -> None:
    page = sized
    chat_id = open_new_chat(page)
    one, two = (api(server, token, "POST", f"/api/chats/{chat_id}/schedules", {
        "name": name, "prompt": "p", "schedule": {"kind": "interval", "every_seconds": 3600}})
        for name in ("first", "second"))
    open_drawer(page)
    _row(page, one["id"]).get_by_test_id("schedule-pause").click()
    expect(_row(page, one["id"])).to_have_attribute("data-status", "paused")
    _row(page, two["id"]).get_by_test_id("schedule-pause-options").click()
    _row(page, two["id"]).get_by_test_id("pause-form-save").click()
    expect(_row(page, two["id"])).to_have_attribute("data-status", "paused")
    for task in (one, two):
        stored = api(server, token, "GET", f"/api/schedules/{task['id']}")
        assert (stored["pause_note"], stored["paused_until"]) == (None, None)
        expect(_row(page, task["id"]).get_by_test_id("schedule-resumes")).to_have_count(0)


def test_skip_next_leaves_a_skipped_record(sized: Page, server, token: str) -> None:
    page = sized
    chat_id, task = _hourly_in_new_chat(page, server, token, "hourly check", "p")
    row = _row(page, task["id"])
    expect(row.get_by_test_id("schedule-next-run")).to_contain_text(re.compile(r"in (59 min|1 h)"))
    row.get_by_test_id("schedule-skip-next").click()
    expect(row.get_by_test_id("schedule-next-run")).to_contain_text(re.compile(r"in (1 h 59 min|2 h)"))
    row.get_by_test_id("schedule-history-toggle").click()
    skipped = row.locator("[data-testid=schedule-run][data-status=skipped]")
    expect(skipped).to_have_count(1)
    expect(skipped).to_contain_text("not fired")
    expect(skipped.get_by_test_id("schedule-run-error")).to_have_text("skipped by demo@example.com")
    once = api(server, token, "POST", f"/api/chats/{chat_id}/schedules", {
        "name": "one-off", "prompt": "p", "schedule": {"kind": "once", "at": "2099-01-01T09:00:00Z"}})
    expect(_row(page, once["id"])).to_be_visible()
    expect(_row(page, once["id"]).get_by_test_id("schedule-skip-next")).to_have_count(0)  # nothing to skip to


def test_a_loose_chat_is_made_from_the_sidebar(sized: Page) -> None:
    page = sized
    login(page)
    loose = page.get_by_test_id("loose-chats")
    expect(loose).to_contain_text("Loose chats")
    before = loose.get_by_test_id("chat-item").count()
    first = page.url
    loose.get_by_test_id("loose-chat-new").click()
    page.wait_for_url(lambda url: "/chat/" in url and url != first)
    chat_id = page.url.rstrip("/").split("/")[-1]
    expect(page.get_by_test_id("chat-title")).to_have_text("New chat")
    expect(loose.get_by_test_id("chat-item")).to_have_count(before + 1)
    item = loose.locator(f'[data-testid=chat-item][data-chat-id="{chat_id}"]')
    expect(item).to_have_attribute("aria-current", "page")
    expect(page.get_by_test_id("schedules-button")).to_have_count(0)  # schedules are for project chats only
    page.get_by_test_id("composer-input").fill("hello there")
    page.get_by_test_id("composer-send").click()
    expect(page.locator("[data-testid=event][data-type=assistant_text]").last).to_contain_text(
        "You said: hello there", timeout=20_000)
