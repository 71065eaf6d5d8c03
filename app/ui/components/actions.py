"""Managing chats from the page (SPEC §16): a new project, renaming the open chat, stopping a turn.

``project_new`` sits in the sidebar, ``chat_title`` in the chat header, ``composer_buttons`` in the
composer; each is one self-contained control so the frame and the pages only place them.
"""

from __future__ import annotations

import reflex as rx

from app.core.chats import MAX_TITLE
from app.core.text import MAX_NAME
from app.ui.components.transfer import chat_export_menu
from app.ui.state.chat import ChatState
from app.ui.state.nav import NavState

BUSY_REASON = "The agent is working — stop it or wait"


def current_chat_style(current: rx.Var) -> dict[str, object]:
    """The open chat's sidebar item stands out (with aria-current="page" on it)."""
    return {"background": rx.cond(current, "var(--accent-4)", "transparent"),
            "font_weight": rx.cond(current, "600", "normal"),
            "border_radius": "var(--radius-2)", "padding_x": "0.4em", "padding_y": "0.15em", "width": "100%"}


def _name_form(field: rx.Component, error: rx.Var, error_id: str, submit: str, submit_id: str,
               on_submit: rx.EventHandler) -> rx.Component:
    """A one-field dialog form: the field, its error inline (when there is one), Cancel and submit."""
    return rx.form(
        rx.vstack(
            field,
            rx.cond(error != "", rx.text(error, color_scheme="red", size="2", role="alert",
                                         custom_attrs={"data-testid": error_id})),
            rx.hstack(
                rx.dialog.close(rx.button("Cancel", type="button", variant="soft", color_scheme="gray")),
                rx.button(submit, type="submit", custom_attrs={"data-testid": submit_id}),
                justify="end", width="100%",
            ),
            spacing="3",
        ),
        on_submit=on_submit,
    )


def project_new() -> rx.Component:
    """The `project-new` button and its dialog: a name, errors inline, Create."""
    return rx.dialog.root(
        rx.dialog.trigger(
            rx.button(rx.icon("folder-plus", size=14), "New project", size="1", variant="soft", width="100%",
                      custom_attrs={"data-testid": "project-new"}),
        ),
        rx.dialog.content(
            rx.dialog.title("New project"),
            rx.dialog.description("A project has its own workspace, chats and scheduled tasks.", size="2",
                                  margin_bottom="0.75em"),
            _name_form(rx.input(name="name", placeholder="Project name", auto_focus=True, max_length=MAX_NAME,
                                aria_label="Project name", width="100%",
                                custom_attrs={"data-testid": "project-new-name"}),
                       NavState.project_error, "project-new-error", "Create", "project-new-submit",
                       NavState.create_project),
            max_width="420px",
        ),
        open=NavState.project_dialog,
        on_open_change=NavState.set_project_dialog,
    )


def _rename_dialog() -> rx.Component:
    return rx.dialog.content(
        rx.dialog.title("Rename chat"),
        _name_form(rx.input(name="title", default_value=ChatState.title, auto_focus=True, max_length=MAX_TITLE,
                            aria_label="Chat name", width="100%",
                            custom_attrs={"data-testid": "chat-rename-input"}),
                   ChatState.rename_error, "chat-rename-error", "Save", "chat-rename-save", ChatState.rename),
        max_width="420px",
    )


def _badge(**props: object) -> rx.Component:
    return rx.badge(rx.icon("bot", size=12, flex_shrink="0"),
                    rx.text(ChatState.agent_label, as_="span", overflow="hidden", text_overflow="ellipsis",
                            white_space="nowrap", min_width="0"),
                    color_scheme=rx.match(ChatState.agent_kind, ("demo", "gray"), ("unset", "red"), "indigo"),
                    variant="soft", size="1", radius="full", **props,
                    custom_attrs={"data-testid": "chat-agent-badge", "data-kind": ChatState.agent_kind})


def agent_badge() -> rx.Component:
    """`chat-agent-badge`: which agent answers in this chat (SPEC §18); its tooltip says more. In a
    project's chat it links the project's settings, where the agent is chosen."""
    width = {"min_width": "min(7em, 40%)", "max_width": "min(16em, 45%)", "flex_shrink": "1"}
    return rx.tooltip(
        rx.cond(
            ChatState.settings_href != "",
            rx.link(_badge(max_width="100%", cursor="pointer"), href=ChatState.settings_href, underline="none",
                    aria_label=ChatState.agent_label + " — the project's agent settings", display="inline-flex",
                    custom_attrs={"data-testid": "chat-agent-link"}, **width),
            _badge(tab_index=0, aria_label=ChatState.agent_about, **width),
        ),
        content=ChatState.agent_about,
    )


def chat_title() -> rx.Component:
    """The chat's title with its `chat-rename` control (a small dialog: the name, errors inline, Save)
    and the badge of the agent that answers."""
    return rx.dialog.root(
        rx.hstack(
            rx.heading(ChatState.title, size="4", title=ChatState.title, min_width="0",
                       class_name="cc-chat-title", custom_attrs={"data-testid": "chat-title"}),
            rx.dialog.trigger(
                rx.icon_button(rx.icon("pencil", size=14), size="1", variant="ghost", aria_label="Rename chat",
                               title="Rename chat", flex_shrink="0", custom_attrs={"data-testid": "chat-rename"}),
            ),
            chat_export_menu(),
            rx.cond(ChatState.agent_label != "", agent_badge()),
            align="center", spacing="2", min_width="6em", flex="1",
        ),
        _rename_dialog(),
        open=ChatState.renaming,
        on_open_change=ChatState.set_renaming,
    )


def composer_buttons() -> rx.Component:
    """Send, not offered while a turn runs, and Stop for the running turn."""
    return rx.hstack(
        rx.cond(
            ChatState.busy,
            rx.button(rx.icon("square", size=14), rx.cond(ChatState.stopping, "Stopping…", "Stop"),
                      type="button", color_scheme="red", variant="soft", on_click=ChatState.stop,
                      disabled=ChatState.stopping, aria_label="Stop the agent's turn",
                      custom_attrs={"data-testid": "composer-stop"}),
        ),
        rx.button(rx.icon("send", size=16), "Send", type="submit", disabled=ChatState.busy,
                  title=rx.cond(ChatState.busy, BUSY_REASON, "Send (Enter)"),
                  custom_attrs={"data-testid": "composer-send", "aria-describedby": "composer-busy"}),
        spacing="2", flex_shrink="0",
    )


def composer_busy_reason() -> rx.Component:
    """Why Send is not offered, under the composer while a turn runs."""
    return rx.cond(ChatState.busy,
                   rx.text(BUSY_REASON, id="composer-busy", size="1", color_scheme="gray", margin_top="0.25em",
                           custom_attrs={"data-testid": "composer-busy"}))
