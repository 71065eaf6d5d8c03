"""The Members section of the project settings page (`settings-members`): who is in the project and
as what, inviting an existing user (`member-invite`), making an owner or a member, removing one (with a
confirm; a member may leave), and the owners' audit record (`settings-audit`)."""

from __future__ import annotations

import reflex as rx

from app.core.models import Role
from app.ui.components.settings_fields import section, tid
from app.ui.components.transcript import moment
from app.ui.settings_rows import AuditRow, MemberRow
from app.ui.state.members import MembersState as M

OWNER, MEMBER = Role.OWNER.value, Role.MEMBER.value


def _role_button(row: MemberRow) -> rx.Component:
    owner = row.role == OWNER
    return rx.cond(
        owner,
        rx.button("Make member", type="button", size="1", variant="soft", on_click=M.set_role(row.user_id, MEMBER),
                  custom_attrs=tid("member-make-member")),
        rx.button("Make owner", type="button", size="1", variant="soft", on_click=M.set_role(row.user_id, OWNER),
                  custom_attrs=tid("member-make-owner")),
    )


def _member(row: MemberRow) -> rx.Component:
    remove = rx.button(rx.cond(row.you, "Leave", "Remove"), type="button", size="1", variant="soft",
                       color_scheme="red", on_click=M.ask_remove(row.user_id), custom_attrs=tid("member-remove"))
    return rx.box(
        rx.box(
            rx.text(row.email, size="2", weight="medium", class_name="cc-wrap-text"),
            rx.badge(row.role, color_scheme=rx.cond(row.role == OWNER, "indigo", "gray"), variant="soft",
                     custom_attrs=tid("member-role")),
            rx.cond(row.you, rx.badge("you", variant="outline", color_scheme="gray")),
            class_name="cc-kv-row", flex="1 1 16em", min_width="0",
        ),
        rx.cond(row.only_owner,
                rx.text("the only owner", size="1", color_scheme="gray", custom_attrs=tid("member-only-owner")),
                rx.box(rx.cond(M.can_manage, _role_button(row)), rx.cond(M.can_manage | row.you, remove),
                       class_name="cc-kv-row")),
        class_name="cc-member-row",
        custom_attrs=tid("member-row", **{"data-email": row.email, "data-role": row.role}),
    )


def _invite() -> rx.Component:
    return rx.cond(M.can_manage, rx.form(
        rx.box(
            rx.input(name="email", type="email", placeholder="someone@example.com",
                     aria_label="Email of the user to add", id="member-invite-email", flex="2 1 14em", min_width="0",
                     custom_attrs=tid("member-invite-email")),
            rx.el.select(rx.el.option("as member", value=MEMBER), rx.el.option("as owner", value=OWNER),
                         name="role", default_value=MEMBER, aria_label="Role", class_name="cc-native-select",
                         custom_attrs=tid("member-invite-role")),
            rx.button(rx.icon("user-plus", size=14), "Invite", type="submit", size="2",
                      custom_attrs=tid("member-invite")),
            class_name="cc-kv-row",
        ),
        on_submit=M.invite, width="100%", custom_attrs=tid("member-invite-form"),
    ))


def _confirm() -> rx.Component:
    return rx.alert_dialog.root(
        rx.alert_dialog.content(
            rx.alert_dialog.title("Remove from the project?"),
            rx.alert_dialog.description(
                M.confirm_email, " will no longer see this project, its chats or its schedules; their open tabs "
                "lose it at once, and their schedule grants here end.", size="2"),
            rx.hstack(
                rx.alert_dialog.cancel(rx.button("Cancel", variant="soft", color_scheme="gray")),
                rx.alert_dialog.action(rx.button("Remove", color_scheme="red", on_click=M.remove,
                                                 custom_attrs=tid("member-remove-confirm"))),
                justify="end", spacing="3", margin_top="1em",
            ),
            max_width="440px",
        ),
        open=M.confirm_id != 0,
        on_open_change=M.set_confirm_open,
    )


def members_section() -> rx.Component:
    return section(
        "settings-members", "users", "Members",
        "Members chat and schedule in the project; owners also change its settings and its members.",
        rx.cond(M.error != "", rx.callout(M.error, icon="triangle-alert", color_scheme="red", size="1", width="100%",
                                          role="alert", custom_attrs=tid("members-error"))),
        rx.cond(M.notice != "", rx.callout(M.notice, icon="check", color_scheme="green", size="1", width="100%",
                                           custom_attrs=tid("members-notice"))),
        rx.vstack(rx.foreach(M.rows, _member), spacing="0", width="100%"),
        _invite(),
        _confirm(),
    )


def _record(row: AuditRow) -> rx.Component:
    return rx.box(
        moment(row.at, "audit-time"),
        rx.text(rx.el.strong(row.actor), " ", row.action, size="2", class_name="cc-wrap-text"),
        rx.cond(row.what != "", rx.code(row.what, size="1", class_name="cc-wrap-code")),
        class_name="cc-audit-row", custom_attrs=tid("audit-row"),
    )


def audit_section() -> rx.Component:
    """Owners (and admins) only: every change of the settings and the members, newest first."""
    return rx.cond(M.can_manage, section(
        "settings-audit", "history", "Audit record",
        "Who changed what, and when (never a secret's value).",
        rx.cond(M.audit.length() > 0, rx.vstack(rx.foreach(M.audit, _record), spacing="0", width="100%"),
                rx.text("No change yet.", size="1", color_scheme="gray")),
    ))
