"""Request dependencies: the process core and the caller's identity."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import Path, Request
from pydantic import BeforeValidator

from app.core import auth
from app.core.context import Core
from app.core.errors import Unauthorized
from app.core.models import User

MAX_ID = 2_147_483_647  # ids are 32-bit integers in both databases


def _digits(value: object) -> object:
    """Only plain digits are integers here: "2.0" or "1e3" are refused, not coerced."""
    if isinstance(value, str) and not value.isdigit():
        raise ValueError("must be a whole number written with digits")
    return value


Digits = BeforeValidator(_digits)
Id = Annotated[int, Digits, Path(ge=1, le=MAX_ID)]  # out of range or not digits → 404 like any unknown id


def bearer(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("missing bearer token: send 'Authorization: Bearer <token>'")
    return token.strip()


def core_of(request: Request) -> Core:
    provider: Callable[[], Core] = request.app.state.core_provider
    return provider()


def current_user(request: Request) -> User:
    """The owner of the personal API token in the Authorization header; 401 otherwise."""
    core = core_of(request)
    user = auth.user_for_token(core.db, core.clock, bearer(request))
    if user is None:
        raise Unauthorized("invalid or revoked API token")
    return user
