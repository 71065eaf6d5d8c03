"""The chat page: header (skills, Schedules drawer), live transcript, composer."""

from __future__ import annotations

import reflex as rx

from app.ui.components.actions import chat_title
from app.ui.components.layout import frame
from app.ui.components.schedules import schedules_drawer
from app.ui.components.transcript import composer, transcript
from app.ui.state.chat import ChatState
from app.ui.state.nav import NavState
from app.ui.state.schedules import ScheduleState
from app.ui.state.session import AuthState


def _header() -> rx.Component:
    return rx.hstack(
        chat_title(),  # app/ui/components/actions.py: the title and its rename control
        rx.spacer(),
        rx.cond(
            ChatState.project_chat,
            rx.hstack(
                rx.el.label(
                    rx.hstack(
                        rx.switch(checked=ChatState.schedules_skill, on_change=ChatState.toggle_schedules_skill,
                                  custom_attrs={"data-testid": "skill-scheduled-tasks"}),
                        rx.text("Scheduled tasks", size="2"),
                        align="center",
                    ),
                ),
                schedules_drawer(),
                align="center", spacing="4",
            ),
        ),
        align="center", padding="1em", border_bottom="1px solid var(--gray-5)", width="100%",
    )


def chat_page() -> rx.Component:
    return frame(
        rx.cond(
            ChatState.missing,
            rx.center(rx.text("This chat does not exist or you cannot see it."), height="100%"),
            rx.vstack(_header(), transcript(), composer(), spacing="0", height="100vh", width="100%"),
        )
    )


ON_LOAD = [AuthState.require_login, NavState.load_nav, ChatState.open_chat, ScheduleState.enter_chat]
