"""The login form: the only state a visitor without a session may change."""

from __future__ import annotations

import asyncio

import reflex as rx
from reflex.istate.data import RouterData

from app.core import auth, devices
from app.core.context import Core, get_core
from app.core.errors import InvalidCredentials
from app.ui import checks
from app.ui.state.session import AuthState, public

WRONG = "Wrong email or password."
EXPIRED = "That login link expired; log in again."
OTHER_BROWSER = "That login link belongs to another browser; log in here."
NO_NONCE = "This browser has no login cookie yet; reload the page, then log in (cookies must be allowed)."
PLEASE = "Please log in"
MAX_EMAIL = 320  # RFC 5321's longest address
MAX_PASSWORD = 1024


def missing_fields(email: str, password: str) -> str:
    """What an incomplete form lacks ("Enter your email and password."), or "" when both are there."""
    missing = [name for name, value in (("email", email.strip()), ("password", password)) if not value]
    return f"Enter your {' and '.join(missing)}." if missing else ""


def client_address(router: RouterData) -> str:
    """The address the login limits count for this socket: its peer as the ASGI scope names it
    after ``app/api/proxies.py`` — the forwarded client when the peer is one of
    CHATCRON_TRUSTED_PROXIES, else the peer itself. (Reflex's own ``client_ip`` would believe
    X-Forwarded-For from anyone when REFLEX_TRUSTED_PROXY_HOPS is set.)"""
    return router.headers.raw_headers.get("asgi-scope-client", "") or router.session.client_ip


def attempt(core: Core, router: RouterData, email: str, password: str) -> str:
    """Check a login sent over this socket (blocking) and return a ticket bound to its browser.

    Counted per account, and per client address or — when the socket's handshake carried a device
    cookie of this account (app/core/devices.py) — per device; raises TooManyAttempts,
    InvalidCredentials, or InvalidInput naming ``browser`` when the pre-login cookie is missing."""
    cookies = router.headers.cookie
    user = auth.authenticate(core.db, email, password, address=client_address(router),
                             device=auth.cookie_value(cookies, devices.DEVICE_COOKIE), clock=core.clock,
                             limits=auth.LoginLimits.of(core.settings))
    return auth.create_login_ticket(core.db, core.clock, user.id, auth.cookie_value(cookies, auth.LOGIN_COOKIE))


class LoginState(AuthState):
    error: str = ""

    @rx.event
    @public
    def read_error(self):
        error = self.router.url.query_parameters.get("error")
        self.error = (OTHER_BROWSER if error == auth.TicketRefusal.OTHER_BROWSER else EXPIRED) if error else ""

    @rx.event
    @public
    async def submit(self, form: dict):
        core = get_core()
        email = checks.text(form.get("email", ""), "email", MAX_EMAIL)
        password = checks.text(form.get("password", ""), "password", MAX_PASSWORD)
        if missing := missing_fields(email, password):
            self.error = missing
            return None
        # The pre-login cookie this tab's socket was opened with: the ticket will work only there.
        nonce = auth.cookie_value(self.router.headers.cookie, auth.LOGIN_COOKIE)
        if not nonce:
            self.error = NO_NONCE
            return None
        try:
            ticket = await asyncio.to_thread(attempt, core, self.router, email, password)
        except auth.TooManyAttempts as exc:
            self.error = exc.message
            return None
        except InvalidCredentials:
            self.error = WRONG
            return None
        self.error = ""
        # A full page load (not client routing), so the HTTP answer can set the HttpOnly cookie.
        return rx.call_script(f"window.location.assign('/auth/claim?ticket={ticket}')")
