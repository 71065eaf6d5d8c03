"""Transcript rows and the composer of the chat page.

Rows come from app/ui/transcript.py (every row has the same keys). Assistant text is Markdown;
tool calls are cards updated in place; thoughts and plans are folded; ``status`` is a quiet note.
Every event carries an ``event-time`` (:func:`moment`); a fire card also says when it was planned
and how late it started.
"""

from __future__ import annotations

import reflex as rx

from app.core.config import load_settings
from app.ui.components.actions import composer_busy_reason, composer_buttons
from app.ui.components.budget import chat_budget
from app.ui.components.empty_chat import empty_chat_help
from app.ui.components.markdown import markdown
from app.ui.components.quiet_fire import with_quiet
from app.ui.state.chat import ChatState

OUTPUT_MAX_HEIGHT = "18em"  # a long output scrolls inside its card
KIND_ICONS = (("read", "file-text"), ("edit", "pencil"), ("delete", "trash-2"), ("move", "move"),
              ("search", "search"), ("execute", "terminal"), ("think", "brain"), ("fetch", "globe"),
              ("network", "shield-ban"))
STATUS_COLORS = (("pending", "gray"), ("in_progress", "blue"), ("completed", "grass"), ("failed", "red"),
                 ("awaiting_approval", "amber"), ("refused", "red"))
_MONO = {"font_family": "var(--code-font-family)", "font_size": "var(--font-size-1)", "margin": "0",
         "padding": "0.5em 0.7em", "border_radius": "6px", "background": "var(--gray-a3)", "overflow": "auto",
         "white_space": "pre", "max_width": "100%"}
# A flex summary loses the browser's marker: a chevron of our own turns when the details open.
# One line: a long title ends in an ellipsis (the body holds it whole), the time keeps its place.
_SUMMARY = {"cursor": "pointer", "display": "flex", "flex_wrap": "nowrap", "align_items": "center", "gap": "0.4em",
            "padding": "0.45em 0.7em", "font_size": "var(--font-size-2)", "color": "var(--gray-12)",
            "list_style": "none",
            "&::-webkit-details-marker": {"display": "none"}}
_DETAILS = {"& > summary .cc-chevron": {"transition": "transform 120ms"},
            "&[open] > summary .cc-chevron": {"transform": "rotate(90deg)"}}


_TIME = {"font_size": "var(--font-size-1)", "color": "var(--gray-10)", "white_space": "nowrap",
         "font_variant_numeric": "tabular-nums", "flex_shrink": "0", "&::after": {"content": "attr(data-shown)"},
         "display": "inline-block", "min_width": "5ch"}  # today's "14:05" needs no more room than it was given


def moment(iso: rx.Var, testid: str = "event-time", **style: object) -> rx.Component:
    """``<time datetime="…UTC…">``, rendered empty: assets/event_time.js labels it in the viewer's zone
    (its ``data-shown``, shown as ::after content, so the event's own text stays the message)."""
    return rx.el.time(date_time=iso, style={**_TIME, **style}, custom_attrs={"data-testid": testid, "data-cc-time": ""})


def _corner(row: dict) -> rx.Component:
    """The event's time under a bubble, at its end. Its line is as tall before the label arrives as
    after, so labelling never moves the transcript under assets/transcript.js's pinning."""
    return rx.box(moment(row["at"]), text_align="end", font_size="var(--font-size-1)", line_height="1",
                  height="1em", margin_top="0.3em")


def _fire_start(row: dict) -> rx.Component:
    """"Planned 14:05 · started 14:07 · 2 min late"; "Run now by ann@example.com · started 14:07" for a
    run-now (it had no planned time); only the start when the fire's claim is gone."""
    planned = rx.fragment(rx.text("Planned "), moment(row["fired_at"], "fire-at", color="inherit"),
                          rx.text(" · started "))
    forced = rx.fragment(rx.text(row["forced"], custom_attrs={"data-testid": "fire-run-now"}),
                         rx.text(" · started "))
    return rx.hstack(
        rx.icon("clock", size=12, flex_shrink="0"),
        rx.cond(row["forced"] != "", forced, rx.cond(row["fired_at"] != "", planned, rx.text("Started "))),
        moment(row["at"], color="inherit"),
        rx.cond(row["late"] != "", rx.fragment(
            rx.text(" · "), rx.text(row["late"], custom_attrs={"data-testid": "fire-lateness"}))),
        spacing="0", align="center", flex_wrap="wrap", gap="0.25em", font_size="var(--font-size-1)",
        color="var(--amber-11)", margin_top="0.2em", custom_attrs={"data-testid": "fire-start"},
    )


