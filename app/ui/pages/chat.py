"""The chat page: header (skills, Schedules drawer), live transcript, composer.

The chat column and the Schedules drawer sit in one row: at 1100 px and wider the drawer takes its
place beside the transcript; narrower it overlays the column (assets/chatcron.css), and
assets/layout.js moves the keyboard focus into it."""

from __future__ import annotations

import reflex as rx

from app.ui.components.actions import chat_title
from app.ui.components.layout import frame, sidebar_toggle
from app.ui.components.schedules import schedules_button, schedules_drawer
from app.ui.components.transcript import composer, transcript
from app.ui.state.attention import AttentionState
from app.ui.state.chat import ChatState
from app.ui.state.nav import NavState
from app.ui.state.schedules import ScheduleState
from app.ui.state.session import AuthState

SCHEDULED_TASKS_HELP = ("Lets the agent create schedules in this chat. What it creates is a draft: "
                        "nothing fires until you arm it in Schedules.")


def _header() -> rx.Component:
    return rx.box(
        rx.box(
            sidebar_toggle(),
            chat_title(),  # app/ui/components/actions.py: the title and its rename control
            class_name="cc-header-title",
        ),
        rx.cond(
            ChatState.project_chat,
            rx.box(
                rx.tooltip(  # on the label: the switch keeps its own data-state (checked/unchecked)
                    rx.el.label(
                        rx.hstack(
                            rx.switch(checked=ChatState.schedules_skill, on_change=ChatState.toggle_schedules_skill,
                                      custom_attrs={"data-testid": "skill-scheduled-tasks"}),
                            rx.text("Scheduled tasks", size="2", white_space="nowrap"),
                            align="center",
                        ),
                    ),
                    content=SCHEDULED_TASKS_HELP,
                ),
                schedules_button(),
                class_name="cc-header-controls",
            ),
        ),
        class_name="cc-header",
    )


def _missing() -> rx.Component:
    return rx.box(
        rx.box(rx.box(sidebar_toggle(), class_name="cc-header-title"), class_name="cc-header"),
        rx.center(rx.text("This chat does not exist or you cannot see it."), flex="1"),
        class_name="cc-chat-column",
    )


def chat_page() -> rx.Component:
    return frame(
        rx.cond(
            ChatState.missing,
            _missing(),
            rx.box(
                rx.box(_header(), transcript(), composer(), class_name="cc-chat-column"),
                rx.cond(ChatState.project_chat, schedules_drawer()),
                class_name="cc-chat-area",
            ),
        ),
        page_has_toggle=True,
    )


ON_LOAD = [AuthState.require_login, NavState.load_nav, ChatState.open_chat, ScheduleState.enter_chat,
           AttentionState.start]
