"""Exports and the schedules import in the browser (SPEC §21), at 1280 × 800 and 390 × 844: the
chat menu downloads the transcript as Markdown and JSON; the drawer downloads the project's
schedules and imports a document into another project's chat as drafts; a bad document names the
schedule and field, and creates nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import api, by_size, open_drawer, save_shot
from tests.e2e.settings_pages import log_in, owned_project

pytestmark = pytest.mark.e2e
TURN = 30_000  # ms: the demo agent's turn through the served web process


def _download(page: Page, click) -> str:
    with page.expect_download() as info:
        click()
    return Path(info.value.path()).read_text(encoding="utf-8")


def _menu_item(page: Page, testid: str):
    """The chat menu's item, the menu opened (once the last one has closed)."""
    item = page.get_by_test_id(testid)
    expect(page.get_by_role("menu")).to_have_count(0)
    page.get_by_test_id("chat-export").click()
    expect(item).to_be_visible()
    return item


@by_size(1280, 390)
def test_the_chat_menu_downloads_the_transcript(sized: Page, server, token: str) -> None:
    page = sized
    _, chat = owned_project(server, token, "Exported")
    api(server, token, "POST", f"/api/chats/{chat}/prompts", {"text": "hello export"})
    log_in(page)
    page.goto(f"/chat/{chat}")
    expect(page.locator("[data-testid=event][data-type=assistant_text]").last).not_to_be_empty(timeout=TURN)
    markdown = _download(page, _menu_item(page, "chat-export-md").click)
    assert markdown.startswith("# Exported talk\n") and "hello export" in markdown and "**Agent**" in markdown
    doc = json.loads(_download(page, _menu_item(page, "chat-export-json").click))
    assert [e["type"] for e in doc["events"]][:2] == ["prompt", "run_started"]
    assert doc["events"][-1]["type"] == "run_finished" and doc["chat"]["id"] == chat


@by_size(1280, 390)
def test_the_drawer_exports_schedules_and_imports_them_as_drafts_elsewhere(sized: Page, server, token: str,
                                                                          tmp_path: Path) -> None:
    page, wide = sized, (sized.viewport_size or {"width": 1280})["width"]
    _, source = owned_project(server, token, "Source")
    _, target = owned_project(server, token, "Target")
    for name in ("Standup", "Digest"):
        api(server, token, "POST", f"/api/chats/{source}/schedules",
            {"name": name, "prompt": f"Post the {name.lower()}.",
             "schedule": {"kind": "cron", "cron": "0 9 * * 1-5", "timezone": "Europe/Paris"}})
    log_in(page)
    page.goto(f"/chat/{source}")
    open_drawer(page)
    document = _download(page, page.get_by_test_id("schedules-export").click)
    exported = json.loads(document)
    assert [s["name"] for s in exported["schedules"]] == ["Standup", "Digest"]

    page.goto(f"/chat/{target}")
    open_drawer(page)
    page.get_by_test_id("schedules-import").click()
    bad = {**exported, "schedules": [exported["schedules"][0], {**exported["schedules"][1], "overlap": "maybe"}]}
    page.get_by_test_id("schedules-import-document").fill(json.dumps(bad))
    page.get_by_test_id("schedules-import-submit").click()
    expect(page.get_by_test_id("schedules-import-error")).to_contain_text("schedules[1].overlap")
    assert api(server, token, "GET", f"/api/chats/{target}/schedules")["schedules"] == []  # nothing created
    save_shot(page, tmp_path, f"schedules-import-error-{wide}.png", settle_ms=300)
    page.get_by_test_id("schedules-import-document").fill(document)
    page.get_by_test_id("schedules-import-submit").click()
    expect(page.get_by_test_id("schedules-import-done")).to_contain_text("2 schedules imported as drafts")
    save_shot(page, tmp_path, f"schedules-import-{wide}.png", settle_ms=300)
    made = api(server, token, "GET", f"/api/chats/{target}/schedules")["schedules"]
    assert sorted((t["name"], t["status"]) for t in made) == [("Digest", "draft"), ("Standup", "draft")]
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("schedule-row")).to_have_count(2)
