"""The new/edit schedule dialog: fields, live preview and validation, save through the service."""

from __future__ import annotations

import asyncio
import dataclasses

import reflex as rx

from app.core.context import get_core
from app.core.errors import ChatcronError, InvalidInput
from app.ui import schedule_form, tasks
from app.ui.schedule_form import INPUTS, FormFields
from app.ui.state.schedules import ScheduleState
from app.ui.state.session import AuthState

# Fields whose errors wait until the user has typed in them (a fresh form is not an error).
QUIET_UNTIL_TOUCHED = {"name", "prompt"}


class ScheduleFormState(AuthState):
    """Its own sibling state: a keystroke loads the dialog's fields, not the drawer or the transcript."""

    form_open: bool = False
    editing_id: int = 0
    name: str = ""
    prompt: str = ""
    kind: str = "interval"
    cron: str = "0 9 * * 1-5"
    timezone: str = "UTC"
    at: str = ""
    every: str = "3600"
    overlap: str = "queue_one"
    session: str = "resume"
    max_runs: str = ""
    description: str = ""
    fires: list[dict[str, str]] = []
    error: str = ""
    error_input: str = ""  # which input to outline in red
    valid: bool = False
    saving: bool = False
    _touched: list[str] = []
    _original: dict = {}
    _chat_id: int = 0  # the drawer's chat and viewer zone, copied when the dialog opens
    _zone: str = "UTC"

    async def _from_drawer(self) -> ScheduleState:
        drawer = await self.get_state(ScheduleState)
        self._chat_id, self._zone = drawer.chat_id, drawer.browser_zone
        return drawer

    def _fields(self) -> FormFields:
        return FormFields(**{f.name: getattr(self, f.name) for f in dataclasses.fields(FormFields)})

    def _load(self, fields: FormFields) -> None:
        for f in dataclasses.fields(FormFields):
            setattr(self, f.name, getattr(fields, f.name))

    @rx.event
    async def open_new(self):
        await self._from_drawer()
        now = tasks.task_service().clock.now()
        zone = self._zone
        self._load(FormFields(timezone=zone, at=schedule_form.default_at(now, zone)))
        self.editing_id, self._original, self._touched = 0, {}, []
        self.form_open, self.saving = True, False
        await self._check()

    @rx.event
    async def open_edit(self, task_id: int):
        drawer = await self._from_drawer()
        try:
            user = await self._user()
            task = await asyncio.to_thread(tasks.load_task, user, task_id)
        except ChatcronError as exc:
            drawer.notice = exc.message
            return
        self._load(schedule_form.fields_of(task, self._zone))
        self.editing_id, self._original, self._touched = task.id, schedule_form.original_of(task), []
        self.form_open, self.saving = True, False
        await self._check()

    @rx.event
    def set_form_open(self, is_open: bool):
        if not is_open:
            self.form_open = False

    @rx.event
    async def set_field(self, field: str, value: str):
        """Every keystroke lands here (debounced by the input) and re-runs the preview."""
        field, value = schedule_form.typed(field, value, get_core().settings.prompt_max_bytes)
        setattr(self, field, value)
        if field not in self._touched:
            self._touched = [*self._touched, field]
        await self._check()

    async def _check(self) -> None:
        check = await asyncio.to_thread(tasks.check_form, self._fields(), self._original or None, self._zone)
        self.description, self.fires = check.description, check.fires
        self.valid = not check.error
        quiet = check.error_field in QUIET_UNTIL_TOUCHED and check.error_field not in self._touched
        self.error = "" if quiet else check.error
        self.error_input = "" if quiet else INPUTS.get(check.error_field, "")

    @rx.event
    async def save(self):
        await self._check()
        if not self.valid:
            self._touched = sorted(QUIET_UNTIL_TOUCHED)
            await self._check()
            return
        self.saving = True
        yield
        try:
            user = await self._user()
            await asyncio.to_thread(tasks.save_form, user, self._chat_id, self.editing_id, self._fields(),
                                    self._original or None)
        except InvalidInput as exc:
            self.error, self.error_input, self.valid = schedule_form.explain(exc), INPUTS.get(exc.field, ""), False
            self.saving = False
            return
        except ChatcronError as exc:
            self.error, self.saving = exc.message, False
            return
        self.form_open, self.saving = False, False
        drawer = await self.get_state(ScheduleState)
        drawer.notice = ""
        await drawer.refresh_quietly()
