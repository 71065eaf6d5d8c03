"""Transcript rows and the composer of the chat page."""

from __future__ import annotations

import reflex as rx

from app.core.config import load_settings
from app.ui.state.chat import ChatState


def _scheduled(row: dict) -> rx.Component:
    """A fire: who sent it (the task, which fire), the stored prompt, and the full envelope folded."""
    return rx.box(
        rx.hstack(
            rx.icon("alarm-clock", size=14, color="var(--amber-11)"),
            rx.text("Scheduled task ", rx.el.strong(row["task"]), size="2", color="var(--amber-12)"),
            rx.badge("fire ", row["fire"], color_scheme="amber", variant="surface", size="1"),
            align="center", spacing="2", custom_attrs={"data-testid": "scheduled-header"},
        ),
        rx.text(row["body"], white_space="pre-wrap", size="2", margin_top="0.35em"),
        rx.el.details(
            rx.el.summary("Full prompt sent to the agent", cursor="pointer", color="var(--amber-11)",
                          font_size="var(--font-size-1)", margin_top="0.4em"),
            rx.el.pre(row["text"], white_space="pre-wrap", font_family="var(--code-font-family)",
                      font_size="var(--font-size-1)", color="var(--gray-11)", margin="0.4em 0 0",
                      padding="0.6em", background="var(--gray-a2)", border_radius="8px"),
        ),
        align_self="flex-end", max_width="75%", padding="0.6em 0.9em", border_radius="12px",
        background="var(--amber-2)", border="1px solid var(--amber-6)",
        custom_attrs={"data-testid": "event", "data-type": row["type"], "data-run-id": row["run_id"]},
    )


def _event(row: dict) -> rx.Component:
    kind = row["type"]
    return rx.cond(
        kind == "scheduled_prompt",
        _scheduled(row),
        rx.box(
            rx.text(row["text"], white_space="pre-wrap", size="2"),
            align_self=rx.cond(kind == "prompt", "flex-end", "flex-start"),
            background=rx.match(kind, ("prompt", "var(--accent-4)"), ("error", "var(--red-3)"), "var(--gray-3)"),
            color=rx.cond(kind == "error", "var(--red-11)", "inherit"),
            padding="0.6em 0.9em", border_radius="12px", max_width="75%",
            custom_attrs={"data-testid": "event", "data-type": kind, "data-run-id": row["run_id"]},
        ),
    )


def _jump_to_latest() -> rx.Component:
    """Shown by assets/chatcron.css while the user has scrolled up (assets/transcript.js scrolls)."""
    return rx.box(
        rx.button(rx.icon("arrow-down", size=14), "Jump to latest", size="2", variant="solid", radius="full",
                  aria_label="Jump to the latest message", custom_attrs={"data-testid": "jump-to-latest"}),
        class_name="cc-jump",
    )


def transcript() -> rx.Component:
    """The scrolling log; assets/transcript.js keeps it pinned to its newest entry."""
    return rx.box(
        rx.vstack(
            rx.foreach(ChatState.messages, _event),
            rx.cond(
                ChatState.busy,
                rx.hstack(rx.spinner(size="2"), rx.text("Agent is working…", size="2", color_scheme="gray"),
                          custom_attrs={"data-testid": "agent-working"}, align="center"),
            ),
            custom_attrs={"data-testid": "transcript"},
            class_name="cc-transcript", padding="1em", spacing="3", width="100%",
        ),
        _jump_to_latest(),
        class_name="cc-transcript-wrap",
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
                             max_length=load_settings().prompt_max_bytes,  # a byte cap is at least this
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
