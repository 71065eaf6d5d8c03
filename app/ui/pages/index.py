"""Home: the project list; opens the first chat when there is one."""

from __future__ import annotations

import reflex as rx

from app.ui.components.layout import frame
from app.ui.state.attention import AttentionState
from app.ui.state.nav import NavState
from app.ui.state.session import AuthState


def index_page() -> rx.Component:
    return frame(
        rx.center(
            rx.vstack(
                rx.heading("Pick a chat", size="5"),
                rx.text("Choose a chat on the left, or start one with the + next to a project.",
                        color_scheme="gray"),
                align="center",
            ),
            height="100%",
        )
    )


ON_LOAD = [AuthState.require_login, NavState.load_nav, AttentionState.start, NavState.open_first_chat]
