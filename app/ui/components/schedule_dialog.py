"""The new/edit schedule dialog: kind-specific fields, live preview, inline errors."""

from __future__ import annotations

import zoneinfo

import reflex as rx

from app.core.config import load_settings
from app.schedules.model import Overlap
from app.schedules.spec import span
from app.ui.components.calendar_fields import describe, exclusions
from app.ui.components.dialog_fields import field, form_input, invalid, label, told
from app.ui.components.schedule_preview import preview
from app.ui.fire_rules_form import NOTIFY_ON, OVERLAPS, PACE_HELP
from app.ui.schedule_form import UNITS
from app.ui.state.schedule_form import ScheduleFormState as F

ZONE_LIST_ID = "cc-timezones"
BLOCKED_ID = "schedule-form-blocked"
TWO_COLUMNS = {"initial": "1", "sm": "2"}  # one column on a phone


def _zone_options() -> rx.Component:
    """Every IANA zone the server knows, for the searchable timezone input (static: built once)."""
    zones = sorted(z for z in zoneinfo.available_timezones() if "/" in z or z == "UTC")
    return rx.el.datalist(*[rx.el.option(value=zone) for zone in zones], id=ZONE_LIST_ID)


def _timezone() -> rx.Component:
    return field("Time zone", form_input("timezone", "schedule-form-timezone", placeholder="Europe/Paris",
                                         auto_complete="off", attrs={"list": ZONE_LIST_ID}),
                 "schedule-timezone", "Type to search IANA zones")


def _when() -> rx.Component:
    """The kind switch and the fields of that kind."""
    return rx.vstack(
        describe(),
        rx.segmented_control.root(
            rx.segmented_control.item("Once", value="once"),
            rx.segmented_control.item("Cron", value="cron"),
            rx.segmented_control.item("Interval", value="interval"),
            value=F.kind, on_change=lambda value: F.set_field("kind", value), width="100%",
            custom_attrs={"data-testid": "schedule-form-kind", "aria-label": "Kind of schedule"},
        ),
        rx.match(
            F.kind,
            ("cron", rx.vstack(rx.grid(
                field("Cron expression", form_input("cron", "schedule-form-cron", placeholder="0 9 * * 1-5",
                                                    font_family="var(--code-font-family)", auto_complete="off"),
                      "schedule-cron", "minute hour day month weekday"),
                _timezone(), columns=TWO_COLUMNS, spacing="3", width="100%"), exclusions(), spacing="3", width="100%")),
            ("once", rx.grid(
                field("Date and time", form_input("at", "schedule-form-at", type="datetime-local"), "schedule-at",
                      "Wall-clock time in that zone"),
                _timezone(), columns=TWO_COLUMNS, spacing="3", width="100%")),
            field("Every", rx.hstack(
                form_input("every", "schedule-form-every", type="number", min="1", step="1"), _unit(),
                align="center", width="100%"),
                "schedule-every", f"At least {span(max(load_settings().min_interval_seconds, 1))}"),
        ),
        spacing="3", width="100%",
    )


def _unit(field: str = "every_unit", testid: str = "schedule-form-every-unit", label: str = "Unit of the interval",
          disabled: rx.Var | bool = False) -> rx.Component:
    """A span's unit, beside its number (the task stores seconds)."""
    return rx.el.select(
        *[rx.el.option(unit, value=unit) for unit in UNITS],
        value=getattr(F, field), on_change=lambda value: F.set_field(field, value),
        aria_label=label, id=f"schedule-{field.replace('_', '-')}", disabled=disabled,
        custom_attrs={"data-testid": testid},
        style={"height": "var(--space-6)", "padding": "0 var(--space-2)", "border_radius": "var(--radius-2)",
               "border": "1px solid var(--gray-a7)", "background": "var(--color-surface)",
               "color": "var(--gray-12)", "font_size": "var(--font-size-2)"},
    )


def _catchup() -> rx.Component:
    """The catch-up window: a span and its unit, or "fire however late" (no window)."""
    late = F.catchup_mode == "late"
    return field("Catch-up window", rx.vstack(
        rx.hstack(
            form_input("catchup", "schedule-form-catchup", type="number", min="1", step="1", disabled=late),
            _unit("catchup_unit", "schedule-form-catchup-unit", "Unit of the catch-up window", disabled=late),
            align="center", width="100%"),
        rx.el.label(rx.hstack(
            rx.checkbox(checked=late, on_change=F.set_late, custom_attrs={"data-testid": "schedule-form-catchup-late"}),
            rx.text("Fire however late", size="2"), align="center", spacing="2")),
        spacing="2", width="100%"),
        "schedule-catchup", "A fire found later than this is recorded as missed, not run")


