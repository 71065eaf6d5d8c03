"""The Schedules drawer: the chat's tasks, kept live while the drawer is open, and their controls."""

from __future__ import annotations

import asyncio
import json
import logging

import reflex as rx

from app.core.errors import ChatcronError, NotFound
from app.core.text import MAX_NAME
from app.ui import checks, tasks, trigger_views, triggers
from app.ui.marks import MarkWatch
from app.ui.schedule_views import TaskRow
from app.ui.state.chat import ChatState
from app.ui.state.session import AuthState, connected, session_user
from app.ui.timeline import Marker, Tick

log = logging.getLogger("chatcron.ui")
POLL_SECONDS = 1.0
RECOUNT_SECONDS = 60.0  # with the drawer closed, the counts are read when any task changed, and this often
GO, STOP, SIGNED_OUT = "go", "stop", "signed out"  # what one round of the watcher decided
CLOSED = "closed"  # go on; the drawer is closed, so rounds without a task change need not look at the state
BROWSER_ZONE_JS = "Intl.DateTimeFormat().resolvedOptions().timeZone"


def scroll_to_run_js(run_id: str) -> str:
    """Scroll the transcript to a run's first event and flash it (events carry data-run-id); the
    ``chatcron:scroll-intent`` event tells assets/transcript.js this scroll is the user's wish."""
    selector = json.dumps(f'[data-testid="event"][data-run-id="{run_id}"]')
    return (f"(() => {{ const el = document.querySelector({selector}); if (!el) return false;"
            " document.dispatchEvent(new Event('chatcron:scroll-intent'));"
            " el.scrollIntoView({behavior: 'smooth', block: 'center'});"
            " el.animate([{boxShadow: '0 0 0 3px var(--amber-9)'}, {boxShadow: '0 0 0 0 transparent'}],"
            " {duration: 1800, easing: 'ease-out'}); return true; })()")


