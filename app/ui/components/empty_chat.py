"""What an empty chat says (``empty-chat-help``): what to type, and how to get a first schedule.

The directives are those of the demo agent (app/agents/providers/demo.py), the provider of a fresh
install; a real agent ignores them and simply answers. The schedule part shows in project chats
only, the ones with a Schedules button.
"""

from __future__ import annotations

import reflex as rx

from app.ui.state.chat import ChatState

DIRECTIVES = (
    ('/schedule --name "standup" --every 3600 --prompt "collect the news"',
     "asks the agent to propose a schedule (switch on Scheduled tasks first); it arrives as a draft"),
    ("/sleep 5", "the agent works for 5 seconds, so you can watch a turn run"),
    ("/fail", "the turn ends with an error"),
    ("/marker", "the reply ends with the completion marker, which completes a scheduled task"),
    ("/complete done", "completes the scheduled task that is firing"),
)
_CODE = {"font_family": "var(--code-font-family)", "font_size": "var(--font-size-1)", "padding": "0.1em 0.35em",
         "border_radius": "4px", "background": "var(--gray-a3)", "overflow_wrap": "anywhere"}


def _directive(line: str, meaning: str) -> rx.Component:
    return rx.el.li(rx.el.code(line, style=_CODE), rx.el.span(" — ", meaning, color="var(--gray-11)"),
                    font_size="var(--font-size-2)", margin_bottom="0.3em")


def _first_schedule() -> rx.Component:
    return rx.box(
        rx.text("Your first schedule", size="2", weight="bold"),
        rx.text("Open ", rx.el.strong("Schedules"), " at the top right and choose ", rx.el.strong("New"),
                " to fire a prompt into this chat on a timetable; or switch on ", rx.el.strong("Scheduled tasks"),
                " so the agent may propose schedules itself (you arm them in the drawer).", size="2"),
        margin_top="0.6em",
    )


def empty_chat_help() -> rx.Component:
    return rx.box(
        rx.hstack(rx.icon("message-circle", size=18, color="var(--accent-11)"),
                  rx.heading("This chat is empty", size="3", as_="h2"), align="center", spacing="2"),
        rx.text("Type a message below and press Enter. The demo agent also obeys these lines in a message:",
                size="2", margin_top="0.4em"),
        rx.el.ul(*[_directive(line, meaning) for line, meaning in DIRECTIVES],
                 padding_left="1.2em", margin="0.5em 0 0"),
        rx.cond(ChatState.project_chat, _first_schedule()),
        align_self="center", width="min(100%, 40em)", padding="1em 1.2em", border_radius="12px",
        border="1px dashed var(--gray-6)", background="var(--gray-a2)",
        custom_attrs={"data-testid": "empty-chat-help"},
    )
