"""The All schedules page (SPEC §13): every task the user can see, filters, selection and bulk
pause / resume, refreshed every few seconds while the tab is open."""

from __future__ import annotations

import asyncio
import logging

import reflex as rx

from app.core.errors import ChatcronError, InvalidInput, NotFound
from app.ui import all_tasks, checks
from app.ui.all_tasks import AllRow, ProjectOption
from app.ui.state.session import AuthState, connected, session_user

log = logging.getLogger("chatcron.ui")
POLL_SECONDS = 5.0
BROWSER_ZONE_JS = "Intl.DateTimeFormat().resolvedOptions().timeZone"
ACTIONS = ("pause", "resume")
PATH = "/schedules"


class AllSchedulesState(AuthState):
    rows: list[AllRow] = []
    projects: list[ProjectOption] = []
    status_filter: str = all_tasks.ALL
    project_filter: str = all_tasks.ALL
    selected: list[int] = []
    more: bool = False  # more tasks than the page shows
    loaded: bool = False
    notice: str = ""  # what the last bulk action did, or why the list could not be read
    notice_error: bool = False
    browser_zone: str = "UTC"
    _watch: int = 0

    def _forget(self) -> None:
        generation = self._watch
        self.reset()
        self._watch = generation + 1  # the running watcher stops at its next round

    def _on_page(self) -> bool:
        """Whether the tab's latest event came from this page (the router follows its navigation)."""
        return self.router.url.path.rstrip("/").endswith(PATH)

    def _project_id(self) -> int | None:
        return None if self.project_filter == all_tasks.ALL else int(self.project_filter)

    def _show(self, listing: all_tasks.Listing) -> None:
        self._update(rows=listing.rows, projects=listing.projects, more=listing.more, loaded=True)
        shown = {row.id for row in self.rows}
        self._update(selected=[i for i in self.selected if i in shown])

    async def _reload(self) -> None:
        user = await self._user()
        try:
            listing = await asyncio.to_thread(all_tasks.listing, user, self.status_filter, self._project_id(),
                                              self.browser_zone)
        except NotFound:  # the project went away or its access ended: show every project instead
            self.project_filter = all_tasks.ALL
            listing = await asyncio.to_thread(all_tasks.listing, user, self.status_filter, None, self.browser_zone)
        self._show(listing)

    @rx.event
    async def enter(self):
        """Page load: the list at once, the browser's zone, and the page's watcher."""
        zone = self.browser_zone
        self._forget()
        self.browser_zone = zone
        await self._reload()
        return [rx.call_script(BROWSER_ZONE_JS, callback=AllSchedulesState.set_browser_zone),
                AllSchedulesState.watch]

    @rx.event
    async def set_browser_zone(self, zone: str):
        self.browser_zone = checks.zone(zone, "zone")
        await self._reload()

    @rx.event
    async def set_status_filter(self, status: str):
        self.status_filter = checks.choice(status, "status", all_tasks.STATUSES)
        await self._reload()

    @rx.event
    async def set_project_filter(self, project: str):
        if project != all_tasks.ALL:
            checks.id_text(project, "project")
        self.project_filter = project
        await self._reload()

    @rx.event
    def toggle_select(self, task_id: int, checked: bool):
        if task_id not in {row.id for row in self.rows}:
            raise InvalidInput("task_id", "is not a schedule on this page")
        rest = [i for i in self.selected if i != task_id]
        self.selected = [*rest, task_id] if checked else rest

    @rx.event
    def select_all(self, checked: bool):
        self.selected = [row.id for row in self.rows] if checked else []

    @rx.event
    async def bulk(self, action: str):
        """Pause or resume the selected tasks, each through its own rules; say what happened."""
        action = checks.choice(action, "action", ACTIONS)
        if not self.selected:
            self.notice, self.notice_error = "Select one or more schedules first.", True
            return
        names = {row.id: row.name for row in self.rows}
        user = await self._user()
        done, self.notice = await asyncio.to_thread(all_tasks.act, user, action, list(self.selected), names)
        self.notice_error = len(done) < len(self.selected)
        self.selected = [i for i in self.selected if i not in set(done)]
        await self._reload()

    @rx.event
    async def refresh(self):
        await self._reload()

    @rx.event(background=True)
    async def watch(self):
        """Re-read the list every POLL_SECONDS until the tab goes away or to another page, a newer
        watcher starts, or the session ends (then the tab's data is cleared and it goes to the login page)."""
        async with self:
            self._watch += 1
            generation, token = self._watch, self._session_token()
            client = self.router.session.client_token
        while await connected(client):
            await asyncio.sleep(POLL_SECONDS)
            async with self:
                if self._watch != generation or not self._on_page():
                    return None  # a newer watcher, or the tab is on another page (Reflex also cancels it then)
                status, project, zone = self.status_filter, self._project_id(), self.browser_zone
            try:
                user = await asyncio.to_thread(session_user, token)
                listing = await asyncio.to_thread(all_tasks.listing, user, status, project, zone) if user else None
            except ChatcronError:  # a filter gone stale: the next explicit load says so
                continue
            except Exception:  # a transient store error must not end the updates
                log.exception("action=all_schedules_poll_failed")
                continue
            async with self:
                if self._watch != generation:
                    return None
                if listing is None:
                    await self._forget_tab()
                    return rx.redirect("/login")
                if (self.status_filter, self._project_id()) == (status, project):
                    self._show(listing)
        return None
