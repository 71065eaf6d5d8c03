"""Who is logged in: the HttpOnly session cookie, checked server-side against the database.

``AuthState`` is the one small base of every page state. Its children (nav, chat, schedules,
schedule form, login) are siblings that reach each other with ``await self.get_state(Other)``,
so an event of one of them loads only it and this base, never the others' data.
"""

from __future__ import annotations

import asyncio
from http.cookies import SimpleCookie

import reflex as rx

from app.core import auth
from app.core.context import get_core
from app.core.errors import Unauthorized
from app.core.models import User


def _cookie_value(header: str, name: str) -> str:
    jar = SimpleCookie()
    try:
        jar.load(header or "")
    except Exception:  # a malformed cookie header is the same as none
        return ""
    morsel = jar.get(name)
    return morsel.value if morsel else ""


def session_user(token: str) -> User | None:
    """Blocking: the user of a live session cookie, or None (call through ``asyncio.to_thread``)."""
    core = get_core()
    return auth.user_for_session(core.db, core.clock, token)


class AuthState(rx.State):
    """The logged-in user; pages that need one call ``require_login`` on load."""

    user_email: str = ""
    _user_id: int = 0

    def _session_token(self) -> str:
        """The session cookie of this tab's connection ("" when there is none)."""
        return _cookie_value(self.router.headers.cookie, auth.SESSION_COOKIE)

    async def _session_user(self) -> User | None:
        return await asyncio.to_thread(session_user, self._session_token())

    async def _user(self) -> User:
        """The user for this request; raises Unauthorized when the session ended."""
        user = await self._session_user()
        if user is None:
            raise Unauthorized("your session has ended; log in again")
        return user

    @rx.event
    async def require_login(self):
        user = await self._session_user()
        if user is None:
            self.user_email, self._user_id = "", 0
            return rx.redirect("/login")
        self.user_email, self._user_id = user.email, user.id
        return None

    @rx.event
    async def logout(self):
        """End the session row now; the HTTP round trip then clears the HttpOnly cookie."""
        await asyncio.to_thread(auth.end_session, get_core().db, self._session_token())
        self.user_email, self._user_id = "", 0
        return rx.call_script("window.location.assign('/auth/logout')")
