"""The schedule dialog's SPEC §20 parts: the "Describe it" field (a phrase fills the form, and is
read back) and, for a cron schedule, the days it skips — listed dates and a country's public
holidays, each refusal told under its own input."""

from __future__ import annotations

import reflex as rx

from app.ui.calendar_form import DATES_HINT, HOLIDAYS_HINT, countries
from app.ui.components.dialog_fields import field, form_input, label, told
from app.ui.components.schedule_preview import readback
from app.ui.phrase_form import MAX_PHRASE_CHARS
from app.ui.state.schedule_form import ScheduleFormState as F

COUNTRY_LIST_ID = "cc-holiday-countries"
REGION_LIST_ID = "cc-holiday-regions"
PHRASE_ID = "schedule-phrase"
PHRASE_HELP_ID = "schedule-phrase-help"


def describe() -> rx.Component:
    """A phrase and Apply (Enter applies too); the parser's message under it when not understood."""
    refused = F.phrase_error != ""
    return rx.vstack(
        label("Describe it", PHRASE_ID),
        rx.form(
            rx.flex(
                rx.input(name="phrase", value=F.phrase, on_change=F.set_phrase, id=PHRASE_ID,
                         placeholder="e.g. every weekday at 9 except US holidays", auto_complete="off",
                         max_length=MAX_PHRASE_CHARS, size="2", variant="surface", flex="1 1 14em", min_width="0",
                         color_scheme=rx.cond(refused, "red", "gray"),
                         custom_attrs={"data-testid": "schedule-describe", "aria-invalid": refused,
                                       "aria-describedby": PHRASE_HELP_ID}),
                rx.button(rx.icon("wand-sparkles", size=14), "Apply", type="submit", variant="soft", size="2",
                          custom_attrs={"data-testid": "schedule-describe-apply"}),
                spacing="2", align="center", width="100%",
            ),
            on_submit=F.apply_phrase, reset_on_submit=False, width="100%",
        ),
        rx.cond(refused,
                rx.text(F.phrase_error, size="1", color_scheme="red", weight="medium", id=PHRASE_HELP_ID, role="alert",
                        overflow_wrap="anywhere", custom_attrs={"data-testid": "schedule-describe-error"}),
                rx.text("In plain words; it fills in the fields below, read in ", F.phrase_zone, " time",
                        size="1", color_scheme="gray", id=PHRASE_HELP_ID)),
        rx.cond(F.readback != "", readback()),
        spacing="1", width="100%", custom_attrs={"data-testid": "schedule-describe-part"},
    )


def _lists() -> rx.Component:
    return rx.fragment(
        rx.el.datalist(*[rx.el.option(name, value=code) for code, name in countries()], id=COUNTRY_LIST_ID),
        rx.el.datalist(rx.foreach(F.subdivision_options, lambda code: rx.el.option(value=code)), id=REGION_LIST_ID),
    )


def exclusions() -> rx.Component:
    """A cron schedule's skipped days: its occurrences on them never fire."""
    return rx.vstack(
        rx.hstack(rx.icon("calendar-x", size=14, color="var(--gray-10)"),
                  rx.text("Days it skips", size="2", weight="medium"), align="center", spacing="2"),
        field("Skip these dates",
              form_input("exclude_dates", "schedule-exclude-dates", auto_complete="off", max_length=4000,
                         placeholder="2026-12-24, 2026-12-31"),
              "schedule-exclude_dates"),
        told(("exclude_dates",), DATES_HINT, "schedule-exclude-dates-error"),
        label("Skip public holidays", "schedule-holidays_country"),
        rx.grid(
            form_input("holidays_country", "schedule-holidays", placeholder="Country code", auto_complete="off",
                       max_length=8, attrs={"list": COUNTRY_LIST_ID, "aria-label": "Holiday country code"}),
            form_input("holidays_subdivision", "schedule-holidays-subdivision", placeholder="Region code",
                       auto_complete="off", max_length=24,
                       attrs={"list": REGION_LIST_ID, "aria-label": "Holiday region code (optional)"}),
            columns="2", spacing="2", width="100%",
        ),
        told(("holidays_country", "holidays_subdivision"), HOLIDAYS_HINT, "schedule-holidays-error"),
        _lists(),
        spacing="2", width="100%", padding_top="4px", border_top="1px solid var(--gray-a4)",
        custom_attrs={"data-testid": "schedule-exclusions"},
    )
