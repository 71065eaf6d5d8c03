"""The server admin's page (SPEC §18), ``/admin``: people (`admin-users`), the installed agent presets
(`admin-agents`) and the instance's health (`admin-health`). Anyone else sees the page of an unknown
address (`not-found`)."""

from __future__ import annotations

import reflex as rx

from app.core.auth import MIN_PASSWORD
from app.ui.admin_views import HealthRow, PersonRow
from app.ui.components.layout import frame, sidebar_toggle
from app.ui.components.settings_fields import tid
from app.ui.components.transcript import moment
from app.ui.pages.not_found import not_found_card
from app.ui.settings_rows import PresetRow
from app.ui.state.admin import AdminState as A
from app.ui.state.attention import AttentionState
from app.ui.state.nav import NavState
from app.ui.state.session import AuthState

ROUTE = "/admin"


def _card(testid: str, icon: str, title: str, *children: rx.Component) -> rx.Component:
    return rx.card(rx.vstack(rx.hstack(rx.icon(icon, size=18), rx.heading(title, size="4", as_="h2"),
                                       align="center", spacing="2"),
                             *children, spacing="3", width="100%"),
                   width="100%", custom_attrs=tid(testid))


def _create() -> rx.Component:
    return rx.form(
        rx.box(
            rx.input(name="email", type="email", placeholder="new.user@example.com", aria_label="Email",
                     flex="2 1 14em", min_width="0", custom_attrs={**tid("admin-new-email"), "data-admin-new": "true"}),
            rx.input(name="password", type="password", placeholder=f"password ({MIN_PASSWORD}+ characters)",
                     aria_label="Password", auto_complete="new-password", flex="1 1 12em", min_width="0",
                     custom_attrs={**tid("admin-new-password"), "data-admin-new": "true"}),
            rx.el.label(rx.el.input(type="checkbox", name="admin", custom_attrs={"data-admin-new": "true"}),
                        rx.text("server admin", size="2"), class_name="cc-check-label"),
            rx.button(rx.icon("user-plus", size=14), "Create", type="submit", custom_attrs=tid("admin-create")),
            class_name="cc-kv-row",
        ),
        on_submit=A.create, width="100%",
    )


def _action(label: str, action: str, row: PersonRow, color: str = "gray") -> rx.Component:
    return rx.button(label, type="button", size="1", variant="soft", color_scheme=color,
                     on_click=A.ask(action, row.id), custom_attrs=tid(f"admin-{action.replace('_', '-')}"))


def _person(row: PersonRow) -> rx.Component:
    return rx.box(
        rx.box(
            rx.box(rx.text(row.email, size="2", weight="medium", class_name="cc-wrap-text"),
                   rx.cond(row.is_admin, rx.badge("admin", variant="soft")),
                   rx.cond(row.you, rx.badge("you", variant="outline", color_scheme="gray")), class_name="cc-kv-row"),
            rx.text(row.counts, " · since ", moment(row.created_at, "admin-user-since"), size="1", color_scheme="gray"),
            flex="1 1 18em", min_width="0",
        ),
        rx.box(
            rx.button("Reset password", type="button", size="1", variant="soft", on_click=A.ask_password(row.id),
                      custom_attrs=tid("admin-reset-password")),
            _action("Revoke tokens", "revoke_tokens", row), _action("End sessions", "end_sessions", row),
            rx.cond(~row.you, _action("Delete", "delete", row, "red")),
            class_name="cc-kv-row",
        ),
        class_name="cc-member-row", custom_attrs=tid("admin-user-row", **{"data-email": row.email}),
    )


def _confirm() -> rx.Component:
    return rx.alert_dialog.root(
        rx.alert_dialog.content(
            rx.alert_dialog.title(A.confirm_label, "?"),
            rx.alert_dialog.description(A.confirm_text, size="2"),
            rx.hstack(
                rx.alert_dialog.cancel(rx.button("Cancel", variant="soft", color_scheme="gray")),
                rx.alert_dialog.action(rx.button(A.confirm_label, color_scheme=rx.cond(
                    A.confirm_action == "delete", "red", "indigo"), on_click=A.confirm,
                    custom_attrs=tid("admin-confirm"))),
                justify="end", spacing="3", margin_top="1em",
            ),
            max_width="440px",
        ),
        open=A.confirm_action != "",
        on_open_change=A.set_confirm_open,
    )


