"""A drawer row's pause form (SPEC §14): a note and an instant it resumes by itself, posted through
the same service call as ``POST /api/schedules/{id}/pause``. One form is open at a time."""

from __future__ import annotations

import asyncio

import reflex as rx

from app.core.errors import ChatcronError, InvalidInput
from app.schedules.fields import MAX_NOTE_CHARS
from app.ui import checks, schedule_form, tasks
from app.ui.state.schedules import ScheduleState
from app.ui.state.session import AuthState

UNTIL_CHARS = 64

LABELS = {"note": "Note", "until": "Resumes at"}


class PauseFormState(AuthState):
    task_id: int = 0  # the row whose form is open (0: none)
    note: str = ""
    until: str = ""  # a datetime-local value in the viewer's zone, "" for none
    opened_note: str = ""  # what the form showed when opened: an untouched field is not sent
    opened_until: str = ""
    error: str = ""
    saving: bool = False

    @rx.event
    def open_for(self, task_id: int, note: str, until: str):
        """Open the form of a row, filled with its current note and end (a paused task's)."""
        self.task_id = checks.positive_id(task_id, "task_id")
        self.note = checks.text(note, "note", 4 * MAX_NOTE_CHARS)
        self.until = checks.text(until, "until", UNTIL_CHARS)
        self.opened_note, self.opened_until = self.note, self.until
        self.error, self.saving = "", False

    @rx.event
    def close(self):
        self.task_id, self.error, self.saving = 0, "", False

    @rx.event
    def set_note(self, value: str):
        self.note = checks.text(value, "note", 4 * MAX_NOTE_CHARS)

    @rx.event
    def set_until(self, value: str):
        self.until = checks.text(value, "until", UNTIL_CHARS)

    @rx.event
    async def save(self):
        """Pause (or change a pause) with what the form holds; empty fields make a plain pause."""
        if not self.task_id or self.saving:
            return
        drawer = await self.get_state(ScheduleState)
        self.saving = True
        yield
        try:
            changed = {"note": self.note != self.opened_note, "until": self.until != self.opened_until}
            body = schedule_form.pause_body(self.note, self.until if changed["until"] else "", drawer.browser_zone)
            body = {key: value for key, value in body.items() if changed[key]}  # untouched: the stored value stays
            user = await self._user()
            await asyncio.to_thread(tasks.pause, user, self.task_id, body)
        except InvalidInput as exc:
            reason = exc.message.removeprefix(f"{exc.field}: ")
            self.error, self.saving = f"{LABELS.get(exc.field, exc.field)}: {reason}", False
            return
        except ChatcronError as exc:
            self.error, self.saving = exc.message, False
            return
        self.task_id, self.error, self.saving = 0, "", False
        drawer.notice = ""
        await drawer.refresh_quietly()
