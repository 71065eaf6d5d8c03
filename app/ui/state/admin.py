"""The server admin's page (SPEC §18): people (create, reset a password, revoke tokens, end sessions,
delete — each asked to confirm), the installed agent presets and the instance's health.

Anyone who is not a server admin gets the page of an unknown address: nothing of the instance is
read for them, and every action is refused by the service anyway.
"""

from __future__ import annotations

import asyncio

import reflex as rx

from app.core.errors import ChatcronError, InvalidInput
from app.ui import admin_views, checks
from app.ui.admin_views import ACTIONS, WARNINGS, HealthRow, PersonRow
from app.ui.settings_rows import PresetRow
from app.ui.state.session import AuthState


class AdminState(AuthState):
    loaded: bool = False
    allowed: bool = False  # a server admin (else the page says there is nothing here)
    people: list[PersonRow] = []
    presets: list[PresetRow] = []
    health: list[HealthRow] = []
    error: str = ""
    notice: str = ""
    confirm_action: str = ""  # one of admin_views.ACTIONS while its confirm is open
    confirm_label: str = ""
    confirm_text: str = ""
    password_email: str = ""  # the reset-password dialog is open for this person
    password_error: str = ""
    _target: int = 0  # the person the open dialog is about

    async def _read(self) -> None:
        user = await self._user()
        self.people = await asyncio.to_thread(admin_views.people, user)
        self.presets = await asyncio.to_thread(admin_views.presets)
        self.health = await asyncio.to_thread(admin_views.health)

    @rx.event
    async def load(self):
        self.reset()
        user = await self._user()
        self.loaded, self.allowed = True, bool(user.is_admin)
        if self.allowed:
            await self._read()

    @rx.event
    async def refresh(self):
        if self.allowed:
            await self._read()

    def _said(self, sentence: str = "", error: str = "") -> None:
        self.notice, self.error = sentence, error

    @rx.event
    async def create(self, form: dict):
        email, password = form.get("email", "").strip(), form.get("password", "")
        try:
            said = await asyncio.to_thread(admin_views.create, await self._user(), email, password,
                                           form.get("admin", "") == "on")
        except ChatcronError as exc:
            self._said(error=exc.message)
            return None
        self._said(said)
        await self._read()
        return rx.call_script("document.querySelectorAll('[data-admin-new]').forEach((el) => { el.value = ''; "
                              "if (el.type === 'checkbox') el.checked = false; });")

    def _person(self, user_id: int) -> PersonRow:
        row = next((p for p in self.people if p.id == user_id), None)
        if row is None:
            raise InvalidInput("user_id", "is not a person listed here")
        return row

    @rx.event
    def ask(self, action: str, user_id: int):
        """Open the confirm of one action on a person."""
        checks.choice(action, "action", ACTIONS)
        row = self._person(user_id)
        self._target, self.confirm_action = row.id, action
        self.confirm_label, self.confirm_text = ACTIONS[action], WARNINGS[action].format(email=row.email)

    @rx.event
    def set_confirm_open(self, open: bool):
        if not open:
            self.confirm_action, self.confirm_label, self.confirm_text, self._target = "", "", "", 0

    @rx.event
    async def confirm(self):
        action, user_id = self.confirm_action, self._target
        self.confirm_action, self.confirm_label, self.confirm_text, self._target = "", "", "", 0
        if not action:
            return
        try:
            said = await asyncio.to_thread(admin_views.act, await self._user(), action, user_id)
        except ChatcronError as exc:
            self._said(error=exc.message)
            return
        self._said(said)
        await self._read()

    @rx.event
    def ask_password(self, user_id: int):
        row = self._person(user_id)
        self._target, self.password_email, self.password_error = row.id, row.email, ""

    @rx.event
    def set_password_open(self, open: bool):
        if not open:
            self._target, self.password_email, self.password_error = 0, "", ""

    @rx.event
    async def reset_password(self, form: dict):
        if not self._target:
            return
        try:
            said = await asyncio.to_thread(admin_views.reset_password, await self._user(), self._target,
                                           form.get("password", ""))
        except ChatcronError as exc:
            self.password_error = exc.message.removeprefix("password: ")
            return
        self._target, self.password_email, self.password_error = 0, "", ""
        self._said(said)
        await self._read()
