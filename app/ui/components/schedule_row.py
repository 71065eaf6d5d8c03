"""One card of the Schedules drawer: a task's status, next and last run, its §14 notes (a pause's
note and end, the active window, a jitter or catch-up window that is not the default), its
controls (pause, with a note and an end through the pause form; skip next) and its run history."""

from __future__ import annotations

import reflex as rx

from app.ui.components.pause_form import pause_form, pause_options
from app.ui.components.trigger_url import trigger_part
from app.ui.schedule_views import RunRow, TaskRow
from app.ui.state.pause_form import PauseFormState
from app.ui.state.schedule_form import ScheduleFormState
from app.ui.state.schedules import ScheduleState


def _tid(name: str, **extra: object) -> dict:
    return {"data-testid": name, **extra}


def _stat(label: str, *value: rx.Component, testid: str, title: object = "") -> rx.Component:
    return rx.vstack(
        rx.text(label, size="1", color_scheme="gray", weight="medium", text_transform="uppercase",
                letter_spacing="0.04em"),
        rx.hstack(*value, spacing="1", align="center", flex_wrap="wrap",
                  custom_attrs={"data-testid": testid, "title": title}),
        spacing="0", min_width="0",
    )


def _stats(row: TaskRow) -> rx.Component:
    return rx.grid(
        _stat("Next run", rx.text(row.next_rel, size="2", weight="medium", white_space="nowrap"),
              rx.cond(row.next_when != "", rx.text("· ", row.next_when, size="2", color_scheme="gray",
                                                   white_space="nowrap")),
              rx.cond(row.paced, rx.badge(rx.icon("bot", size=11), "paced by the agent", size="1", variant="soft",
                                          color_scheme="violet", white_space="nowrap",
                                          title="The agent moved this fire, within the bounds allowed; the "
                                                "schedule itself is unchanged", custom_attrs=_tid("task-paced"))),
              testid="schedule-next-run", title=row.next_abs),
        _stat("Last run",
              rx.text(row.last_rel, size="2", white_space="nowrap"),
              rx.cond(row.last_status != "",
                      rx.badge(row.last_status, color_scheme=row.last_color, variant="soft", size="1")),
              testid="schedule-last-run", title=row.last_abs),
        _stat("Runs", rx.text(row.runs, size="2"), testid="schedule-run-count"),
        # the next run ("in 59 min · Thu 09:23") gets the widest column, so it keeps to one line at 1280
        grid_template_columns="minmax(0, 1.7fr) minmax(0, 1.2fr) minmax(0, 0.7fr)", spacing="3", width="100%",
    )


def _icon_action(icon: str, label: str, testid: str, on_click: rx.EventSpec, **props: object) -> rx.Component:
    return rx.tooltip(
        rx.icon_button(rx.icon(icon, size=15), variant="ghost", size="2", aria_label=label,
                       on_click=on_click, custom_attrs=_tid(testid), **props),
        content=label,
    )


def _actions(row: TaskRow) -> rx.Component:
    act = ScheduleState.act
    return rx.hstack(
        rx.cond(row.can_arm, rx.button(rx.icon("power", size=14), "Arm", size="1", on_click=act("arm", row.id),
                                       aria_label="Arm this schedule", custom_attrs=_tid("schedule-arm"))),
        rx.cond(row.can_pause, rx.button(rx.icon("pause", size=14), "Pause", size="1", variant="soft",
                                         color_scheme="amber", on_click=act("pause", row.id),
                                         aria_label="Pause this schedule", custom_attrs=_tid("schedule-pause"))),
        rx.cond(row.can_resume, rx.button(rx.icon("play", size=14), "Resume", size="1", variant="soft",
                                          color_scheme="grass", on_click=act("resume", row.id),
                                          aria_label="Resume this schedule", custom_attrs=_tid("schedule-resume"))),
        rx.cond(row.can_pause | (row.status == "paused"), pause_options(row)),
        rx.cond(row.can_skip, rx.button(rx.icon("skip-forward", size=14), "Skip next", size="1", variant="soft",
                                        color_scheme="gray", on_click=act("skip_next", row.id),
                                        aria_label="Skip the next occurrence",
                                        title="The next occurrence is recorded as skipped; the one after fires",
                                        custom_attrs=_tid("schedule-skip-next"))),
        rx.cond(row.status != "completed",  # its goal is reached: nothing to run again
                rx.button(rx.icon("zap", size=14), "Run now", size="1", variant="outline",
                          disabled=~row.can_run_now, on_click=act("run_now", row.id),
                          aria_label="Run this schedule now",
                          title=rx.cond(row.can_run_now, "Fire once now", "A draft must be armed first"),
                          custom_attrs=_tid("schedule-run-now"))),
        rx.hstack(  # the owner and the icon actions wrap together, to the right
            rx.tooltip(rx.hstack(rx.icon("user-round", size=13, color="var(--gray-10)"),
                                 rx.text(row.owner, size="1", color_scheme="gray", max_width="160px",
                                         overflow="hidden", text_overflow="ellipsis", white_space="nowrap",
                                         custom_attrs=_tid("schedule-owner")),
                                 align="center", spacing="1"),
                       content="Owner: the fires run with this user's access"),
            _icon_action("history", "Run history", "schedule-history-toggle",
                         ScheduleState.toggle_history(row.id)),
            _icon_action("pencil", "Edit schedule", "schedule-edit", ScheduleFormState.open_edit(row.id)),
            _icon_action("trash-2", "Delete schedule", "schedule-delete", ScheduleState.ask_delete(row.id, row.name),
                         color_scheme="red"),
            align="center", spacing="2", margin_left="auto", min_width="0",
        ),
        align="center", spacing="2", width="100%", padding_top="4px", flex_wrap="wrap",
    )


