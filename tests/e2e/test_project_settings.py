"""Project settings and roles in the browser (SPEC §18), in Chromium against the served processes at
1280 × 800 and 390 × 844: an owner reaches the page from the chat's agent badge and the sidebar,
changes the agent's model and tool policy, allows a refused host and sets a budget, and saves; a bad
value shows its error beside its input and nothing is saved; a member sees the page read-only, and it
turns editable when they are made an owner; a secret set through the service never reaches the page,
its HTML or its websocket frames. Members: test_project_members.py; the admin page: test_admin_page.py.

Screenshots of each section land in each test's folder; CHATCRON_UPDATE_SCREENSHOTS=1 copies them to
docs/screenshots/project-settings-*-{1280,390}.png.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from app.core.config import load_settings
from app.core.context import Core
from app.core.models import Event, EventType
from app.core.ports import Usage
from app.core.spend import add_spend_in
from app.wiring import build_core
from tests.e2e import sockets
from tests.e2e.conftest import DEMO_EMAIL, api, by_size, reveal_sidebar, save_shot
from tests.e2e.settings_pages import (
    fits,
    log_in,
    new_user,
    no_overflow,
    open_settings,
    owned_project,
    shot_section,
    width,
)

pytestmark = pytest.mark.e2e
SECRET = "sk-e2e-never-in-a-frame-7f3c9a"






@pytest.fixture(scope="module")
def core(server) -> Iterator[Core]:
    """The server's store, opened by the test process (to seed refusals and spend)."""
    c = build_core(load_settings(server.env))
    yield c
    c.prompts.shutdown(2.0)
    c.db.engine.dispose()


def _seed_network_and_spend(core: Core, project: int, chat: int) -> None:
    """Two refusals of the egress proxy in the project's chat, and some spend (a person's turns)."""
    now = core.clock.now()
    with core.db.write() as s:
        for host, port, ago in (("registry.npmjs.org", 443, 3), ("registry.npmjs.org", 443, 1), ("10.0.0.7", 8080, 2)):
            text = json.dumps({"id": f"network-refused-{ago}", "title": f"network: {host}:{port} refused",
                               "kind": "network", "status": "refused"})
            s.add(Event(chat_id=chat, run_id=None, type=EventType.TOOL.value, text=text,
                        created_at=now - dt.timedelta(hours=ago)))
        add_spend_in(s, now, project, 0, Usage(input_tokens=9_000, output_tokens=3_345, cost_usd=0.41))


