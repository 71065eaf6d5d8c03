"""All schedules (SPEC §13): every task the user can see, across projects and chats, with status
and project filters and bulk pause / resume.

One row per task: a grid row at desktop widths, stacked below 768 px (assets/chatcron.css,
``.cc-all-*``). The list refreshes every few seconds (``AllSchedulesState.watch``) and on
``all-schedules-refresh``."""

from __future__ import annotations

import reflex as rx

from app.ui.all_tasks import STATUSES, AllRow, ProjectOption
from app.ui.components.layout import frame, sidebar_toggle
from app.ui.components.schedule_row import spend_text
from app.ui.components.schedules import empty_schedules
from app.ui.state.all_schedules import AllSchedulesState
from app.ui.state.attention import AttentionState
from app.ui.state.nav import NavState
from app.ui.state.session import AuthState

S = AllSchedulesState


def _tid(name: str, **extra: object) -> dict:
    return {"data-testid": name, **extra}


def _header() -> rx.Component:
    return rx.box(
        rx.box(
            sidebar_toggle(),
            rx.vstack(rx.heading("All schedules", size="5", as_="h1"),
                      rx.text("Every scheduled task in the projects you can see.", size="2", color_scheme="gray"),
                      spacing="0", min_width="0"),
            class_name="cc-header-title",
        ),
        rx.tooltip(rx.icon_button(rx.icon("refresh-cw", size=15), variant="soft", size="2", color_scheme="gray",
                                  on_click=S.refresh, aria_label="Refresh the list",
                                  custom_attrs=_tid("all-schedules-refresh")), content="Refresh"),
        class_name="cc-header",
    )


def _select(label: str, testid: str, value: rx.Var, on_change, *options: rx.Component) -> rx.Component:
    return rx.el.label(
        rx.text(label, size="1", weight="medium", color_scheme="gray"),
        rx.el.select(*options, value=value, on_change=on_change, class_name="cc-all-select",
                     custom_attrs=_tid(testid)),
        class_name="cc-all-filter",
    )


def _project_option(option: ProjectOption) -> rx.Component:
    return rx.el.option(option.name, value=option.value)


def _toolbar() -> rx.Component:
    count = S.selected.length()
    none = count == 0
    return rx.box(
        _select("Status", "all-schedules-filter-status", S.status_filter, S.set_status_filter,
                *[rx.el.option("every status" if s == "all" else s, value=s) for s in STATUSES]),
        _select("Project", "all-schedules-filter-project", S.project_filter, S.set_project_filter,
                rx.el.option("every project", value="all"), rx.foreach(S.projects, _project_option)),
        rx.box(
            rx.checkbox("All", checked=(count > 0) & (count == S.rows.length()), on_change=S.select_all,
                        aria_label="Select every schedule shown", custom_attrs=_tid("all-schedules-select-all")),
            rx.text(count.to_string() + " selected", size="1", color_scheme="gray",
                    custom_attrs=_tid("all-schedules-selected")),
            rx.button(rx.icon("pause", size=14), "Pause", size="2", variant="soft", color_scheme="amber",
                      disabled=none, on_click=S.bulk("pause"), aria_label="Pause the selected schedules",
                      custom_attrs=_tid("all-schedules-pause")),
            rx.button(rx.icon("play", size=14), "Resume", size="2", variant="soft", color_scheme="grass",
                      disabled=none, on_click=S.bulk("resume"), aria_label="Resume the selected schedules",
                      custom_attrs=_tid("all-schedules-resume")),
            class_name="cc-all-bulk",
        ),
        class_name="cc-all-toolbar",
    )


def _notice() -> rx.Component:
    return rx.cond(
        S.notice != "",
        rx.callout.root(
            rx.callout.icon(rx.icon(rx.cond(S.notice_error, "ban", "check"), size=16)),
            rx.callout.text(S.notice),
            color_scheme=rx.cond(S.notice_error, "red", "grass"), size="1", role="status",
            custom_attrs=_tid("all-schedules-notice"), margin_x="16px",
        ),
    )


def _cell(label: str, *children: rx.Component, testid: str, kind: str, title: object = "") -> rx.Component:
    """A column of a row; its label shows only when the row is stacked (phones)."""
    return rx.box(rx.text(label, class_name="cc-all-label", size="1", color_scheme="gray", weight="medium"),
                  *children, class_name=f"cc-all-cell cc-all-{kind}", custom_attrs=_tid(testid, title=title))


