"""The inbox page (SPEC §13): approvals, drafts to arm, tasks in error, and the feed of what happened."""

from __future__ import annotations

import reflex as rx

from app.ui.components.layout import frame, sidebar_toggle
from app.ui.components.transcript import moment
from app.ui.inbox import ApprovalCard, FeedItem, Option, TaskCard
from app.ui.state.attention import AttentionState
from app.ui.state.inbox_page import ROUTE as ROUTE  # the page's address, registered in app/app.py
from app.ui.state.inbox_page import InboxState
from app.ui.state.nav import NavState
from app.ui.state.session import AuthState

_CARD = {"border": "1px solid var(--gray-5)", "border_radius": "10px", "padding": "0.6em 0.8em", "width": "100%"}


def _chat_link(chat_id: rx.Var, title: rx.Var) -> rx.Component:
    return rx.link(title, href=f"/chat/{chat_id}", size="2", custom_attrs={"data-testid": "inbox-chat-link"})


def _section(title: str, count: rx.Var, *body: rx.Component) -> rx.Component:
    return rx.cond(count > 0, rx.vstack(rx.heading(title, size="3"), *body, spacing="2", width="100%"))


def _option(card: ApprovalCard, option: Option) -> rx.Component:
    """As on the chat's approval card: the one-time allow stands out, a lasting choice says so."""
    lasting = option.kind.endswith("_always")
    return rx.button(rx.cond(lasting, rx.icon("repeat", size=12)), option.name,
                     rx.cond(lasting, rx.text("· later calls too", as_="span", size="1", weight="regular",
                                              opacity="0.8")),
                     size="1",
                     variant=rx.match(option.kind, ("allow_once", "solid"), ("reject_once", "soft"), "outline"),
                     color_scheme=rx.cond(option.kind.contains("allow"), "green", "red"),
                     title=rx.cond(lasting, "A lasting choice: the agent will not ask again for such calls",
                                   "This call only"),
                     on_click=InboxState.answer(card.id, option.option_id),
                     custom_attrs={"data-testid": "approval-option", "data-option-id": option.option_id,
                                   "data-kind": option.kind})


def _approval(card: ApprovalCard) -> rx.Component:
    return rx.vstack(
        rx.text(card.title, weight="bold", size="2"),
        rx.hstack(rx.text("in", size="1", color_scheme="gray"), _chat_link(card.chat_id, card.chat_title),
                  rx.text("· for ", card.requested_for, size="1", color_scheme="gray"), align="center", wrap="wrap"),
        rx.hstack(rx.foreach(card.options, lambda option: _option(card, option)), wrap="wrap", spacing="2"),
        spacing="1", style=_CARD, custom_attrs={"data-testid": "inbox-approval", "data-approval-id": card.id},
    )


def _draft(card: TaskCard) -> rx.Component:
    """What arming would start: the schedule and the prompt, read before Arm."""
    return rx.vstack(
        rx.hstack(
            rx.vstack(rx.text(card.name, weight="bold", size="2"), _chat_link(card.chat_id, card.chat_title),
                      spacing="0", min_width="0"),
            rx.spacer(),
            rx.button("Arm", size="1", on_click=InboxState.arm(card.id), custom_attrs={"data-testid": "inbox-arm"}),
            align="center", width="100%",
        ),
        rx.hstack(rx.icon("calendar-clock", size=13, color="var(--gray-10)", flex_shrink="0"),
                  rx.text(card.when, size="2", color_scheme="gray", custom_attrs={"data-testid": "inbox-draft-when"}),
                  align="center", spacing="1"),
        rx.text(card.prompt, size="2", white_space="pre-wrap", overflow_wrap="anywhere", padding="0.4em 0.6em",
                background="var(--gray-a2)", border_radius="6px", width="100%", max_height="8em", overflow_y="auto",
                custom_attrs={"data-testid": "inbox-draft-prompt"}),
        spacing="2", style=_CARD, custom_attrs={"data-testid": "inbox-draft", "data-task-id": card.id},
    )


def _error(card: TaskCard) -> rx.Component:
    return rx.vstack(
        rx.hstack(rx.text(card.name, weight="bold", size="2"), _chat_link(card.chat_id, card.chat_title),
                  align="center", wrap="wrap"),
        rx.text(card.reason, size="2", color="var(--red-11)", custom_attrs={"data-testid": "inbox-error-reason"}),
        spacing="1", style=_CARD, custom_attrs={"data-testid": "inbox-error", "data-task-id": card.id},
    )


