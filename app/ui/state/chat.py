"""The chat page: transcript tailing (live, from any process), composer and skills."""

from __future__ import annotations

import asyncio
import time

import reflex as rx
from reflex_base.event import EventSpec

from app.agents.identity import AgentIdentity, who_answers
from app.attention import approvals
from app.core import chats, runs
from app.core.chats import SCHEDULED_TASKS, chat_skills
from app.core.context import get_core
from app.core.errors import ChatcronError, InvalidInput, NotFound
from app.core.models import Event, EventType, Project, User
from app.core.text import clean_prompt
from app.ui import checks, inbox, project_budget, quiet_fires
from app.ui.budget_views import ChatBudget
from app.ui.feed import RESCAN_SECONDS, ChatFeed, feed_for
from app.ui.state.nav import NavState
from app.ui.state.session import AuthState, access_check, connected, may_read, session_user
from app.ui.times import for_events as fire_starts
from app.ui.transcript import merge_events, open_runs
from app.ui.usage import for_events as run_usage

POLL_SECONDS = 0.25  # an open tab's wait for new events on its chat's feed, and its poll before that
IDLE_WAIT_SECONDS = 0.5  # a caught-up tab's wait on the feed: then it checks its socket and the access mark
MARK_SEEN_SECONDS = 3.0  # while a chat is open, what it shows is recorded as seen at most this often
CONFIRM_EVERY = 20  # quiet polls between checks that a "working" run is still alive (heartbeat)


def _events(chat_id: int, after: int) -> list[Event]:
    core = get_core()
    return runs.list_events(core.db, chat_id, after, runs.MAX_PAGE)


async def _fetch(chat_id: int, after: int) -> list[Event]:
    return await asyncio.to_thread(_events, chat_id, after)


async def _newest() -> int:
    return await asyncio.to_thread(runs.newest_event_id, get_core().db)


async def _read(chat_id: int, cursor: int, feed: ChatFeed | None) -> tuple[list[Event], ChatFeed | None]:
    """Events after ``cursor``: from the chat's shared feed once caught up, else from the log."""
    events = await feed.after(cursor, IDLE_WAIT_SECONDS) if feed is not None else None
    if events is None:
        events = await asyncio.to_thread(_events, chat_id, cursor)
        if not events:
            # SQLite commits in id order: no event can appear below the newest id, no rescans needed
            feed = feed_for(chat_id, cursor, _fetch, _newest, None if get_core().db.sqlite else RESCAN_SECONDS)
    return events, feed


def _agent_of(project_id: int | None) -> AgentIdentity:
    """Which agent answers in a chat of this project (its access was checked with the chat)."""
    core = get_core()
    if project_id is None:
        return who_answers(core.settings, None)
    with core.db.read() as s:
        return who_answers(core.settings, s.get(Project, project_id))


def _alive(chat_id: int) -> bool:
    core = get_core()
    return runs.live_run(core.db, core.clock, chat_id, core.settings.run_lease_seconds) is not None


async def _mark_seen(user: User | None, chat_id: int, events: list[Event], marked: float) -> float:
    """Record what the open page shows as seen (a visit): at once for the first read and every finished
    turn, else at most every MARK_SEEN_SECONDS; returns when it last recorded."""
    if user is None or not events:
        return marked
    finished = any(e.type == EventType.RUN_FINISHED.value for e in events)
    if marked and not finished and time.monotonic() - marked < MARK_SEEN_SECONDS:
        return marked
    try:
        await asyncio.to_thread(inbox.mark_chat_seen, user, chat_id, events[-1].id)
    except Exception:  # a mark is a convenience: the next batch tries again
        return marked
    return time.monotonic()


async def _budget(project_id: int) -> ChatBudget | None:
    """The composer's budget line (SPEC §15), None when it cannot be read now (it stays as it was)."""
    try:
        return await asyncio.to_thread(project_budget.chat_budget, project_id)
    except Exception:  # a hint beside the composer: the next finished turn reads it again
        return None


def _field_message(exc: ChatcronError, field: str, subject: str) -> str:
    """"<subject> must not be empty." for the form's own field, the error's message otherwise."""
    if isinstance(exc, InvalidInput) and exc.field == field:
        return f"{subject} {exc.message.removeprefix(f'{field}: ')}."
    return exc.message


def _composer_message(exc: ChatcronError) -> str:
    return _field_message(exc, "text", "The message")