def _caps() -> rx.Component:
    """SPEC §15's spending caps per fire: a fire that passes one is stopped and fails. Text inputs
    (not number ones), so a value that is not a number is refused by name instead of read as empty."""
    return rx.vstack(
        rx.hstack(rx.icon("circle-dollar-sign", size=14, color="var(--gray-10)"),
                  rx.text("Spending caps per fire", size="2", weight="medium"), align="center", spacing="2"),
        rx.grid(
            field("Max tokens per fire", form_input("cap_tokens", "schedule-cap-tokens", placeholder="no cap",
                                                    auto_complete="off", attrs={"inputMode": "numeric"}),
                  "schedule-cap_tokens", "Input + output tokens; empty for no cap"),
            field("Max cost per fire (USD)", form_input("cap_cost", "schedule-cap-cost", placeholder="no cap",
                                                        auto_complete="off", attrs={"inputMode": "decimal"}),
                  "schedule-cap_cost", "As the agent reports it; empty for no cap"),
            columns=TWO_COLUMNS, spacing="3", width="100%",
        ),
        rx.cond(invalid("cap_tokens") | invalid("cap_cost"),  # said here too: the callout is far below
                rx.text(F.error, size="1", color_scheme="red", weight="medium",
                        custom_attrs={"data-testid": "schedule-caps-error"}),
                rx.text("A fire that passes a cap is stopped and fails with “budget exceeded”.", size="1",
                        color_scheme="gray")),
        spacing="2", width="100%", padding_top="4px", border_top="1px solid var(--gray-a4)",
        custom_attrs={"data-testid": "schedule-caps"},
    )


def _pacing() -> rx.Component:
    """SPEC §19: the bounds within which the agent may move the task's next fire (both empty: it may not)."""
    return rx.vstack(
        rx.hstack(rx.icon("timer-reset", size=14, color="var(--gray-10)"),
                  rx.text("Let the agent pace this task", size="2", weight="medium"), align="center", spacing="2"),
        rx.grid(
            field("Soonest", form_input("pace_min", "schedule-pace-min", placeholder="e.g. 30m", auto_complete="off"),
                  "schedule-pace_min", "Counted from the fire that moves it"),
            field("Latest", form_input("pace_max", "schedule-pace-max", placeholder="e.g. 4h", auto_complete="off"),
                  "schedule-pace_max", "The schedule itself stays as it is"),
            columns=TWO_COLUMNS, spacing="3", width="100%",
        ),
        told(("pace_min", "pace_max"), PACE_HELP, "schedule-pace-error"),
        spacing="2", width="100%", padding_top="4px", border_top="1px solid var(--gray-a4)",
        custom_attrs={"data-testid": "schedule-pacing"},
    )


def _advanced() -> rx.Component:
    """SPEC §14's timing and §15's caps, behind a disclosure so the simple case stays simple. A once
    task has no active window (it fires at its date); it takes a catch-up window and a small jitter."""
    return rx.vstack(
        rx.el.button(
            rx.cond(F.advanced, rx.icon("chevron-down", size=15), rx.icon("chevron-right", size=15)),
            rx.text("Advanced options", size="2", weight="medium"),
            rx.text("timing, active window, spending caps, pacing", size="1", color_scheme="gray"),
            on_click=F.toggle_advanced, type="button", class_name="cc-disclosure",
            custom_attrs={"data-testid": "schedule-form-advanced", "aria-controls": "schedule-advanced",
                          "aria-expanded": rx.cond(F.advanced, "true", "false")},
        ),
        rx.cond(F.advanced, rx.vstack(rx.grid(
            _catchup(),
            field("Jitter (seconds)", form_input("jitter", "schedule-form-jitter", type="number", min="0", step="1"),
                  "schedule-jitter", F.jitter_hint),
            rx.cond(F.kind != "once", rx.fragment(
                field("Starts at", form_input("starts", "schedule-form-starts", type="datetime-local"),
                      "schedule-starts", "Optional; wall-clock time in " + F.timezone.to(str)),
                field("Ends at", form_input("ends", "schedule-form-ends", type="datetime-local"), "schedule-ends",
                      "Optional; nothing fires from then on"))),
            columns=TWO_COLUMNS, spacing="3", width="100%",
        ), _caps(), rx.cond(F.kind != "once", _pacing()), spacing="4", width="100%", id="schedule-advanced")),
        spacing="3", width="100%",
    )


def _select(field: str, testid: str, options: list[tuple[str, str]]) -> rx.Component:
    return rx.select.root(
        rx.select.trigger(width="100%", id=f"schedule-{field}", custom_attrs={"data-testid": testid}),
        rx.select.content(*[rx.select.item(text, value=value) for value, text in options]),
        value=getattr(F, field), on_change=lambda value: F.set_field(field, value), size="2",
    )


