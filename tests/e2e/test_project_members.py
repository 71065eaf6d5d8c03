"""Members of a project in the browser (SPEC §18, §17), against the served processes: an owner invites
an existing user, who sees the project appear in their open tab's sidebar; a removed member's open chat
tab loses the chat and their open settings page the project; a member's crafted websocket frames are
refused calmly and change nothing."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import Browser, expect

from app.ui.guard import TOAST_ID
from app.ui.state.admin import AdminState
from app.ui.state.agent_test import AgentTestState
from app.ui.state.members import MembersState
from app.ui.state.project_settings import SettingsState
from tests.e2e import sockets
from tests.e2e.conftest import DEMO_EMAIL, api, reveal_sidebar
from tests.e2e.settings_pages import SIZES, log_in, members, new_user, open_settings, owned_project

pytestmark = pytest.mark.e2e


def test_an_invited_user_sees_the_project_in_their_open_tab(browser: Browser, base_url: str, server,
                                                            token: str) -> None:
    project, _ = owned_project(server, token, "Invited")
    name = api(server, token, "GET", f"/api/projects/{project}/settings")["project"]["name"]
    email, password = new_user(server, "invitee")
    owner = browser.new_context(base_url=base_url, viewport=SIZES[1280])
    invitee = browser.new_context(base_url=base_url, viewport=SIZES[390])
    try:
        theirs = invitee.new_page()
        log_in(theirs, email, password)
        reveal_sidebar(theirs)
        expect(theirs.get_by_text(name)).to_have_count(0)
        page = owner.new_page()
        log_in(page)
        open_settings(page, project)
        page.get_by_test_id("member-invite-email").fill("nobody-here@example.com")
        page.get_by_test_id("member-invite").click()
        expect(page.get_by_test_id("members-error")).to_contain_text("no user with email nobody-here@example.com")
        page.get_by_test_id("member-invite-email").fill(email)
        page.get_by_test_id("member-invite").click()
        expect(page.get_by_test_id("members-notice")).to_contain_text(f"{email} is now a member")
        row = page.locator(f'[data-testid=member-row][data-email="{email}"]')
        expect(row).to_have_attribute("data-role", "member")
        expect(page.get_by_test_id("member-invite-email")).to_have_value("")
        # the invitee's open tab: the project appears in its sidebar, no reload
        item = theirs.locator(f'[data-testid=project-item][data-project-id="{project}"]')
        expect(item).to_be_visible(timeout=5000)
        expect(item).to_contain_text(name)

        row.get_by_test_id("member-make-owner").click()
        expect(row).to_have_attribute("data-role", "owner")
        expect(page.get_by_test_id("audit-row").first).to_contain_text(f"{email} as owner")
    finally:
        owner.close()
        invitee.close()


def test_a_removed_members_open_chat_tab_loses_the_chat(browser: Browser, base_url: str, server, token: str) -> None:
    project, chat = owned_project(server, token, "Parting")
    email, password = new_user(server, "leaver")
    server.manage("grant-access", "--email", email, "--project", str(project))
    owner = browser.new_context(base_url=base_url, viewport=SIZES[1280])
    member = browser.new_context(base_url=base_url, viewport=SIZES[390])
    try:
        theirs = member.new_page()
        frames = sockets.Frames(theirs)
        log_in(theirs, email, password)
        theirs.goto(f"/chat/{chat}")
        expect(theirs.get_by_test_id("chat-title")).to_have_text("Parting talk")
        their_settings = member.new_page()  # and its settings page, open in another tab
        open_settings(their_settings, project)
        expect(their_settings.get_by_test_id("settings-readonly")).to_be_visible()
        page = owner.new_page()
        log_in(page)
        open_settings(page, project)
        page.locator(f'[data-testid=member-row][data-email="{email}"]').get_by_test_id("member-remove").click()
        page.get_by_test_id("member-remove-confirm").click()
        removed = time.monotonic()
        expect(page.get_by_test_id("members-notice")).to_contain_text(f"{email} is no longer a member")
        expect(page.locator(f'[data-testid=member-row][data-email="{email}"]')).to_have_count(0)
        theirs.wait_for_url(lambda url: f"/chat/{chat}" not in url, timeout=5000)
        assert time.monotonic() - removed < 5
        expect(theirs.get_by_test_id("transcript")).to_have_count(0)
        expect(their_settings.get_by_test_id("settings-missing")).to_be_visible(timeout=5000)
        expect(their_settings.get_by_test_id("settings-agent")).to_have_count(0)
        expect(their_settings.locator(f'[data-testid=project-item][data-project-id="{project}"]')).to_have_count(0)
        mark = frames.mark()
        api(server, token, "POST", f"/api/chats/{chat}/prompts", {"text": "after-removal words"})
        theirs.wait_for_timeout(1500)
        assert not [text for text in frames.since(mark) if "after-removal" in text]
        theirs.goto(f"/chat/{chat}")
        expect(theirs.get_by_test_id("chat-title")).to_have_count(0)
    finally:
        owner.close()
        member.close()


def test_a_members_forged_events_change_nothing(browser: Browser, base_url: str, server, token: str) -> None:
    """SPEC §17 on this page: every handler checks its arguments, and a member's crafted frames (the
    owner's controls are not on their page, their events are) are refused calmly; nothing changes."""
    project, _ = owned_project(server, token, "Forged")
    email, password = new_user(server, "forger")
    server.manage("grant-access", "--email", email, "--project", str(project))
    owner_id = next(m["user_id"] for m in members(server, token, project) if m["email"] == DEMO_EMAIL)
    before = api(server, token, "GET", f"/api/projects/{project}/settings")
    context = browser.new_context(base_url=base_url)
    try:
        page = context.new_page()
        frames = sockets.watch(page)
        log_in(page, email, password)
        open_settings(page, project)
        expect(page.get_by_test_id("settings-readonly")).to_be_visible()
        log_start = sockets.log_size(server.log)
        path = f"/projects/{project}/settings"
        cases = [
            (SettingsState, "save", {}, "only an owner"),
            (SettingsState, "set_field", {"field": "model", "value": "forged"}, "only an owner"),
            (SettingsState, "set_field", {"field": "_original", "value": "x"}, "field: must be one of"),
            (SettingsState, "set_field", {"field": "provider", "value": "rogue"}, "provider: must be one of"),
            (SettingsState, "type_secret", {"name": "OPENAI_API_KEY", "value": "v"}, "only an owner"),
            (SettingsState, "allow_refused", {"entry": "evil.example:443"}, "only an owner"),
            (MembersState, "set_role", {"user_id": "abc", "role": "owner"}, "user_id: must be a positive"),
            (MembersState, "set_role", {"user_id": owner_id, "role": "king"}, "role: must be one of"),
            (MembersState, "invite", {"form": "x"}, "form: must be a form"),
            (AdminState, "ask", {"action": "explode", "user_id": 1}, "action: must be one of"),
            (AdminState, "ask", {"action": "delete", "user_id": owner_id}, "is not a person listed here"),
            (AgentTestState, "run", {"x": 1}, "arguments: unexpected x"),
        ]
        for state, handler, payload, fragment in cases:
            frames.hydrated(page)
            mark = frames.mark()
            sockets.send(page, sockets.frame(sockets.event_name(state, handler), payload, path, {"pid": str(project)}))
            answer = frames.wait_for(page, mark, lambda text: TOAST_ID in text, what=f"{handler}({payload})")
            assert fragment in answer, f"{handler}({payload}) answered {answer[:300]}"
        # an owner's service call sent by a member: the service refuses it, the page says so
        frames.hydrated(page)
        sockets.send(page, sockets.frame(sockets.event_name(MembersState, "set_role"),
                                         {"user_id": owner_id, "role": "member"}, path, {"pid": str(project)}))
        expect(page.get_by_test_id("members-error")).to_contain_text("only an owner")
        sockets.send(page, sockets.frame(sockets.event_name(AgentTestState, "run"), {}, path, {"pid": str(project)}))
        page.wait_for_timeout(1000)
        assert sockets.log_problems(server.log, log_start) == []
    finally:
        context.close()
    assert api(server, token, "GET", f"/api/projects/{project}/settings")["agent"] == before["agent"]
    roles = {m["email"]: m["role"] for m in members(server, token, project)}
    assert roles == {DEMO_EMAIL: "owner", email: "member"}
    titles = [c["title"] for c in api(server, token, "GET", f"/api/projects/{project}/chats")["chats"]]
    assert "Agent test" not in titles
