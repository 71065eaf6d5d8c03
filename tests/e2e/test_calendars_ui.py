"""SPEC §20 in the UI, in Chromium at 1280 × 800 and 390 × 844: the dialog's "Describe it" field
fills the form from a phrase and reads it back (canonical form, English, the next five fires in the
task's zone) before Save; a phrase not understood says why and changes nothing; a cron schedule's
skipped dates and public holidays are typed, refused by name, saved, loaded back, and their
occurrences shown struck through in the dialog's preview and on the drawer's timeline.

Screenshots go to /tmp/chatcron-calendars-ui/ (outside the repository).
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from pathlib import Path
from zoneinfo import ZoneInfo

import holidays
import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import api, by_size, open_drawer, open_new_chat

pytestmark = pytest.mark.e2e
BERLIN, PARIS = "Europe/Berlin", "Europe/Paris"
SHOTS = Path("/tmp/chatcron-calendars-ui")


def _shot(page: Page, name: str) -> None:
    SHOTS.mkdir(exist_ok=True)
    page.mouse.move(0, 0)
    page.wait_for_timeout(700)  # the drawer slides in; tooltips fade
    page.screenshot(path=str(SHOTS / f"{name}-{page.viewport_size['width']}.png"))


def _short(day: dt.date, zone: ZoneInfo) -> str:
    """How the dialog and the timeline write 09:00 on ``day`` in ``zone``: ``Mon 4 Jan, 09:00 CET``."""
    at = dt.datetime(day.year, day.month, day.day, 9, tzinfo=zone)
    return f"{at:%a} {at.day} {at:%b}, 09:00 {at.tzname()}"


def _first_mondays(now: dt.datetime, zone: ZoneInfo, count: int) -> list[dt.date]:
    """The next ``count`` first Mondays of a month whose 09:00 in ``zone`` is after ``now``."""
    found: list[dt.date] = []
    year, month = now.astimezone(zone).year, now.astimezone(zone).month
    while len(found) < count:
        week = next(w for w in calendar.monthcalendar(year, month) if w[calendar.MONDAY])
        day = dt.date(year, month, week[calendar.MONDAY])
        if dt.datetime(day.year, day.month, day.day, 9, tzinfo=zone) > now:
            found.append(day)
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return found


def _new_dialog(page: Page, name: str) -> None:
    page.get_by_test_id("schedules-new").click()
    expect(page.get_by_test_id("schedule-form")).to_be_visible()
    page.get_by_test_id("schedule-form-name").fill(name)
    page.get_by_test_id("schedule-form-prompt").fill("Say hello to the team.")


def _cron(page: Page, zone: str) -> None:
    page.get_by_test_id("schedule-form-kind").get_by_role("radio", name="Cron").click()
    page.get_by_test_id("schedule-form-timezone").fill(zone)


def _inside_width(page: Page, testid: str) -> None:
    """Nothing of it runs off the page (a phone's width included)."""
    for box in (el.bounding_box() for el in page.get_by_test_id(testid).all()):
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= page.viewport_size["width"] + 0.5, testid


@by_size(1280, 390)
def test_a_phrase_fills_the_form_and_is_read_back_before_save(sized: Page, server, token: str) -> None:
    page = sized
    chat = open_new_chat(page)
    open_drawer(page)
    _new_dialog(page, "first monday")
    _cron(page, BERLIN)
    cron = page.get_by_test_id("schedule-form-cron")
    before = cron.input_value()

    describe = page.get_by_test_id("schedule-describe")
    describe.fill("fortnightly on the moon")
    page.get_by_test_id("schedule-describe-apply").click()
    expect(page.get_by_test_id("schedule-describe-error")).to_contain_text('"fortnightly" is not understood')
    expect(describe).to_have_attribute("aria-invalid", "true")
    expect(cron).to_have_value(before)  # a phrase not understood changes nothing
    expect(page.get_by_test_id("schedule-readback")).to_have_count(0)
    _shot(page, "describe-error")

    describe.fill("first Monday of every month at 9am")
    describe.press("Enter")
    readback = page.get_by_test_id("schedule-readback")
    expect(readback.get_by_test_id("schedule-readback-canonical")).to_have_text("0 9 * * 1#1")
    expect(page.get_by_test_id("schedule-describe-error")).to_have_count(0)
    expect(readback.get_by_test_id("schedule-form-description")).to_have_text(
        re.compile(r"first Monday of the month", re.IGNORECASE))
    fires = readback.get_by_test_id("schedule-form-fire")
    expect(fires).to_have_count(5)
    zone = ZoneInfo(BERLIN)
    expected = [_short(day, zone) for day in _first_mondays(dt.datetime.now(dt.UTC), zone, 5)]
    shown = fires.all_inner_texts()
    assert all(want in got for want, got in zip(expected, shown, strict=True)), (expected, shown)
    expect(cron).to_have_value("0 9 * * 1#1")  # the form is filled: the preview shown is the form's
    expect(page.get_by_test_id("schedule-form-timezone")).to_have_value(BERLIN)
    expect(page.get_by_test_id("schedule-form-preview")).to_have_count(1)  # inside the read-back, not twice
    _inside_width(page, "schedule-readback")
    readback.scroll_into_view_if_needed()
    _shot(page, "describe-readback")

    page.get_by_test_id("schedule-form-save").click()
    expect(page.get_by_test_id("schedule-form")).to_be_hidden()
    [task] = api(server, token, "GET", f"/api/chats/{chat}/schedules")["schedules"]
    assert task["schedule"] == {"kind": "cron", "cron": "0 9 * * 1#1", "timezone": BERLIN}
    assert (task["exclude_dates"], task["holidays"]) == ([], None)


def _skippable_weekdays(now: dt.datetime, zone: ZoneInfo) -> tuple[dt.date, dt.date]:
    """Two weekdays of the coming week (09:00 still ahead, inside the 7-day timeline) that are no US
    public holiday, so each is excluded as a listed date."""
    us = holidays.country_holidays("US")
    days = [now.astimezone(zone).date() + dt.timedelta(days=n) for n in range(1, 6)]
    days = [d for d in days if d.weekday() < 5 and d not in us]
    return days[0], days[-1]


@by_size(1280, 390)
def test_skipped_days_are_struck_through_in_the_preview_and_on_the_timeline(sized: Page, server, token: str) -> None:
    page = sized
    chat = open_new_chat(page)
    open_drawer(page)
    _new_dialog(page, "weekday standup")
    expect(page.get_by_test_id("schedule-exclusions")).to_have_count(0)  # an interval has no local dates
    _cron(page, PARIS)
    page.get_by_test_id("schedule-form-cron").fill("0 9 * * 1-5")
    zone = ZoneInfo(PARIS)
    first, last = _skippable_weekdays(dt.datetime.now(dt.UTC), zone)

    dates = page.get_by_test_id("schedule-exclude-dates")
    dates.fill(f"{first}, 2026-13-45")
    expect(page.get_by_test_id("schedule-exclude-dates-error")).to_contain_text(
        "Skip these dates: '2026-13-45' is not a date written YYYY-MM-DD")
    expect(page.get_by_test_id("schedule-form-save")).to_be_disabled()
    page.get_by_test_id("schedule-holidays").fill("XX")
    dates.fill(f"{last} {first}")
    expect(page.get_by_test_id("schedule-holidays-error")).to_contain_text("Holiday country: 'XX' is not a country")
    expect(page.get_by_test_id("schedule-holidays")).to_have_attribute("aria-invalid", "true")
    page.get_by_test_id("schedule-exclusions").scroll_into_view_if_needed()
    _shot(page, "dialog-exclusion-error")
    page.get_by_test_id("schedule-holidays").fill("US")
    page.get_by_test_id("schedule-holidays-subdivision").fill("ZZ")
    expect(page.get_by_test_id("schedule-holidays-error")).to_contain_text("'ZZ' is not a subdivision of US")
    page.get_by_test_id("schedule-holidays-subdivision").fill("")
    expect(page.get_by_test_id("schedule-holidays-error")).to_have_count(0)
    expect(page.get_by_test_id("schedule-form-save")).to_be_enabled()

    preview = page.get_by_test_id("schedule-form-preview")
    skipped = preview.get_by_test_id("preview-excluded").filter(has_text=_short(first, zone))
    expect(skipped).to_have_count(1)
    expect(skipped).to_contain_text("excluded · skipped date")
    expect(skipped.get_by_test_id("preview-excluded-time")).to_have_css("text-decoration-line", "line-through")
    expect(preview.get_by_test_id("schedule-form-fire")).to_have_count(5)  # five real fires, besides
    rows = preview.locator("[data-testid=schedule-form-fire], [data-testid=preview-excluded]")
    kinds = [rows.nth(i).get_attribute("data-testid") for i in range(rows.count())]
    utc = [rows.nth(i).get_attribute("data-utc") or "" for i in range(rows.count())]
    assert utc == sorted(utc) and all(utc), utc  # in time order among the fires...
    at = next(i for i in range(rows.count()) if _short(first, zone) in rows.nth(i).inner_text())
    assert kinds[at] == "preview-excluded" and "schedule-form-fire" in kinds[at + 1:], kinds  # ...not after them
    page.get_by_test_id("schedule-exclusions").scroll_into_view_if_needed()
    _inside_width(page, "schedule-exclusions")
    _shot(page, "dialog-exclusions")
    preview.scroll_into_view_if_needed()
    _shot(page, "dialog-excluded-preview")

    page.get_by_test_id("schedule-form-save").click()
    expect(page.get_by_test_id("schedule-form")).to_be_hidden()
    [task] = api(server, token, "GET", f"/api/chats/{chat}/schedules")["schedules"]
    assert (task["exclude_dates"], task["holidays"]) == (sorted([str(first), str(last)]),
                                                         {"country": "US", "subdivision": None})
    row = page.locator(f'[data-testid=schedule-row][data-schedule-id="{task["id"]}"]')
    expect(row.get_by_test_id("task-exclusions")).to_have_text("Skips US public holidays and 2 dates")
    marks = page.get_by_test_id("schedules-timeline").get_by_test_id("timeline-excluded")
    for day in (first, last):
        expect(marks.and_(page.locator(f'[aria-label="weekday standup · {_short(day, zone)} · excluded '
                                       '(skipped date)"]'))).to_have_count(1)
    _inside_width(page, "schedules-timeline")
    row.scroll_into_view_if_needed()
    _shot(page, "drawer-excluded")

    row.get_by_test_id("schedule-edit").click()  # the edit dialog loads them back
    expect(page.get_by_test_id("schedule-exclude-dates")).to_have_value(f"{min(first, last)}, {max(first, last)}")
    expect(page.get_by_test_id("schedule-holidays")).to_have_value("US")
    expect(page.get_by_test_id("schedule-holidays-subdivision")).to_have_value("")