def _attrs(row: dict, **extra: object) -> dict:
    return {"data-testid": "event", "data-type": row["type"], "data-run-id": row["run_id"], **extra}


def _scheduled(row: dict) -> rx.Component:
    """A fire: who sent it (the task, which fire), the stored prompt, and the full envelope folded."""
    return rx.box(
        rx.hstack(
            rx.icon("alarm-clock", size=14, color="var(--amber-11)", flex_shrink="0"),
            rx.text("Scheduled task ", rx.el.strong(row["task"]), size="2", color="var(--amber-12)"),
            rx.badge("fire ", row["fire"], color_scheme="amber", variant="surface", size="1"),
            align="center", spacing="2", custom_attrs={"data-testid": "scheduled-header"},
        ),
        _fire_start(row),
        rx.text(row["body"], white_space="pre-wrap", size="2", margin_top="0.35em"),
        rx.el.details(
            rx.el.summary("Full prompt sent to the agent", cursor="pointer", color="var(--amber-11)",
                          font_size="var(--font-size-1)", margin_top="0.4em"),
            rx.el.pre(row["text"], white_space="pre-wrap", font_family="var(--code-font-family)",
                      font_size="var(--font-size-1)", color="var(--gray-11)", margin="0.4em 0 0",
                      padding="0.6em", background="var(--gray-a2)", border_radius="8px"),
        ),
        align_self="flex-end", max_width="min(75%, 40em)", padding="0.6em 0.9em", border_radius="12px",
        background="var(--amber-2)", border="1px solid var(--amber-6)", overflow_wrap="anywhere",
        custom_attrs=_attrs(row),
    )


def _completed_badge(row: dict) -> rx.Component:
    """The reply ended with the completion marker (its raw line is not shown)."""
    return rx.cond(
        row["marker"] != "",
        rx.tooltip(rx.badge(rx.icon("circle-check", size=12), "completed", color_scheme="blue", variant="soft",
                            size="1", margin_top="0.3em", custom_attrs={"data-testid": "event-completed"}),
                   content="The agent reported the standing task complete"),
    )


def _assistant(row: dict) -> rx.Component:
    return rx.box(
        markdown(source=row["text"]),
        _completed_badge(row),
        _corner(row),
        align_self="flex-start", max_width="min(100%, 48em)", min_width="0", padding="0.6em 0.9em",
        border_radius="12px", background="var(--gray-3)", custom_attrs=_attrs(row),
    )


def _folded(row: dict, testid: str, summary: rx.Component, *body: rx.Component, **attrs: object) -> rx.Component:
    """A row folded behind a summary line (details/summary: keyboard and screen readers for free)."""
    return rx.box(
        rx.el.details(
            rx.el.summary(rx.icon("chevron-right", size=14, class_name="cc-chevron", flex_shrink="0",
                                  color="var(--gray-10)"), summary, moment(row["at"], margin_left="auto"),
                           style=_SUMMARY),
            rx.vstack(*body, spacing="2", padding="0 0.7em 0.6em", width="100%", align="stretch"),
            style=_DETAILS, custom_attrs={"data-testid": testid, **attrs},
        ),
        align_self="flex-start", width="min(100%, 48em)", min_width="0", border_radius="10px",
        border="1px solid var(--gray-5)", background="var(--gray-1)", custom_attrs=_attrs(row),
    )


def _kind_icon(kind: rx.Var) -> rx.Component:
    return rx.match(kind, *[(name, rx.icon(icon, size=14, flex_shrink="0")) for name, icon in KIND_ICONS],
                    rx.icon("wrench", size=14, flex_shrink="0"))


def _section(label: str, text: rx.Var, testid: str, **style: object) -> rx.Component:
    return rx.cond(text != "", rx.box(
        rx.text(label, size="1", color_scheme="gray", weight="medium"),
        rx.el.pre(text, custom_attrs={"data-testid": testid}, style={**_MONO, **style}),
        width="100%", min_width="0",
    ))


TITLE_SHOWN_WHOLE = 60  # characters: a longer tool title is also written out, wrapped, in the card's body


