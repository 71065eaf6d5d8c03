"""Checks of websocket event arguments: the one owner of "what a handler may be given" (SPEC §17).

Reflex exposes every state event handler to anything that can open the socket, so an argument
is whatever a crafted frame says. These functions turn a raw value into the type a handler
expects or raise :class:`InvalidInput` naming the field; ``app/ui/guard.py`` applies the
type-level ones to every event before its handler runs, and handlers use the rest for what
only they know (choices, per-field sizes).
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Collection, Mapping
from typing import Any

from app.core.errors import InvalidInput
from app.core.text import storable

MAX_ID = 2**63 - 1  # every id column is a signed 64-bit integer
MAX_FORM_FIELDS = 16
MAX_KEY = 64
FORM_ENTRIES_KEY = "__reflex_form_data__"  # how Reflex's frontend wraps a form's [name, value] entries
_ZONES = frozenset(zoneinfo.available_timezones())


def positive_id(value: object, field: str) -> int:
    """A row id: a whole number 1 ≤ n < 2**63 (not a bool, not a string, not a float)."""
    if type(value) is not int or not 1 <= value <= MAX_ID:
        raise InvalidInput(field, "must be a positive whole number (an id)")
    return value


def id_text(value: object, field: str) -> int:
    """An id typed in a URL ("42"): digits only, in range; raises InvalidInput otherwise."""
    if not isinstance(value, str) or not value.isascii() or not value.isdigit() or len(value) > 19:
        raise InvalidInput(field, "must be a positive whole number (an id)")
    return positive_id(int(value), field)


def real_bool(value: object, field: str) -> bool:
    """true or false themselves: "false", 0 and None are refused, not guessed at."""
    if type(value) is not bool:
        raise InvalidInput(field, "must be true or false")
    return value


def text(value: object, field: str, limit: int) -> str:
    """A string of at most ``limit`` characters that the database can store (no NUL, no lone surrogate)."""
    if not isinstance(value, str):
        raise InvalidInput(field, "must be a string")
    if len(value) > limit:
        raise InvalidInput(field, f"must be at most {limit} characters")
    return storable(value, field)


def choice(value: object, field: str, options: Collection[str]) -> str:
    if not isinstance(value, str) or value not in options:
        raise InvalidInput(field, f"must be one of {', '.join(sorted(options))}")
    return value


def zone(value: object, field: str) -> str:
    """An IANA time zone name this server knows."""
    name = text(value, field, 64)
    if name not in _ZONES:
        raise InvalidInput(field, "must be an IANA time zone name")
    return name


def form(value: object, field: str, limit: int) -> dict[str, str]:
    """A submitted form: field names to strings (a plain object, or Reflex's wrapped entries)."""
    if isinstance(value, Mapping) and set(value) == {FORM_ENTRIES_KEY}:
        entries = value[FORM_ENTRIES_KEY]
        if not isinstance(entries, list) or not all(
                isinstance(e, list) and len(e) == 2 and isinstance(e[0], str) for e in entries):
            raise InvalidInput(field, "must be a form")
        value = dict(entries)
    if not isinstance(value, Mapping):
        raise InvalidInput(field, "must be a form (an object of text fields)")
    if len(value) > MAX_FORM_FIELDS:
        raise InvalidInput(field, f"must have at most {MAX_FORM_FIELDS} fields")
    return {text(key, f"{field} field name", MAX_KEY): text(item, f"{field}.{key}", limit)
            for key, item in value.items()}


def arguments(payload: object, params: Mapping[str, Any], required: Collection[str]) -> dict[str, Any]:
    """The payload as keyword arguments: an object with no unknown and no missing names."""
    if not isinstance(payload, Mapping):
        raise InvalidInput("arguments", "must be an object")
    unknown = sorted(str(name)[:MAX_KEY] for name in payload if name not in params)
    if unknown:
        raise InvalidInput("arguments", f"unexpected {', '.join(unknown)}")
    missing = sorted(name for name in required if name not in payload)
    if missing:
        raise InvalidInput("arguments", f"missing {', '.join(missing)}")
    return dict(payload)


def of_type(value: object, annotation: object, field: str, limit: int) -> object:
    """Check ``value`` against a handler parameter's annotation (int ids, bools, strings, forms)."""
    if annotation is int:
        return positive_id(value, field)
    if annotation is bool:
        return real_bool(value, field)
    if annotation is str:
        return text(value, field, limit)
    if annotation is dict:
        return form(value, field, limit)
    raise InvalidInput(field, "is not accepted from the browser")  # a handler with another type: refuse
