"""Stopping a running turn from any process (SPEC §16, ``composer-stop``).

The database is the only meeting point: a stop request is written on the run row
(``runs.stop_requested_by``); the process that runs the turn — the web process for a user's
turn, a scheduler process for a fire, any of several workers — looks for requests on its own
runs every ``STOP_POLL_SECONDS`` while it has any (:meth:`PromptService.watch_stops`), cancels
the provider as a timeout does, and ends the run ``failed`` with "stopped by <email>".
A request in the process that runs the turn takes effect at once.
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlmodel import select

from app.core.chats import get_chat
from app.core.db import Database
from app.core.errors import Conflict, NotFound
from app.core.models import Run, RunStatus, User

STOP_POLL_SECONDS = 0.5
STOPPED_BY = "stopped by "


class NothingToStop(Conflict):
    """No turn is running in this chat: nothing was stopped."""

    code = "nothing_to_stop"


def stop_error(email: str) -> str:
    """The error a stopped run ends with."""
    return f"{STOPPED_BY}{email}"


def was_stopped(error: str | None) -> bool:
    """Whether a run's error says a user stopped it (such a failure is not the agent's)."""
    return bool(error) and error.startswith(STOPPED_BY)


def request_stop(db: Database, user: User, chat_id: int, run_id: int | None = None) -> int:
    """Ask whichever process runs the chat's turn (``run_id``: that one) to stop it; returns its id.

    Raises NotFound when the user cannot see the chat (or the turn is not the chat's), NothingToStop
    when no turn is running (or ``run_id`` has already ended) — then nothing changes. A second request
    for the same turn keeps the first requester's name.
    """
    get_chat(db, user, chat_id)
    with db.write() as s:
        query = select(Run).where(Run.chat_id == chat_id)
        query = query.where(Run.id == run_id) if run_id is not None else \
            query.where(Run.status == RunStatus.RUNNING.value).order_by(Run.id.desc())
        run = s.exec(query).first()
        if run_id is not None and run is None:
            raise NotFound(f"no turn with id {run_id} in this chat")
        if run is None or run.status != RunStatus.RUNNING.value:
            raise NothingToStop("That turn has already ended: nothing was stopped." if run is not None else None)
        s.exec(sa.update(Run).where(Run.id == run.id, Run.status == RunStatus.RUNNING.value,
                                    Run.stop_requested_by.is_(None)).values(stop_requested_by=user.email))
        return run.id


def requested_stops(db: Database, run_ids: Iterable[int]) -> dict[int, str]:
    """The stop requests on these runs (still running): run id → the requester's email."""
    ids = list(run_ids)
    if not ids:
        return {}
    with db.read() as s:
        rows = s.exec(select(Run.id, Run.stop_requested_by).where(
            Run.id.in_(ids), Run.status == RunStatus.RUNNING.value, Run.stop_requested_by.is_not(None)))
        return {run_id: email for run_id, email in rows}
