"""The sidebar: projects the user can see and their chats."""

from __future__ import annotations

import asyncio
import dataclasses

import reflex as rx

from app.core import chats, projects
from app.core.context import get_core
from app.core.models import User
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


class NavState(AuthState):
    tree: list[ProjectNode] = []

    @rx.event
    async def load_nav(self):
        self.tree = await asyncio.to_thread(load_tree, await self._user())

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
        chat = await asyncio.to_thread(chats.create_chat, core.db, core.clock, user, project_id, "New chat")
        self.tree = await asyncio.to_thread(load_tree, user)
        return rx.redirect(f"/chat/{chat.id}")
