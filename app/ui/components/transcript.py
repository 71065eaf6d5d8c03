"""Transcript rows and the composer of the chat page."""

from __future__ import annotations

import reflex as rx

from app.ui.state.chat import ChatState


def _event(row: dict) -> rx.Component:
    kind = row["type"]
    return rx.box(
        rx.text(row["text"], white_space="pre-wrap", size="2"),
        align_self=rx.cond((kind == "prompt") | (kind == "scheduled_prompt"), "flex-end", "flex-start"),
        background=rx.match(kind, ("prompt", "var(--accent-4)"), ("scheduled_prompt", "var(--amber-3)"),
                            ("error", "var(--red-3)"), "var(--gray-3)"),
        color=rx.cond(kind == "error", "var(--red-11)", "inherit"),
        padding="0.6em 0.9em", border_radius="12px", max_width="75%",
        custom_attrs={"data-testid": "event", "data-type": kind, "data-run-id": row["run_id"]},
    )


def transcript() -> rx.Component:
    return rx.vstack(
        rx.foreach(ChatState.messages, _event),
        rx.cond(
            ChatState.busy,
            rx.hstack(rx.spinner(size="2"), rx.text("Agent is working…", size="2", color_scheme="gray"),
                      custom_attrs={"data-testid": "agent-working"}, align="center"),
        ),
        rx.box(id="transcript-end"),
        custom_attrs={"data-testid": "transcript"},
        flex="1", overflow_y="auto", padding="1em", spacing="3", width="100%",
    )


def composer() -> rx.Component:
    return rx.box(
        rx.cond(
            ChatState.composer_error != "",
            rx.callout(ChatState.composer_error, icon="triangle-alert", color_scheme="red", size="1",
                       custom_attrs={"data-testid": "composer-error"}, margin_bottom="0.5em"),
        ),
        rx.form(
            rx.hstack(
                rx.text_area(name="text", id="composer-input", placeholder="Message the agent… (Enter sends)",
                             enter_key_submit=True, rows="2", width="100%", aria_label="Message",
                             custom_attrs={"data-testid": "composer-input"}),
                rx.button(rx.icon("send", size=16), "Send", type="submit",
                          custom_attrs={"data-testid": "composer-send"}),
                align="end", width="100%",
            ),
            on_submit=ChatState.send,
            reset_on_submit=True,
            width="100%",
        ),
        padding="1em", border_top="1px solid var(--gray-5)", width="100%",
    )
