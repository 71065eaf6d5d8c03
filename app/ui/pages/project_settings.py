"""A project's settings page (SPEC §18), ``/projects/<pid>/settings``: the Agent, Network and Budget
sections saved together with one `settings-save` (only what changed is sent), then Members and, for
owners, the audit record. A member sees it all read-only. Test id of the page: `project-settings`."""

from __future__ import annotations

import reflex as rx

from app.ui.components.layout import frame, sidebar_toggle
from app.ui.components.settings_agent import agent_section
from app.ui.components.settings_fields import tid
from app.ui.components.settings_members import audit_section, members_section
from app.ui.components.settings_more import budget_section, network_section
from app.ui.state.agent_test import AgentTestState
from app.ui.state.attention import AttentionState
from app.ui.state.members import MembersState
from app.ui.state.nav import NavState
from app.ui.state.project_settings import SettingsState as S
from app.ui.state.session import AuthState

ROUTE = "/projects/[pid]/settings"
MISSING = "This project does not exist or you cannot see it."


def _header() -> rx.Component:
    return rx.box(
        rx.box(
            sidebar_toggle(),
            rx.vstack(
                rx.heading(rx.cond(S.project_name != "", S.project_name, "Project"), size="5", as_="h1",
                           class_name="cc-wrap-text"),
                rx.text("Project settings", size="2", color_scheme="gray"),
                spacing="0", min_width="0",
            ),
            class_name="cc-header-title",
        ),
        rx.cond(S.role != "", rx.badge("You: ", S.role, size="2", variant="soft",
                                       custom_attrs=tid("settings-role", **{"data-role": S.role}))),
        class_name="cc-header",
    )


def _read_only() -> rx.Component:
    return rx.cond(~S.can_edit, rx.callout(
        "You are a member of this project: you see its settings, and its owners change them.",
        icon="lock", color_scheme="gray", width="100%", custom_attrs=tid("settings-readonly"),
    ))


def _save_bar() -> rx.Component:
    """Sticks to the bottom of the screen while the form is in view; owners only."""
    return rx.cond(S.can_edit, rx.box(
        rx.box(
            rx.cond(S.errors.contains(""), rx.text(S.errors[""], color_scheme="red", size="2", role="alert",
                                                   custom_attrs=tid("settings-error"))),
            rx.cond(S.errors.length() > 0,
                    rx.cond(~S.errors.contains(""), rx.text("Nothing was saved: fix the field marked above.",
                                                            color_scheme="red", size="2", role="alert",
                                                            custom_attrs=tid("settings-error")))),
            rx.cond(S.errors.length() == 0,
                    rx.cond(S.notice != "",
                            rx.text(S.notice, size="2", color_scheme="green", custom_attrs=tid("settings-saved")),
                            rx.text("Agent, Network and Budget are saved together; only what you changed is sent.",
                                    size="1", color_scheme="gray"))),
            flex="1 1 14em", min_width="0",
        ),
        rx.button(rx.icon("save", size=16), "Save", type="button", on_click=S.save,
                  custom_attrs=tid("settings-save")),
        class_name="cc-save-bar",
    ))


def _body() -> rx.Component:
    return rx.box(
        _read_only(),
        rx.box(agent_section(), network_section(), budget_section(), _save_bar(), class_name="cc-settings-form"),
        members_section(),
        audit_section(),
        class_name="cc-settings-body",
    )


def project_settings_page() -> rx.Component:
    content = rx.cond(
        S.missing,
        rx.center(rx.text(MISSING, custom_attrs=tid("settings-missing")), padding="3em 1em"),
        rx.cond(S.loaded, _body(), rx.center(rx.spinner(size="3"), padding="3em")),
    )
    return frame(
        rx.box(_header(), content, class_name="cc-settings-page", custom_attrs=tid("project-settings")),
        page_has_toggle=True,
    )


ON_LOAD = [AuthState.require_login, NavState.load_nav, S.load, MembersState.load, AgentTestState.clear,
           AttentionState.start]
