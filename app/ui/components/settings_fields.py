"""The pieces the project settings and admin pages are built of: a section card, a labelled input with
its error beside it, a native select. An input is disabled unless the viewer may edit (a member sees
the whole page read-only)."""

from __future__ import annotations

from collections.abc import Sequence

import reflex as rx

from app.ui.state.project_settings import SettingsState as S


def tid(name: str, **extra: object) -> dict[str, object]:
    return {"data-testid": name, **extra}


def section(testid: str, icon: str, title: str, about: str, *children: rx.Component) -> rx.Component:
    """One card of the page: its heading, a line on what it is for, its content."""
    return rx.card(
        rx.vstack(
            rx.hstack(rx.icon(icon, size=18), rx.heading(title, size="4", as_="h2"), align="center", spacing="2"),
            rx.text(about, size="2", color_scheme="gray"),
            *children,
            spacing="3", width="100%",
        ),
        width="100%", custom_attrs=tid(testid),
    )


def error_of(slot: str) -> rx.Component:
    """The error of one input, beside it (``settings-error-<slot>``)."""
    return rx.cond(S.errors.contains(slot),
                   rx.text(S.errors[slot], class_name="cc-field-error", role="alert", id=f"settings-error-{slot}",
                           custom_attrs=tid(f"settings-error-{slot}")))


def invalid(slot: str) -> dict[str, object]:
    return {"aria-invalid": rx.cond(S.errors.contains(slot), "true", "false"),
            "aria-describedby": f"settings-error-{slot}"}


def field(label: str, control: rx.Component, slot: str = "", hint: str = "") -> rx.Component:
    """A label above its input, a hint under it, and the input's error under that."""
    return rx.box(
        rx.el.label(rx.text(label, size="2", weight="medium"), control, class_name="cc-field-label"),
        *([rx.text(hint, size="1", color_scheme="gray")] if hint else []),
        *([error_of(slot)] if slot else []),
        class_name="cc-field",
    )


def text_input(name: str, testid: str, placeholder: str = "", **props: object) -> rx.Component:
    """An input of the form (``SettingsState.<name>``), editable by an owner only."""
    return rx.input(value=getattr(S, name), on_change=lambda value: S.set_field(name, value), placeholder=placeholder,
                    disabled=~S.can_edit, width="100%", custom_attrs={**tid(testid), **invalid(name)}, **props)


def select(name: str, testid: str, options: Sequence[rx.Component], label: str) -> rx.Component:
    return rx.el.select(*options, value=getattr(S, name), on_change=lambda value: S.set_field(name, value),
                        disabled=~S.can_edit, aria_label=label, class_name="cc-native-select cc-wide-select",
                        custom_attrs={**tid(testid), **invalid(name)})


def options(choices: dict[str, str]) -> list[rx.Component]:
    return [rx.el.option(label, value=value) for value, label in choices.items()]


def owner_button(*children: rx.Component, **props: object) -> rx.Component:
    """A button of the form's own (add, remove): shown to those who may edit."""
    return rx.cond(S.can_edit, rx.button(*children, type="button", size="1", variant="soft", **props))
