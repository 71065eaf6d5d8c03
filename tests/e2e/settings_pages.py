"""What the project settings and admin pages' browser tests share (SPEC §18): users and projects made
through the admin CLI and the API, logging in as anyone, and the checks and screenshots of a page at
1280 × 800 and 390 × 844."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from playwright.sync_api import Locator, Page, expect

from tests.e2e.conftest import DEMO_EMAIL, DEMO_PASSWORD, ROOT, SIZES, api


def width(page: Page) -> int:
    return page.viewport_size["width"] if page.viewport_size else 1280


def new_user(server, name: str) -> tuple[str, str]:
    """A new user of this server: (email, password)."""
    email = f"{name}-{uuid.uuid4().hex[:6]}@example.com"
    server.manage("create-user", "--email", email, "--password", f"{name}-password-long")
    return email, f"{name}-password-long"


def owned_project(server, token: str, name: str) -> tuple[int, int]:
    """A project of the demo user (its owner) with one chat: (project, chat)."""
    project = int(server.manage("create-project", "--name", f"{name} {uuid.uuid4().hex[:4]}", "--owner", DEMO_EMAIL))
    chat = api(server, token, "POST", f"/api/projects/{project}/chats", {"title": f"{name} talk"})["id"]
    return project, chat


def members(server, token: str, project: int) -> list[dict]:
    """``GET /api/projects/{pid}/members``: SPEC §18's bare list (an object holding it, once)."""
    answer = api(server, token, "GET", f"/api/projects/{project}/members")
    return answer["members"] if isinstance(answer, dict) else answer


def log_in(page: Page, email: str = DEMO_EMAIL, password: str = DEMO_PASSWORD) -> None:
    page.goto("/login")
    page.get_by_test_id("login-email").fill(email)
    page.get_by_test_id("login-password").fill(password)
    page.get_by_test_id("login-submit").click()
    page.wait_for_url(lambda url: "/login" not in url)
    if "/chat/" in page.url:  # the page answers clicks once it is hydrated: its title is drawn then
        page.get_by_test_id("chat-title").wait_for()


def open_settings(page: Page, project: int) -> Locator:
    page.goto(f"/projects/{project}/settings")
    settings = page.get_by_test_id("project-settings")
    expect(settings.get_by_test_id("settings-agent")).to_be_visible()
    return settings


def fits(page: Page, locator: Locator) -> None:
    """Nothing of ``locator`` is cut off on the right of the screen."""
    box = locator.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width(page) + 0.5, box


def no_overflow(page: Page) -> None:
    """No element of the page sticks out to the right of its screen (the 390 px promise)."""
    wide = page.evaluate("""(w) => [...document.querySelectorAll('.cc-settings-page *')]
        .filter((el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.right > w + 1; })
        .map((el) => `${el.getAttribute('data-testid') || el.tagName} ${Math.round(el.getBoundingClientRect().right)}`)
        .slice(0, 5)""", width(page))
    assert wide == [], f"sticks out at {width(page)} px: {wide}"


def shot_section(page: Page, testid: str, tmp_path: Path, name: str) -> None:
    """The whole section at the page's width (a tall viewport for the shot, then back)."""
    size = page.viewport_size or SIZES[1280]
    section = page.get_by_test_id(testid)
    height = int((section.bounding_box() or {"height": 800})["height"]) + 200
    page.set_viewport_size({"width": size["width"], "height": max(size["height"], height)})
    section.evaluate("(el) => el.scrollIntoView({block: 'start'})")  # above the Save bar, not under it
    page.mouse.move(0, 0)
    page.wait_for_timeout(300)
    path = tmp_path / name
    section.screenshot(path=str(path))
    if os.environ.get("CHATCRON_UPDATE_SCREENSHOTS"):
        (ROOT / "docs" / "screenshots" / name).write_bytes(path.read_bytes())
    page.set_viewport_size(size)
