"""Page frame: the sidebar with projects and chats, and the main area.

Below 768 px the sidebar is a sheet behind `sidebar-toggle` (assets/layout.js opens and closes it
through ``<html data-sidebar>``; assets/chatcron.css lays it out)."""

from __future__ import annotations

import reflex as rx

from app.ui.components.actions import current_chat_style, project_new
from app.ui.state.attention import AttentionState
from app.ui.state.nav import ChatLink, NavState, ProjectNode
from app.ui.state.session import AuthState

SIDEBAR_ID = "cc-sidebar"


def _chat_link(chat: ChatLink) -> rx.Component:
    return rx.link(
        rx.hstack(rx.icon("message-square", size=14, flex_shrink="0"), rx.text(chat.title, size="2", trim="both"),
                  _count(AttentionState.chat_unread[chat.id.to_string()], "chat-unread"),
                  align="center", spacing="2"),
        href=f"/chat/{chat.id}",
        underline="none",
        custom_attrs={"data-testid": "chat-item", "data-chat-id": chat.id,
                      "aria-current": rx.cond(NavState.current_chat_id == chat.id, "page", "false")},
        class_name="cc-chat-link",
        **current_chat_style(NavState.current_chat_id == chat.id),
    )


def _on_page(path: str) -> rx.Var:
    return AuthState.router.page.path == path


def _count(count: rx.Var, testid: str) -> rx.Component:
    """An unread badge, shown only when there is something unread (SPEC §13)."""
    return rx.cond(count > 0, rx.badge(count, size="1", variant="solid", radius="full", margin_left="auto",
                                       custom_attrs={"data-testid": testid}))


def _nav_link(icon: str, label: str, href: str, testid: str, *extra: rx.Component) -> rx.Component:
    """A link to one of the user's pages (inbox, every schedule, notifications), marked current there."""
    return rx.link(
        rx.hstack(rx.icon(icon, size=14), rx.text(label, size="2"), *extra, align="center", spacing="2", width="100%"),
        href=href, underline="none", class_name="cc-chat-link",
        custom_attrs={"data-testid": testid, "aria-current": rx.cond(_on_page(href), "page", "false")},
        **current_chat_style(_on_page(href)),
    )


def _project(project: ProjectNode) -> rx.Component:
    return rx.box(
        rx.hstack(
            rx.text(project.name, weight="bold", size="2"),
            rx.spacer(),
            rx.tooltip(rx.link(rx.icon("settings", size=14), href=f"/projects/{project.id}/settings",
                               aria_label="Project settings", color_scheme="gray", class_name="cc-project-gear",
                               custom_attrs={"data-testid": "project-settings-link"}),
                       content="Settings"),
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


def _loose_chats() -> rx.Component:
    """Chats outside any project (SPEC §14): their own heading and New button."""
    return rx.box(
        rx.hstack(
            rx.text("Loose chats", weight="bold", size="2"),
            rx.spacer(),
            rx.icon_button(rx.icon("plus", size=14), size="1", variant="ghost", on_click=NavState.new_loose_chat,
                           aria_label="New loose chat", title="New loose chat (no project, no schedules)",
                           custom_attrs={"data-testid": "loose-chat-new"}),
            align="center",
        ),
        rx.cond(NavState.loose.length() > 0,
                rx.vstack(rx.foreach(NavState.loose, _chat_link), spacing="1", padding_left="0.5em",
                          padding_top="0.25em"),
                rx.text("Chats outside any project.", size="1", color_scheme="gray", padding_left="0.5em")),
        custom_attrs={"data-testid": "loose-chats"},
        width="100%",
        padding_y="0.5em",
    )


def sidebar() -> rx.Component:
    return rx.vstack(
        rx.hstack(rx.icon("alarm-clock", size=20), rx.heading("chatcron", size="4"), align="center"),
        rx.text(AuthState.user_email, size="1", color_scheme="gray", custom_attrs={"data-testid": "user-email"}),
        _nav_link("inbox", "Inbox", "/inbox", "nav-inbox", _count(AttentionState.inbox_unread, "inbox-unread-count")),
        _nav_link("calendar-clock", "Schedules", "/schedules", "nav-schedules"),  # app/ui/pages/schedules.py
        rx.divider(),
        rx.foreach(NavState.tree, _project),
        project_new(),  # app/ui/components/actions.py
        _loose_chats(),
        rx.spacer(),
        _nav_link("bell", "Notifications", "/settings/notifications", "nav-notifications"),
        rx.cond(NavState.is_admin, _nav_link("shield", "Admin", "/admin", "nav-admin")),  # app/ui/pages/admin.py
        rx.button("Log out", variant="soft", size="1", on_click=AuthState.logout,
                  custom_attrs={"data-testid": "logout"}),
        id=SIDEBAR_ID, class_name="cc-sidebar", padding="1em", spacing="2",
        custom_attrs={"aria-label": "Projects and chats", "role": "navigation"},
    )


def sidebar_toggle() -> rx.Component:
    """Shown below 768 px only (the stylesheet hides it wider); assets/layout.js toggles the sheet."""
    return rx.icon_button(
        rx.icon("menu", size=18), variant="ghost", size="2", color_scheme="gray",
        aria_label="Show projects and chats", title="Projects and chats", class_name="cc-sidebar-toggle",
        custom_attrs={"data-testid": "sidebar-toggle", "aria-controls": SIDEBAR_ID, "aria-expanded": "false"},
    )


def frame(*children: rx.Component, page_has_toggle: bool = False) -> rx.Component:
    """The sidebar and the main area; a page whose header holds `sidebar_toggle()` says so,
    any other page gets a bar with the toggle above its content on phones."""
    bar = () if page_has_toggle else (rx.box(sidebar_toggle(), class_name="cc-phone-bar"),)
    return rx.box(
        sidebar(),
        rx.box(class_name="cc-sidebar-backdrop", custom_attrs={"aria-hidden": "true"}),
        rx.box(*bar, *children, class_name="cc-main"),
        class_name="cc-frame",
    )
