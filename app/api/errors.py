"""The one place where exceptions become HTTP answers: ``{"error": {"code", "message"}}``."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.core import errors as core
from app.core.auth import TooManyAttempts
from app.core.db import StoreError
from app.schedules.hooks import PayloadTooLarge, TooManyCalls

log = logging.getLogger("chatcron.api")

STATUS = {
    TooManyAttempts: 429,
    TooManyCalls: 429,
    PayloadTooLarge: 413,
    core.InvalidInput: 400,
    core.Unauthorized: 401,
    core.Forbidden: 403,
    core.NotFound: 404,
    core.Conflict: 409,
    core.AgentUnavailable: 503,
}
HTTP_CODES = {400: "invalid", 401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
              409: "conflict", 413: "too_large", 415: "unsupported_media_type",
              429: "too_many_attempts", 503: "unavailable"}


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


def status_of(exc: core.ChatcronError) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 400


def _field_of(loc: tuple) -> tuple[str, bool]:
    """A dotted field name from a pydantic location, and whether it is a path parameter."""
    parts = [str(p) for p in loc]
    where = parts[0] if parts else "body"
    rest = parts[1:]
    return (".".join(rest) or where), where == "path"


def validation_message(exc: RequestValidationError) -> tuple[int, str]:
    first = exc.errors()[0]
    field, in_path = _field_of(tuple(first.get("loc", ())))
    kind = first.get("type", "")
    if in_path:
        return 404, f"{field}: no such resource"
    if kind == "json_invalid":
        return 400, "body: is not valid JSON"
    if kind == "extra_forbidden":
        return 400, f"{field}: unknown field"
    if kind == "missing":
        return 400, f"{field}: is required"
    if field == "body" and kind in ("model_attributes_type", "dict_type"):
        return 400, "body: must be a JSON object (sent as Content-Type: application/json)"
    return 400, f"{field}: {first.get('msg', 'invalid value')}"


def install(app: FastAPI) -> None:
    @app.exception_handler(core.ChatcronError)
    async def _domain(_req: Request, exc: core.ChatcronError) -> JSONResponse:
        status = status_of(exc)
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        if isinstance(exc, TooManyCalls):
            headers = {"Retry-After": str(exc.retry_after)}
        return error_response(status, exc.code, exc.message, headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(_req: Request, exc: RequestValidationError) -> JSONResponse:
        status, message = validation_message(exc)
        return error_response(status, HTTP_CODES[status], message)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_req: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = HTTP_CODES.get(exc.status_code, "error")
        message = str(exc.detail)
        if exc.status_code == 400 and "error parsing the body" in message:
            message = "body: is not valid JSON (it could not be parsed as UTF-8 JSON of reasonable depth)"
        return error_response(exc.status_code, code, message)

    @app.exception_handler(StoreError)
    async def _store(_req: Request, exc: StoreError) -> JSONResponse:
        return error_response(503, "unavailable", f"the database is unavailable: {exc}")