class ScheduleState(AuthState):
    chat_id: int = 0  # the open chat's, copied from ChatState when the page loads
    project_chat: bool = False
    drawer_open: bool = False
    rows: list[TaskRow] = []
    markers: list[Marker] = []
    ticks: list[Tick] = []
    fire_total: str = ""
    lanes_height: str = "12px"
    dense: list[str] = []  # the cadence of each aggregated lane: "standup: every 10 min · 144/day"
    task_count: int = 0  # tasks still in play (not completed or exhausted)
    draft_count: int = 0  # drafts waiting for a user to arm them
    loaded: bool = False
    notice: str = ""  # a refused action's message, shown in the drawer
    browser_zone: str = "UTC"
    confirm_id: int = 0
    confirm_name: str = ""
    secret: str = ""  # a trigger URL's secret, right after it was made (shown once: never read back)
    secret_task: int = 0  # whose
    secret_made: str = ""  # when that secret was made: rotated or re-made elsewhere since, it is not shown
    revoke_id: int = 0  # the task whose trigger URL "Revoke?" asks about
    _origin: str = ""  # the page's origin (https://host:port): trigger URLs are shown on it
    _expanded: list[int] = []
    _watch: int = 0

    def _forget(self) -> None:
        generation = self._watch
        self.reset()
        self._watch = generation + 1  # the watcher of the old data stops at its next round

    @rx.event
    async def enter_chat(self):
        """Page load: the drawer starts closed and this page's watcher starts (Reflex cancels it
        with the page: on disconnect or navigation; the watcher's own checks end it otherwise)."""
        chat = await self.get_state(ChatState)
        zone = self.browser_zone
        self._forget()
        self.chat_id, self.project_chat, self.browser_zone = chat.chat_id, chat.project_chat, zone
        self._origin = trigger_views.origin_of(self.router.url.origin)
        if not self.project_chat:
            return None
        user = await self._user()
        self.task_count, self.draft_count = await asyncio.to_thread(tasks.count, user, self.chat_id)
        return [rx.call_script(BROWSER_ZONE_JS, callback=ScheduleState.set_browser_zone), ScheduleState.watch]

    @rx.event
    def set_browser_zone(self, zone: str):
        self.browser_zone = checks.zone(zone, "zone")

    @rx.event
    async def set_drawer_open(self, is_open: bool):
        """Opening shows the rows at once; from then on the watcher keeps them live."""
        self.drawer_open = is_open
        self.secret, self.secret_task = "", 0  # shown once: closing or reopening the drawer ends it
        if is_open:
            self.notice = ""
            await self.refresh_quietly()
            return ScheduleState.watch  # a closed drawer's watcher sleeps: a new one keeps the rows live
        return None

    @rx.event(background=True)
    async def watch(self):
        """Poll the chat's tasks every second while the drawer is open, until another chat opens,
        a newer watcher starts, the socket goes away or the session or the chat's access ends. With
        the drawer closed it reads the Schedules button's counts when some task changed (the tasks
        mark moved) and otherwise only sleeps; opening the drawer starts a newer watcher."""
        async with self:
            self._watch += 1  # at most one watcher per tab
            generation, chat_id = self._watch, self.chat_id
            token, client = self._session_token(), self.router.session.client_token
        changed = MarkWatch(tasks.TASKS, RECOUNT_SECONDS)  # the closed drawer's counts: on a change only
        verdict = GO
        try:
            while chat_id and await connected(client):
                count = await changed.due()
                if verdict == CLOSED and not count:  # (opening the drawer starts a newer watcher)
                    await asyncio.sleep(POLL_SECONDS)
                    continue
                verdict = await self._poll_once(generation, chat_id, token, bool(count))
                if verdict == SIGNED_OUT:
                    return rx.redirect("/login")
                if verdict == STOP:
                    return None
                await asyncio.sleep(POLL_SECONDS)
        finally:
            log.debug("action=schedules_watch_stopped chat_id=%s", chat_id)
        return None

    async def _poll_once(self, generation: int, chat_id: int, token: str, count: bool = False) -> str:
        """One round of the watcher: GO on, STOP, or SIGNED_OUT (the tab's data is cleared).
        With the drawer closed, only a ``count``-flagged round (some task changed) reads the button's counts."""
        async with self:
            if self._watch != generation:
                return STOP
            drawer_open = self.drawer_open
            zone, expanded, origin = self.browser_zone, list(self._expanded), self._origin
        if not drawer_open:
            if count:
                await self._count_quietly(generation, chat_id, token)
            return CLOSED
        try:
            user = await asyncio.to_thread(session_user, token)
            snap = await asyncio.to_thread(tasks.snapshot, user, chat_id, zone, expanded, origin) if user else None
        except NotFound:
            snap = None
        except ChatcronError as exc:  # refused for another reason: say so and stop
            async with self:
                self.notice = exc.message
            return STOP
        except Exception:  # a transient store error must not end live updates; try again shortly
            log.exception("action=schedules_poll_failed chat_id=%s", chat_id)
            await asyncio.sleep(POLL_SECONDS * 4)
            return GO
        async with self:
            if self._watch != generation:
                return STOP
            if snap is None:  # the session ended or the chat is no longer this user's to see
                await self._forget_tab()
                return SIGNED_OUT
            if self.drawer_open:
                self._show(snap)
        return GO

    async def _count_quietly(self, generation: int, chat_id: int, token: str) -> None:
        """The button's counts (a draft the agent made shows without opening the drawer); a
        failure leaves them as they were: the next full round reports it."""
        try:
            user = await asyncio.to_thread(session_user, token)
            counts = await asyncio.to_thread(tasks.count, user, chat_id) if user else None
        except Exception:  # a count is only a hint; the open drawer's rounds report errors
            return
        async with self:
            if counts is not None and self._watch == generation:
                self._update(task_count=counts[0], draft_count=counts[1])

    def _show(self, snap: tasks.Snapshot) -> None:
        line = snap.timeline
        self._update(rows=snap.rows, markers=line.markers, ticks=line.ticks, fire_total=line.label,
                     lanes_height=line.height, dense=line.dense, task_count=snap.live, draft_count=snap.drafts,
                     loaded=True)

    async def _reload(self) -> None:
        user = await self._user()
        self._show(await asyncio.to_thread(tasks.snapshot, user, self.chat_id, self.browser_zone,
                                           list(self._expanded), self._origin))

    @rx.event
    async def refresh(self):
        try:
            await self._reload()
        except ChatcronError as exc:
            self.notice = exc.message
            return
        self.notice = ""

    @rx.event
    async def act(self, action: str, task_id: int):
        """One control of a row; a refusal's message goes to the drawer's callout."""
        action = checks.choice(action, "action", tasks.ACTIONS)
        try:
            user = await self._user()
            await asyncio.to_thread(tasks.act, user, action, task_id)
            self.notice = ""
        except ChatcronError as exc:
            self.notice = exc.message
        await self.refresh_quietly()

    async def refresh_quietly(self) -> None:
        try:
            await self._reload()
        except ChatcronError:
            pass  # the notice already says what went wrong

    @rx.event
    def ask_delete(self, task_id: int, name: str):
        self.confirm_id, self.confirm_name = task_id, checks.text(name, "name", MAX_NAME)

    @rx.event
    def set_confirm_open(self, is_open: bool):
        if not is_open:
            self.confirm_id = 0

    @rx.event
    async def confirm_delete(self):
        task_id, self.confirm_id = self.confirm_id, 0
        if task_id:
            return ScheduleState.act("delete", task_id)
        return None

    @rx.event
    async def toggle_history(self, task_id: int):
        if task_id not in {row.id for row in self.rows}:  # only rows on show: the list stays small
            raise NotFound("that schedule is not in this chat's list")
        expanded = set(self._expanded)
        self._expanded = sorted(expanded ^ {task_id})
        await self.refresh_quietly()

    @rx.event
    def show_run(self, run_id: str):
        """Scroll the transcript to the turn a fire started."""
        if run_id:
            return rx.call_script(scroll_to_run_js(str(checks.id_text(run_id, "run_id"))))
        return None

    @rx.event
    async def make_trigger(self, task_id: int, rotate: bool):
        """Create the task's trigger URL (``rotate``: or rotate its secret); the secret shows in its card, once."""
        try:
            user = await self._user()
            _, secret, made = await asyncio.to_thread(triggers.make, user, task_id, rotate)
        except ChatcronError as exc:
            self.notice = exc.message
            await self.refresh_quietly()
            return
        self.secret, self.secret_task, self.secret_made, self.notice = secret, task_id, made, ""
        await self.refresh_quietly()

    @rx.event
    def hide_secret(self):
        self.secret, self.secret_task = "", 0

    @rx.event
    def ask_revoke(self, task_id: int):
        self.revoke_id = task_id

    @rx.event
    def set_revoke_open(self, is_open: bool):
        if not is_open:
            self.revoke_id = 0

    @rx.event
    async def confirm_revoke(self):
        """End the asked-about task's trigger URL: calls of it are refused from now on."""
        task_id, self.revoke_id = self.revoke_id, 0
        if not task_id:
            return
        try:
            user = await self._user()
            await asyncio.to_thread(triggers.revoke, user, task_id)
        except ChatcronError as exc:
            self.notice = exc.message
            return
        if self.secret_task == task_id:
            self.secret, self.secret_task = "", 0
        self.notice = ""
        await self.refresh_quietly()
