"""Every websocket event passes here before its handler runs (SPEC §17), and every exception a
handler lets out is answered here: the two halves of "none raises, none leaks".

:class:`EventGuard` (a Reflex middleware) refuses, before any state changes:

* events of Reflex's own states other than the few its frontend sends, with their arguments
  checked too (``setvar`` and the like are never accepted: this app has no generic setters);
* events of this app's states whose handler is not the app's own, or whose arguments do not
  match the handler's parameters: unknown or missing names, or values not of the annotated type
  (``int`` ids, real ``bool``s, capped strings, forms of capped strings; see app/ui/checks.py);
* events that are not :func:`~app.ui.state.session.public` from a tab without a live session:
  the tab's states are cleared and it is sent to the login page, so an anonymous socket can
  change nothing but the login form.

A refusal is a calm toast naming the field (and one warning line in the log), never a traceback.
:func:`calm_exception_handler` turns an error a handler raised into the same kind of message;
an ended session sends the tab to the login page.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import typing
from collections.abc import Callable
from typing import Any

import reflex as rx
from reflex.middleware import Middleware
from reflex.state import (
    FrontendEventExceptionState,
    OnLoadInternalState,
    State,
    StateUpdate,
    UpdateVarsInternalState,
)
from reflex_base.event import Event, EventSpec
from reflex_base.registry import RegistrationContext

from app.core.config import Settings
from app.core.context import get_core
from app.core.errors import ChatcronError, InvalidInput, Unauthorized
from app.ui import checks
from app.ui.state.session import CURRENT_USER, PUBLIC_MARK, AuthState, session_token, session_user

log = logging.getLogger("chatcron.ui")
REFUSED = "That request was not understood, so nothing was changed"
FAILED = "Something went wrong on our side and that did not happen. Try again, or reload the page."
TOAST_ID = "chatcron-refused"


def _storage_vars(value: object, field: str) -> object:
    """Browser storage values a (re)connecting page hands back: this app declares none."""
    if value not in (None, {}):
        raise InvalidInput(field, "must be empty (this app keeps nothing in browser storage)")
    return value


def _hashes(value: object, field: str) -> object:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > 256:
        raise InvalidInput(field, "must be a short list")
    for item in value:
        checks.text(item, field, 128)
    return value


def _internal_checks() -> dict[str, dict[str, Callable[[object, str], object]]]:
    """The events of Reflex's own states its frontend sends, each argument with its check."""
    def flag(value: object, field: str) -> object:
        return checks.real_bool(value, field)

    def report(value: object, field: str) -> object:
        return checks.text(value, field, 8192)

    table = {
        (State, "hydrate"): {}, (State, "hydrate_and_load"): {"vars": _storage_vars, "hashes": _hashes},
        (State, "set_is_hydrated"): {"value": flag}, (OnLoadInternalState, "on_load_internal"): {},
        (OnLoadInternalState, "set_is_hydrated"): {"value": flag},
        (UpdateVarsInternalState, "update_vars_internal"): {"vars": _storage_vars},
        (FrontendEventExceptionState, "handle_frontend_exception"): {"info": report, "component_stack": report},
    }
    return {f"{cls.get_full_name()}.{name}": args for (cls, name), args in table.items()}


@functools.cache
def _internal() -> dict[str, dict[str, Callable[[object, str], object]]]:
    return _internal_checks()


@functools.cache
def _signature(fn: Callable) -> tuple[dict[str, Any], frozenset[str]]:
    """(parameter → annotation, required parameters) of an app handler, without ``self``."""
    hints = typing.get_type_hints(fn)
    params = list(inspect.signature(fn).parameters.values())[1:]
    return ({p.name: hints.get(p.name) for p in params},
            frozenset(p.name for p in params if p.default is inspect.Parameter.empty))


