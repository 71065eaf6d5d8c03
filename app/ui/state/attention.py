"""Unread counts in the sidebar (the inbox's and each chat's), kept live in every open page, and
the browser notifications of new attention events (SPEC §13).

The same watcher keeps the tab's access honest (SPEC §17): when the worker's access mark moved
(app/core/access.py) it asks whether the session still holds — if not, the tab's data is cleared and
it goes to the login page, whatever page it shows — and redraws the sidebar when the user's
projects changed (access revoked, a project gone).

One watcher per tab polls :func:`app.attention.reads.change_mark` every ``POLL_SECONDS``:
three index-only reads, the same for every user, shared by the worker's tabs. Only when the mark
moved (a turn started or finished, a draft or an approval appeared somewhere) does it count this
user's unread items — and every ``RECOUNT_EVERY`` rounds anyway, for what changes no mark (an
answer, a visit in another tab).
"""

from __future__ import annotations

import asyncio
import json
import logging

import reflex as rx

from app.ui import inbox
from app.ui.marks import MOVED
from app.ui.state.nav import NavState, load_tree
from app.ui.state.session import AuthState, access_check, connected, session_user

log = logging.getLogger("chatcron.ui")
POLL_SECONDS = 1.0
RECOUNT_EVERY = 60  # rounds (seconds): an idle tab recounts this rarely; a moved mark recounts at once
_FOLLOWERS: dict[str, type] = {}  # route → the state of a page showing attention events (see follow)


def follow(route: str, state: type) -> None:
    """Have the watcher call ``state.refresh`` when something new happened (and on its periodic
    recount) while ``route`` is on show and ``state.loaded`` (the inbox page)."""
    _FOLLOWERS[route] = state


class AttentionState(AuthState):
    inbox_unread: int = 0
    chat_unread: dict[str, int] = {}  # chat id → finished turns since the user's last visit
    _notified: int = 0  # newest attention event this tab has offered as a notification
    _watch: int = 0

    def _forget(self) -> None:
        generation = self._watch
        self.reset()
        self._watch = generation + 1  # a watcher of the old data stops at its next round

    async def _show(self, counts: inbox.Counts) -> None:
        open_chat = str((await self.get_state(NavState)).current_chat_id)
        chats = {cid: n for cid, n in counts.chats.items() if cid != open_chat}  # the open chat is being read
        self._update(chat_unread=chats, inbox_unread=counts.inbox)

    @rx.event
    async def start(self):
        """Page load: counts now, then the watcher (Reflex cancels it with the page)."""
        user = await self._user()
        counts = await asyncio.to_thread(inbox.counts, user)
        self._notified = await asyncio.to_thread(inbox.newest_event, user)
        await self._show(counts)
        return AttentionState.watch

    async def recount(self) -> None:
        """Counts again now (after the user's own action: a visit, mark read, an answer)."""
        counts = await asyncio.to_thread(inbox.counts, await self._user())
        await self._show(counts)

    @rx.event(background=True)
    async def watch(self):
        async with self:
            self._watch += 1  # at most one watcher per tab
            generation = self._watch
            token, client = self._session_token(), self.router.session.client_token
        rounds, mark, access = 0, None, access_check()
        while await connected(client):
            await asyncio.sleep(POLL_SECONDS)
            rounds += 1
            if due := await access.due():
                held = await self._access_held(generation, token, due == MOVED)
                if held is None:
                    return
                if not held:
                    yield rx.redirect("/login")
                    return
            try:
                now = await inbox.CHANGES.get()  # (a fresh mark without a thread hop)
            except Exception:  # the store may be briefly away: the next round retries
                continue
            if now == mark and rounds % RECOUNT_EVERY:
                continue
            moved, mark = now != mark, now  # the first round too: something may have happened since start
            verdict = await self._round(generation, token, moved)
            if verdict is None:
                return
            if verdict:
                yield verdict

    async def _access_held(self, generation: int, token: str, moved: bool) -> bool | None:
        """False when the session ended (the tab's data is cleared), True when it holds (after the access
        mark ``moved``, the sidebar drops a project the user lost), None when a newer watcher runs."""
        try:
            user = await asyncio.to_thread(session_user, token)
            tree = await asyncio.to_thread(load_tree, user) if user is not None and moved else None
        except Exception:  # the store may be briefly away: the next mark or recheck asks again
            log.exception("action=attention_access_check_failed")
            return True
        async with self:
            if self._watch != generation:
                return None
            if user is None:
                await self._forget_tab()
                return False
            nav = await self.get_state(NavState)
            if tree is not None and nav.tree != tree:
                nav.tree = tree
        return True

    async def _round(self, generation: int, token: str, moved: bool):
        """One counting round: None to stop, a list of events for the page (maybe empty) otherwise."""
        user = await asyncio.to_thread(session_user, token)
        if user is None:
            return None
        try:
            counts = await asyncio.to_thread(inbox.counts, user)
            async with self:
                after = self._notified
            fresh, newest = await asyncio.to_thread(inbox.to_notify, user, after) if moved else ([], after)
        except Exception:
            log.exception("action=attention_round_failed")
            return []
        async with self:
            if self._watch != generation:
                return None
            await self._show(counts)
            self._notified = max(self._notified, newest)
            page = _FOLLOWERS.get(self.router.url.path.rstrip("/"))  # moved, or the periodic round
            live = [page.refresh] if page is not None and (await self.get_state(page)).loaded else []
        notify = f"window.chatcronNotify && window.chatcronNotify({json.dumps(fresh)})"
        return ([rx.call_script(notify)] if fresh else []) + live
