"""The inbox page (SPEC §13): approvals to answer, drafts to arm, tasks in error and the feed.

Kept live by :class:`~app.ui.state.attention.AttentionState`'s watcher, which calls ``refresh``
when something new happened while the page is on show (``attention.follow``)."""

from __future__ import annotations

import asyncio
import dataclasses

import reflex as rx

from app.core.errors import ChatcronError
from app.ui import checks, inbox
from app.ui.state import attention
from app.ui.state.attention import AttentionState
from app.ui.state.session import AuthState

ROUTE = "/inbox"
# Inline rather than through assets/notify.js, which may not have run yet when the page loads.
NOTIFY_READ_JS = ("(() => { try { return typeof Notification === 'function' && Notification.permission === 'granted'"
                  " && localStorage.getItem('chatcron-notify') === 'on'; } catch (e) { return false; } })()")


def notify_set_js(enabled: bool) -> str:
    return f"window.chatcronNotifySet && window.chatcronNotifySet({'true' if enabled else 'false'})"


class InboxState(AuthState):

    approvals: list[inbox.ApprovalCard] = []
    drafts: list[inbox.TaskCard] = []
    errors: list[inbox.TaskCard] = []
    items: list[inbox.FeedItem] = []
    unread: int = 0
    next_before: int = 0
    loaded: bool = False
    notice: str = ""
    armed: str = ""  # what arming a draft did ("Armed “standup”: first fire in 59 min, …")
    notify_on: bool = False
    _newest: int = 0

    def _take(self, found: inbox.Sections) -> None:
        self.approvals, self.drafts, self.errors = found.approvals, found.drafts, found.errors
        self.unread, self.loaded = found.unread, True

    @rx.event
    async def load(self):
        self.reset()
        found = await asyncio.to_thread(inbox.sections, await self._user())
        self._take(found)
        self.items, self.next_before, self._newest = found.items, found.next_before, found.newest
        return rx.call_script(NOTIFY_READ_JS, callback=InboxState.show_notify)

    @rx.event
    async def refresh(self):
        """The sections again; feed items newer than those shown go on top, older pages stay, and the
        shown ones that were read again take their new state (read, a draft armed, an approval answered)."""
        found = await asyncio.to_thread(inbox.sections, await self._user())
        self._take(found)
        top = self.items[0].id if self.items else 0
        fresh = [item for item in found.items if item.id > top]
        if len(fresh) == len(found.items):  # a gap (or nothing shown yet): start again from the newest
            self.items, self.next_before = found.items, found.next_before
        else:
            now = {item.id: item for item in found.items}
            self.items = fresh + [now.get(i.id, i) for i in self.items]
        self._newest = max(self._newest, found.newest)

    @rx.event
    async def older(self):
        if not self.next_before:
            return
        found = await asyncio.to_thread(inbox.sections, await self._user(), self.next_before)
        self.items = self.items + found.items
        self.next_before = found.next_before

    @rx.event
    async def mark_read(self):
        """Everything up to the newest item shown is read (the mark never moves back)."""
        if not self._newest:
            return
        mark = await asyncio.to_thread(inbox.mark_all_read, await self._user(), self._newest)
        self.items = [dataclasses.replace(i, unread=i.id > mark) for i in self.items]
        self.unread = sum(1 for i in self.items if i.unread)
        await (await self.get_state(AttentionState)).recount()

    @rx.event
    async def answer(self, approval_id: int, option_id: str):
        option_id = checks.text(option_id, "option_id", 200)
        try:
            await asyncio.to_thread(inbox.answer, await self._user(), approval_id, option_id)
            self.notice = ""
        except ChatcronError as exc:
            self.notice = exc.message
        await self.refresh()

    @rx.event
    async def arm(self, task_id: int):
        try:
            self.armed = await asyncio.to_thread(inbox.arm, await self._user(), task_id)
            self.notice = ""
        except ChatcronError as exc:
            self.notice, self.armed = exc.message, ""
        await self.refresh()

    @rx.event
    def set_notify(self, enabled: bool):
        """Ask the browser's permission (when turning on) and keep the choice in this browser."""
        self.notify_on = enabled
        return rx.call_script(notify_set_js(enabled), callback=InboxState.show_notify)

    @rx.event
    def show_notify(self, enabled: bool):
        self.notify_on = enabled


attention.follow(ROUTE, InboxState)
