"""Notification settings (SPEC §13): webhooks and email addresses, a test button and the delivery
log of each. Test ids: `channel-row` (with `data-channel-id`, `data-kind`), `channel-send-test`,
`channel-delete`, `delivery-row` (with `data-state`), `webhook-url`, `webhook-add`, `email-address`,
`email-add`, `channel-secret`, `channels-error`."""

from __future__ import annotations

import reflex as rx

from app.ui.components.layout import frame, sidebar_toggle
from app.ui.components.transcript import moment
from app.ui.state.attention import AttentionState
from app.ui.state.nav import NavState
from app.ui.state.notifications import PRESET_LABELS, ChannelRow, DeliveryRow, NotificationsState
from app.ui.state.session import AuthState

_STATE_COLORS = {"delivered": "green", "failed": "red", "pending": "amber"}


def _events_select() -> rx.Component:
    return rx.el.select(*[rx.el.option(label, value=key) for key, label in PRESET_LABELS.items()],
                        name="events", default_value="all", aria_label="Which events",
                        class_name="cc-native-select")


def _add_form(title: str, field: str, kind: str, placeholder: str, label: str, button: str, testid: str,
              on_submit: rx.EventHandler) -> rx.Component:
    """One channel's form: its address, which events, and its add button (``{testid}-add``)."""
    return rx.form(
        rx.vstack(
            rx.text(title, weight="bold", size="2"),
            rx.input(name=field, placeholder=placeholder, type=kind, width="100%", aria_label=label,
                     custom_attrs={"data-testid": f"{testid}-{field}"}),
            rx.hstack(_events_select(), rx.button(button, type="submit", custom_attrs={"data-testid": f"{testid}-add"}),
                      wrap="wrap", spacing="2"),
            spacing="2", width="100%",
        ),
        on_submit=on_submit, reset_on_submit=True, width="100%",
    )


def _add_forms() -> rx.Component:
    webhook = _add_form("Webhook", "url", "url", "https://example.com/hooks/chatcron", "Webhook URL", "Add webhook",
                        "webhook", NotificationsState.add_webhook)
    email = rx.cond(
        NotificationsState.email_enabled,
        _add_form("Email", "address", "email", "you@example.com", "Email address", "Add email", "email",
                  NotificationsState.add_email),
        rx.text("Email is not set up on this server: ask its administrator.", size="2", color_scheme="gray",
                custom_attrs={"data-testid": "email-unavailable"}),
    )
    return rx.flex(rx.card(webhook, flex="1", min_width="260px"), rx.card(email, flex="1", min_width="260px"),
                   gap="0.75em", wrap="wrap", width="100%")


def _secret() -> rx.Component:
    return rx.cond(
        NotificationsState.new_secret != "",
        rx.callout.root(
            rx.callout.icon(rx.icon("key-round")),
            rx.vstack(
                rx.text("Signing secret for ", rx.code(NotificationsState.new_secret_url),
                        " — copy it now: it is shown only this once.", size="2"),
                rx.code(NotificationsState.new_secret, custom_attrs={"data-testid": "channel-secret"},
                        style={"word_break": "break-all"}),
                rx.text("Each POST carries X-Chatcron-Signature: sha256=<HMAC-SHA256 of the body with this secret>, "
                        "and Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature) keyed "
                        "with this secret's bytes: verify with standardwebhooks' Webhook(secret.encode()), or "
                        "Webhook(\"whsec_\" + base64(secret)) in other languages.",
                        size="1", color_scheme="gray"),
                rx.hstack(
                    rx.button(rx.icon("copy", size=14), "Copy", size="1", variant="soft",
                              on_click=rx.set_clipboard(NotificationsState.new_secret)),
                    rx.button("Done", size="1", variant="ghost", on_click=NotificationsState.hide_secret),
                ),
                spacing="2", width="100%",
            ),
            color_scheme="amber", width="100%",
        ),
    )


def _delivery(d: DeliveryRow) -> rx.Component:
    return rx.hstack(
        rx.badge(d.state, color_scheme=rx.match(d.state, *_STATE_COLORS.items(), "gray"), size="1"),
        rx.text(d.kind, size="1", weight="medium"),
        moment(d.created_at, "delivery-time"),  # in the viewer's zone (assets/event_time.js)
        rx.text(rx.cond(d.attempts == 1, "1 attempt", d.attempts.to_string() + " attempts"), size="1"),
        rx.cond(d.status != "", rx.text("status ", d.status, size="1")),
        rx.cond(d.error != "", rx.text(d.error, size="1", color_scheme="red", trim="both")),
        wrap="wrap", spacing="2", align="center", width="100%",
        custom_attrs={"data-testid": "delivery-row", "data-state": d.state, "data-delivery-id": d.id},
    )


def _channel(row: ChannelRow) -> rx.Component:
    return rx.card(
        rx.vstack(
            rx.flex(
                rx.hstack(rx.badge(row.kind, size="2"),
                          rx.text(row.target, size="2", weight="medium", style={"word_break": "break-all"}),
                          align="center", spacing="2", flex="1 1 260px", min_width="0"),
                rx.hstack(
                    rx.button(rx.icon("send", size=14), "Send test", size="1", variant="soft",
                              on_click=NotificationsState.send_test(row.id),
                              custom_attrs={"data-testid": "channel-send-test"}),
                    rx.button(rx.icon("trash-2", size=14), "Delete", size="1", variant="soft", color_scheme="red",
                              on_click=NotificationsState.delete_channel(row.id),
                              custom_attrs={"data-testid": "channel-delete"}),
                    spacing="2",
                ),
                gap="0.5em", align="center", wrap="wrap", width="100%",
            ),
            rx.text("Events: ", row.events, size="1", color_scheme="gray"),
            rx.cond(row.deliveries.length() > 0,
                    rx.vstack(rx.foreach(row.deliveries, _delivery), spacing="1", width="100%"),
                    rx.text("No deliveries yet.", size="1", color_scheme="gray")),
            spacing="2", width="100%",
        ),
        width="100%",
        custom_attrs={"data-testid": "channel-row", "data-channel-id": row.id, "data-kind": row.kind},
    )


def notifications_page() -> rx.Component:
    return frame(
        rx.vstack(
            rx.hstack(sidebar_toggle(), rx.heading("Notifications", size="5"), rx.spacer(),
                      rx.button(rx.icon("refresh-cw", size=14), "Refresh", size="1", variant="ghost",
                                on_click=NotificationsState.refresh, custom_attrs={"data-testid": "channels-refresh"}),
                      width="100%", align="center"),
            rx.text("Fires, task errors, agent drafts and approval requests of your tasks are sent here. "
                    "A task's own setting (always, failures, never) decides which of its fires are.",
                    size="2", color_scheme="gray"),
            _add_forms(),
            rx.cond(NotificationsState.error != "",
                    rx.callout(NotificationsState.error, icon="triangle-alert", color_scheme="red", role="alert",
                               width="100%", custom_attrs={"data-testid": "channels-error"})),
            _secret(),
            rx.cond(NotificationsState.rows.length() > 0,
                    rx.vstack(rx.foreach(NotificationsState.rows, _channel), spacing="3", width="100%"),
                    rx.text("No channels yet.", size="2", color_scheme="gray")),
            spacing="4", width="100%", max_width="860px", padding="1.5em",
        ),
        page_has_toggle=True,  # its header holds the phone's sidebar toggle (no empty bar above it)
    )


ON_LOAD = [AuthState.require_login, NavState.load_nav, NotificationsState.load, AttentionState.start]
