"""Hardening, second round (SPEC §17), in Debian's Chromium against the production build: what an
attacker found after the websocket work, each asserted on what the browser receives and what the
web log holds.

* Frames naming no registered event, and floods of them, never reach Reflex: the log gets at most a
  few short lines, never a session cookie, and the socket goes on working.
* An Inbox or Notifications tab notices an ended session within a couple of seconds and keeps
  nothing; a reload after the session ended elsewhere hydrates no data of the user; a revoked
  project leaves the open tab's sidebar.
* An idle chat tab receives no state frames at all.
"""

from __future__ import annotations

import time
import uuid

import pytest
from playwright.sync_api import Browser, expect
from reflex.state import FrontendEventExceptionState

from tests.e2e import sockets
from tests.e2e.conftest import api as _api
from tests.e2e.sockets import event_name
from tests.e2e.test_websocket_surface import Tab, _chat, _turn

pytestmark = pytest.mark.e2e
FRAME_KB = 90  # under the socket's frame limit (twice the longest prompt and some room)
NOTICED_S = 2.5  # the watcher's one-second round and its page load's own events, with room for a busy machine


class Person:
    """A user of their own (so ending their sessions touches no other test), their token and project."""

    def __init__(self, server, name: str) -> None:
        name = f"{name}-{uuid.uuid4().hex[:6]}"  # (unique on a server shared by the worker's tests)
        self.email, self.password = f"{name}@example.com", f"{name}-password"
        server.manage("create-user", "--email", self.email, "--password", self.password)
        self.project_name = f"Project of {name}"
        self.project = int(server.manage("create-project", "--name", self.project_name, "--owner", self.email))
        self.token = server.manage("create-token", "--email", self.email)

    def tab(self, browser: Browser, server) -> Tab:
        tab = Tab(browser, server, logged_in=False)
        tab.page.goto("/login")
        tab.page.get_by_test_id("login-email").fill(self.email)
        tab.page.get_by_test_id("login-password").fill(self.password)
        tab.page.get_by_test_id("login-submit").click()
        tab.page.wait_for_url(lambda url: "/login" not in url)  # a project without chats: the project list
        expect(tab.page.get_by_text(self.project_name).first).to_be_visible()
        return tab


def _cookie(tab: Tab) -> str:
    return next(c["value"] for c in tab.context.cookies() if c["name"] == "chatcron_session")


def _log_text(server, since: int) -> str:
    return server.log.read_bytes()[since:].decode(errors="replace")


def test_frames_naming_no_event_never_reach_the_log_or_reflex(browser: Browser, server) -> None:
    person = Person(server, "flooder")
    with person.tab(browser, server) as tab, Tab(browser, server, logged_in=False) as anon:
        anon.page.goto("/login")
        anon.page.get_by_test_id("login-email").wait_for()
        cookie, start = _cookie(tab), sockets.log_size(server.log)
        big = "Q" * (FRAME_KB * 1024)
        for socket_tab in (tab, anon):
            for i in range(100):
                socket_tab.forge(f"state.no_such_state_{i}.handler", {"text": big})
            sockets.send(socket_tab.page, '42/_event,["event","a string, not an object"]')
            sockets.send(socket_tab.page, '42/_event,["event",{"payload":{}}]')
        exception = event_name(FrontendEventExceptionState, "handle_frontend_exception")
        for _ in range(30):  # an anonymous socket may report frontend errors: a few reach the log
            anon.forge(exception, {"info": "E" * 8000, "component_stack": "S" * 8000})
        # The logged-in socket still works: a message goes through and is answered.
        tab.page.goto(f"/chat/{_chat(server, person.token, person.project, 'after the flood')}")
        tab.page.get_by_test_id("composer-input").fill("still answered")
        tab.page.get_by_test_id("composer-send").click()
        expect(tab.page.locator("[data-testid=event][data-type=assistant_text]")).to_contain_text("still answered")
        added = _log_text(server, start)
        assert len(added) < 64 * 1024, f"{len(added)} bytes of log from the flood (it was 17 MB before)"
        assert "QQQQQQQQ" not in added and "no_such_state" not in added
        assert added.count("E" * 100) <= 3 + 20, "frontend error reports are not capped"
        assert sockets.log_problems(server.log, start) == []
        whole = server.log.read_text(errors="replace")
        assert cookie not in whole, "the session cookie is in the web log"