def _tool(row: dict) -> rx.Component:
    title = row["title"].to(str)
    summary = rx.hstack(
        _kind_icon(row["kind"]),
        rx.text(title, size="2", weight="medium", title=title, overflow="hidden", text_overflow="ellipsis",
                white_space="nowrap", min_width="0", flex="0 1 auto", custom_attrs={"data-testid": "tool-title"}),
        rx.badge(row["status_label"], color_scheme=rx.match(row["status"], *STATUS_COLORS, "gray"),
                 variant="soft", size="1", flex_shrink="0", custom_attrs={"data-testid": "tool-status"}),
        align="center", spacing="2", flex_wrap="nowrap", min_width="0", flex="1 1 auto", overflow="hidden",
    )
    return _folded(
        row, "tool-card", summary,
        rx.cond(title.length() > TITLE_SHOWN_WHOLE,
                rx.text(title, size="2", white_space="pre-wrap", overflow_wrap="anywhere",
                        custom_attrs={"data-testid": "tool-title-full"})),
        _section("Input", row["input"], "tool-input", white_space="pre-wrap", overflow_wrap="anywhere"),
        _section("Output", row["output"], "tool-output", max_height=OUTPUT_MAX_HEIGHT),
        rx.cond(row["decision"] != "", rx.hstack(
            rx.icon("shield-check", size=13, color="var(--gray-10)"),
            rx.text(row["decision"], size="1", color_scheme="gray", custom_attrs={"data-testid": "tool-decision"}),
            align="center", spacing="1",
        )),
        **{"data-status": row["status"], "data-kind": row["kind"], "data-tool-id": row["key"]},
    )


def _approval_option(line: rx.Var, approval_id: rx.Var) -> rx.Component:
    """One of the agent's options: the one-time allow stands out; a lasting choice ("always") says it
    applies to later calls too."""
    parts = line.to(str).split("\t")
    kind = parts[2]
    lasting = kind.to(str).endswith("_always")
    return rx.button(
        rx.cond(lasting, rx.icon("repeat", size=13)), parts[1],
        rx.cond(lasting, rx.text("· later calls too", as_="span", size="1", weight="regular", opacity="0.8")),
        size="2",
        variant=rx.match(kind, ("allow_once", "solid"), ("reject_once", "soft"), "outline"),
        color_scheme=rx.match(kind, ("allow_once", "grass"), ("allow_always", "grass"), ("reject_once", "red"),
                              ("reject_always", "red"), "gray"),
        title=rx.cond(lasting, "A lasting choice: the agent will not ask again for such calls", "This call only"),
        on_click=ChatState.answer_approval(approval_id, parts[0]),
        custom_attrs={"data-testid": "approval-option", "data-option-id": parts[0], "data-kind": kind},
    )


def _approval(row: dict) -> rx.Component:
    """The card a person answers (SPEC §13): the call, its input, one button per option of the
    agent's while it waits; who decided once it is settled. Shown open, above the tool's card."""
    waiting = row["approval_state"] == "pending"
    return rx.box(
        rx.hstack(rx.icon("shield-question", size=15, color="var(--amber-11)", flex_shrink="0"),
                  rx.text("The agent asks to run ", rx.el.strong(row["title"]), size="2", overflow_wrap="anywhere"),
                  align="center", spacing="2"),
        rx.cond(row["input"] != "", rx.el.pre(row["input"], style={**_MONO, "margin_top": "0.5em"},
                                               custom_attrs={"data-testid": "approval-input"})),
        rx.cond(waiting, rx.hstack(
            rx.foreach(row["approval_options"].to(str).split("\n"),
                       lambda line: _approval_option(line, row["approval_id"])),
            spacing="2", flex_wrap="wrap", margin_top="0.6em",
        ), rx.text(row["approval_note"], size="2", color="var(--gray-11)", margin_top="0.4em",
                   custom_attrs={"data-testid": "approval-decided-by"})),
        align_self="flex-start", width="min(100%, 48em)", min_width="0", padding="0.7em 0.9em",
        border_radius="10px", border="1px solid var(--amber-7)", background="var(--amber-2)",
        custom_attrs={"data-testid": "approval-card", "data-approval-id": row["approval_id"],
                      "data-state": row["approval_state"]},
    )


def _thought(row: dict) -> rx.Component:
    summary = rx.hstack(rx.icon("brain", size=14, color="var(--gray-10)"),
                        rx.text("Thinking", size="2", color_scheme="gray"), align="center", spacing="2")
    body = rx.text(row["text"], white_space="pre-wrap", size="2", color="var(--gray-11)", overflow_wrap="anywhere")
    return _folded(row, "thought", summary, body)


def _plan(row: dict) -> rx.Component:
    summary = rx.hstack(rx.icon("list-checks", size=14, color="var(--gray-10)", flex_shrink="0"),
                        rx.text(row["title"], size="2", color_scheme="gray", overflow="hidden",
                                text_overflow="ellipsis", white_space="nowrap", min_width="0"),
                        align="center", spacing="2", min_width="0", overflow="hidden")
    body = rx.text(row["body"], white_space="pre-wrap", size="2", overflow_wrap="anywhere")
    return _folded(row, "plan", summary, body)


