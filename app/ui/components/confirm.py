"""A yes/no question before something that cannot be undone (delete a schedule, revoke a trigger URL)."""

from __future__ import annotations

from typing import Any

import reflex as rx


def confirm_dialog(title: Any, description: str, action: str, on_action: Any, testid: str, *,
                   open_: Any, on_open_change: Any) -> rx.Component:
    """``Keep it`` (``<testid>-cancel``) or the red ``action`` (``<testid>-confirm``, runs ``on_action``)."""
    return rx.alert_dialog.root(
        rx.alert_dialog.content(
            rx.alert_dialog.title(title),
            rx.alert_dialog.description(description, size="2"),
            rx.hstack(
                rx.alert_dialog.cancel(rx.button("Keep it", variant="soft", color_scheme="gray",
                                                 custom_attrs={"data-testid": f"{testid}-cancel"})),
                rx.alert_dialog.action(rx.button(action, color_scheme="red", on_click=on_action,
                                                 custom_attrs={"data-testid": f"{testid}-confirm"})),
                justify="end", spacing="3", margin_top="1em",
            ),
            max_width="420px",
        ),
        open=open_,
        on_open_change=on_open_change,
    )
