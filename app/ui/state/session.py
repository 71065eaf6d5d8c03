"""Who is logged in: the HttpOnly session cookie, checked server-side against the database.

``AuthState`` is the one small base of every page state. Its children (nav, chat, schedules,
schedule form, login) are siblings that reach each other with ``await self.get_state(Other)``,
so an event of one of them loads only it and this base, never the others' data.

``app/ui/guard.py`` checks the session of every event that is not :func:`public` before its
handler runs and leaves the user in :data:`CURRENT_USER` for ``_user()``; a background loop
re-checks on every read with :func:`may_read`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextvars import ContextVar
from http.cookies import SimpleCookie
from typing import TypeVar

import reflex as rx
from reflex_base.registry import RegistrationContext

from app.core import access, auth, chats
from app.core.context import get_core
from app.core.errors import NotFound, Unauthorized
from app.core.models import User
from app.ui.marks import MarkWatch, SharedMark

CURRENT_USER: ContextVar[User | None] = ContextVar("chatcron_ui_user", default=None)
F = TypeVar("F", bound=Callable)
PUBLIC_MARK = "_chatcron_public"
# Logout is a POST from the page (its Origin header is checked); the answer sends the browser to /login.
LOGOUT_JS = ("const f = document.createElement('form'); f.method = 'post'; f.action = '/auth/logout'; "
             "document.body.appendChild(f); f.submit();")
ACCESS_MARK_MAX_AGE = 0.25  # s: a worker reads the access mark at most this often, however many tabs ask
RECHECK_SECONDS = 60.0  # a tab's loop asks again anyway this often (a session that simply expired)
ACCESS = SharedMark(lambda: access.access_mark(get_core().db), ACCESS_MARK_MAX_AGE)


def access_check() -> MarkWatch:
    """When a tab's loop must ask again whether its session (and access) still hold: when the worker's
    access mark moved since it last asked (app/core/access.py), and every RECHECK_SECONDS anyway."""
    return MarkWatch(ACCESS, RECHECK_SECONDS)


def public(fn: F) -> F:
    """Mark a handler a visitor without a session may call (the login form, the door itself)."""
    setattr(fn, PUBLIC_MARK, True)
    return fn


def _cookie_value(header: str, name: str) -> str:
    jar = SimpleCookie()
    try:
        jar.load(header or "")
    except Exception:  # a malformed cookie header is the same as none
        return ""
    morsel = jar.get(name)
    return morsel.value if morsel else ""


def session_token(cookie_header: str) -> str:
    return _cookie_value(cookie_header, auth.SESSION_COOKIE)


def session_user(token: str) -> User | None:
    """Blocking: the user of a live session cookie, or None (call through ``asyncio.to_thread``)."""
    core = get_core()
    return auth.user_for_session(core.db, core.clock, token)


def may_read(token: str, chat_id: int) -> bool:
    """Blocking: whether the session is live and its user may still see the chat."""
    user = session_user(token)
    if user is None:
        return False
    try:
        chats.get_chat(get_core().db, user, chat_id)
    except NotFound:
        return False
    return True


async def connected(client_token: str) -> bool:
    """Whether the tab's socket is still open; a background loop stops once it is not."""
    namespace = RegistrationContext.get().app.event_namespace
    if namespace is None:
        return False
    # Reflex's own shared-state code asks its token manager the same way (reflex/istate/shared.py).
    return await namespace._token_manager.is_token_connected(client_token)


class AuthState(rx.State):
    """The logged-in user; pages that need one call ``require_login`` on load."""

    user_email: str = ""

    def _session_token(self) -> str:
        """The session cookie of this tab's connection ("" when there is none)."""
        return session_token(self.router.headers.cookie)

    async def _user(self) -> User:
        """The user for this event (checked by the guard); raises Unauthorized when the session ended."""
        user = CURRENT_USER.get() or await asyncio.to_thread(session_user, self._session_token())
        if user is None:
            raise Unauthorized("your session has ended; log in again")
        return user

    def _update(self, **values: object) -> None:
        """Set only the fields whose value changed: Reflex sends every assigned field to the page, equal
        or not, and an idle page's poll should send nothing."""
        for name, value in values.items():
            if getattr(self, name) != value:
                setattr(self, name, value)

    def _forget(self) -> None:
        """Drop what this page state holds of its user (overridden by states with loop counters)."""
        self.reset()

    async def _forget_tab(self) -> None:
        """Clear every page state of the tab, so nothing of the user stays in its state."""
        self.user_email = ""
        for state_cls in AuthState.get_substates():
            (await self.get_state(state_cls))._forget()

    @rx.event
    @public
    async def require_login(self):
        user = await asyncio.to_thread(session_user, self._session_token())
        if user is None:
            await self._forget_tab()
            return rx.redirect("/login")
        self.user_email = user.email
        return None

    @rx.event
    @public
    async def sign_out(self):
        """The session ended (here or elsewhere): forget the tab's data and go to the login page."""
        await self._forget_tab()
        return rx.redirect("/login")

    @rx.event
    @public
    async def logout(self):
        """End the session row now; the HTTP round trip then clears the HttpOnly cookie."""
        await asyncio.to_thread(auth.end_session, get_core().db, self._session_token())
        await self._forget_tab()
        return rx.call_script(LOGOUT_JS)