def _row(row: AllRow) -> rx.Component:
    return rx.box(
        rx.checkbox(checked=S.selected.contains(row.id), on_change=lambda checked: S.toggle_select(row.id, checked),
                    aria_label="Select " + row.name, custom_attrs=_tid("all-schedules-select")),
        rx.box(
            rx.hstack(
                rx.text(row.name, weight="bold", size="2", overflow_wrap="anywhere",
                        custom_attrs=_tid("all-schedules-name")),
                rx.badge(row.status, color_scheme=row.status_color, variant="soft", radius="full",
                         custom_attrs=_tid("all-schedules-status")),
                rx.cond(row.pending != "", rx.badge(row.pending, variant="outline", size="1", color_scheme="blue")),
                align="center", spacing="2", flex_wrap="wrap",
            ),
            rx.text(row.description, size="1", color_scheme="gray", custom_attrs=_tid("all-schedules-when")),
            rx.cond(row.spend_all != "", rx.hstack(
                rx.icon("circle-dollar-sign", size=12, color="var(--gray-10)", flex_shrink="0", margin_top="3px"),
                spend_text(row.spend_today, row.spend_all, "all-schedules-spend"),
                spacing="1", align="start")),
            rx.cond(row.budget_wait != "",  # a wait, not a failure: amber, with why and until when
                    rx.text(row.budget_wait, " · ", row.last_error, size="1", color_scheme="amber",
                            custom_attrs=_tid("all-schedules-budget-wait")),
                    rx.cond(row.last_error != "", rx.text(row.last_error, size="1", color_scheme="red"))),
            class_name="cc-all-cell cc-all-main",
        ),
        _cell("Next run", rx.text(row.next_rel, size="2"),
              rx.cond(row.next_when != "", rx.text(row.next_when, size="1", color_scheme="gray")),
              rx.cond(row.coming != "", rx.text(row.coming, size="1", color_scheme="gray",
                                                custom_attrs=_tid("all-schedules-coming"))),
              testid="all-schedules-next-run", kind="next", title=row.next_abs),
        _cell("Last run", rx.text(row.last_rel, size="2"),
              rx.cond(row.last_status != "", rx.badge(row.last_status, color_scheme=row.last_color, variant="soft",
                                                      size="1")),
              testid="all-schedules-last-run", kind="last", title=row.last_abs),
        _cell("Where", rx.text(row.project_name, size="1", color_scheme="gray",
                               custom_attrs=_tid("all-schedules-project")),
              rx.link(rx.icon("message-square", size=13), row.chat_title, href="/chat/" + row.chat_id.to_string(),
                      size="2", class_name="cc-all-chat", custom_attrs=_tid("all-schedules-chat-link")),
              testid="all-schedules-where", kind="where"),
        class_name="cc-all-row",
        custom_attrs=_tid("all-schedules-row", **{"data-schedule-id": row.id, "data-status": row.status,
                                                  "data-chat-id": row.chat_id}),
    )


def _head() -> rx.Component:
    return rx.box(rx.box(), *[rx.text(label, size="1", weight="medium", color_scheme="gray")
                              for label in ("Schedule", "Next run", "Last run", "Project · chat")],
                  class_name="cc-all-row cc-all-head", custom_attrs={"aria-hidden": "true"})


def _empty() -> rx.Component:
    return empty_schedules("No schedules here", "Nothing matches these filters. Schedules are made in a chat's "
                           "Schedules drawer, or proposed by its agent.", "all-schedules-empty", max_width="360px")


def _list() -> rx.Component:
    return rx.box(
        rx.cond(
            S.loaded,
            rx.cond(S.rows.length() > 0,
                    rx.box(_head(), rx.foreach(S.rows, _row),
                           rx.cond(S.more, rx.text("Only the first 500 are shown: narrow the filters to see the "
                                                   "rest.", size="1", color_scheme="gray", padding="12px")),
                           custom_attrs=_tid("all-schedules-list", role="list")),
                    _empty()),
            rx.center(rx.spinner(size="3"), padding_y="3em"),
        ),
        class_name="cc-all-scroll",
    )


def schedules_page() -> rx.Component:
    return frame(
        rx.box(_header(), _toolbar(), _notice(), _list(), class_name="cc-all-page",
               custom_attrs=_tid("all-schedules")),
        page_has_toggle=True,
    )


ON_LOAD = [AuthState.require_login, NavState.load_nav, AllSchedulesState.enter, AttentionState.start]
