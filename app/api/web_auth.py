"""Browser login and logout: plain form posts that set or clear an HttpOnly session cookie.

The cookie cannot be set from the page's websocket, so login is an ordinary HTTP round trip.
"""

from __future__ import annotations

from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from app.api.deps import core_of
from app.core import auth
from app.core.errors import InvalidCredentials

router = APIRouter(prefix="/auth", include_in_schema=False)


async def _form(request: Request) -> dict[str, str]:
    body = (await request.body()).decode("utf-8", "replace")
    return {k: v[0] for k, v in parse_qs(body, keep_blank_values=True).items()}


@router.post("/login")
async def login(request: Request) -> RedirectResponse:
    core = core_of(request)
    form = await _form(request)
    try:
        user = auth.authenticate(core.db, form.get("email", ""), form.get("password", ""))
    except InvalidCredentials:
        return RedirectResponse("/login?error=1", status_code=303)
    token = auth.create_session(core.db, core.clock, user.id, core.settings.session_ttl_seconds)
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(auth.SESSION_COOKIE, token, max_age=core.settings.session_ttl_seconds, httponly=True,
                        samesite="lax", secure=request.url.scheme == "https", path="/")
    return response


@router.post("/logout")
async def logout(request: Request) -> RedirectResponse:
    core = core_of(request)
    auth.end_session(core.db, request.cookies.get(auth.SESSION_COOKIE, ""))
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(auth.SESSION_COOKIE, path="/", httponly=True, samesite="lax")
    return response
