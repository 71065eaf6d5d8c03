"""SPEC §15 in Chromium: caps per fire set in the dialog and shown on the card (and cleared); bad cap
values refused by name; a task's spend on its card and on /schedules (seeded through the ledger:
the demo agent reports no usage); a project with a daily budget shows the chat line, re-read when a
turn ends; a due fire of a spent project waits, and its card says why and until when.

Screenshots (both sizes) land in each test's folder; CHATCRON_UPDATE_SCREENSHOTS=1 copies them to
docs/screenshots/.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from app.core.config import load_settings
from app.core.context import Core
from app.core.ports import Usage
from app.core.spend import add_spend_in
from app.wiring import build_core
from tests.e2e.conftest import DEMO_EMAIL, api, login, open_drawer, open_new_chat, save_shot

pytestmark = pytest.mark.e2e
SIZES = {1280: {"width": 1280, "height": 800}, 390: {"width": 390, "height": 844}}
SETTLE_MS = 600  # the drawer slides in; a screenshot waits for it (REFLEX_NOTES.md)
SPENT = "The project's daily budget is spent: scheduled fires wait until 00:00 UTC; your messages still run."


@pytest.fixture
def sized(request: pytest.FixtureRequest, browser: Browser, base_url: str) -> Iterator[Page]:
    context = browser.new_context(base_url=base_url, viewport=SIZES[getattr(request, "param", 1280)],
                                  timezone_id="Europe/Paris")
    page = context.new_page()
    yield page
    context.close()


def _by_size(*widths: int):
    return pytest.mark.parametrize("sized", list(widths), indirect=True, ids=[f"{w}px" for w in widths])


@pytest.fixture(scope="module")
def core(server) -> Iterator[Core]:
    """The server's store, opened by the test process (to seed the spend ledger)."""
    c = build_core(load_settings(server.env))
    yield c
    c.prompts.shutdown(2.0)
    c.db.engine.dispose()


