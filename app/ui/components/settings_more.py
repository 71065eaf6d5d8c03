"""The Network (`settings-network`) and Budget (`settings-budget`) sections of the project settings
page: the egress mode, the allowed hosts and the refusals of the last 7 days; the daily budget and
what was spent, per task."""

from __future__ import annotations

import reflex as rx

from app.ui.components.settings_fields import error_of, field, owner_button, section, text_input, tid
from app.ui.components.transcript import moment
from app.ui.settings_rows import RefusalRow, SpendRow
from app.ui.state.project_settings import SettingsState as S

MODES = {"proxy": "Through the egress proxy: the agent reaches its model's API and the hosts allowed below, "
                  "nothing else.",
         "host": "The host's own network: the agent reaches everything the server does (set by the server's "
                 "admin with CHATCRON_AGENT_NETWORK)."}


def _host(host: rx.Var) -> rx.Component:
    return rx.box(
        rx.code(host, class_name="cc-kv-name"),
        owner_button(rx.icon("x", size=14), "Remove", color_scheme="gray", on_click=S.remove_host(host),
                     custom_attrs=tid("settings-allow-remove")),
        class_name="cc-kv-row cc-host", custom_attrs=tid("settings-allow-host", **{"data-host": host}),
    )


def _refusal(row: RefusalRow) -> rx.Component:
    allowed = S.allow_hosts.contains(row.entry) | S.allow_hosts.contains(row.host)
    return rx.box(
        rx.box(
            rx.code(row.entry, class_name="cc-kv-name"),
            rx.text(rx.cond(row.count == 1, "refused once", "refused " + row.count.to_string() + " times"),
                    " · last ", moment(row.last_seen, "settings-refusal-time"), size="1", color_scheme="gray"),
            class_name="cc-kv-row", flex="1 1 14em",
        ),
        rx.cond(allowed, rx.badge("allowed", color_scheme="green", variant="soft"),
                owner_button(rx.icon("check", size=14), "Allow", on_click=S.allow_refused(row.entry),
                             custom_attrs=tid("settings-refusal-allow"))),
        class_name="cc-member-row", custom_attrs=tid("settings-refusal-row", **{"data-host": row.entry}),
    )


def network_section() -> rx.Component:
    add = rx.cond(S.can_edit, rx.box(
        rx.input(value=S.new_host, on_change=lambda v: S.set_field("new_host", v), placeholder="api.example.com:443",
                 aria_label="Host to allow", flex="1 1 12em", min_width="0",
                 custom_attrs={**tid("settings-allow-new"), "aria-describedby": "settings-error-allow_hosts"}),
        rx.button(rx.icon("plus", size=14), "Allow", type="button", size="2", variant="soft", on_click=S.add_host,
                  custom_attrs=tid("settings-allow-add")),
        class_name="cc-kv-row",
    ))
    return section(
        "settings-network", "globe", "Network", "Where the project's agents may connect.",
        rx.hstack(rx.text("Egress", size="2", weight="medium"),
                  rx.badge(S.network_mode, variant="soft", custom_attrs=tid("settings-network-mode")),
                  rx.text("(the server's, not a project's to change)", size="1", color_scheme="gray"),
                  align="center", wrap="wrap", spacing="2"),
        rx.text(rx.match(S.network_mode, *MODES.items(), ""), size="1", color_scheme="gray"),
        rx.text("Allowed hosts", size="2", weight="medium"),
        rx.cond(S.allow_hosts.length() > 0, rx.vstack(rx.foreach(S.allow_hosts, _host), spacing="2", width="100%"),
                rx.text("None besides the model's API.", size="1", color_scheme="gray")),
        add, error_of("allow_hosts"),
        rx.text("Refused in the last 7 days", size="2", weight="medium"),
        rx.cond(S.refused.length() > 0, rx.vstack(rx.foreach(S.refused, _refusal), spacing="0", width="100%"),
                rx.text("Nothing was refused.", size="1", color_scheme="gray",
                        custom_attrs=tid("settings-refusals-none"))),
    )


def _spend_row(row: SpendRow) -> rx.Component:
    return rx.el.tr(rx.el.td(row.name), rx.el.td(row.today), rx.el.td(row.month),
                    custom_attrs=tid("settings-task-spend"))


def _spend_table() -> rx.Component:
    head = rx.el.thead(rx.el.tr(rx.el.th("Task"), rx.el.th("Today (UTC)"), rx.el.th("This month")))
    return rx.cond(S.task_spend.length() > 0,
                   rx.el.table(head, rx.el.tbody(rx.foreach(S.task_spend, _spend_row)), class_name="cc-table"),
                   rx.text("Nothing spent this month.", size="1", color_scheme="gray"))


def budget_section() -> rx.Component:
    return section(
        "settings-budget", "wallet", "Budget",
        "A daily budget (UTC day): once spent, the project's scheduled fires wait until the next day; people's "
        "messages still run. Leave a field empty for no limit.",
        rx.box(
            field("Daily tokens", text_input("daily_tokens", "settings-daily-tokens", "no limit", input_mode="numeric"),
                  "daily_tokens"),
            field("Daily cost (US dollars)",
                  text_input("daily_cost_usd", "settings-daily-cost", "no limit", input_mode="decimal"),
                  "daily_cost_usd"),
            class_name="cc-settings-grid",
        ),
        rx.box(
            rx.text("Spent today: ", rx.el.strong(S.spent_today), size="2", custom_attrs=tid("settings-spent-today")),
            rx.text("This month: ", rx.el.strong(S.spent_month), size="2", custom_attrs=tid("settings-spent-month")),
            class_name="cc-kv-row",
        ),
        rx.cond(S.budget_note != "", rx.callout(S.budget_note, icon="circle-pause", color_scheme="amber", size="1")),
        _spend_table(),
    )
