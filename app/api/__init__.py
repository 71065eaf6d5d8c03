"""HTTP APIs served by the web process: the user API, browser auth, and (later) the agent API."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI
from starlette.types import ASGIApp

from app.api import (
    admin,
    agent,
    all_schedules,
    approvals,
    errors,
    exports,
    hooks,
    inbox,
    metrics,
    notifications,
    projects,
    schedules,
    user,
    web_auth,
)
from app.api.limits import BodyLimit
from app.api.origins import OriginGuard
from app.api.proxies import ProxyHeaders
from app.api.web_auth import PreLoginCookie
from app.core.context import Core


def behind_proxies(app: ASGIApp, trusted: tuple[str, ...]) -> ASGIApp:
    """Believe X-Forwarded-Proto/-For from these proxy addresses (so the cookie is Secure behind TLS)."""
    return ProxyHeaders(app, trusted) if trusted else app


def only_from(app: ASGIApp, origins: tuple[str, ...]) -> ASGIApp:
    """Refuse browser requests and socket handshakes from any other origin (SPEC §17)."""
    return OriginGuard(app, origins)


def create_api(core_provider: Callable[[], Core], max_body_bytes: int) -> FastAPI:
    """The FastAPI app; ``core_provider`` returns this process's core (lazily, so imports stay cheap)."""
    api = FastAPI(title="chatcron API", version="0.1.0", docs_url="/api/docs", openapi_url="/openapi.json",
                  redoc_url=None)
    api.state.core_provider = core_provider
    errors.install(api)
    api.include_router(user.router)
    api.include_router(projects.router)  # settings, members, audit (SPEC §18)
    api.include_router(admin.router)  # the server admin's people and agents (SPEC §18)
    api.include_router(exports.router)  # transcripts, schedules export and import (SPEC §21)
    api.include_router(schedules.router)
    api.include_router(hooks.router)  # POST /hooks/tasks/<id>: trigger URLs (SPEC §19)
    api.include_router(all_schedules.router)  # GET /api/schedules, POST /api/schedules/bulk
    api.include_router(notifications.router)
    api.include_router(approvals.router)
    api.include_router(inbox.router)
    api.include_router(agent.router)
    api.include_router(web_auth.router)
    api.include_router(metrics.router)
    api.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    api.add_middleware(PreLoginCookie)  # Reflex's pages are mounted inside this app: they pass through it
    return api
