"""The page of an unknown address (Reflex's "404" route): says so and links back to the chats."""

from __future__ import annotations

import reflex as rx

TITLE = "Page not found · chatcron"


def not_found_page() -> rx.Component:
    """No state and no on_load: it renders the same for a visitor with or without a session."""
    return not_found_card()


def not_found_card() -> rx.Component:
    """The page's content; also what a page only some may see shows the others (the admin page)."""
    return rx.center(
        rx.card(
            rx.vstack(
                rx.hstack(rx.icon("alarm-clock", size=24), rx.heading("chatcron", size="6"), align="center"),
                rx.heading("Page not found", size="4", as_="h1", custom_attrs={"data-testid": "not-found"}),
                rx.text("There is nothing at this address. It may have been mistyped, or the page was removed.",
                        size="2", color_scheme="gray"),
                rx.link(rx.hstack(rx.icon("arrow-left", size=16), rx.text("Back to your chats"), align="center",
                                  spacing="2"),
                        href="/", weight="medium", custom_attrs={"data-testid": "not-found-home"}),
                spacing="3", width="min(320px, 80vw)",
            ),
            size="3",
        ),
        height="100vh",
    )
