"""The chat page: transcript tailing (live, from any process), composer and skills."""

from __future__ import annotations

import asyncio

import reflex as rx

from app.core import chats, runs
from app.core.chats import SCHEDULED_TASKS, chat_skills
from app.core.context import get_core
from app.core.errors import ChatcronError, InvalidInput, NotFound
from app.core.text import storable
from app.ui.feed import feed_for
from app.ui.state.nav import NavState
from app.ui.transcript import merge_events, open_runs

POLL_SECONDS = 0.25
CONFIRM_EVERY = 20  # quiet polls between checks that a "working" run is still alive (heartbeat)


def _events(chat_id: int, after: int):  # list[Event]
    core = get_core()
    return runs.list_events(core.db, chat_id, after, runs.MAX_PAGE)


async def _fetch(chat_id: int, after: int):  # list[Event]
    return await asyncio.to_thread(_events, chat_id, after)


def _alive(chat_id: int) -> bool:
    core = get_core()
    return runs.live_run(core.db, core.clock, chat_id, core.settings.run_lease_seconds) is not None


class ChatState(NavState):
    chat_id: int = 0
    title: str = ""
    project_chat: bool = False
    schedules_skill: bool = False
    messages: list[dict[str, str]] = []
    busy: bool = False
    composer_error: str = ""
    missing: bool = False
    _cursor: int = 0
    _generation: int = 0
    _open_runs: list[int] = []

    @rx.event
    async def open_chat(self):
        core = get_core()
        user = self._user()
        raw = self.router.page.params.get("cid", "")
        self.missing = False
        try:
            chat = await asyncio.to_thread(chats.get_chat, core.db, user, int(raw))
        except (ValueError, NotFound):
            self.missing, self.chat_id, self.messages = True, 0, []
            return None
        self.chat_id, self.title = chat.id, chat.title
        self.project_chat = chat.project_id is not None
        self.schedules_skill = SCHEDULED_TASKS in chat_skills(chat)
        self.messages, self._cursor, self.composer_error, self.busy = [], 0, "", False
        self._open_runs = []
        self._generation += 1
        return ChatState.tail

    @rx.event(background=True)
    async def tail(self):
        """Follow the chat's event log until the page closes or another chat opens.

        The tab reads the log itself until it has caught up, then waits on the chat's shared feed
        (one poller per chat per worker, see app/ui/feed.py). "Working" comes from the run_started /
        run_finished events already read; only now and then (while working and quiet) is the run's
        heartbeat checked, for a process that died.
        """
        async with self:
            generation, chat_id = self._generation, self.chat_id
        quiet, feed = 0, None
        while True:
            async with self:
                if self._generation != generation:
                    return
                cursor = self._cursor
            events = await feed.after(cursor, POLL_SECONDS) if feed is not None else None
            if events is None:
                events = await asyncio.to_thread(_events, chat_id, cursor)
                if not events:
                    feed = feed_for(chat_id, cursor, _fetch)
            quiet = 0 if events else quiet + 1
            stale = quiet % CONFIRM_EVERY == 0 and quiet and not await asyncio.to_thread(_alive, chat_id)
            async with self:
                if self._generation != generation:
                    return
                if events:
                    self.messages = merge_events(self.messages, events)
                    self._cursor = events[-1].id
                    self._open_runs = open_runs(self._open_runs, events)
                    self.busy = bool(self._open_runs)
                elif stale and self.busy:
                    self._open_runs, self.busy = [], False
            if not events and feed is None:
                await asyncio.sleep(POLL_SECONDS)

    @rx.event
    async def send(self, form: dict):
        text = str(form.get("text", "")).strip()
        if not text:
            self.composer_error = "Type a message first."
            return None
        core = get_core()
        try:
            user = self._user()
            await asyncio.to_thread(chats.get_chat, core.db, user, self.chat_id)
            storable(text, "text")
            if len(text.encode()) > core.settings.prompt_max_bytes:
                raise InvalidInput("text", f"the message is longer than {core.settings.prompt_max_bytes} bytes")
            await asyncio.to_thread(core.prompts.start, self.chat_id, text)
        except ChatcronError as exc:
            self.composer_error = exc.message
            return rx.set_value("composer-input", text)  # the form cleared on submit: give the text back
        self.composer_error = ""
        self.busy = True
        return None

    @rx.event
    async def toggle_schedules_skill(self, enabled: bool):
        core = get_core()
        chat = await asyncio.to_thread(chats.get_chat, core.db, self._user(), self.chat_id)
        skills = set(chat_skills(chat))
        skills = skills | {SCHEDULED_TASKS} if enabled else skills - {SCHEDULED_TASKS}
        try:
            await asyncio.to_thread(chats.update_chat, core.db, core.clock, self._user(), self.chat_id,
                                    None, sorted(skills))
        except ChatcronError as exc:
            self.composer_error = exc.message
            return
        self.schedules_skill = enabled
