"""The project settings page's people (SPEC §18): its members and their roles, inviting an existing
user, making an owner or a member, removing one (anyone may leave), and the owners' audit record.

The services decide who may do what; this state only shows their answers. A removal takes effect in
the removed member's open tabs through the access mark, as ``revoke-access`` does.
"""

from __future__ import annotations

import asyncio

import reflex as rx

from app.core.errors import ChatcronError, InvalidInput, NotFound
from app.core.models import Role
from app.ui import checks, project_settings
from app.ui.settings_rows import AuditRow, MemberRow
from app.ui.state.session import AuthState

ROLES = tuple(r.value for r in Role)


class MembersState(AuthState):
    project_id: int = 0
    viewer_role: str = ""  # owner | member | admin
    can_manage: bool = False  # invite, change roles, remove others, read the audit record
    rows: list[MemberRow] = []
    audit: list[AuditRow] = []
    error: str = ""
    notice: str = ""
    confirm_id: int = 0  # the member whose removal is being confirmed
    confirm_email: str = ""

    async def _read(self) -> None:
        user = await self._user()
        try:
            role = await asyncio.to_thread(project_settings.role_of, user, self.project_id)
            rows = await asyncio.to_thread(project_settings.people, user, self.project_id)
            audit = await asyncio.to_thread(project_settings.history, user, self.project_id) \
                if role != Role.MEMBER.value else []
        except NotFound:
            self.reset()
            return
        self._update(viewer_role=role, can_manage=role != Role.MEMBER.value, rows=rows, audit=audit)

    @rx.event
    async def load(self):
        self.reset()
        try:
            self.project_id = project_settings.project_of(self.router.url.path)
        except InvalidInput:
            return
        await self._read()

    @rx.event
    async def refresh(self):
        """Read the members (and the audit record) again: after a change here or anywhere."""
        if self.project_id:
            await self._read()

    @rx.event
    def forget_project(self):
        """The project went out of the user's reach: keep nothing of it."""
        self.reset()

    async def _act(self, call, *args: object) -> bool:
        """Run one member service call; its sentence or its error shows above the list."""
        try:
            said = await asyncio.to_thread(call, await self._user(), self.project_id, *args)
        except ChatcronError as exc:
            self.error, self.notice = exc.message.removeprefix("email: ").removeprefix("role: "), ""
            return False
        self.error, self.notice = "", said
        await self._read()
        return True

    @rx.event
    async def invite(self, form: dict):
        email, role = form.get("email", "").strip(), form.get("role", Role.MEMBER.value)
        if not email:
            self.error, self.notice = "Type the email of a user of this server.", ""
            return None
        checks.choice(role, "role", ROLES)
        if await self._act(project_settings.invite, email, role):
            return rx.set_value("member-invite-email", "")
        return None

    @rx.event
    async def set_role(self, user_id: int, role: str):
        checks.choice(role, "role", ROLES)
        await self._act(project_settings.set_role, user_id, role)

    @rx.event
    def ask_remove(self, user_id: int):
        row = next((r for r in self.rows if r.user_id == user_id), None)
        if row is None:
            raise InvalidInput("user_id", "is not a member listed here")
        self.confirm_id, self.confirm_email = row.user_id, row.email

    @rx.event
    def set_confirm_open(self, open: bool):
        if not open:
            self.confirm_id, self.confirm_email = 0, ""

    @rx.event
    async def remove(self):
        """Remove the member being confirmed; removing oneself leaves the project (and its page)."""
        user_id, self.confirm_id, self.confirm_email = self.confirm_id, 0, ""
        if not user_id:
            return None
        me = (await self._user()).id
        if await self._act(project_settings.remove, user_id) and user_id == me:
            self.reset()
            return rx.redirect("/")
        return None
