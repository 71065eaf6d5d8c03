"""An owner switches the project's agent to the installed ``claude`` preset on the settings page
(SPEC §18), and both "Test the agent" and a turn in the chat answer through the real Claude Code CLI
driven by the scripted Anthropic model server (the model is the only stand-in).

The model's address is on loopback, which only a server admin may open (allow_hosts): the admin
CLI sets it on the project beforehand, while it still runs the demo agent, as an admin would for a
local model server; the owner does the rest in the browser. One size (1280 × 800): a cold Claude
Code start takes seconds on a loaded machine, and the page's sizes are covered by
test_project_settings.py.
"""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.agents.anthropic_server import AnthropicServer, text
from tests.agents.rig import loopback_entry
from tests.e2e.conftest import api
from tests.e2e.settings_pages import log_in, open_settings, owned_project

AGENT = 180_000  # ms: a cold Claude Code on a loaded 2-core machine takes seconds to start
TESTED = "Claude is here and answering."
REPLY = "The standup is at ten."




def test_an_owner_switches_to_claude_and_a_turn_answers_through_it(page: Page, server, token: str,
                                                                   model: AnthropicServer) -> None:
    project, chat = owned_project(server, token, "Switched")
    server.manage("set-provider", "--project", str(project), "--provider", "demo",
                  "--setting", f"env.ANTHROPIC_BASE_URL={model.url}", "--setting", "env.ANTHROPIC_API_KEY=sk-ant-test",
                  "--setting", f"allow_hosts={loopback_entry(model.url)}")
    model.play(text(TESTED), text(REPLY))
    log_in(page)
    open_settings(page, project)
    page.get_by_test_id("settings-provider").select_option("acp")
    page.get_by_test_id("settings-preset").select_option("claude")
    page.get_by_test_id("settings-save").click()
    expect(page.get_by_test_id("settings-saved")).to_contain_text("Saved")
    agent = api(server, token, "GET", f"/api/projects/{project}/settings")["agent"]
    assert (agent["provider"], agent["preset"]) == ("acp", "claude")
    assert agent["secrets"] == {"ANTHROPIC_API_KEY": {"set": True, "hint": "…"}}  # too short to show its end

    page.get_by_test_id("settings-agent-test").click()
    expect(page.get_by_test_id("settings-agent-test-reply")).to_contain_text(TESTED, timeout=AGENT)
    expect(page.get_by_test_id("settings-agent-test-error")).to_have_count(0)

    page.goto(f"/chat/{chat}")
    expect(page.get_by_test_id("chat-agent-badge")).not_to_have_text("Demo agent")
    page.get_by_test_id("composer-input").fill("When is the standup?")
    page.get_by_test_id("composer-send").click()
    reply = page.locator("[data-testid=event][data-type=assistant_text]")
    expect(reply.last).to_contain_text(REPLY, timeout=AGENT)
    assert len(model.main_requests()) == 2  # the test turn and the chat's turn, both Claude Code's