def _spend(core: Core, project_id: int, task_id: int, tokens: int, cost: float | None = None,
           days_ago: int = 0) -> None:
    """What a turn ending would add to the ledger (``task_id`` 0: a person's turn)."""
    with core.db.write() as s:
        add_spend_in(s, core.clock.now() - dt.timedelta(days=days_ago), project_id, task_id,
                     Usage(input_tokens=tokens - tokens // 5, output_tokens=tokens // 5, cost_usd=cost))


def _row(page: Page, task_id: int) -> Locator:
    return page.locator(f'[data-testid=schedule-row][data-schedule-id="{task_id}"]')


def _width(page: Page) -> int:
    return page.viewport_size["width"] if page.viewport_size else 1280


def _fits(page: Page, locator: Locator) -> None:
    """Nothing of ``locator`` is cut off on the right of the screen — once it has come to rest (the
    phone's drawer slides in: a box read mid-slide is partly off the screen)."""
    box = locator.bounding_box()
    for _ in range(30):
        page.wait_for_timeout(100)
        settled = locator.bounding_box()
        if settled == box:
            break
        box = settled
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= _width(page) + 0.5, box


def _open_form(page: Page) -> None:
    page.get_by_test_id("schedules-new").click()
    expect(page.get_by_test_id("schedule-form")).to_be_visible()
    page.get_by_test_id("schedule-form-name").fill("nightly report")
    page.get_by_test_id("schedule-form-prompt").fill("write the report")
    page.get_by_test_id("schedule-form-advanced").click()
    expect(page.get_by_test_id("schedule-caps")).to_be_visible()


@_by_size(1280, 390)
def test_caps_set_in_the_dialog_show_on_the_card_and_clear(sized: Page, server, token: str,
                                                           tmp_path: Path) -> None:
    page = sized
    width = _width(page)
    open_new_chat(page)
    expect(page.get_by_test_id("chat-budget")).to_have_count(0)  # the demo project has no budget
    open_drawer(page)
    _open_form(page)
    page.get_by_test_id("schedule-cap-tokens").fill("10,000")
    page.get_by_test_id("schedule-cap-cost").fill("0.50")
    expect(page.get_by_test_id("schedule-form-error")).to_have_count(0)
    expect(page.get_by_test_id("schedule-form-save")).to_be_enabled()
    page.get_by_test_id("schedule-caps").scroll_into_view_if_needed()
    _fits(page, page.get_by_test_id("schedule-cap-cost"))
    save_shot(page, tmp_path, f"schedule-caps-dialog-{width}.png", settle_ms=300)
    page.get_by_test_id("schedule-form-save").click()
    expect(page.get_by_test_id("schedule-form")).to_be_hidden()

    row = page.get_by_test_id("schedule-row").filter(has_text="nightly report")
    expect(row.get_by_test_id("task-caps")).to_have_text("Cap 10,000 tokens / $0.50 per fire")
    expect(row.get_by_test_id("task-spend")).to_have_count(0)  # nothing spent yet
    task_id = int(row.get_attribute("data-schedule-id") or 0)
    stored = api(server, token, "GET", f"/api/schedules/{task_id}")
    assert (stored["max_tokens_per_fire"], stored["max_cost_per_fire_usd"]) == (10_000, 0.5)
    _fits(page, row.get_by_test_id("task-caps"))
    row.scroll_into_view_if_needed()
    save_shot(page, tmp_path, f"schedule-caps-card-{width}.png", settle_ms=SETTLE_MS)

    # An edit shows the caps (its advanced options open); clearing one removes it.
    row.get_by_test_id("schedule-edit").click()
    expect(page.get_by_test_id("schedule-cap-tokens")).to_have_value("10000")
    expect(page.get_by_test_id("schedule-cap-cost")).to_have_value("0.5")
    page.get_by_test_id("schedule-cap-tokens").fill("")
    expect(page.get_by_test_id("schedule-form-save")).to_be_enabled()
    page.get_by_test_id("schedule-form-save").click()
    expect(page.get_by_test_id("schedule-form")).to_be_hidden()
    expect(_row(page, task_id).get_by_test_id("task-caps")).to_have_text("Cap $0.50 per fire")
    stored = api(server, token, "GET", f"/api/schedules/{task_id}")
    assert (stored["max_tokens_per_fire"], stored["max_cost_per_fire_usd"]) == (None, 0.5)
    api(server, token, "DELETE", f"/api/schedules/{task_id}")  # the demo project's schedules are shared (a quota)


BAD = [
    ("schedule-cap-tokens", "-5", "Max tokens per fire: must be a whole number of tokens from 1 to 1,000,000,000,000"),
    ("schedule-cap-tokens", "abc", "Max tokens per fire: must be a whole number of tokens (leave it empty for no cap)"),
    ("schedule-cap-tokens", "10000000000000", "from 1 to 1,000,000,000,000"),
    ("schedule-cap-tokens", "2.5", "Max tokens per fire: must be a whole number"),
    ("schedule-cap-cost", "lots", "Max cost per fire: must be an amount in US dollars, like 0.50"),
    ("schedule-cap-cost", "0", "Max cost per fire: must be an amount in US dollars above 0 and at most 1,000,000"),
    ("schedule-cap-cost", "-1", "Max cost per fire: must be an amount in US dollars above 0"),
    ("schedule-cap-cost", "2000000", "at most 1,000,000"),
]


@_by_size(1280, 390)
def test_bad_caps_are_refused_by_name(sized: Page, tmp_path: Path) -> None:
    page = sized
    open_new_chat(page)
    open_drawer(page)
    _open_form(page)
    error, save = page.get_by_test_id("schedule-form-error"), page.get_by_test_id("schedule-form-save")
    for testid, typed, words in BAD:
        field = page.get_by_test_id(testid)
        field.fill(typed)
        expect(error).to_contain_text(words)
        expect(page.get_by_test_id("schedule-caps-error")).to_contain_text(words)  # beside the field too
        expect(field).to_have_attribute("aria-invalid", "true")
        expect(save).to_be_disabled()
        expect(page.get_by_test_id("schedule-form-blocked")).to_contain_text("needs fixing")
        if (testid, typed) == ("schedule-cap-tokens", "-5"):
            page.get_by_test_id("schedule-caps-error").scroll_into_view_if_needed()
            save_shot(page, tmp_path, f"schedule-caps-error-{_width(page)}.png", settle_ms=300)
        field.fill("")
        expect(error).to_have_count(0)
        expect(page.get_by_test_id("schedule-caps-error")).to_have_count(0)
    expect(save).to_be_enabled()


@_by_size(1280, 390)
def test_a_tasks_spend_shows_on_its_card_and_on_all_schedules(sized: Page, server, token: str, core: Core,
                                                             tmp_path: Path) -> None:
    page = sized
    width = _width(page)
    chat_id = open_new_chat(page)
    task = api(server, token, "POST", f"/api/chats/{chat_id}/schedules", {
        "name": f"spender {width}", "prompt": "spend", "schedule": {"kind": "interval", "every_seconds": 3600},
        "max_tokens_per_fire": 20_000})
    _spend(core, task["project_id"], task["id"], 12_345, 0.41)
    _spend(core, task["project_id"], task["id"], 85_655, 2.69, days_ago=3)
    line = "Spent today 12,345 tokens · $0.41 · in all 98,000 tokens · $3.10"
    shown = api(server, token, "GET", f"/api/schedules/{task['id']}")
    assert shown["usage_today"]["tokens"] == 12_345 and shown["usage_total"]["tokens"] == 98_000
    open_drawer(page)
    row = _row(page, task["id"])
    expect(row.get_by_test_id("task-spend")).to_have_text(line)
    expect(row.get_by_test_id("task-caps")).to_have_text("Cap 20,000 tokens per fire")
    _fits(page, row.get_by_test_id("task-spend"))
    save_shot(page, tmp_path, f"task-spend-card-{width}.png", settle_ms=SETTLE_MS)

    page.goto("/schedules")
    listed = page.locator(f'[data-testid=all-schedules-row][data-schedule-id="{task["id"]}"]')
    expect(listed.get_by_test_id("all-schedules-spend")).to_have_text(line)
    listed.scroll_into_view_if_needed()
    _fits(page, listed.get_by_test_id("all-schedules-spend"))
    save_shot(page, tmp_path, f"all-schedules-spend-{width}.png", settle_ms=300)
    api(server, token, "DELETE", f"/api/schedules/{task['id']}")  # the demo project's schedules are shared (a quota)


def _budget_project(server, token: str, name: str, tokens: int) -> tuple[int, int]:
    """A project of the demo user with a daily token budget, and a chat in it: (project, chat)."""
    project = int(server.manage("create-project", "--name", name, "--owner", DEMO_EMAIL).splitlines()[-1])
    server.manage("set-budget", "--project", str(project), "--daily-tokens", str(tokens))
    chat = api(server, token, "POST", f"/api/projects/{project}/chats", {"title": "budget talk"})["id"]
    return project, chat


@_by_size(1280, 390)
def test_a_budgeted_chat_shows_the_days_spend_and_a_spent_budget_makes_fires_wait(
        sized: Page, server, token: str, core: Core, tmp_path: Path) -> None:
    page = sized
    width = _width(page)
    project, chat = _budget_project(server, token, f"Budgeted {width}", 50_000)
    _spend(core, project, 0, 41_200)  # people's turns count too
    login(page)
    page.goto(f"/chat/{chat}")
    line = page.get_by_test_id("chat-budget")
    expect(line).to_have_text("Project budget today: 41,200 of 50,000 tokens")
    expect(line).to_have_attribute("data-spent", "false")
    save_shot(page, tmp_path, f"chat-budget-{width}.png", settle_ms=300)

    # More is spent elsewhere; the line is read again when a turn of this chat ends (not on every poll).
    _spend(core, project, 0, 10_000)
    page.wait_for_timeout(1500)
    expect(line).to_have_text("Project budget today: 41,200 of 50,000 tokens")
    page.get_by_test_id("composer-input").fill("hello")
    page.get_by_test_id("composer-input").press("Enter")
    expect(page.get_by_test_id("agent-working")).to_have_count(0, timeout=30_000)
    expect(line).to_contain_text(SPENT, timeout=10_000)  # a person's turn still ran
    expect(line).to_contain_text("Today (UTC): 51,200 of 50,000 tokens")
    expect(line).to_have_attribute("data-spent", "true")
    _fits(page, line)
    save_shot(page, tmp_path, f"chat-budget-spent-{width}.png", settle_ms=300)

    # A due fire of the spent project waits for the next UTC day: its card says why and until when.
    at = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=4)).isoformat(timespec="seconds").replace("+00:00", "Z")
    task = api(server, token, "POST", f"/api/chats/{chat}/schedules", {
        "name": "waits for budget", "prompt": "report", "schedule": {"kind": "once", "at": at}})
    open_drawer(page)
    row = _row(page, task["id"])
    wait = row.get_by_test_id("task-budget-wait")
    expect(wait).to_contain_text("Waits for the project's daily budget until 00:00 UTC", timeout=30_000)
    expect(wait).to_contain_text("project budget spent: 51,200 of 50,000 tokens today (UTC)")
    expect(row.get_by_test_id("schedule-last-error")).to_have_count(0)  # a wait, not a failure
    row.get_by_test_id("schedule-history-toggle").click()
    record = row.locator('[data-testid=schedule-run][data-status="deferred"]')
    expect(record).to_contain_text("deferred")
    expect(record).to_contain_text("not fired")
    expect(record.get_by_test_id("schedule-run-error")).to_contain_text("project budget spent")
    _fits(page, wait)
    row.scroll_into_view_if_needed()
    save_shot(page, tmp_path, f"budget-wait-card-{width}.png", settle_ms=SETTLE_MS)

    page.goto("/schedules")
    listed = page.locator(f'[data-testid=all-schedules-row][data-schedule-id="{task["id"]}"]')
    expect(listed.get_by_test_id("all-schedules-budget-wait")).to_contain_text("until 00:00 UTC")
