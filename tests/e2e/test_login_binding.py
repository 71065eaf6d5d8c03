"""The login ticket is bound to the browser that asked for it (SPEC §17), in Chromium against prod.

One browser logs in but its claim request is held back, as if its ticket had leaked (or as an
attacker holding their own ticket would have it); a second browser context — another cookie jar,
another pre-login nonce — opens that claim link and is sent back to the login page, logged out.
"""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from app.core import auth
from app.ui.state.login import EXPIRED, OTHER_BROWSER
from tests.e2e.conftest import DEMO_EMAIL, DEMO_PASSWORD, Server, login

pytestmark = pytest.mark.e2e
CLAIM = "**/auth/claim**"


def cookies(page: Page) -> dict[str, dict]:
    return {c["name"]: c for c in page.context.cookies()}


def held_claim(page: Page) -> str:
    """Log in on ``page`` and return its claim URL, which the page itself is kept from opening
    (every navigation to it is aborted until the test unroutes; the page may try more than once)."""
    page.route(CLAIM, lambda route: route.abort())
    page.goto("/login")
    page.get_by_test_id("login-email").fill(DEMO_EMAIL)
    page.get_by_test_id("login-password").fill(DEMO_PASSWORD)
    with page.expect_event("requestfailed", lambda request: "/auth/claim" in request.url) as failed:
        page.get_by_test_id("login-submit").click()
    assert "ticket=cclt_" in failed.value.url, failed.value.url
    return failed.value.url


def claim_in(page: Page, link: str) -> str:
    """Open the claim link with ``page``'s browser (its cookie jar), past the route; returns where it
    redirects."""
    answer = page.context.request.get(link, max_redirects=0)
    assert answer.status == 303, answer.status
    return answer.headers["location"]


def test_the_login_page_gives_the_browser_an_httponly_pre_login_cookie(page: Page) -> None:
    page.goto("/login")
    nonce = cookies(page)[auth.LOGIN_COOKIE]
    assert nonce["httpOnly"] and nonce["sameSite"] == "Lax" and len(nonce["value"]) >= 43
    assert page.evaluate("document.cookie") == ""  # the page's scripts cannot read it
    login(page)
    assert cookies(page)[auth.LOGIN_COOKIE]["value"] == nonce["value"]  # kept: other tabs stay valid


def test_a_ticket_opened_in_another_browser_is_refused_and_the_asker_logs_in_again(
        page: Page, browser: Browser, server: Server) -> None:
    link = held_claim(page)
    other = browser.new_context(base_url=server.url)
    try:
        thief = other.new_page()
        thief.goto(link)
        thief.wait_for_url(lambda url: "/login" in url and "error=browser" in url)
        expect(thief.get_by_test_id("login-error")).to_have_text(OTHER_BROWSER)
        assert auth.SESSION_COOKIE not in {c["name"] for c in other.cookies()}
        thief.goto("/")
        thief.wait_for_url("**/login**")  # not logged in as anybody
    finally:
        other.close()

    # The ticket was burned when the other browser showed it: the asker logs in again.
    assert claim_in(page, link) == "/login?error=expired"
    assert auth.SESSION_COOKIE not in cookies(page)
    page.unroute(CLAIM)
    page.goto("/login?error=expired")
    expect(page.get_by_test_id("login-error")).to_have_text(EXPIRED)
    login(page)
    assert auth.SESSION_COOKIE in cookies(page)


def test_a_client_with_its_own_cookie_jar_cannot_claim_the_ticket(page: Page, server: Server) -> None:
    link = held_claim(page)
    with httpx.Client(base_url=server.url, timeout=10) as bare:  # no cookie at all
        assert bare.get(link.replace(server.url, "")).headers["location"] == "/login?error=browser"
    assert claim_in(page, link) == "/login?error=expired"  # burned by that attempt
    link = held_claim(page)
    with httpx.Client(base_url=server.url, timeout=10) as stranger:
        stranger.get("/login", headers={"accept": "text/html"}, follow_redirects=True)
        assert stranger.cookies.get(auth.LOGIN_COOKIE)  # a nonce of its own
        answer = stranger.get(link.replace(server.url, ""), follow_redirects=False)
    assert (answer.status_code, answer.headers["location"]) == (303, "/login?error=browser")
    assert auth.SESSION_COOKIE not in answer.headers.get("set-cookie", "")


def test_the_asker_claims_its_own_ticket(page: Page) -> None:
    link = held_claim(page)
    assert claim_in(page, link) == "/"
    assert auth.SESSION_COOKIE in cookies(page)
    page.unroute(CLAIM)
    page.goto("/")
    page.wait_for_url("**/chat/**")
    page.get_by_test_id("chat-title").wait_for()