@by_size(1280, 390)
def test_an_owner_changes_the_model_and_tool_policy_and_saves(sized: Page, server, token: str, core: Core,
                                                              tmp_path: Path) -> None:
    page, wide = sized, width(sized)
    project, chat = owned_project(server, token, "Tuned")
    _seed_network_and_spend(core, project, chat)
    log_in(page)
    page.goto(f"/chat/{chat}")
    badge = page.get_by_test_id("chat-agent-badge")  # the header says which agent answers, and links here
    expect(badge).to_have_text("Demo agent")
    page.get_by_test_id("chat-agent-link").click()
    page.wait_for_url(f"**/projects/{project}/settings")
    settings = page.get_by_test_id("project-settings")
    expect(settings.get_by_test_id("settings-role")).to_have_attribute("data-role", "owner")
    expect(page.get_by_test_id("settings-readonly")).to_have_count(0)

    # reached from the sidebar too: the project's gear
    page.goto(f"/chat/{chat}")
    expect(page.get_by_test_id("chat-title")).to_have_text("Tuned talk")
    reveal_sidebar(page)
    page.locator(f'[data-testid=project-item][data-project-id="{project}"]').get_by_test_id(
        "project-settings-link").click()
    page.wait_for_url(f"**/projects/{project}/settings")
    expect(page.get_by_test_id("settings-agent")).to_be_visible()
    no_overflow(page)
    save_shot(page, tmp_path, f"project-settings-page-{wide}.png", settle_ms=300)

    page.get_by_test_id("settings-model").fill(f"model-x-{wide}")
    page.get_by_test_id("settings-tool-policy").select_option("ask")
    page.get_by_test_id("settings-save").click()
    expect(page.get_by_test_id("settings-saved")).to_have_text("Saved: model, tool policy.")
    stored = api(server, token, "GET", f"/api/projects/{project}/settings")["agent"]
    assert (stored["model"], stored["tool_policy"]) == (f"model-x-{wide}", "ask")
    records = api(server, token, "GET", f"/api/projects/{project}/audit")["records"]
    assert records[0]["detail"]["keys"] == ["agent.model", "agent.tool_policy"]
    expect(page.get_by_test_id("audit-row").first).to_contain_text("agent.model, agent.tool_policy")

    # the refusals of the last 7 days, each with "Allow" (saved with Save)
    refused = page.locator('[data-testid=settings-refusal-row][data-host="registry.npmjs.org:443"]')
    expect(refused).to_contain_text("refused 2 times")
    refused.get_by_test_id("settings-refusal-allow").click()
    expect(refused).to_contain_text("allowed")
    expect(page.locator('[data-testid=settings-allow-host][data-host="registry.npmjs.org:443"]')).to_be_visible()
    page.get_by_test_id("settings-daily-tokens").fill("250,000")
    page.get_by_test_id("settings-save").click()
    expect(page.get_by_test_id("settings-saved")).to_have_text("Saved: allow hosts, daily tokens.")
    saved = api(server, token, "GET", f"/api/projects/{project}/settings")
    assert saved["network"]["allow_hosts"] == ["registry.npmjs.org:443"]
    assert saved["budget"]["daily_tokens"] == 250_000
    expect(page.get_by_test_id("settings-spent-today")).to_contain_text("12,345 tokens · $0.41")

    # "Test the agent": one line through the saved settings (the demo agent here), its reply shown
    page.get_by_test_id("settings-agent-test").click()
    expect(page.get_by_test_id("settings-agent-test-reply")).not_to_be_empty(timeout=30_000)
    expect(page.get_by_test_id("settings-agent-test-error")).to_have_count(0)

    page.reload()
    expect(page.get_by_test_id("settings-model")).to_have_value(f"model-x-{wide}")
    expect(page.get_by_test_id("settings-tool-policy")).to_have_value("ask")
    expect(page.get_by_test_id("settings-daily-tokens")).to_have_value("250000")
    no_overflow(page)
    for section in ("agent", "network", "budget", "members"):
        fits(page, page.get_by_test_id(f"settings-{section}"))
        shot_section(page, f"settings-{section}", tmp_path, f"project-settings-{section}-{wide}.png")
    shot_section(page, "settings-audit", tmp_path, f"project-settings-audit-{wide}.png")


@by_size(1280, 390)
def test_a_bad_value_shows_its_error_beside_the_field_and_nothing_is_saved(sized: Page, server, token: str,
                                                                           tmp_path: Path) -> None:
    page, wide = sized, width(sized)
    project, _ = owned_project(server, token, "Strict")
    before = api(server, token, "GET", f"/api/projects/{project}/settings")
    log_in(page)
    open_settings(page, project)
    page.get_by_test_id("settings-model").fill("never-saved")
    history = page.get_by_test_id("settings-history-budget")
    history.fill("-5")
    page.get_by_test_id("settings-save").click()
    error = page.get_by_test_id("settings-error-history_budget_chars")
    expect(error).to_have_text("Must be a whole number from 0 to 10,000,000.")
    expect(history).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_test_id("settings-error")).to_contain_text("Nothing was saved")
    expect(page.get_by_test_id("settings-saved")).to_have_count(0)
    # beside its field: right under the input, not at the other end of the page
    field, shown = history.bounding_box(), error.bounding_box()
    assert field and shown and 0 <= shown["y"] - (field["y"] + field["height"]) < 60, (field, shown)
    error.scroll_into_view_if_needed()
    save_shot(page, tmp_path, f"project-settings-error-{wide}.png", settle_ms=300)
    assert api(server, token, "GET", f"/api/projects/{project}/settings")["agent"] == before["agent"]

    history.fill("")  # editing the field takes its error away; the next bad value is the budget's
    expect(error).to_have_count(0)
    tokens = page.get_by_test_id("settings-daily-tokens")
    tokens.fill("lots")
    page.get_by_test_id("settings-save").click()
    expect(page.get_by_test_id("settings-error-daily_tokens")).to_contain_text("Must be a whole number of tokens")
    expect(tokens).to_have_attribute("aria-invalid", "true")
    after = api(server, token, "GET", f"/api/projects/{project}/settings")
    assert (after["agent"], after["budget"]["daily_tokens"]) == (before["agent"], None)