def _run(run: RunRow) -> rx.Component:
    return rx.el.button(
        rx.hstack(
            rx.badge(run.label, color_scheme=run.color, variant="soft", size="1", flex_shrink="0"),
            rx.cond(run.told != "", rx.tooltip(rx.icon("bell-off", size=12, color="var(--gray-10)", flex_shrink="0",
                                                       custom_attrs=_tid("schedule-run-quiet")),
                                               content="Told nobody: the schedule's notify rule kept it quiet")),
            rx.text(run.fire, rx.cond(run.fire != "", " · ", ""), run.trigger, size="1", weight="medium"),
            rx.spacer(),
            rx.text(run.duration, size="1", color_scheme="gray", white_space="nowrap"),
            align="center", width="100%",
        ),
        rx.text("planned ", run.nominal, rx.cond(run.jitter != "", " (" + run.jitter + ")", ""),
                rx.cond(run.fired, " · started " + run.actual + " (" + run.late + ")", " · not fired"), size="1",
                color_scheme="gray", text_align="left"),
        rx.cond(run.summary != "", rx.text(run.summary, size="1", text_align="left", overflow_wrap="anywhere",
                                           custom_attrs=_tid("schedule-run-summary"))),
        rx.cond(run.error != "", rx.text(run.error, size="1", color_scheme=run.error_color, text_align="left",
                                         custom_attrs=_tid("schedule-run-error"))),
        rx.cond(run.usage != "", rx.text(run.usage, size="1", color_scheme="gray", text_align="left",
                                         custom_attrs={"data-testid": "run-usage"})),
        on_click=ScheduleState.show_run(run.run_id),
        disabled=run.run_id == "",
        aria_label="Show this fire in the transcript",
        custom_attrs={"data-testid": "schedule-run", "data-run-id": run.run_id, "data-status": run.status},
        class_name="cc-run",
    )


def _history(row: TaskRow) -> rx.Component:
    return rx.vstack(
        rx.cond(row.history.length() > 0, rx.foreach(row.history, _run),
                rx.text("No fires yet.", size="1", color_scheme="gray")),
        spacing="1", width="100%", padding_top="4px", border_top="1px solid var(--gray-a4)",
        custom_attrs=_tid("schedule-history"),
    )


def _notes(row: TaskRow) -> rx.Component:
    """The active window, the timing that is not the default, the days it skips and its fire rules,
    one quiet line each."""
    return rx.fragment(
        rx.cond(row.window != "", rx.hstack(
            rx.icon("calendar-range", size=13, color="var(--gray-10)", flex_shrink="0"),
            rx.text(row.window, size="1", color_scheme="gray", custom_attrs=_tid("schedule-window")),
            spacing="1", align="center")),
        rx.cond(row.timing != "", rx.hstack(
            rx.icon("timer", size=13, color="var(--gray-10)", flex_shrink="0"),
            rx.text(row.timing, size="1", color_scheme="gray", custom_attrs=_tid("schedule-timing")),
            spacing="1", align="center")),
        rx.cond(row.exclusions != "", rx.hstack(
            rx.icon("calendar-x", size=13, color="var(--gray-10)", flex_shrink="0", margin_top="2px"),
            rx.text(row.exclusions, size="1", color_scheme="gray", custom_attrs=_tid("task-exclusions")),
            spacing="1", align="start", custom_attrs={"title": row.excluded_dates})),
        rx.cond(row.rules != "", rx.hstack(
            rx.icon("bell-ring", size=13, color="var(--gray-10)", flex_shrink="0", margin_top="2px"),
            rx.text(row.rules, size="1", color_scheme="gray", custom_attrs=_tid("schedule-rules")),
            spacing="1", align="start")),
    )


def _spend(row: TaskRow) -> rx.Component:
    """What the task's fires spent (today in UTC, in all) and its caps per fire (SPEC §15)."""
    return rx.fragment(
        rx.cond(row.spend_all != "", rx.hstack(
            rx.icon("circle-dollar-sign", size=13, color="var(--gray-10)", flex_shrink="0", margin_top="2px"),
            spend_text(row.spend_today, row.spend_all, "task-spend"),
            spacing="1", align="start",
            custom_attrs={"title": "What this schedule's fires spent; the day is the UTC day"})),
        rx.cond(row.caps != "", rx.hstack(
            rx.icon("gauge", size=13, color="var(--gray-10)", flex_shrink="0", margin_top="2px"),
            rx.text(row.caps, size="1", color_scheme="gray", custom_attrs=_tid("task-caps")),
            spacing="1", align="start", custom_attrs={"title": "A fire that passes a cap is stopped and fails"})),
    )


