"""Login page: a plain form post, so the server can set an HttpOnly cookie.

Every page that needs a session sends a visitor without one here (``rx.redirect("/login")``);
the page itself says "Please log in", so the plain URL is enough and nothing is carried along.
The form has no browser-side ``required``: an empty submit is answered in the page, in words.
"""

from __future__ import annotations

import reflex as rx

from app.ui.state.login import PLEASE, LoginState


def login_page() -> rx.Component:
    return rx.center(
        rx.card(
            rx.vstack(
                rx.hstack(rx.icon("alarm-clock", size=24), rx.heading("chatcron", size="6"), align="center"),
                rx.text("Scheduled prompts for your agent chats.", size="2", color_scheme="gray"),
                rx.text(PLEASE, size="3", weight="medium", custom_attrs={"data-testid": "login-prompt"}),
                rx.cond(LoginState.error != "",
                        rx.callout(LoginState.error, icon="triangle-alert", color_scheme="red",
                                   custom_attrs={"data-testid": "login-error"})),
                rx.form(
                    rx.vstack(
                        rx.el.label("Email", html_for="login-email"),
                        rx.input(name="email", id="login-email", type="email", width="100%", aria_required="true",
                                 auto_complete="username", custom_attrs={"data-testid": "login-email"}),
                        rx.el.label("Password", html_for="login-password"),
                        rx.input(name="password", id="login-password", type="password", aria_required="true",
                                 width="100%", auto_complete="current-password",
                                 custom_attrs={"data-testid": "login-password"}),
                        rx.button("Log in", type="submit", width="100%",
                                  custom_attrs={"data-testid": "login-submit"}),
                        spacing="2", width="100%",
                    ),
                    on_submit=LoginState.submit, width="100%", no_validate=True,
                ),
                spacing="3", width="320px",
            ),
            size="3",
        ),
        height="100vh",
    )