def _options() -> rx.Component:
    return rx.grid(
        field("When busy", _select("overlap", "schedule-form-overlap", list(OVERLAPS)), "schedule-overlap"),
        rx.cond(F.overlap == Overlap.QUEUE_ALL.value, rx.vstack(
            label("Queue up to", "schedule-queue_cap"),
            rx.hstack(form_input("queue_cap", "schedule-queue-cap", type="number", min="1", max="100", step="1"),
                      rx.text("fires", size="2", color_scheme="gray"), align="center", width="100%"),
            told(("queue_cap",), "Beyond it a fire is recorded skipped (queue full)", "schedule-queue-cap-error"),
            spacing="1", width="100%")),
        field("Session", _select("session", "schedule-form-session",
                                 [("resume", "Continue chat"), ("fresh", "Fresh session")]),
              "schedule-session"),
        rx.cond(F.kind != "once",  # a once task fires once: a limit means nothing (the form sends none)
                field("Max runs", form_input("max_runs", "schedule-form-max-runs", type="number", min="1", step="1",
                                             placeholder="no limit"), "schedule-max_runs", "Leave empty for no limit")),
        field("Notify me", _select("notify", "schedule-form-notify",
                                   [("failures", "On failures"), ("always", "Every fire"), ("never", "Never")]),
              "schedule-notify"),
        field("Which fires tell you", _select("notify_on", "schedule-notify-on", list(NOTIFY_ON)),
              "schedule-notify_on", "Quiet fires still show in the chat, folded"),
        columns={"initial": "1", "sm": "2"}, spacing="3", width="100%",
    )


def _error() -> rx.Component:
    return rx.cond(
        F.error != "",
        rx.callout.root(rx.callout.icon(rx.icon("circle-alert", size=16)), rx.callout.text(F.error),
                        color_scheme="red", size="1", width="100%", role="alert",
                        custom_attrs={"data-testid": "schedule-form-error"}),
    )


def _footer() -> rx.Component:
    """Cancel and Save; while Save is disabled the reason stands beside it (and describes it)."""
    return rx.flex(
        rx.cond(~F.valid & (F.blocked != ""),
                rx.text(F.blocked, size="2", color_scheme="gray", id=BLOCKED_ID, margin_right="auto",
                        custom_attrs={"data-testid": BLOCKED_ID})),
        rx.dialog.close(rx.button("Cancel", variant="soft", color_scheme="gray",
                                  custom_attrs={"data-testid": "schedule-form-cancel"})),
        rx.button(rx.cond(F.saving, rx.spinner(size="1"), rx.icon("check", size=15)),
                  rx.cond(F.editing_id != 0, "Save changes", "Create schedule"),
                  on_click=F.save, disabled=~F.valid | F.saving,
                  custom_attrs={"data-testid": "schedule-form-save",
                                "aria-describedby": rx.cond(~F.valid, BLOCKED_ID, "")}),
        justify="end", align="center", spacing="3", width="100%", wrap="wrap",
    )


def _discard_question() -> rx.Component:
    """Asked when a dialog with changes is closed; Escape here means keep editing."""
    return rx.alert_dialog.root(
        rx.alert_dialog.content(
            rx.alert_dialog.title("Discard changes?", size="4"),
            rx.alert_dialog.description("What you typed in this schedule will be lost.", size="2"),
            rx.flex(
                rx.alert_dialog.cancel(rx.button("Keep editing", variant="soft", color_scheme="gray",
                                                 on_click=F.keep_editing,
                                                 custom_attrs={"data-testid": "schedule-discard-keep"})),
                rx.alert_dialog.action(rx.button("Discard", color_scheme="red", on_click=F.discard,
                                                 custom_attrs={"data-testid": "schedule-discard"})),
                justify="end", spacing="3", margin_top="1em",
            ),
            max_width="400px", custom_attrs={"data-testid": "schedule-discard-confirm"},
        ),
        open=F.confirm_discard,
        on_open_change=F.set_confirm_discard_open,
    )


def schedule_dialog() -> rx.Component:
    """Modal: focus stays inside, Escape closes; Save stays disabled while anything is invalid."""
    return rx.dialog.root(
        rx.dialog.content(
            rx.dialog.title(rx.cond(F.editing_id != 0, "Edit schedule", "New schedule"), size="5"),
            rx.dialog.description("A standing prompt the agent receives in this chat on schedule.", size="2",
                                  color_scheme="gray", margin_bottom="1em"),
            rx.vstack(
                field("Name", form_input("name", "schedule-form-name", placeholder="standup", max_length=120),
                      "schedule-name"),
                field("Prompt", rx.text_area(
                    value=F.prompt, on_change=lambda value: F.set_field("prompt", value), id="schedule-prompt",
                    rows="4", width="100%", placeholder="What should the agent do each time?",
                    max_length=load_settings().prompt_max_bytes,
                    color_scheme=rx.cond(invalid("prompt"), "red", "gray"),
                    custom_attrs={"data-testid": "schedule-form-prompt"}), "schedule-prompt"),
                _when(),
                _advanced(),
                rx.cond(F.readback == "", preview()),  # after a phrase, the read-back up top is the preview
                _options(),
                _error(),
                _footer(),
                _zone_options(),
                _discard_question(),
                spacing="4", width="100%",
            ),
            max_width="600px",
            custom_attrs={"data-testid": "schedule-form"},
        ),
        open=F.form_open,
        on_open_change=F.set_form_open,
    )