def spend_text(today: rx.Var, in_all: rx.Var, testid: str) -> rx.Component:
    """``Spent today … · in all …``: each half kept on one line, so a narrow card breaks between them."""
    return rx.text(rx.el.span(today, white_space="nowrap"), " · ", rx.el.span(in_all, white_space="nowrap"),
                   size="1", color_scheme="gray", font_variant_numeric="tabular-nums", custom_attrs=_tid(testid))


def _budget_wait(row: TaskRow) -> rx.Component:
    """A fire that waits for the project's daily budget: until when, and why (the deferred record's reason)."""
    return rx.hstack(
        rx.icon("hourglass", size=14, color="var(--amber-11)", flex_shrink="0", margin_top="2px"),
        rx.vstack(
            rx.text(row.budget_wait, size="2", color_scheme="amber", weight="medium"),
            rx.text(row.last_error, size="1", color="var(--gray-11)", overflow_wrap="anywhere"),
            spacing="0", min_width="0"),
        align="start", spacing="2", width="100%", padding="6px 8px", border_radius="var(--radius-2)",
        background="var(--amber-a2)", border="1px solid var(--amber-a5)", custom_attrs=_tid("task-budget-wait"),
    )


def _paused(row: TaskRow) -> rx.Component:
    """A pause's note (its author's words) and when it resumes by itself."""
    return rx.cond(
        (row.pause_note != "") | (row.resumes != ""),
        rx.hstack(
            rx.icon("pause", size=14, color="var(--amber-11)", flex_shrink="0", margin_top="2px"),
            rx.vstack(
                rx.cond(row.pause_note != "", rx.text(row.pause_note, size="2", overflow_wrap="anywhere",
                                                      custom_attrs=_tid("schedule-pause-note"))),
                rx.cond(row.resumes != "", rx.text(row.resumes, size="1", color_scheme="amber", weight="medium",
                                                   custom_attrs=_tid("schedule-resumes"))),
                spacing="0", min_width="0"),
            align="start", spacing="2", width="100%", padding="6px 8px", border_radius="var(--radius-2)",
            background="var(--amber-a2)", border="1px solid var(--amber-a5)",
        ),
    )


def _last_error(row: TaskRow) -> rx.Component:
    """The last error, in red; a window that ended (a task done, not failed) in neutral words; a
    fire waiting for the project's budget in amber, with until when."""
    return rx.cond(
        row.budget_wait != "", _budget_wait(row),
        rx.cond(row.last_error == "", rx.fragment(), rx.cond(row.error_calm,
                rx.callout("Completed: " + row.last_error, icon="flag", color_scheme="gray", size="1", width="100%",
                           custom_attrs=_tid("schedule-window-ended")),
                rx.callout(row.last_error, icon="circle-alert", color_scheme="red", size="1", width="100%",
                           custom_attrs=_tid("schedule-last-error")))),
    )


def schedule_row(row: TaskRow) -> rx.Component:
    return rx.card(
        rx.vstack(
            rx.hstack(
                rx.box(width="8px", height="8px", border_radius="50%", background=f"var(--{row.accent}-9)",
                       flex_shrink="0"),
                rx.text(row.name, size="3", weight="bold", trim="both", flex="1", min_width="0",
                        overflow_wrap="anywhere", custom_attrs=_tid("schedule-name")),
                rx.cond(row.created_by == "agent",
                        rx.tooltip(rx.badge(rx.icon("bot", size=12), "agent", size="1", variant="outline",
                                            color_scheme="gray"), content="Proposed by the agent")),
                rx.cond(row.pending != "", rx.badge(row.pending, variant="outline", size="1", color_scheme="blue")),
                rx.badge(row.status, color_scheme=row.status_color, variant="soft", radius="full", size="2",
                         custom_attrs=_tid("schedule-status")),
                align="center", width="100%", spacing="2", flex_wrap="wrap",
            ),
            rx.hstack(rx.cond(row.kind == "once",
                              rx.icon("calendar-clock", size=13, color="var(--gray-10)", flex_shrink="0"),
                              rx.icon("repeat", size=13, color="var(--gray-10)", flex_shrink="0")),
                      rx.text(row.description, size="2", color_scheme="gray", custom_attrs=_tid("schedule-when")),
                      spacing="1", align="center"),
            _notes(row),
            _spend(row),
            _stats(row),
            _paused(row),
            _last_error(row),
            _actions(row),
            rx.cond(PauseFormState.task_id == row.id, pause_form(row)),
            rx.cond(row.expanded, _history(row)),
            trigger_part(row),
            spacing="2", width="100%",
        ),
        custom_attrs={"data-testid": "schedule-row", "data-schedule-id": row.id, "data-status": row.status},
        width="100%", size="2",
    )
