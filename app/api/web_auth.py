"""Browser login and logout over plain HTTP, so the session cookie can be HttpOnly.

The login page checks the password through its websocket and gets a single-use ticket;
``/auth/claim`` burns the ticket and sets the cookie. ``POST /auth/logout`` (from the page) ends the session.

The ticket is bound to the browser that logged in (SPEC §17): every page load of a browser that
has no pre-login cookie gives it one (``PreLoginCookie``: a random nonce, HttpOnly, SameSite=Lax);
the page's websocket handshake carries it to the login handler, which stores its digest with the
ticket; ``/auth/claim`` accepts the ticket only with the same cookie. Another browser opening
someone's claim link (a login CSRF, or a leaked ticket) is sent back to the login page.
"""

from __future__ import annotations

import secrets

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, RedirectResponse
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.deps import core_of
from app.core import auth, devices

router = APIRouter(prefix="/auth", include_in_schema=False)
NONCE_MAX_AGE = 400 * 24 * 3600  # the longest browsers keep a cookie; the nonce is only a browser's name


@router.get("/claim")
def claim(request: Request, ticket: str = "") -> RedirectResponse:
    core = core_of(request)
    nonce = auth.cookie_value(request.headers.get("cookie", ""), auth.LOGIN_COOKIE)
    token = auth.redeem_login_ticket(core.db, core.clock, ticket, nonce, core.settings.session_ttl_seconds)
    if isinstance(token, auth.TicketRefusal):
        return RedirectResponse(f"/login?error={token.value}", status_code=303)
    response = RedirectResponse("/", status_code=303)
    secure = request.url.scheme == "https"
    response.set_cookie(auth.SESSION_COOKIE, token, max_age=core.settings.session_ttl_seconds, httponly=True,
                        samesite="lax", secure=secure, path="/")
    user = auth.user_for_session(core.db, core.clock, token)
    if user is not None:  # this browser is now known to the account: a way past a locked address (docs/SECURITY.md)
        known = devices.issue(user, auth.cookie_value(request.headers.get("cookie", ""), devices.DEVICE_COOKIE))
        response.set_cookie(devices.DEVICE_COOKIE, known, max_age=devices.DEVICE_MAX_AGE, httponly=True,
                            samesite="lax", secure=secure, path="/")
    return response


@router.post("/logout", response_model=None)
def logout(request: Request) -> RedirectResponse | JSONResponse:
    """Only a POST from a page: a GET (``<img src=…/auth/logout>`` on another site) is a 405, and a POST
    must name its page's origin — the origin guard (app/api/origins.py) has refused every origin not
    in CHATCRON_ALLOWED_ORIGINS before this runs; browsers send ``Origin`` with every POST."""
    if not request.headers.get("origin"):
        message = "logout must be sent from this site's own page: the request names no Origin"
        return JSONResponse({"error": {"code": "forbidden_origin", "message": message}}, status_code=403)
    core = core_of(request)
    auth.end_session(core.db, request.cookies.get(auth.SESSION_COOKIE, ""))
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(auth.SESSION_COOKIE, path="/", httponly=True, samesite="lax")
    return response


class PreLoginCookie:
    """ASGI middleware: a page load (a GET that accepts HTML) from a browser without a usable
    pre-login cookie gets one. It is decided on the request, so a 304 sets it as well; it is set
    only when missing, so every tab of a browser shares it and an open login page stays valid."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _needs_nonce(scope):
            await self.app(scope, receive, send)
            return
        cookie = _nonce_cookie(secrets.token_urlsafe(32), scope.get("scheme") == "https")

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message).append("set-cookie", cookie)
            await send(message)

        await self.app(scope, receive, send_with_cookie)


def _needs_nonce(scope: Scope) -> bool:
    if scope.get("method") not in ("GET", "HEAD"):
        return False
    headers = {name: value for name, value in scope.get("headers", ())}
    if b"text/html" not in headers.get(b"accept", b""):
        return False
    sent = b"; ".join(value for name, value in scope.get("headers", ()) if name == b"cookie")
    return not auth.cookie_value(sent.decode("latin-1"), auth.LOGIN_COOKIE)


def _nonce_cookie(nonce: str, secure: bool) -> str:
    return (f"{auth.LOGIN_COOKIE}={nonce}; Max-Age={NONCE_MAX_AGE}; Path=/; HttpOnly; SameSite=Lax"
            + ("; Secure" if secure else ""))
