"""What an empty chat says (``empty-chat-help``): what to type, and how to get a first schedule.

It describes the chat's own agent (app/agents/identity.py): the demo agent's directives
(app/agents/providers/demo.py) for the demo, the provider of a fresh install; what a real agent
does (answers, tool cards, approvals) for any other; what is missing when the project's settings
name no usable agent. The schedule part shows in project chats only, the ones with a Schedules
button.
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


def _demo() -> rx.Component:
    return rx.fragment(
        rx.text("Type a message below and press Enter. The demo agent also obeys these lines in a message:",
                size="2", margin_top="0.4em"),
        rx.el.ul(*[_directive(line, meaning) for line, meaning in DIRECTIVES],
                 padding_left="1.2em", margin="0.5em 0 0", custom_attrs={"data-testid": "empty-chat-directives"}),
    )


def _agent() -> rx.Component:
    return rx.text(
        "Type a message below and press Enter: ", rx.el.strong(ChatState.agent_label),
        " answers in this chat. What it does — reading files, running commands — shows as cards you can open;"
        " when it asks before acting, an approval card waits for your answer.",
        size="2", margin_top="0.4em",
    )


def _unset() -> rx.Component:
    return rx.text("This project has no usable agent yet, so a message would fail. "
                   "An administrator sets one (see the README's agents section).",
                   size="2", margin_top="0.4em", color="var(--red-11)")


def empty_chat_help() -> rx.Component:
    return rx.box(
        rx.hstack(rx.icon("message-circle", size=18, color="var(--accent-11)"),
                  rx.heading("This chat is empty", size="3", as_="h2"), align="center", spacing="2"),
        rx.match(ChatState.agent_kind, ("demo", _demo()), ("unset", _unset()), _agent()),
        rx.cond(ChatState.project_chat, _first_schedule()),
        align_self="center", width="min(100%, 40em)", padding="1em 1.2em", border_radius="12px",
        border="1px dashed var(--gray-6)", background="var(--gray-a2)",
        custom_attrs={"data-testid": "empty-chat-help", "data-kind": ChatState.agent_kind},
    )
