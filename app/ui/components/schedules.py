"""The Schedules drawer: header button, 7-day timeline, one card per task, run history."""

from __future__ import annotations

import reflex as rx

from app.ui.components.confirm import confirm_dialog
from app.ui.components.schedule_dialog import schedule_dialog
from app.ui.components.schedule_row import schedule_row
from app.ui.components.transfer import import_dialog, schedules_transfer_buttons
from app.ui.components.trigger_url import confirm_revoke
from app.ui.state.schedule_form import ScheduleFormState
from app.ui.state.schedules import ScheduleState
from app.ui.timeline import Marker, Tick

DRAWER_ID = "cc-schedules-drawer"  # its width and place by screen size: assets/chatcron.css


def _tid(name: str, **extra: object) -> dict:
    return {"data-testid": name, **extra}


def schedules_button() -> rx.Component:
    """The header control (project chats only) that opens the drawer: how many tasks are still in
    play (completed and exhausted ones are not counted), and a signal when drafts wait to be armed."""
    drafts = ScheduleState.draft_count
    draft_text = rx.cond(drafts == 1, "1 draft to arm", drafts.to_string() + " drafts to arm")
    return rx.button(
        rx.icon("calendar-clock", size=16), "Schedules",
        rx.cond(ScheduleState.task_count > 0,
                rx.badge(ScheduleState.task_count, variant="solid", radius="full", size="1",
                         custom_attrs=_tid("schedules-count"))),
        rx.cond(drafts > 0,  # on a phone only the icon and the number: the header is narrow
                rx.badge(rx.icon("power", size=11),
                         rx.el.span(drafts, display=["inline", "inline", "none"]),
                         rx.el.span(draft_text, display=["none", "none", "inline"]),
                         color_scheme="amber", variant="solid", size="1", radius="full",
                         title=draft_text, custom_attrs=_tid("schedules-drafts"))),
        variant="soft", size="2",
        aria_label=rx.cond(drafts > 0, "Open the schedules of this chat (" + draft_text.to(str) + ")",
                           "Open the schedules of this chat"),
        on_click=ScheduleState.set_drawer_open(~ScheduleState.drawer_open),
        custom_attrs=_tid("schedules-button", **{"aria-controls": DRAWER_ID,
                                                 "aria-expanded": rx.cond(ScheduleState.drawer_open, "true", "false")}),
    )


def _dot(marker: Marker) -> rx.Component:
    return rx.box(position="absolute", left=marker.left, top=f"calc({marker.top} + 2px)", width="8px", height="8px",
                  margin_left="-4px", border_radius="50%", background=f"var(--{marker.color}-9)",
                  box_shadow="0 0 0 1.5px var(--color-panel-solid)",
                  custom_attrs={"data-testid": "timeline-marker", "aria-label": marker.label, "role": "img"})


def _band(marker: Marker) -> rx.Component:
    """A day of a dense task: one bar with the day's count instead of a solid run of dots."""
    return rx.box(
        rx.text(marker.count, size="1", weight="medium", line_height="10px", color="var(--gray-12)"),
        position="absolute", left=marker.left, width=marker.width, top=f"calc({marker.top} + 1px)", height="10px",
        border_radius="3px", background=f"var(--{marker.color}-a5)", border=f"1px solid var(--{marker.color}-a8)",
        overflow="hidden", display="flex", align_items="center", justify_content="center", font_size="9px",
        box_shadow="inset 0 0 0 1px var(--color-panel-solid)",
        custom_attrs={"data-testid": "timeline-band", "data-count": marker.count, "aria-label": marker.label,
                      "role": "img"},
    )


def _skipped(marker: Marker) -> rx.Component:
    """An occurrence the task's exclusions skip (SPEC §20): a hollow dot struck through, or for a
    dense task a hollow band over the skipped day."""
    attrs = {"data-testid": "timeline-excluded", "aria-label": marker.label, "role": "img"}
    strike = rx.box(position="absolute", left="-2px", right="-2px", top="50%", height="1.5px", margin_top="-0.75px",
                    background=f"var(--{marker.color}-10)", transform="rotate(-35deg)")
    return rx.cond(
        marker.width != "",
        rx.box(position="absolute", left=marker.left, width=marker.width, top=f"calc({marker.top} + 1px)",
               height="10px", border_radius="3px", border=f"1px dashed var(--{marker.color}-a9)",
               background=f"repeating-linear-gradient(135deg, transparent 0 4px, var(--{marker.color}-a4) 4px 6px)",
               custom_attrs=attrs),
        rx.box(strike, position="absolute", left=marker.left, top=f"calc({marker.top} + 1px)", width="10px",
               height="10px", margin_left="-5px", border_radius="50%", border=f"1.5px solid var(--{marker.color}-9)",
               background="var(--color-panel-solid)", custom_attrs=attrs),
    )


def _marker(marker: Marker) -> rx.Component:
    return rx.tooltip(rx.cond(marker.excluded, _skipped(marker),
                              rx.cond(marker.width != "", _band(marker), _dot(marker))), content=marker.label)


def _tick_line(tick: Tick) -> rx.Component:
    return rx.box(position="absolute", left=tick.left, top="-4px", bottom="-4px",
                  border_left="1px dashed var(--gray-a6)")


def _tick_label(tick: Tick) -> rx.Component:
    return rx.text(tick.label, size="1", color_scheme="gray", position="absolute", left=tick.left,
                   padding_left="4px", white_space="nowrap")


