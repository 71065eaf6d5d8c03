"""A drawer card's trigger URL (SPEC §19): create one; once it exists its URL with a copy button,
Rotate secret and Revoke (asked first); right after a create or a rotation the secret, shown this
once; and how to call it (a curl line on the real URL)."""

from __future__ import annotations

import reflex as rx

from app.ui.components.confirm import confirm_dialog
from app.ui.schedule_views import TaskRow
from app.ui.state.schedules import ScheduleState
from app.ui.trigger_views import SHOWN_ONCE

# navigator.clipboard exists only in a secure context (https, localhost): elsewhere a hidden
# textarea and execCommand copy the text instead
_COPY = rx.vars.FunctionStringVar.create(
    "((text) => { if (navigator.clipboard && window.isSecureContext) { navigator.clipboard.writeText(text);"
    " return; } const area = document.createElement('textarea'); area.value = text;"
    " area.setAttribute('readonly', ''); area.style.position = 'fixed'; area.style.opacity = '0';"
    " const home = document.activeElement; document.body.appendChild(area); area.select();"
    " try { document.execCommand('copy'); } finally { area.remove(); if (home) home.focus(); } })")
_CODE = {"font_family": "var(--code-font-family)", "font_size": "var(--font-size-1)", "word_break": "break-all",
         "white_space": "pre-wrap", "padding": "4px 8px", "border_radius": "var(--radius-2)",
         "background": "var(--gray-a3)", "min_width": "0", "flex": "1"}


def _tid(name: str) -> dict:
    return {"data-testid": name}


def _copy(text: rx.Var, what: str, testid: str) -> rx.Component:
    return rx.tooltip(
        rx.icon_button(rx.icon("copy", size=14), size="1", variant="soft", color_scheme="gray",
                       aria_label=f"Copy the {what}", custom_attrs=_tid(testid),
                       on_click=[rx.call_script(_COPY.call(text)),
                                 rx.toast.success(f"Copied the {what}", position="bottom-right", duration=2000)]),
        content=f"Copy the {what}",
    )


def _secret(row: TaskRow) -> rx.Component:
    """The secret just made: copyable, with why it will not show again."""
    return rx.vstack(
        rx.hstack(rx.icon("key-round", size=14, color="var(--amber-11)", flex_shrink="0"),
                  rx.text("Secret", size="2", weight="medium"), align="center", spacing="2"),
        rx.hstack(rx.el.code(ScheduleState.secret, style=_CODE, custom_attrs=_tid("trigger-secret")),
                  _copy(ScheduleState.secret, "secret", "trigger-secret-copy"), align="start", width="100%"),
        rx.text(SHOWN_ONCE, size="1", color="var(--gray-11)"),
        rx.button("I stored it", size="1", variant="ghost", on_click=ScheduleState.hide_secret,
                  custom_attrs=_tid("trigger-secret-done")),
        spacing="2", width="100%", padding="8px", border_radius="var(--radius-2)", background="var(--amber-a2)",
        border="1px solid var(--amber-a5)", role="status",
    )


def _help(row: TaskRow) -> rx.Component:
    """How to call it, folded: a curl line on the real URL."""
    return rx.el.details(
        rx.el.summary("How to call it", cursor="pointer", font_size="var(--font-size-1)", color="var(--accent-11)"),
        rx.vstack(
            rx.text("POST to the URL with the secret; the body (JSON or text, up to 64 KiB) reaches the agent "
                    "as untrusted data. Signed calls use the Standard Webhooks headers.", size="1",
                    color="var(--gray-11)"),
            rx.el.code(row.trigger_curl, style={**_CODE, "flex": "none", "width": "100%"}),
            spacing="1", width="100%", padding_top="4px",
        ),
        custom_attrs=_tid("trigger-help"), style={"width": "100%"},
    )


def _made(row: TaskRow) -> rx.Component:
    return rx.vstack(
        rx.hstack(rx.el.code(row.trigger_url, style=_CODE, custom_attrs=_tid("trigger-url")),
                  _copy(row.trigger_url, "trigger URL", "trigger-copy"), align="start", width="100%"),
        rx.cond((ScheduleState.secret_task == row.id) & (ScheduleState.secret_made == row.trigger_made), _secret(row)),
        rx.flex(
            rx.button(rx.icon("rotate-ccw", size=13), "Rotate secret", size="1", variant="soft", color_scheme="gray",
                      title="A new secret; the old one stops working at once",
                      on_click=ScheduleState.make_trigger(row.id, True), custom_attrs=_tid("trigger-rotate")),
            rx.button(rx.icon("unlink", size=13), "Revoke", size="1", variant="soft", color_scheme="red",
                      on_click=ScheduleState.ask_revoke(row.id), custom_attrs=_tid("trigger-revoke")),
            rx.text(row.trigger_since, size="1", color_scheme="gray", margin_left="auto"),
            align="center", gap="8px", wrap="wrap", width="100%",
        ),
        _help(row),
        spacing="2", width="100%",
    )


def trigger_part(row: TaskRow) -> rx.Component:
    """The card's "Trigger URL" part."""
    return rx.vstack(
        rx.hstack(
            rx.icon("webhook", size=13, color="var(--gray-10)", flex_shrink="0"),
            rx.text("Trigger URL", size="1", color_scheme="gray", weight="medium", text_transform="uppercase",
                    letter_spacing="0.04em"),
            rx.cond(row.trigger_url == "", rx.button(
                "Create trigger URL", size="1", variant="soft", margin_left="auto",
                title="Start a fire from another system with an HTTP POST",
                on_click=ScheduleState.make_trigger(row.id, False), custom_attrs=_tid("trigger-create"))),
            align="center", spacing="1", width="100%",
        ),
        rx.cond(row.trigger_url != "", _made(row)),
        spacing="2", width="100%", padding_top="6px", border_top="1px solid var(--gray-a4)",
        custom_attrs=_tid("trigger-part"),
    )


def confirm_revoke() -> rx.Component:
    """Asked before a trigger URL ends (calls of it are refused from then on)."""
    return confirm_dialog(
        "Revoke the trigger URL?",
        "Calls of it are refused from now on. A new one can be created later, with a new address.",
        "Revoke", ScheduleState.confirm_revoke, "trigger-revoke",
        open_=ScheduleState.revoke_id != 0, on_open_change=ScheduleState.set_revoke_open)
