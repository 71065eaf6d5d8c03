"""Login page: a plain form post, so the server can set an HttpOnly cookie."""

from __future__ import annotations

import asyncio

import reflex as rx

from app.core import auth
from app.core.context import get_core
from app.core.errors import InvalidCredentials

WRONG = "Wrong email or password."
EXPIRED = "That login link expired; log in again."
OTHER_BROWSER = "That login link belongs to another browser; log in here."
NO_NONCE = "This browser has no login cookie yet; reload the page, then log in (cookies must be allowed)."


class LoginState(rx.State):
    error: str = ""

    @rx.event
    def read_error(self):
        error = self.router.url.query_parameters.get("error")
        self.error = (OTHER_BROWSER if error == auth.TicketRefusal.OTHER_BROWSER else EXPIRED) if error else ""

    @rx.event
    async def submit(self, form: dict):
        core = get_core()
        # The pre-login cookie this tab's socket was opened with: the ticket will work only there.
        nonce = auth.cookie_value(self.router.headers.cookie, auth.LOGIN_COOKIE)
        if not nonce:
            self.error = NO_NONCE
            return None
        try:
            user = await asyncio.to_thread(
                auth.authenticate, core.db, str(form.get("email", "")), str(form.get("password", "")),
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


def login_page() -> rx.Component:
    return rx.center(
        rx.card(
            rx.vstack(
                rx.hstack(rx.icon("alarm-clock", size=24), rx.heading("chatcron", size="6"), align="center"),
                rx.text("Scheduled prompts for your agent chats.", size="2", color_scheme="gray"),
                rx.cond(LoginState.error != "",
                        rx.callout(LoginState.error, icon="triangle-alert", color_scheme="red",
                                   custom_attrs={"data-testid": "login-error"})),
                rx.form(
                    rx.vstack(
                        rx.el.label("Email", html_for="login-email"),
                        rx.input(name="email", id="login-email", type="email", required=True, width="100%",
                                 auto_complete="username", custom_attrs={"data-testid": "login-email"}),
                        rx.el.label("Password", html_for="login-password"),
                        rx.input(name="password", id="login-password", type="password", required=True,
                                 width="100%", auto_complete="current-password",
                                 custom_attrs={"data-testid": "login-password"}),
                        rx.button("Log in", type="submit", width="100%",
                                  custom_attrs={"data-testid": "login-submit"}),
                        spacing="2", width="100%",
                    ),
                    on_submit=LoginState.submit, width="100%",
                ),
                spacing="3", width="320px",
            ),
            size="3",
        ),
        height="100vh",
    )
