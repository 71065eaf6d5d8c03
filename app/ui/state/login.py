"""The login form: the only state a visitor without a session may change."""

from __future__ import annotations

import asyncio

import reflex as rx

from app.core import auth
from app.core.context import get_core
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
            user = await asyncio.to_thread(
                auth.authenticate, core.db, email, password,
                address=self.router.session.client_ip, clock=core.clock, limits=auth.LoginLimits.of(core.settings))
        except auth.TooManyAttempts as exc:
            self.error = exc.message
            return None
        except InvalidCredentials:
            self.error = WRONG
            return None
        ticket = await asyncio.to_thread(auth.create_login_ticket, core.db, core.clock, user.id, nonce)
        self.error = ""
        # A full page load (not client routing), so the HTTP answer can set the HttpOnly cookie.
        return rx.call_script(f"window.location.assign('/auth/claim?ticket={ticket}')")