def check_event(name: str, payload: object, fn: Callable, state_cls: type) -> None:
    """Raise InvalidInput when the event may not run its handler with this payload."""
    if not issubclass(state_cls, AuthState):
        allowed = _internal().get(name)
        if allowed is None:
            raise InvalidInput("event", "is not one the page sends")
        # What the handler itself requires is required here too (a missing one was a TypeError in Reflex).
        args = checks.arguments(payload, allowed, _signature(fn)[1] & allowed.keys())
        for arg, value in args.items():
            allowed[arg](value, arg)
        return
    if not fn.__module__.startswith("app."):  # e.g. Reflex's generic setvar, inherited by every state
        raise InvalidInput("event", "is not one the page sends")
    params, required = _signature(fn)
    limit = get_core().settings.prompt_max_bytes  # the longest text any field may carry, in characters
    for arg, value in checks.arguments(payload, params, required).items():
        checks.of_type(value, params[arg], arg, limit)


def frame_limit(settings: Settings) -> int:
    """The largest websocket frame the web process reads: the longest prompt, escaped, plus room."""
    return 2 * settings.prompt_max_bytes + 32 * 1024


def _short(name: str) -> str:
    """``chat_state.send`` for a log line, from Reflex's long dotted state path."""
    state, _, handler = name.rpartition(".")
    return f"{state.rpartition('.')[2].rpartition('____')[2][:60]}.{handler[:60]}"


def refusal(exc: InvalidInput) -> EventSpec:
    return rx.toast.warning(f"{REFUSED} ({exc.message}).", id=TOAST_ID, position="top-center")


class EventGuard(Middleware):
    """Checks every event's target, arguments and session before its handler runs."""

    async def preprocess(self, app: rx.App, state: rx.State, event: Event) -> StateUpdate | None:
        registered = RegistrationContext.get().event_handlers.get(event.name)
        if registered is None:  # app/ui/socket_guard.py drops these before Reflex reads them
            unknown = InvalidInput("event", "is not one the page sends")
            return StateUpdate(events=Event.from_event_type(refusal(unknown)))
        fn, state_cls = registered.handler.fn, registered.states[0]
        try:
            check_event(event.name, event.payload, fn, state_cls)
        except InvalidInput as exc:
            log.warning("action=ws_refused event=%s reason=%r", _short(event.name), exc.message[:200])
            return StateUpdate(events=Event.from_event_type(refusal(exc)))
        CURRENT_USER.set(None)
        if event.name in _hydrate_events():
            await _forget_if_signed_out(state._get_root_state())
            return None
        if not issubclass(state_cls, AuthState) or getattr(fn, PUBLIC_MARK, False):
            return None
        root = state._get_root_state()
        user = await asyncio.to_thread(session_user, session_token(root.router.headers.cookie))
        if user is None:
            return await _signed_out(root)
        CURRENT_USER.set(user)
        return None


@functools.cache
def _hydrate_events() -> frozenset[str]:
    return frozenset(f"{State.get_full_name()}.{name}" for name in ("hydrate", "hydrate_and_load"))


async def _forget_if_signed_out(root: rx.State) -> None:
    """A (re)loading page without a live session: its tab's states are cleared before hydration sends
    them, so a reload after the session ended elsewhere (logout, end-sessions) shows nothing of the user."""
    if await asyncio.to_thread(session_user, session_token(root.router.headers.cookie)) is None:
        await (await root.get_state(AuthState))._forget_tab()


async def _signed_out(root: rx.State) -> StateUpdate:
    """No live session: the tab forgets its user's data and goes to the login page."""
    await (await root.get_state(AuthState))._forget_tab()
    delta = await root._get_resolved_delta()
    root._clean()
    return StateUpdate(delta=delta, events=Event.from_event_type(rx.redirect("/login")))


def calm_exception_handler(exception: Exception) -> list[EventSpec]:
    """What the page shows when a handler raised: the error's own message, or a plain apology."""
    if isinstance(exception, Unauthorized):
        return [AuthState.sign_out()]
    if isinstance(exception, ChatcronError):
        log.info("action=ui_refused error=%s message=%r", exception.code, exception.message[:200])
        return [rx.toast.warning(exception.message, id=TOAST_ID, position="top-center")]
    log.error("action=ui_handler_failed", exc_info=exception)
    return [rx.toast.error(FAILED, id=TOAST_ID, position="top-center")]