def timeline() -> rx.Component:
    """The chat's fires over the next 7 days, positioned by time, one lane per task."""
    return rx.box(
        rx.hstack(rx.text("Next 7 days", size="1", weight="medium", color_scheme="gray"), rx.spacer(),
                  rx.text(ScheduleState.fire_total, size="1", color_scheme="gray"), width="100%"),
        rx.box(
            rx.foreach(ScheduleState.ticks, _tick_line),
            rx.foreach(ScheduleState.markers, _marker),
            position="relative", height=ScheduleState.lanes_height, margin_top="10px",
        ),
        rx.box(rx.foreach(ScheduleState.ticks, _tick_label), position="relative", height="18px", margin_top="6px"),
        rx.foreach(ScheduleState.dense, lambda line: rx.text(line, size="1", color_scheme="gray",
                                                             custom_attrs=_tid("timeline-aggregate"))),
        custom_attrs=_tid("schedules-timeline"), overflow="hidden", flex_shrink="0",
        width="100%", padding="10px 12px 6px", border_radius="var(--radius-3)", background="var(--gray-a2)",
        border="1px solid var(--gray-a4)",
    )


def empty_schedules(title: str, text: str, testid: str, max_width: str = "340px") -> rx.Component:
    """What a list of schedules shows when it has none (the drawer, the All schedules page)."""
    return rx.center(
        rx.vstack(
            rx.icon("calendar-clock", size=32, color="var(--gray-8)"),
            rx.text(title, weight="medium"),
            rx.text(text, size="2", color_scheme="gray", text_align="center"),
            align="center", spacing="2", max_width=max_width,
        ),
        padding_y="3em", custom_attrs=_tid(testid),
    )


def _empty() -> rx.Component:
    return empty_schedules("No schedules yet", "Create one here, or turn on Scheduled tasks and ask the agent — it "
                           "proposes a draft for you to arm.", "schedules-empty")


def _drawer_header() -> rx.Component:
    return rx.hstack(
        rx.vstack(
            rx.heading("Schedules", size="5", id="cc-schedules-title", style={"letter_spacing": "-0.01em"}),
            rx.text("Standing prompts that fire into this chat.", size="2", color="var(--gray-11)"),
            spacing="1", flex="1 1 12em", min_width="0",
        ),
        rx.button(rx.icon("plus", size=15), "New", size="2", on_click=ScheduleFormState.open_new,
                  aria_label="New schedule", custom_attrs=_tid("schedules-new")),
        schedules_transfer_buttons(),
        rx.tooltip(rx.icon_button(rx.icon("refresh-cw", size=15), variant="soft", size="2", color_scheme="gray",
                                  on_click=ScheduleState.refresh, aria_label="Refresh schedules",
                                  custom_attrs=_tid("schedules-refresh")), content="Refresh"),
        rx.icon_button(rx.icon("x", size=16), variant="ghost", size="2", color_scheme="gray",
                       on_click=ScheduleState.set_drawer_open(False), aria_label="Close schedules",
                       custom_attrs=_tid("schedules-close")),
        align="center", width="100%", spacing="2", flex_wrap="wrap",
    )


def _notice() -> rx.Component:
    return rx.cond(
        ScheduleState.notice != "",
        rx.callout.root(
            rx.callout.icon(rx.icon("ban", size=16)),
            rx.callout.text(ScheduleState.notice),
            color_scheme="red", size="1", width="100%", role="alert",
            custom_attrs=_tid("schedules-notice"),
        ),
    )


def _confirm_delete() -> rx.Component:
    return confirm_dialog(
        rx.fragment("Delete “", ScheduleState.confirm_name, "”?"),
        "The schedule and its run history go away. A fire already running finishes; a pending one is "
        "cancelled. Pausing keeps it instead.",
        "Delete", ScheduleState.confirm_delete, "schedule-delete",
        open_=ScheduleState.confirm_id != 0, on_open_change=ScheduleState.set_confirm_open)


def _drawer_body() -> rx.Component:
    return rx.vstack(
        _drawer_header(),
        _notice(),
        timeline(),
        rx.cond(
            ScheduleState.loaded,
            rx.cond(ScheduleState.rows.length() > 0,
                    rx.vstack(rx.foreach(ScheduleState.rows, schedule_row), spacing="3", width="100%"),
                    _empty()),
            rx.center(rx.spinner(size="3"), padding_y="3em", width="100%"),
        ),
        spacing="4", width="100%", padding="20px", overflow_y="auto", height="100%",
    )


def schedules_drawer() -> rx.Component:
    """The drawer the header button opens: beside the transcript at 1100 px and wider, over it
    (with a backdrop that closes it) narrower. assets/layout.js moves the focus into it, keeps Tab
    inside it while it overlays, closes it on Escape and gives the focus back to the button."""
    return rx.cond(
        ScheduleState.drawer_open,
        rx.fragment(
            rx.box(class_name="cc-drawer-backdrop", on_click=ScheduleState.set_drawer_open(False),
                   custom_attrs={"aria-hidden": "true"}),
            rx.box(
                _drawer_body(),
                _confirm_delete(),
                confirm_revoke(),
                schedule_dialog(),
                import_dialog(),
                id=DRAWER_ID, class_name="cc-drawer",
                custom_attrs=_tid("schedules-drawer", role="dialog", tabIndex="-1",
                                  **{"aria-labelledby": "cc-schedules-title"}),
            ),
        ),
    )