@by_size(1280, 390)
def test_a_member_sees_the_page_read_only(sized: Page, server, token: str, tmp_path: Path) -> None:
    page, wide = sized, width(sized)
    project, _ = owned_project(server, token, "Shared")
    email, password = new_user(server, "member")
    server.manage("grant-access", "--email", email, "--project", str(project), "--role", "member")
    api(server, token, "PATCH", f"/api/projects/{project}/settings",
        {"agent": {"model": "shared-model", "env": {"REGION": "eu"}}, "network": {"allow_hosts": ["pypi.org"]}})
    log_in(page, email, password)
    open_settings(page, project)
    expect(page.get_by_test_id("settings-role")).to_have_attribute("data-role", "member")
    expect(page.get_by_test_id("settings-readonly")).to_be_visible()
    expect(page.get_by_test_id("settings-model")).to_have_value("shared-model")
    for testid in ("settings-model", "settings-provider", "settings-preset", "settings-tool-policy",
                   "settings-history-budget", "settings-daily-tokens", "settings-daily-cost", "settings-env-value"):
        expect(page.get_by_test_id(testid)).to_be_disabled()
    for testid in ("settings-save", "member-invite", "settings-audit", "settings-agent-test", "settings-env-add",
                   "settings-allow-add", "settings-allow-remove", "member-make-owner"):
        expect(page.get_by_test_id(testid)).to_have_count(0)
    mine = page.locator(f'[data-testid=member-row][data-email="{email}"]')
    expect(mine.get_by_test_id("member-remove")).to_have_text("Leave")  # a member may leave, and only that
    expect(page.locator(f'[data-testid=member-row][data-email="{DEMO_EMAIL}"]').get_by_test_id(
        "member-remove")).to_have_count(0)
    no_overflow(page)
    save_shot(page, tmp_path, f"project-settings-readonly-{wide}.png", settle_ms=300)

    # made an owner while the page is open: it turns editable without a reload
    server.manage("grant-access", "--email", email, "--project", str(project), "--role", "owner")
    expect(page.get_by_test_id("settings-save")).to_be_visible(timeout=5000)
    expect(page.get_by_test_id("settings-model")).to_be_enabled()
    expect(page.get_by_test_id("settings-role")).to_have_attribute("data-role", "owner")


def test_a_secret_never_reaches_the_page_its_html_or_its_frames(sized: Page, server, token: str) -> None:
    page = sized
    project, _ = owned_project(server, token, "Secretive")
    api(server, token, "PATCH", f"/api/projects/{project}/settings", {"agent": {"secrets": {"OPENAI_API_KEY": SECRET}}})
    frames = sockets.Frames(page)
    log_in(page)
    open_settings(page, project)
    row = page.locator('[data-testid=settings-secret-row][data-name="OPENAI_API_KEY"]')
    expect(row.get_by_test_id("settings-secret-hint")).to_have_text(f"set · ends in …{SECRET[-4:]}")
    expect(row.get_by_test_id("settings-secret-input")).to_have_value("")

    # a new value typed: sent once on Save, never echoed back, the input emptied
    typed = "sk-typed-replacement-51d0"
    row.get_by_test_id("settings-secret-input").fill(typed)
    expect(row.get_by_test_id("settings-secret-hint")).to_have_text("replaced on Save")
    page.get_by_test_id("settings-save").click()
    expect(page.get_by_test_id("settings-saved")).to_have_text("Saved: secret OPENAI_API_KEY.")
    expect(row.get_by_test_id("settings-secret-hint")).to_have_text(f"set · ends in …{typed[-4:]}")
    expect(row.get_by_test_id("settings-secret-input")).to_have_value("")
    page.reload()
    expect(row.get_by_test_id("settings-secret-hint")).to_have_text(f"set · ends in …{typed[-4:]}")
    for value in (SECRET, typed):
        assert value not in page.content()
        assert not [text for _, text in frames.seen if value in text], "a secret's value reached the page"

    row.get_by_test_id("settings-secret-remove").click()
    expect(row.get_by_test_id("settings-secret-hint")).to_have_text("removed on Save")
    page.get_by_test_id("settings-save").click()
    expect(page.get_by_test_id("settings-saved")).to_have_text("Saved: secret OPENAI_API_KEY.")
    expect(row).to_have_count(0)
    assert api(server, token, "GET", f"/api/projects/{project}/settings")["agent"]["secrets"] == {}


