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


MAX_NAME = 120


def clean_name(value: object, field: str = "name", limit: int = MAX_NAME) -> str:
    """A trimmed 1..limit character name (projects, chats, tasks); raises InvalidInput naming ``field``."""
    if not isinstance(value, str):
        raise InvalidInput(field, "must be a string")
    text = storable(value, field).strip()
    if not text:
        raise InvalidInput(field, "must not be empty")
    if len(text) > limit:
        raise InvalidInput(field, f"must be at most {limit} characters")
    return text


def clean_prompt(value: object, field: str, max_bytes: int, *, strip: bool = True) -> str:
    """A prompt for an agent: non-blank text of at most ``max_bytes`` UTF-8 bytes.

    Returns it trimmed (a typed message) or as given (``strip=False``: a task's standing
    prompt keeps its layout). Raises InvalidInput naming ``field``.
    """
    if not isinstance(value, str):
        raise InvalidInput(field, "must be a string")
    text = storable(value, field)
    if not text.strip():
        raise InvalidInput(field, "must not be empty")
    if strip:
        text = text.strip()
    if len(text.encode("utf-8")) > max_bytes:
        raise InvalidInput(field, f"must be at most {max_bytes} bytes")
    return text
