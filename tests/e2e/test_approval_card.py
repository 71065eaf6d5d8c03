"""An approval card answered in a second tab (SPEC §13), with the real Claude Code, in Chromium.

The demo user's project runs the installed ``claude`` preset against the scripted Anthropic
server with ``tool_policy=ask``; the turn runs in the web process. Its Bash call becomes an
approval card in the first tab; the second tab clicks "allow once"; the first tab sees the card
decided (by whom) and the agent's reply after the tool ran.
Set CHATCRON_UPDATE_SCREENSHOTS=1 to refresh docs/screenshots/approval-card.png.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.agents.anthropic_server import AnthropicServer, bash, text
from tests.agents.rig import loopback_entry
from tests.e2e.conftest import DEMO_EMAIL, ROOT, api, login

pytestmark = pytest.mark.e2e
AGENT = 180_000  # ms: a cold Claude Code on a loaded 2-core machine takes seconds to start
REPLY = "Created approved-in-tab.txt."




def _shot(page: Page, tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    page.screenshot(path=str(path))
    if os.environ.get("CHATCRON_UPDATE_SCREENSHOTS"):
        shutil.copyfile(path, ROOT / "docs" / "screenshots" / name)


def test_an_approval_answered_in_a_second_tab_lets_the_turn_go_on(page: Page, browser, server, token: str,
                                                                 model: AnthropicServer, tmp_path: Path) -> None:
    project = api(server, token, "POST", "/api/projects", {"name": "Approvals"})
    server.manage("set-provider", "--project", str(project["id"]), "--provider", "acp", "--setting", "agent=claude",
                  "--setting", f"env.ANTHROPIC_BASE_URL={model.url}", "--setting", "env.ANTHROPIC_API_KEY=sk-ant-test",
                  "--setting", f"allow_hosts={loopback_entry(model.url)}",
                  "--setting", "tool_policy=ask")
    chat = api(server, token, "POST", f"/api/projects/{project['id']}/chats", {"title": "Approvals"})
    model.play(bash("touch approved-in-tab.txt", "I'll create it."), text(REPLY))

    login(page)
    page.goto(f"/chat/{chat['id']}")
    expect(page.get_by_test_id("chat-title")).to_have_text("Approvals")
    page.get_by_test_id("composer-input").fill("Please create approved-in-tab.txt.")
    page.get_by_test_id("composer-send").click()
    card = page.get_by_test_id("approval-card")
    expect(card).to_have_attribute("data-state", "pending", timeout=AGENT)
    expect(card).to_contain_text("touch approved-in-tab.txt")
    [pending] = api(server, token, "GET", "/api/approvals?state=pending")["approvals"]
    assert card.get_attribute("data-approval-id") == str(pending["id"])
    offered = [o["option_id"] for o in pending["options"]]
    expect(card.get_by_test_id("approval-option")).to_have_count(len(offered))
    allow = next(o["option_id"] for o in pending["options"] if o["kind"] == "allow_once")
    # the one-time Allow comes first; a lasting choice says it is one
    expect(card.get_by_test_id("approval-option").first).to_have_attribute("data-option-id", allow)
    lasting = card.locator("[data-testid=approval-option][data-kind$=_always]")
    expect(lasting.first).to_contain_text("later calls too")
    _shot(page, tmp_path, "approval-card.png")

    other = browser.new_context(base_url=server.url)
    second = other.new_page()
    login(second)
    second.goto(f"/chat/{chat['id']}")
    second_card = second.get_by_test_id("approval-card")
    expect(second_card).to_have_attribute("data-state", "pending")
    second_card.locator(f'[data-testid=approval-option][data-option-id="{allow}"]').click()

    for tab in (page, second):  # both tabs follow the decision and the rest of the turn live
        decided = tab.get_by_test_id("approval-card")
        expect(decided).to_have_attribute("data-state", "allowed", timeout=30_000)
        expect(decided.get_by_test_id("approval-decided-by")).to_have_text(f"Allowed once by {DEMO_EMAIL}")
        expect(decided.get_by_test_id("approval-option")).to_have_count(0)
        expect(tab.locator("[data-testid=event][data-type=assistant_text]").last).to_contain_text(
            REPLY, timeout=AGENT)
        expect(tab.locator("[data-testid=tool-card]").last).to_have_attribute("data-status", "completed")
    assert api(server, token, "GET", "/api/approvals?state=allowed")["approvals"][0]["decided_by"] == DEMO_EMAIL
    other.close()
