"""A quiet fire in the transcript (SPEC §19; rows marked by app/ui/quiet_fires.py): one line
"Nothing new · <summary>" where the turn began; a click opens the whole turn below it, another
folds it again."""

from __future__ import annotations

import reflex as rx

from app.ui.quiet_fires import HEAD
from app.ui.state.chat import ChatState

_LINE = {"display": "flex", "align_items": "center", "gap": "0.45em", "width": "min(100%, 48em)", "min_width": "0",
         "align_self": "flex-start", "padding": "0.4em 0.7em", "border_radius": "10px", "cursor": "pointer",
         "border": "1px dashed var(--gray-6)", "background": "var(--gray-a2)", "color": "var(--gray-11)",
         "font_size": "var(--font-size-2)", "text_align": "left",
         "&:hover": {"background": "var(--gray-a3)"},
         "&:focus-visible": {"outline": "2px solid var(--accent-8)", "outline_offset": "2px"}}


def _opened(row: dict) -> rx.Var:
    return ChatState.open_quiet.contains(row["run_id"])


def nothing_new(row: dict, stamp: rx.Component) -> rx.Component:
    """The folded line of a quiet fire; ``stamp`` is its time (the transcript's ``moment``)."""
    opened = _opened(row)
    words = rx.cond(row["summary"] != "", "Nothing new · " + row["summary"].to(str), "Nothing new")
    return rx.el.button(
        rx.cond(opened, rx.icon("chevron-down", size=14, flex_shrink="0"),
                rx.icon("chevron-right", size=14, flex_shrink="0")),
        rx.icon("bell-off", size=13, flex_shrink="0", color="var(--gray-10)"),
        rx.el.span(words, title=words, style={"overflow": "hidden", "text_overflow": "ellipsis",
                                              "white_space": "nowrap", "min_width": "0", "flex": "1 1 auto"},
                   custom_attrs={"data-testid": "fire-nothing-new-text"}),
        rx.cond(row["task"] != "", rx.el.span(row["task"], display=["none", "inline"], style={  # not on a phone
            "color": "var(--gray-10)", "font_size": "var(--font-size-1)", "white_space": "nowrap",
            "overflow": "hidden", "text_overflow": "ellipsis", "max_width": "12em", "flex": "0 0 auto"})),
        stamp,
        type="button", on_click=ChatState.toggle_quiet(row["run_id"]), style=_LINE,
        title="The agent reported nothing new, so nobody was told. Click to see the whole turn.",
        custom_attrs={"data-testid": "fire-nothing-new", "data-run-id": row["run_id"],
                      "aria-expanded": rx.cond(opened, "true", "false")},
    )


def with_quiet(row: dict, shown: rx.Component, stamp: rx.Component) -> rx.Component:
    """``shown`` (the row as the transcript draws it), folded away while its fire is a closed quiet one."""
    return rx.fragment(
        rx.cond(row["quiet"] == HEAD, nothing_new(row, stamp)),
        rx.cond((row["quiet"] == "") | _opened(row), shown),
    )