def test_no_session_cookie_or_token_anywhere_in_the_log_of_a_session(browser: Browser, server) -> None:
    person = Person(server, "logged")
    with person.tab(browser, server) as tab:
        chat = _chat(server, person.token, person.project, "Logged session")
        tab.open(chat)
        tab.page.get_by_test_id("composer-input").fill("a normal turn")
        tab.page.get_by_test_id("composer-send").click()
        expect(tab.page.locator("[data-testid=event][data-type=assistant_text]")).to_contain_text("a normal turn")
        tab.forge(event_name(FrontendEventExceptionState, "handle_frontend_exception"),
                  {"info": "a crash report", "component_stack": "at Page"})
        cookie = _cookie(tab)
        tab.page.get_by_test_id("logout").click()
        tab.page.wait_for_url("**/login**")
        whole = server.log.read_text(errors="replace")
        assert cookie not in whole, "the session cookie is in the web log"
        assert person.token not in whole, "the API token is in the web log"
        assert person.password not in whole


@pytest.mark.parametrize("page_path", ["/inbox", "/settings/notifications", "/schedules"])
def test_a_tab_on_any_page_keeps_nothing_once_the_session_ends(browser: Browser, server, page_path: str) -> None:
    person = Person(server, f"ended{page_path.replace('/', '-')}")
    chat = _chat(server, person.token, person.project, "Secret chat title")
    _turn(server, person.token, chat, "secret inbox words")
    task = _api(server, person.token, "POST", f"/api/chats/{chat}/schedules",
                {"name": "Secret fire", "prompt": "go", "schedule": {"kind": "interval", "every_seconds": 3600}})
    _api(server, person.token, "POST", f"/api/schedules/{task['id']}/run-now")
    with person.tab(browser, server) as tab:
        tab.page.goto(page_path)
        expect(tab.page.get_by_text(person.project_name).first).to_be_visible()
        server.manage("end-sessions", "--email", person.email)
        ended = time.monotonic()
        tab.page.wait_for_url("**/login**", timeout=NOTICED_S * 1000 + 5000)
        assert time.monotonic() - ended < NOTICED_S + 1.5, "the open tab noticed the ended session late"
        expect(tab.page.get_by_text(person.project_name)).to_have_count(0)
        mark = tab.frames.mark()
        tab.page.reload()  # the same tab token: the hydrate frame shows everything its state still holds
        hydrate = tab.frames.hydrate(tab.page, mark)
        for secret in (person.email, person.project_name, "Secret chat title", "Secret fire", "secret inbox words"):
            assert secret not in hydrate, f"{secret!r} still in the tab's state after the session ended"


def test_a_reload_after_the_session_ended_elsewhere_hydrates_nothing_of_the_user(browser: Browser, server) -> None:
    person = Person(server, "reloader")
    chat = _chat(server, person.token, person.project, "Reloaded secret")
    _turn(server, person.token, chat, "reloaded words")
    with person.tab(browser, server) as tab:
        tab.page.goto("/inbox")
        expect(tab.page.get_by_text(person.project_name).first).to_be_visible()
        # The tab's socket closes first (another page), so no watcher of it can clear the state:
        # only the reload's own hydration may decide what the page gets.
        tab.page.goto("about:blank")
        server.manage("end-sessions", "--email", person.email)
        mark = tab.frames.mark()
        tab.page.goto("/login")
        hydrate = tab.frames.hydrate(tab.page, mark)
        for secret in (person.email, person.project_name, "Reloaded secret", "reloaded words"):
            assert secret not in hydrate, f"{secret!r} in the first frame of /login after the session ended"


def test_a_revoked_project_leaves_the_open_sidebar(browser: Browser, server) -> None:
    owner, member = Person(server, "owner-r"), Person(server, "member-r")
    server.manage("grant-access", "--email", member.email, "--project", str(owner.project))
    with member.tab(browser, server) as tab:
        tab.page.goto("/inbox")
        shared = tab.page.locator('[data-testid="project-item"]', has_text=owner.project_name)
        expect(shared).to_have_count(1)
        server.manage("revoke-access", "--email", member.email, "--project", str(owner.project))
        expect(shared).to_have_count(0, timeout=NOTICED_S * 1000 + 2000)
        expect(tab.page.locator('[data-testid="project-item"]', has_text=member.project_name)).to_have_count(1)


def test_an_idle_chat_tab_receives_no_state_frames(browser: Browser, server) -> None:
    person = Person(server, "idler")
    chat = _chat(server, person.token, person.project, "Idle chat")
    _turn(server, person.token, chat, "said once")
    with person.tab(browser, server) as tab:
        tab.open(chat)
        expect(tab.page.locator("[data-testid=event][data-type=assistant_text]")).to_contain_text("said once")
        tab.page.wait_for_timeout(2000)  # the page's load events and first rounds are answered
        mark = tab.frames.mark()
        tab.page.wait_for_timeout(6000)  # six rounds of every watcher, twelve of the chat's tail
        deltas = [text[:120] for text in tab.frames.since(mark) if '"delta"' in text]
        assert deltas == [], f"an idle tab was sent {len(deltas)} state frames: {deltas[:3]}"
