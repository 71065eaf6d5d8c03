"""Behind a TLS-terminating proxy the session cookie is Secure, but only for trusted proxies."""

from __future__ import annotations

from fastapi.testclient import TestClient

from app.api import behind_proxies, create_api
from app.core import auth
from tests.integration.apiclient import BROWSER_NONCE, add_user, login_ticket


def _claim(core, trusted: tuple[str, ...]) -> str:
    user = add_user(core, "proxy@example.com")
    ticket = login_ticket(core, user.id)
    client = TestClient(behind_proxies(create_api(lambda: core, core.settings.request_max_bytes), trusted),
                        cookies={auth.LOGIN_COOKIE: BROWSER_NONCE})
    response = client.get(f"/auth/claim?ticket={ticket}", follow_redirects=False,
                          headers={"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"})
    assert response.status_code == 303
    return response.headers["set-cookie"]


def test_a_trusted_proxy_saying_https_gets_a_secure_cookie(core) -> None:
    cookie = _claim(core, ("testclient",))  # the test client's address
    assert "secure" in cookie.lower() and "httponly" in cookie.lower()


def test_forwarded_headers_from_anyone_else_are_ignored(core) -> None:
    cookie = _claim(core, ())
    assert "secure" not in cookie.lower().replace("httponly", "")
