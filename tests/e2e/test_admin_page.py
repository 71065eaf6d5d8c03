"""The server admin's page in the browser (SPEC §18) at 1280 × 800 and 390 × 844: an admin reaches it
from the sidebar, creates a user (a bad password refused in the page), resets a password and deletes
a user after a confirm, and reads the presets and the instance's health; anyone else has no link and
gets the page of an unknown address. Screenshots: docs/screenshots/admin-*-{1280,390}.png with
CHATCRON_UPDATE_SCREENSHOTS=1."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import DEMO_EMAIL, by_size, reveal_sidebar, save_shot
from tests.e2e.settings_pages import log_in, no_overflow, shot_section, width

pytestmark = pytest.mark.e2e




@by_size(1280, 390)
def test_an_admin_sees_the_admin_page_and_others_do_not(sized: Page, server, tmp_path: Path) -> None:
    page, wide = sized, width(sized)
    log_in(page)  # the demo user is no admin: no link, and the page is not there for them
    reveal_sidebar(page)
    expect(page.get_by_test_id("nav-notifications")).to_be_visible()
    expect(page.get_by_test_id("nav-admin")).to_have_count(0)
    page.goto("/admin")
    expect(page.get_by_test_id("not-found")).to_be_visible()
    expect(page.get_by_test_id("admin-users")).to_have_count(0)
    page.context.clear_cookies()

    email = f"admin-{uuid.uuid4().hex[:6]}@example.com"
    server.manage("create-user", "--email", email, "--password", "admin-password-long", "--admin")
    log_in(page, email, "admin-password-long")
    page.wait_for_url("**/chat/**")  # an admin sees every project: the first chat opens (then the sheet stays)
    expect(page.get_by_test_id("chat-title")).not_to_be_empty()
    reveal_sidebar(page)
    page.get_by_test_id("nav-admin").click()
    page.wait_for_url("**/admin")
    users = page.get_by_test_id("admin-users")
    expect(users).to_be_visible()
    expect(users.locator(f'[data-testid=admin-user-row][data-email="{DEMO_EMAIL}"]')).to_be_visible()
    expect(page.locator('[data-testid=admin-health-row][data-key="database"]')).to_have_attribute("data-ok", "true")
    expect(page.locator('[data-testid=admin-health-row][data-key="scheduler"]')).to_contain_text("alive")
    expect(page.get_by_test_id("admin-preset")).to_have_count(4)

    newcomer = f"new-{wide}-{uuid.uuid4().hex[:6]}@example.com"
    page.get_by_test_id("admin-new-email").fill(newcomer)
    page.get_by_test_id("admin-new-password").fill("short")
    page.get_by_test_id("admin-create").click()
    expect(page.get_by_test_id("admin-error")).to_contain_text("password")
    page.get_by_test_id("admin-new-password").fill("a-long-enough-password")
    page.get_by_test_id("admin-create").click()
    expect(page.get_by_test_id("admin-notice")).to_contain_text(f"{newcomer} can now log in")
    row = users.locator(f'[data-testid=admin-user-row][data-email="{newcomer}"]')
    expect(row).to_be_visible()

    row.get_by_test_id("admin-reset-password").click()
    page.get_by_test_id("admin-password-input").fill("another-long-password")
    page.get_by_test_id("admin-password-save").click()
    expect(page.get_by_test_id("admin-notice")).to_contain_text(f"new password set for {newcomer}")
    no_overflow(page)
    save_shot(page, tmp_path, f"admin-{wide}.png", settle_ms=300)
    shot_section(page, "admin-users", tmp_path, f"admin-users-{wide}.png")
    shot_section(page, "admin-health", tmp_path, f"admin-health-{wide}.png")

    row.get_by_test_id("admin-delete").click()
    expect(page.get_by_role("alertdialog")).to_contain_text(f"{newcomer} is deleted")
    page.get_by_test_id("admin-confirm").click()
    expect(page.get_by_test_id("admin-notice")).to_contain_text(newcomer)
    expect(row).to_have_count(0)
    mine = users.locator(f'[data-testid=admin-user-row][data-email="{email}"]')
    expect(mine.get_by_test_id("admin-delete")).to_have_count(0)  # an admin does not delete themself here


