"""Who is logged in: the HttpOnly session cookie, checked server-side on every page load."""

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


class SessionState(rx.State):
    """The logged-in user; pages that need one call ``require_login`` on load."""

    user_email: str = ""
    _user_id: int = 0

    def _session_token(self) -> str:
        """The session cookie of this tab's connection ("" when there is none)."""
        return _cookie_value(self.router.headers.cookie, auth.SESSION_COOKIE)

    def _session_user(self) -> User | None:
        core = get_core()
        return auth.user_for_session(core.db, core.clock, self._session_token())

    def _user(self) -> User:
        """The user for this request; raises Unauthorized when the session ended."""
        user = self._session_user()
        if user is None:
            raise Unauthorized("your session has ended; log in again")
        return user

    @rx.event
    async def require_login(self):
        user = await asyncio.to_thread(self._session_user)
        if user is None:
            self.user_email = ""
            return rx.redirect("/login")
        self.user_email = user.email
        self._user_id = user.id
        return None

    @rx.event
    async def logout(self):
        """End the session row now; the HTTP round trip then clears the HttpOnly cookie."""
        token = _cookie_value(self.router.headers.cookie, auth.SESSION_COOKIE)
        await asyncio.to_thread(auth.end_session, get_core().db, token)
        self.user_email, self._user_id = "", 0
        return rx.call_script("window.location.assign('/auth/logout')")
