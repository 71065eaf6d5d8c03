"""Browser login and logout over plain HTTP, so the session cookie can be HttpOnly.

The login page checks the password through its websocket and gets a single-use ticket;
``/auth/claim`` burns the ticket and sets the cookie. ``/auth/logout`` ends the session.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from app.api.deps import core_of
from app.core import auth

router = APIRouter(prefix="/auth", include_in_schema=False)


@router.get("/claim")
def claim(request: Request, ticket: str = "") -> RedirectResponse:
    core = core_of(request)
    token = auth.redeem_login_ticket(core.db, core.clock, ticket, core.settings.session_ttl_seconds)
    if token is None:
        return RedirectResponse("/login?error=expired", status_code=303)
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(auth.SESSION_COOKIE, token, max_age=core.settings.session_ttl_seconds, httponly=True,
                        samesite="lax", secure=request.url.scheme == "https", path="/")
    return response


@router.api_route("/logout", methods=["GET", "POST"])
def logout(request: Request) -> RedirectResponse:
    core = core_of(request)
    auth.end_session(core.db, request.cookies.get(auth.SESSION_COOKIE, ""))
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(auth.SESSION_COOKIE, path="/", httponly=True, samesite="lax")
    return response