class ChatState(AuthState):
    chat_id: int = 0
    title: str = ""
    project_chat: bool = False
    schedules_skill: bool = False
    agent_kind: str = ""  # "demo" | "agent" | "unset" (app/agents/identity.py): the empty chat's help
    agent_label: str = ""  # the header's `chat-agent-badge`: "Claude Code · claude-sonnet-4-5"
    agent_about: str = ""  # its tooltip
    settings_href: str = ""  # the badge's link: the project's settings page ("" for a loose chat)
    messages: list[dict[str, str]] = []
    busy: bool = False
    stopping: bool = False  # a stop was asked for the running turn; it ends within a second
    composer_error: str = ""
    renaming: bool = False
    rename_error: str = ""
    missing: bool = False
    loaded: bool = False  # the log has been read once (an empty chat shows its help only then)
    divider_id: str = ""  # the row the "New since your last visit" line stands above ("" for none)
    budget_text: str = ""  # `chat-budget`: the project's daily budget today ("" when it has none)
    budget_detail: str = ""  # a spent budget's figures
    budget_spent: bool = False
    open_quiet: list[str] = []  # run ids of quiet "Nothing new" fires opened to their whole turn
    _project_id: int = 0
    _cursor: int = 0
    _generation: int = 0
    _open_runs: list[int] = []
    _seen: int = -1  # the newest event the user had seen at their last visit (-1: never opened)
    _divider_done: bool = False

    def _forget(self) -> None:
        generation = self._generation
        self.reset()
        self._generation = generation + 1  # a loop still running for the old data stops at its next step

    @rx.event
    async def open_chat(self):
        core = get_core()
        user = await self._user()
        self._forget()
        try:
            chat_id = checks.id_text(self.router.url.path.rstrip("/").rsplit("/", 1)[-1], "chat")  # /chat/<cid>
            chat = await asyncio.to_thread(chats.get_chat, core.db, user, chat_id)
        except (InvalidInput, NotFound):
            self.missing = True
            return None
        self.chat_id, self.title = chat.id, chat.title
        self.project_chat, self._project_id = chat.project_id is not None, chat.project_id or 0
        self.settings_href = f"/projects/{chat.project_id}/settings" if chat.project_id else ""
        self._show_budget(await _budget(self._project_id))
        self.schedules_skill = SCHEDULED_TASKS in chat_skills(chat)
        agent = await asyncio.to_thread(_agent_of, chat.project_id)
        self.agent_kind, self.agent_label, self.agent_about = agent.kind, agent.label, agent.provider_words
        seen = await asyncio.to_thread(inbox.chat_seen, user, chat.id)
        self._seen = -1 if seen is None else seen
        return ChatState.tail

    @rx.event(background=True)
    async def tail(self):
        """Follow the chat's event log until the page closes, another chat opens or access ends.

        The tab reads the log itself until it has caught up, then waits on the chat's shared feed
        (one poller per chat per worker, see app/ui/feed.py). Before anything read reaches the
        page, the session and the chat's access are checked again; while nothing arrives, they are
        checked when the worker's access mark moved (app/core/access.py) and every 60 s. The loop
        stops once the tab's socket is gone (a tail started by a crafted event is not cancelled by
        Reflex). "Working" comes from the run_started / run_finished events already read; only now
        and then (while working and quiet) is the run's heartbeat checked, for a process that died.
        An idle round changes nothing in the state, so it sends the page nothing.
        """
        async with self:
            self._generation += 1  # at most one loop per tab: a newer tail ends the older one
            generation, chat_id = self._generation, self.chat_id
            token, client = self._session_token(), self.router.session.client_token
            cursor, busy, project_id = self._cursor, self.busy, self._project_id
        quiet, feed, marked, access, shown = 0, None, 0.0, access_check(), False
        user = await asyncio.to_thread(session_user, token) if chat_id else None  # whose visit it records
        while chat_id:
            events, feed = await _read(chat_id, cursor, feed)
            if not await connected(client):
                return None
            if (events or await access.due()) and not await asyncio.to_thread(may_read, token, chat_id):
                return await self._signed_out(generation)
            quiet = 0 if events else quiet + 1
            confirm = quiet % CONFIRM_EVERY == 0 and quiet  # (a newer tail is noticed at least then)
            if confirm:  # (a send in this tab may have set busy since the loop last looked)
                async with self:
                    busy = self.busy
            stale = confirm and busy and not await asyncio.to_thread(_alive, chat_id)
            if events or confirm or not shown:  # (the first read shows the page, even an empty chat)
                usage = await run_usage(get_core().db, events) if events else {}
                fires = await fire_starts(get_core().db, events) if events else {}
                hushed = await quiet_fires.for_events(get_core().db, events) if events else {}
                ended = shown and project_id and any(e.type == EventType.RUN_FINISHED.value for e in events)
                budget = await _budget(project_id) if ended else None  # a turn ended: its spend is in
                async with self:
                    if self._generation != generation:
                        return None
                    self._show(events, stale, usage, fires, hushed)
                    self._show_budget(budget)
                    cursor, busy, shown = self._cursor, self.busy, True
            marked = await _mark_seen(user, chat_id, events, marked)
            if not events and feed is None:
                await asyncio.sleep(POLL_SECONDS)
        return None

    async def _signed_out(self, generation: int) -> EventSpec | None:
        """The session or the chat's access ended: forget the tab's data and go to the login page."""
        async with self:
            if self._generation != generation:
                return None
            await self._forget_tab()
        return rx.redirect("/login")

    def _show(self, events: list[Event], stale: bool, usage: dict, fires: dict, quiet: dict) -> None:
        self._update(loaded=True)  # set once: an unchanged poll sends the page nothing
        if events:
            self.messages = quiet_fires.fold(merge_events(self.messages, events, usage, fires), quiet)
            self._place_divider(len(events) < runs.MAX_PAGE)
            self._cursor = events[-1].id
            self._open_runs = open_runs(self._open_runs, events)
            self.busy = bool(self._open_runs)
        elif stale and self.busy:
            self._open_runs, self.busy = [], False
        if not self.busy:
            self._update(stopping=False)

    def _show_budget(self, budget: ChatBudget | None) -> None:
        if budget is not None:
            self._update(budget_text=budget.text, budget_detail=budget.detail, budget_spent=budget.spent)

    def _place_divider(self, caught_up: bool) -> None:
        """Above the first row newer than the last visit, decided while the log is first read (what
        arrives later, with the page open, is not "since the last visit"); none on a first visit."""
        if self._divider_done:
            return
        newer = inbox.divider_row(self._seen, self.messages)
        if newer:
            self.divider_id = newer
        self._divider_done = bool(newer) or caught_up

    @rx.event
    async def send(self, form: dict):
        core = get_core()
        text = form.get("text", "")
        try:
            text = clean_prompt(text, "text", core.settings.prompt_max_bytes)
            user = await self._user()
            await asyncio.to_thread(chats.get_chat, core.db, user, self.chat_id)
            await asyncio.to_thread(core.prompts.start, self.chat_id, text)
        except ChatcronError as exc:
            self.composer_error = _composer_message(exc)
            # The form cleared on submit: give the text back.
            return rx.set_value("composer-input", text) if isinstance(text, str) and text.strip() else None
        self.composer_error = ""
        self.busy = True
        return await self._retitled(user)

    async def _retitled(self, user: User) -> EventSpec | None:
        """A first message may have named the chat (app/core/chats.py): show it here and in the sidebar."""
        try:
            chat = await asyncio.to_thread(chats.get_chat, get_core().db, user, self.chat_id)
        except NotFound:
            return None
        if chat.title == self.title:
            return None
        self.title = chat.title
        return NavState.load_nav

    @rx.event
    async def stop(self):
        """Stop the chat's running turn, wherever it runs; it ends failed "stopped by <email>"."""
        core = get_core()
        user = await self._user()
        run_id = self._open_runs[-1] if self._open_runs else None
        try:
            await asyncio.to_thread(core.prompts.stop, user, self.chat_id, run_id)
        except ChatcronError as exc:
            self.composer_error = exc.message
            return
        self.composer_error, self.stopping = "", True

    @rx.event
    async def answer_approval(self, approval_id: str, option_id: str):
        """Answer an approval card with one of the agent's options (as POST /api/approvals/{id});
        the turn, wherever it runs, goes on and its updated tool event reaches every open tab."""
        core = get_core()
        approval = checks.id_text(str(approval_id), "approval")  # a forged id is refused like any bad argument
        user = await self._user()
        try:
            await asyncio.to_thread(approvals.answer, core.db, core.clock.now(), user, approval, option_id)
        except ChatcronError as exc:
            self.composer_error = exc.message
            return
        self.composer_error = ""

    @rx.event
    def toggle_quiet(self, run_id: str):
        """Open a folded "Nothing new" fire to its whole turn, or fold it again."""
        run = str(checks.id_text(run_id, "run_id"))
        self.open_quiet = [r for r in self.open_quiet if r != run] if run in self.open_quiet else \
            [*self.open_quiet, run]

    @rx.event
    def set_renaming(self, open: bool):
        self.renaming, self.rename_error = open, ""

    @rx.event
    async def rename(self, form: dict):
        """Rename the open chat (1..200 characters); the error stays in the page, nothing changes."""
        core = get_core()
        user = await self._user()
        try:
            chat = await asyncio.to_thread(chats.update_chat, core.db, core.clock, user, self.chat_id,
                                           form.get("title", ""))
        except ChatcronError as exc:
            self.rename_error = _field_message(exc, "title", "The name")
            return None
        self.title, self.renaming, self.rename_error = chat.title, False, ""
        return NavState.load_nav

    @rx.event
    async def toggle_schedules_skill(self, enabled: bool):
        core = get_core()
        user = await self._user()
        chat = await asyncio.to_thread(chats.get_chat, core.db, user, self.chat_id)
        skills = set(chat_skills(chat))
        skills = skills | {SCHEDULED_TASKS} if enabled else skills - {SCHEDULED_TASKS}
        try:
            await asyncio.to_thread(chats.update_chat, core.db, core.clock, user, self.chat_id,
                                    None, sorted(skills))
        except ChatcronError as exc:
            self.composer_error = exc.message
            return
        self.schedules_skill = enabled