def _item(item: FeedItem) -> rx.Component:
    return rx.vstack(
        rx.hstack(
            rx.cond(item.unread, rx.box(width="8px", height="8px", border_radius="50%",
                                        background="var(--accent-9)", flex_shrink="0",
                                        custom_attrs={"aria-label": "unread"})),
            rx.badge(item.label, size="1", variant=rx.cond(item.resolved != "", "outline", "soft"),
                     color_scheme=rx.cond(item.kind == "fire.finished", "green",
                                          rx.cond((item.kind == "fire.failed") | (item.kind == "agent.start_failed"),
                                                  "red", rx.cond(item.resolved != "", "gray", "amber"))),
                     custom_attrs={"data-testid": "inbox-item-label"}),
            rx.cond(item.task_name != "", rx.text(item.task_name, weight="bold", size="2")),
            _chat_link(item.chat_id, item.chat_title),
            rx.spacer(),
            moment(item.at, "inbox-item-time"),
            align="center", wrap="wrap", width="100%",
        ),
        rx.cond(item.line != "", rx.text(item.line, size="2", custom_attrs={"data-testid": "inbox-item-line"})),
        rx.cond(item.usage != "", rx.text(item.usage, size="1", color_scheme="gray",
                                          custom_attrs={"data-testid": "inbox-item-usage"})),
        spacing="1", style=_CARD,
        background=rx.cond(item.unread, "var(--accent-2)", "transparent"),
        custom_attrs={"data-testid": "inbox-item", "data-kind": item.kind, "data-item-id": item.id,
                      "data-unread": rx.cond(item.unread, "true", "false"), "data-outcome": item.outcome,
                      "data-resolved": item.resolved},
    )


def _header() -> rx.Component:
    return rx.hstack(
        sidebar_toggle(),
        rx.heading("Inbox", size="5"),
        rx.badge(AttentionState.inbox_unread, " unread", variant="soft", custom_attrs={"data-testid": "inbox-unread"}),
        rx.spacer(),
        rx.el.label(rx.hstack(
            rx.switch(checked=InboxState.notify_on, on_change=InboxState.set_notify,
                      custom_attrs={"data-testid": "browser-notify-toggle"}),
            rx.text("Notify me in this browser", size="2"), align="center")),
        align="center", wrap="wrap", width="100%",
    )


def _feed() -> rx.Component:
    return rx.vstack(
        rx.hstack(rx.heading("What happened", size="3"), rx.spacer(),
                  rx.button("Mark all read", size="1", variant="soft", on_click=InboxState.mark_read,
                            disabled=InboxState.items.length() == 0,
                            custom_attrs={"data-testid": "inbox-mark-read"}),
                  align="center", width="100%"),
        rx.cond(InboxState.items.length() == 0,
                rx.text("Nothing yet: finished fires, drafts and approvals show up here.", size="2",
                        color_scheme="gray", custom_attrs={"data-testid": "inbox-empty"})),
        rx.foreach(InboxState.items, _item),
        rx.cond(InboxState.next_before > 0,
                rx.button("Older", size="1", variant="outline", on_click=InboxState.older,
                          custom_attrs={"data-testid": "inbox-older"})),
        spacing="2", width="100%",
    )


def inbox_page() -> rx.Component:
    return frame(
        rx.box(
            rx.vstack(
                _header(),
                rx.cond(InboxState.notice != "", rx.callout(InboxState.notice, color_scheme="amber", size="1",
                                                             custom_attrs={"data-testid": "inbox-notice"})),
                rx.cond(InboxState.armed != "", rx.callout(InboxState.armed, icon="circle-check", color_scheme="grass",
                                                            size="1", role="status",
                                                            custom_attrs={"data-testid": "inbox-armed"})),
                _section("Waiting for your answer", InboxState.approvals.length(),
                         rx.foreach(InboxState.approvals, _approval)),
                _section("Drafts to arm", InboxState.drafts.length(), rx.foreach(InboxState.drafts, _draft)),
                _section("Stopped by an error", InboxState.errors.length(), rx.foreach(InboxState.errors, _error)),
                _feed(),
                spacing="4", max_width="48em", margin_x="auto", width="100%",
            ),
            padding="1em", overflow_y="auto", height="100%", custom_attrs={"data-testid": "inbox"},
        ),
        page_has_toggle=True,  # its header holds the phone's sidebar toggle (no empty bar above it)
    )


ON_LOAD = [AuthState.require_login, NavState.load_nav, InboxState.load, AttentionState.start]
