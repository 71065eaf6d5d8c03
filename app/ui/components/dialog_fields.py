"""The schedule dialog's field parts: a label, a text input bound to one form field, the field with
its hint, and the service's refusal told under the input it names."""

from __future__ import annotations

import reflex as rx

from app.ui.state.schedule_form import ScheduleFormState as F


def label(text: str, html_for: str) -> rx.Component:
    return rx.el.label(text, html_for=html_for, style={"font_size": "var(--font-size-2)", "font_weight": "500"})


def invalid(name: str) -> rx.Var:
    """True while the service's refusal names the input ``name``."""
    return F.error_input == name


def form_input(field: str, testid: str, attrs: dict | None = None, **props: object) -> rx.Component:
    """A text input bound to the form field ``field`` (id ``schedule-<field>``), red while refused."""
    return rx.input(
        value=getattr(F, field), on_change=lambda value: F.set_field(field, value), id=f"schedule-{field}",
        width="100%", size="2", color_scheme=rx.cond(invalid(field), "red", "gray"), variant="surface",
        custom_attrs={"data-testid": testid, "aria-invalid": invalid(field), **(attrs or {})},
        **props,
    )


def field(text: str, control: rx.Component, html_for: str, hint: str | rx.Var = "") -> rx.Component:
    helper = [rx.text(hint, size="1", color_scheme="gray")] if isinstance(hint, rx.Var) or hint else []
    return rx.vstack(label(text, html_for), control, *helper, spacing="1", width="100%")


def told(inputs: tuple[str, ...], hint: str, testid: str) -> rx.Component:
    """Under a field: the service's refusal when it names one of ``inputs``, else the hint."""
    refused = invalid(inputs[0])
    for name in inputs[1:]:
        refused = refused | invalid(name)
    return rx.cond(refused, rx.text(F.error, size="1", color_scheme="red", weight="medium",
                                    custom_attrs={"data-testid": testid}),
                   rx.text(hint, size="1", color_scheme="gray"))
