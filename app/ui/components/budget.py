"""`chat-budget`: the project's daily budget beside the composer (SPEC §15). People's turns are never
blocked by it: the line tells where the UTC day stands and, once it is spent, that scheduled fires
wait while messages still run."""

from __future__ import annotations

import reflex as rx

from app.ui.state.chat import ChatState

DAY_NOTE = "The budget's day is the UTC day. Scheduled fires wait when it is spent; your messages never do."


def chat_budget() -> rx.Component:
    return rx.cond(
        ChatState.budget_text != "",
        rx.hstack(
            rx.icon(rx.cond(ChatState.budget_spent, "hourglass", "wallet"), size=13, flex_shrink="0",
                    margin_top="2px", color=rx.cond(ChatState.budget_spent, "var(--amber-11)", "var(--gray-10)")),
            rx.text(ChatState.budget_text,
                    rx.cond(ChatState.budget_detail != "",
                            rx.el.span(" ", ChatState.budget_detail, color="var(--gray-11)", white_space="nowrap")),
                    size="1", color_scheme=rx.cond(ChatState.budget_spent, "amber", "gray"),
                    font_variant_numeric="tabular-nums"),
            spacing="1", align="start", width="100%", margin_bottom="0.5em",
            custom_attrs={"data-testid": "chat-budget", "title": DAY_NOTE,
                          "data-spent": rx.cond(ChatState.budget_spent, "true", "false")},
        ),
    )
