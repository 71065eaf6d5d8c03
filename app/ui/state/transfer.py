"""Exports and the schedules import in the browser (SPEC §21): the chat menu's transcript export
(`chat-export`) and the drawer's schedules export and import (`schedules-export`,
`schedules-import`). Each handler takes the open chat from the server's own ChatState and goes
through the same services as the API, which check the user's rights again."""

from __future__ import annotations

import asyncio
import json

import reflex as rx

from app.core.context import get_core
from app.core.errors import ChatcronError
from app.core.wake import DatabaseWaker
from app.projects.exports import FORMATS, export_chat
from app.schedules import transfer
from app.schedules.service import TaskService
from app.ui.state.chat import ChatState
from app.ui.state.schedules import ScheduleState
from app.ui.state.session import AuthState


def _tasks() -> TaskService:
    core = get_core()
    return TaskService(core.db, core.clock, core.settings, DatabaseWaker(core.db))


class TransferState(AuthState):
    import_open: bool = False
    import_error: str = ""
    import_done: str = ""

    async def _open_chat(self) -> tuple[int, int]:
        """(chat id, project id: 0 for a loose chat) of the page's chat, as the server opened it."""
        chat = await self.get_state(ChatState)
        return chat.chat_id, chat._project_id

    @rx.event
    async def export_chat(self, fmt: str):
        """Download the open chat's transcript (``md`` or ``json``)."""
        if fmt not in FORMATS:
            return rx.toast.warning("Choose Markdown or JSON.")
        core, user = get_core(), await self._user()
        chat_id, _ = await self._open_chat()
        try:
            name, text = await asyncio.to_thread(export_chat, core.db, core.clock, user, chat_id, fmt)
        except ChatcronError as exc:
            return rx.toast.error(exc.message)
        return rx.download(data=text, filename=name)

    @rx.event
    async def export_schedules(self):
        """Download the project's schedule definitions (the document an import takes)."""
        user = await self._user()
        _, project_id = await self._open_chat()
        if not project_id:
            return rx.toast.warning("A loose chat has no schedules to export.")
        try:
            doc = await asyncio.to_thread(transfer.export_project, _tasks(), user, project_id)
        except ChatcronError as exc:
            return rx.toast.error(exc.message)
        return rx.download(data=json.dumps(doc, indent=1) + "\n", filename=f"project-{project_id}-schedules.json")

    @rx.event
    def set_import_open(self, open: bool):
        self.import_open, self.import_error, self.import_done = open, "", ""

    @rx.event
    async def import_schedules(self, form: dict):
        """Create the pasted document's schedules as drafts in the open chat; the first bad one is
        named and nothing is created."""
        user = await self._user()
        chat_id, project_id = await self._open_chat()
        if not project_id:
            self.import_error = "A loose chat cannot have schedules: move it into a project first."
            return None
        try:
            doc = json.loads(str(form.get("document", "")) or "null")
        except ValueError as exc:
            self.import_error = f"That is not a JSON document ({exc.msg}, line {exc.lineno})."
            return None
        body = {**doc, "chat_id": chat_id} if isinstance(doc, dict) else doc
        try:
            done = await asyncio.to_thread(transfer.import_drafts, _tasks(), user, project_id, body)
        except ChatcronError as exc:
            self.import_error = exc.message
            return None
        count = len(done.task_ids)
        self.import_error = ""
        self.import_done = (f"{count} schedule{'s' if count != 1 else ''} imported as drafts: arm each one to let it "
                            "fire.")
        return ScheduleState.refresh