def _status(row: dict) -> rx.Component:
    return rx.hstack(
        rx.icon("info", size=13, color="var(--gray-10)", flex_shrink="0"),
        rx.text(row["text"], size="1", color_scheme="gray", custom_attrs={"data-testid": "status-note"}),
        moment(row["at"]),
        align="center", spacing="2", align_self="center", max_width="min(100%, 40em)", padding="0 0.5em",
        flex_wrap="wrap", row_gap="0",
        custom_attrs=_attrs(row),
    )


def _usage(row: dict) -> rx.Component:
    return rx.text(row["text"], size="1", color_scheme="gray", align_self="flex-start", margin_top="-0.5em",
                   padding_left="0.9em", custom_attrs={"data-testid": "run-usage", "data-run-id": row["run_id"]})


def _plain(row: dict) -> rx.Component:
    kind = row["type"]
    return rx.box(
        rx.text(row["text"], white_space="pre-wrap", size="2"),
        _corner(row),
        align_self=rx.cond(kind == "prompt", "flex-end", "flex-start"),
        background=rx.match(kind, ("prompt", "var(--accent-4)"), ("error", "var(--red-3)"), "var(--gray-3)"),
        color=rx.cond(kind == "error", "var(--red-11)", "inherit"),
        padding="0.6em 0.9em", border_radius="12px", max_width="min(75%, 40em)", overflow_wrap="anywhere",
        custom_attrs=_attrs(row),
    )


def _event(row: dict) -> rx.Component:
    return rx.match(
        row["type"],
        ("scheduled_prompt", _scheduled(row)),
        ("assistant_text", _assistant(row)),
        ("tool", rx.fragment(rx.cond(row["approval_id"] != "", _approval(row)), _tool(row))),
        ("thought", _thought(row)),
        ("plan", _plan(row)),
        ("status", _status(row)),
        ("run_usage", _usage(row)),
        _plain(row),
    )


def _event_after_divider(row: dict) -> rx.Component:
    """The row, with the "New since your last visit" line above the first one newer than the visit."""
    return rx.fragment(
        rx.cond(row["id"] == ChatState.divider_id,
                rx.hstack(rx.separator(size="4", flex="1"),
                          rx.text("New since your last visit", size="1", color="var(--accent-11)",
                                  white_space="nowrap"),
                          rx.separator(size="4", flex="1"),
                          align="center", width="100%", custom_attrs={"data-testid": "unread-divider"})),
        with_quiet(row, _event(row), moment(row["at"])),  # a quiet fire: one folded "Nothing new" line
    )


def _jump_to_latest() -> rx.Component:
    """Shown by assets/chatcron.css while the user has scrolled up (assets/transcript.js scrolls)."""
    return rx.box(
        rx.button(rx.icon("arrow-down", size=14), "Jump to latest", size="2", variant="solid", radius="full",
                  aria_label="Jump to the latest message", custom_attrs={"data-testid": "jump-to-latest"}),
        class_name="cc-jump",
    )


def transcript() -> rx.Component:
    """The scrolling log; assets/transcript.js keeps it pinned to its newest entry."""
    return rx.box(
        rx.vstack(
            rx.cond(ChatState.loaded & (ChatState.messages.length() == 0) & ~ChatState.busy, empty_chat_help()),
            rx.foreach(ChatState.messages, _event_after_divider),
            rx.cond(
                ChatState.busy,
                rx.hstack(rx.spinner(size="2"), rx.text("Agent is working…", size="2", color_scheme="gray"),
                          custom_attrs={"data-testid": "agent-working"}, align="center"),
            ),
            custom_attrs={"data-testid": "transcript"},
            class_name="cc-transcript", padding="1em", spacing="3", width="100%",
        ),
        _jump_to_latest(),
        class_name="cc-transcript-wrap",
    )


def composer() -> rx.Component:
    return rx.box(
        rx.cond(
            ChatState.composer_error != "",
            rx.callout(ChatState.composer_error, icon="triangle-alert", color_scheme="red", size="1",
                       custom_attrs={"data-testid": "composer-error"}, margin_bottom="0.5em"),
        ),
        chat_budget(),  # app/ui/components/budget.py: the project's daily budget, when it has one
        rx.form(
            rx.hstack(
                rx.text_area(name="text", id="composer-input", placeholder="Message the agent… (Enter sends)",
                             enter_key_submit=True, rows="2", width="100%", aria_label="Message",
                             max_length=load_settings().prompt_max_bytes,  # a byte cap is at least this
                             custom_attrs={"data-testid": "composer-input"}),
                composer_buttons(),  # app/ui/components/actions.py: Send, Stop
                align="end", width="100%",
            ),
            composer_busy_reason(),
            on_submit=ChatState.send,
            reset_on_submit=True,
            width="100%",
        ),
        padding="1em", border_top="1px solid var(--gray-5)", width="100%",
    )
