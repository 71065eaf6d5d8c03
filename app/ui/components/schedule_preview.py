"""The schedule dialog's live preview — its English and next fires, the occurrences its exclusions
skip struck through among them — and the read-back of a "Describe it" phrase, which is that same
preview headed by the phrase and its canonical form (so the fires read back are the form's)."""

from __future__ import annotations

import reflex as rx

from app.ui.state.schedule_form import ScheduleFormState as F


def _fire(fire: dict) -> rx.Component:
    """One next fire; a clock change that moves it is said on its row."""
    return rx.vstack(
        rx.flex(  # on a phone a jitter's spread takes the line: the relative time wraps under it
            rx.hstack(rx.icon("clock", size=13, color="var(--gray-10)", flex_shrink="0"),
                      rx.text(fire["local"], size="2", font_variant_numeric="tabular-nums"),
                      align="center", spacing="2", min_width="0"),
            rx.text(fire["relative"], size="1", color_scheme="gray", white_space="nowrap", margin_left="auto"),
            align="center", width="100%", wrap="wrap", column_gap="12px",
        ),
        rx.cond(fire["note"] != "",
                rx.text(rx.icon("triangle-alert", size=12), " ", fire["note"], size="1", color_scheme="amber",
                        custom_attrs={"data-testid": "schedule-form-fire-note"})),
        spacing="0", width="100%", custom_attrs={"data-testid": "schedule-form-fire", "data-utc": fire["utc"]},
    )


def _excluded(fire: dict) -> rx.Component:
    """An occurrence the exclusions skip: its time struck through, and why."""
    return rx.flex(
        rx.hstack(rx.icon("calendar-x", size=13, color="var(--gray-9)", flex_shrink="0"),
                  rx.text(fire["local"], size="2", color_scheme="gray", text_decoration="line-through",
                          font_variant_numeric="tabular-nums", custom_attrs={"data-testid": "preview-excluded-time"}),
                  align="center", spacing="2", min_width="0"),
        rx.text(fire["excluded"], size="1", color_scheme="gray", font_style="italic", margin_left="auto",
                min_width="0", overflow_wrap="anywhere"),
        align="center", width="100%", wrap="wrap", column_gap="12px",
        custom_attrs={"data-testid": "preview-excluded", "data-utc": fire["utc"]},
    )


def _row(fire: dict) -> rx.Component:
    return rx.cond(fire["excluded"] != "", _excluded(fire), _fire(fire))


def preview() -> rx.Component:
    return rx.box(
        rx.cond(
            F.description != "",
            rx.vstack(
                rx.hstack(rx.icon("calendar-check", size=15, color="var(--accent-11)", flex_shrink="0"),
                          rx.text(F.description, size="2", weight="medium",
                                  custom_attrs={"data-testid": "schedule-form-description"}),
                          align="center", spacing="2"),
                rx.foreach(F.fires, _row),
                rx.cond(F.window != "",
                        rx.hstack(rx.icon("flag", size=12, color="var(--gray-10)", flex_shrink="0", margin_top="3px"),
                                  rx.text(F.window, size="1", color_scheme="gray",
                                          custom_attrs={"data-testid": "schedule-form-window"}),
                                  spacing="1", align="start", padding_top="2px")),
                spacing="1", width="100%",
            ),
            rx.text(rx.cond(F.error != "", "Fix the error below to see the next fire times.",
                            "The next fire times appear here as you type."), size="2", color_scheme="gray"),
        ),
        custom_attrs={"data-testid": "schedule-form-preview", "aria-live": "polite"},
        width="100%", padding="10px 12px", border_radius="var(--radius-3)", background="var(--accent-a2)",
        border="1px solid var(--accent-a4)",
    )


def readback() -> rx.Component:
    """What the applied phrase was read as: the phrase, its canonical form, then the preview."""
    return rx.vstack(
        rx.flex(
            rx.text("“", F.readback_phrase, "” reads as", size="1", color_scheme="gray", min_width="0",
                    overflow_wrap="anywhere"),
            rx.code(F.readback, size="2", variant="soft", white_space="pre-wrap", overflow_wrap="anywhere",
                    custom_attrs={"data-testid": "schedule-readback-canonical"}),
            align="center", wrap="wrap", column_gap="8px", row_gap="2px", width="100%",
        ),
        preview(),
        spacing="2", width="100%", custom_attrs={"data-testid": "schedule-readback", "aria-live": "polite"},
    )