def _password() -> rx.Component:
    return rx.dialog.root(
        rx.dialog.content(
            rx.dialog.title("New password"),
            rx.dialog.description("For ", A.password_email, ". Their browser sessions end; they log in with it.",
                                  size="2", margin_bottom="0.75em"),
            rx.form(rx.vstack(
                rx.input(name="password", type="password", auto_complete="new-password", auto_focus=True,
                         aria_label="New password", width="100%", custom_attrs=tid("admin-password-input")),
                rx.cond(A.password_error != "", rx.text(A.password_error, color_scheme="red", size="2", role="alert",
                                                        custom_attrs=tid("admin-password-error"))),
                rx.hstack(rx.dialog.close(rx.button("Cancel", type="button", variant="soft", color_scheme="gray")),
                          rx.button("Set password", type="submit", custom_attrs=tid("admin-password-save")),
                          justify="end", width="100%"),
                spacing="3"), on_submit=A.reset_password),
            max_width="420px",
        ),
        open=A.password_email != "",
        on_open_change=A.set_password_open,
    )


def _preset(row: PresetRow) -> rx.Component:
    return rx.box(
        rx.text(row.label, size="2", weight="medium", min_width="8em"),
        rx.cond(row.installed, rx.badge("installed " + row.version, color_scheme="green", variant="soft"),
                rx.badge("not installed", color_scheme="gray", variant="soft")),
        rx.text(row.packages, size="1", color_scheme="gray", class_name="cc-wrap-text", flex="1 1 14em"),
        rx.cond(~row.installed, rx.code(row.install, size="1", class_name="cc-wrap-code")),
        class_name="cc-member-row cc-row-start", custom_attrs=tid("admin-preset", **{"data-name": row.name}),
    )


def _health(row: HealthRow) -> rx.Component:
    return rx.box(
        rx.icon(rx.cond(row.ok, "circle-check", "circle-alert"), size=16,
                color=rx.cond(row.ok, "var(--green-10)", "var(--amber-10)")),
        rx.text(row.name, size="2", weight="medium", min_width="9em"),
        rx.text(row.value, rx.cond(row.at != "", rx.fragment(" ", moment(row.at, "admin-health-time"))), size="2",
                class_name="cc-wrap-text", flex="1 1 12em"),
        class_name="cc-member-row cc-row-start",
        custom_attrs=tid("admin-health-row", **{"data-key": row.key, "data-ok": rx.cond(row.ok, "true", "false")}),
    )


def _body() -> rx.Component:
    return rx.box(
        rx.cond(A.error != "", rx.callout(A.error, icon="triangle-alert", color_scheme="red", role="alert",
                                          width="100%", custom_attrs=tid("admin-error"))),
        rx.cond(A.notice != "", rx.callout(A.notice, icon="check", color_scheme="green", width="100%",
                                           custom_attrs=tid("admin-notice"))),
        _card("admin-users", "users", "Users", _create(), rx.vstack(rx.foreach(A.people, _person), spacing="0",
                                                                     width="100%")),
        _card("admin-agents", "bot", "Agent presets",
              rx.text("What projects may choose as their agent. An admin installs a preset on the server with "
                      "the command shown.", size="2", color_scheme="gray"),
              rx.vstack(rx.foreach(A.presets, _preset), spacing="0", width="100%")),
        _card("admin-health", "activity", "Health", rx.vstack(rx.foreach(A.health, _health), spacing="0",
                                                              width="100%")),
        _confirm(), _password(),
        class_name="cc-settings-body",
    )


def _header() -> rx.Component:
    return rx.box(
        rx.box(sidebar_toggle(), rx.heading("Admin", size="5", as_="h1"), class_name="cc-header-title"),
        rx.button(rx.icon("refresh-cw", size=14), "Refresh", size="1", variant="ghost", on_click=A.refresh,
                  custom_attrs=tid("admin-refresh")),
        class_name="cc-header",
    )


def admin_page() -> rx.Component:
    return rx.cond(
        A.loaded & ~A.allowed,
        not_found_card(),
        frame(rx.box(_header(), rx.cond(A.loaded, _body(), rx.center(rx.spinner(size="3"), padding="3em")),
                     class_name="cc-settings-page"), page_has_toggle=True),
    )


ON_LOAD = [AuthState.require_login, NavState.load_nav, A.load, AttentionState.start]
