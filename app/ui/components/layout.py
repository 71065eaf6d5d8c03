"""Page frame: the sidebar with projects and chats, and the main area."""

from __future__ import annotations

import reflex as rx

from app.ui.components.actions import current_chat_style, project_new
from app.ui.state.nav import ChatLink, NavState, ProjectNode
from app.ui.state.session import AuthState


def _chat_link(chat: ChatLink) -> rx.Component:
    return rx.link(
        rx.hstack(rx.icon("message-square", size=14), rx.text(chat.title, size="2", trim="both"),
                  align="center", spacing="2"),
        href=f"/chat/{chat.id}",
        underline="none",
        custom_attrs={"data-testid": "chat-item", "data-chat-id": chat.id,
                      "aria-current": rx.cond(NavState.current_chat_id == chat.id, "page", "false")},
        class_name="cc-chat-link",
        **current_chat_style(NavState.current_chat_id == chat.id),
    )


def _project(project: ProjectNode) -> rx.Component:
    return rx.box(
        rx.hstack(
            rx.text(project.name, weight="bold", size="2"),
            rx.spacer(),
            rx.icon_button(rx.icon("plus", size=14), size="1", variant="ghost",
                           on_click=NavState.new_chat(project.id),
                           aria_label="New chat", title="New chat",
                           custom_attrs={"data-testid": "new-chat"}),
            align="center",
        ),
        rx.vstack(rx.foreach(project.chats, _chat_link), spacing="1", padding_left="0.5em",
                  padding_top="0.25em"),
        custom_attrs={"data-testid": "project-item", "data-project-id": project.id},
        width="100%",
        padding_y="0.5em",
    )


def sidebar() -> rx.Component:
    return rx.vstack(
        rx.hstack(rx.icon("alarm-clock", size=20), rx.heading("chatcron", size="4"), align="center"),
        rx.text(AuthState.user_email, size="1", color_scheme="gray", custom_attrs={"data-testid": "user-email"}),
        rx.divider(),
        rx.foreach(NavState.tree, _project),
        project_new(),  # app/ui/components/actions.py
        rx.spacer(),
        rx.button("Log out", variant="soft", size="1", on_click=AuthState.logout,
                  custom_attrs={"data-testid": "logout"}),
        width="260px", min_width="260px", height="100vh", padding="1em",
        border_right="1px solid var(--gray-5)", background="var(--gray-2)", overflow_y="auto",
    )


def frame(*children: rx.Component) -> rx.Component:
    return rx.hstack(sidebar(), rx.box(*children, flex="1", height="100vh", overflow="hidden"),
                     spacing="0", width="100%")
