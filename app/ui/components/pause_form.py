"""A drawer row's pause form: a note and an instant the task resumes by itself (SPEC §14).

The row's Pause button stays a one-click pause; the form opens from the button beside it (and, on
a paused task, changes its note and end). Empty fields make a plain pause."""

from __future__ import annotations

import reflex as rx

from app.schedules.fields import MAX_NOTE_CHARS
from app.ui.schedule_views import TaskRow
from app.ui.state.pause_form import PauseFormState as P


def _tid(name: str) -> dict:
    return {"data-testid": name}


def pause_options(row: TaskRow) -> rx.Component:
    """Opens the pause form, filled with the row's current note and end."""
    paused = row.status == "paused"
    label = rx.cond(paused, "Change the pause note or when it resumes", "Pause with a note or until a time")
    return rx.tooltip(
        rx.icon_button(rx.cond(paused, rx.icon("notebook-pen", size=14), rx.icon("message-square-plus", size=14)),
                       size="1", variant="soft",
                       color_scheme="amber", aria_label=label,
                       on_click=P.open_for(row.id, row.pause_note, row.paused_until),
                       custom_attrs=_tid("schedule-pause-options")),
        content=label,
    )


def _label(text: str, html_for: str) -> rx.Component:
    return rx.el.label(text, html_for=html_for, style={"font_size": "var(--font-size-1)", "font_weight": "500"})


def pause_form(row: TaskRow) -> rx.Component:
    paused = row.status == "paused"
    return rx.vstack(
        rx.text(rx.cond(paused, "Change the pause", "Pause with a note"), size="2", weight="medium"),
        _label("Note", "pause-note"),
        rx.text_area(value=P.note, on_change=P.set_note, id="pause-note", rows="2", width="100%",
                     max_length=MAX_NOTE_CHARS, placeholder="Why it is paused (shown on this card)",
                     custom_attrs=_tid("pause-form-note")),
        _label("Resume by itself at", "pause-until"),
        rx.input(value=P.until, on_change=P.set_until, id="pause-until", type="datetime-local", width="100%",
                 custom_attrs=_tid("pause-form-until")),
        rx.text("Optional, in your time zone; left empty it waits for Resume.", size="1", color_scheme="gray"),
        rx.cond(P.error != "", rx.callout(P.error, icon="circle-alert", color_scheme="red", size="1", width="100%",
                                          role="alert", custom_attrs=_tid("pause-form-error"))),
        rx.hstack(
            rx.button("Cancel", size="1", variant="soft", color_scheme="gray", on_click=P.close,
                      custom_attrs=_tid("pause-form-cancel")),
            rx.button(rx.cond(P.saving, rx.spinner(size="1"), rx.icon("pause", size=14)),
                      rx.cond(paused, "Save", "Pause"), size="1", color_scheme="amber", on_click=P.save,
                      disabled=P.saving, custom_attrs=_tid("pause-form-save")),
            justify="end", spacing="2", width="100%",
        ),
        spacing="1", width="100%", padding="8px 10px", border_radius="var(--radius-3)",
        background="var(--gray-a2)", border="1px solid var(--gray-a5)",
        custom_attrs={"data-testid": "pause-form", "role": "group", "aria-label": "Pause with a note"},
    )
