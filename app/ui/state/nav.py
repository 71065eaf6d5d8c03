"""The sidebar: projects the user can see and their chats, the user's loose chats, the open chat,
and a new project."""

from __future__ import annotations

import asyncio
import dataclasses

import reflex as rx

from app.core import chats, projects
from app.core.context import get_core
from app.core.errors import ChatcronError, InvalidInput
from app.core.models import User
from app.ui import checks
from app.ui.state.session import AuthState


@dataclasses.dataclass
class ChatLink:
    id: int
    title: str


@dataclasses.dataclass
class ProjectNode:
    id: int
    name: str
    chats: list[ChatLink]


def load_tree(user: User) -> list[ProjectNode]:
    core = get_core()
    return [
        ProjectNode(project.id, project.name,
                    [ChatLink(c.id, c.title) for c in chats.list_chats(core.db, user, project.id)])
        for project in projects.list_projects(core.db, user)
    ]


def load_loose(user: User) -> list[ChatLink]:
    """The user's own chats outside any project, newest first (SPEC §14)."""
    return [ChatLink(c.id, c.title) for c in chats.list_loose_chats(get_core().db, user)]


def _project_message(exc: ChatcronError) -> str:
    """"The name must not be empty." for the dialog's own field, the error's message otherwise."""
    if isinstance(exc, InvalidInput) and exc.field == "name":
        return f"The name {exc.message.removeprefix('name: ')}."
    return exc.message


class NavState(AuthState):
    tree: list[ProjectNode] = []
    loose: list[ChatLink] = []  # chats without a project ("Loose chats")
    current_chat_id: int = 0  # the open chat (its item carries aria-current="page")
    project_dialog: bool = False
    project_error: str = ""
    is_admin: bool = False  # a server admin: the sidebar links the admin page

    def _open_chat_id(self) -> int:
        parts = self.router.url.path.rstrip("/").split("/")  # /chat/<cid>
        if len(parts) >= 2 and parts[-2] == "chat":
            try:
                return checks.id_text(parts[-1], "chat")
            except InvalidInput:
                return 0
        return 0

    @rx.event
    async def load_nav(self):
        self.current_chat_id = self._open_chat_id()
        user = await self._user()
        self._update(is_admin=bool(user.is_admin))
        self.tree = await asyncio.to_thread(load_tree, user)
        self.loose = await asyncio.to_thread(load_loose, user)

    @rx.event
    async def open_first_chat(self):
        """Index page: go to the first chat there is, else stay on the project list."""
        for project in self.tree:
            if project.chats:
                return rx.redirect(f"/chat/{project.chats[0].id}")
        return None

    @rx.event
    async def new_chat(self, project_id: int):
        core = get_core()
        user = await self._user()
        chat = await asyncio.to_thread(chats.create_chat, core.db, core.clock, user, project_id)
        self.tree = await asyncio.to_thread(load_tree, user)
        return rx.redirect(f"/chat/{chat.id}")

    @rx.event
    async def new_loose_chat(self):
        """A chat outside any project (no schedules), opened at once."""
        core = get_core()
        user = await self._user()
        chat = await asyncio.to_thread(chats.create_chat, core.db, core.clock, user, None)
        self.loose = await asyncio.to_thread(load_loose, user)
        return rx.redirect(f"/chat/{chat.id}")

    @rx.event
    def set_project_dialog(self, open: bool):
        self.project_dialog, self.project_error = open, ""

    @rx.event
    async def create_project(self, form: dict):
        """A project named in the dialog, its creator a member (as ``manage create-project``)."""
        core = get_core()
        user = await self._user()
        try:
            await asyncio.to_thread(projects.create_project, core.db, core.clock, core.settings.workspaces_dir,
                                    form.get("name", ""), user, max_projects=core.settings.max_projects_per_user)
        except ChatcronError as exc:
            self.project_error = _project_message(exc)
            return
        self.project_dialog, self.project_error = False, ""
        self.tree = await asyncio.to_thread(load_tree, user)
