"""Text that both databases can store: no NUL characters, no unpaired surrogates."""

from __future__ import annotations

from app.core.errors import InvalidInput


def storable(value: str, field: str) -> str:
    """Return ``value`` unchanged, or raise InvalidInput naming ``field`` for text no database can keep."""
    if "\x00" in value:
        raise InvalidInput(field, "must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(field, "must be valid Unicode text (it contains an unpaired surrogate)") from None
    return value
