"""The chat menu's transcript export and the drawer's schedules export and import (SPEC §21)."""

from __future__ import annotations

import reflex as rx

from app.ui.state.transfer import TransferState


def _tid(name: str, **extra: object) -> dict:
    return {"data-testid": name, **extra}


def chat_export_menu() -> rx.Component:
    """`chat-export`: download the transcript as Markdown or JSON."""
    return rx.menu.root(
        rx.menu.trigger(
            rx.icon_button(rx.icon("download", size=14), size="1", variant="ghost", aria_label="Export this chat",
                           title="Export this chat", flex_shrink="0", custom_attrs=_tid("chat-export")),
        ),
        rx.menu.content(
            rx.menu.item("Transcript as Markdown", on_click=TransferState.export_chat("md"),
                         custom_attrs=_tid("chat-export-md")),
            rx.menu.item("Transcript as JSON (every event)", on_click=TransferState.export_chat("json"),
                         custom_attrs=_tid("chat-export-json")),
        ),
    )


def schedules_transfer_buttons() -> rx.Component:
    """`schedules-export` and `schedules-import` in the drawer's header."""
    return rx.fragment(
        rx.tooltip(rx.icon_button(rx.icon("download", size=15), variant="soft", size="2", color_scheme="gray",
                                  on_click=TransferState.export_schedules, aria_label="Export this project's schedules",
                                  custom_attrs=_tid("schedules-export")), content="Export the project's schedules"),
        rx.tooltip(rx.icon_button(rx.icon("upload", size=15), variant="soft", size="2", color_scheme="gray",
                                  on_click=TransferState.set_import_open(True), aria_label="Import schedules",
                                  custom_attrs=_tid("schedules-import")), content="Import schedules as drafts"),
    )


def import_dialog() -> rx.Component:
    """Paste an exported schedules document; its schedules become drafts in this chat."""
    return rx.dialog.root(
        rx.dialog.content(
            rx.dialog.title("Import schedules"),
            rx.dialog.description(
                "Paste a document from “Export” (any project's). Each schedule is created in this chat as a draft "
                "— nothing fires until you arm it.", size="2"),
            rx.form(
                rx.vstack(
                    rx.text_area(name="document", placeholder='{"version": 1, "schedules": [...]}', rows="10",
                                 width="100%", font_family="var(--code-font-family)",
                                 custom_attrs=_tid("schedules-import-document")),
                    rx.cond(TransferState.import_error != "",
                            rx.text(TransferState.import_error, color="var(--red-11)", size="2", role="alert",
                                    custom_attrs=_tid("schedules-import-error"))),
                    rx.cond(TransferState.import_done != "",
                            rx.text(TransferState.import_done, color="var(--green-11)", size="2", role="status",
                                    custom_attrs=_tid("schedules-import-done"))),
                    rx.hstack(
                        rx.dialog.close(rx.button("Close", type="button", variant="soft", color_scheme="gray")),
                        rx.button("Import as drafts", type="submit", custom_attrs=_tid("schedules-import-submit")),
                        justify="end", spacing="3", width="100%",
                    ),
                    spacing="3", width="100%",
                ),
                on_submit=TransferState.import_schedules, reset_on_submit=False,
            ),
            max_width="560px",
        ),
        open=TransferState.import_open,
        on_open_change=TransferState.set_import_open,
    )
