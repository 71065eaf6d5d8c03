"""Domain exceptions of ``app.core``; ``app/api/errors.py`` maps them to HTTP codes in one place.

Each class's docstring is its default message.
"""

from __future__ import annotations


class ChatcronError(Exception):
    """Something went wrong."""

    code = "error"

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip())

    @property
    def message(self) -> str:
        return str(self)


class InvalidInput(ChatcronError):
    """A value is not acceptable."""

    code = "invalid"

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"{field}: {message}")


class Unauthorized(ChatcronError):
    """A valid token is required."""

    code = "unauthorized"


class InvalidCredentials(Unauthorized):
    """Wrong email or password."""

    code = "invalid_credentials"


class Forbidden(ChatcronError):
    """You are not allowed to do that."""

    code = "forbidden"


class NotFound(ChatcronError):
    """Not found."""

    code = "not_found"


class Conflict(ChatcronError):
    """That conflicts with the current state."""

    code = "conflict"


class AlreadyExists(Conflict):
    """That already exists."""

    code = "already_exists"


class LastOwner(Conflict):
    """A project keeps at least one owner (SPEC §18)."""

    code = "last_owner"


class QuotaExceeded(Conflict):
    """A limit on how many projects or schedules may exist has been reached."""

    code = "quota_exceeded"


class PromptAlreadyRunning(Conflict):
    """The agent is still working on this chat; wait for the current turn to finish."""

    code = "prompt_already_running"


class AgentUnavailable(ChatcronError):
    """The agent could not start — an administrator has been told."""

    code = "agent_unavailable"
