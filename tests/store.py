"""Single-row shortcuts the tests take through the product's own transactional functions.

The product starts and ends runs, mints and revokes grants and claims tasks in batches inside
its own transactions (``begin_runs``, ``finish_run_in``, ``issue_grant_in``, ``revoke_grant_in``,
``claim_many``); a test that wants one of each wraps the same functions here, so what it
exercises is the product's path, not a copy kept alive for tests.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy.exc import IntegrityError

from app.core.clock import Clock
from app.core.db import Database
from app.core.errors import PromptAlreadyRunning
from app.core.grants import Scope, issue_grant_in, revoke_grant_in
from app.core.models import Run, RunSource, RunStatus
from app.core.runs import begin_runs, finish_run_in
from app.core.turns import TurnSpec
from scheduler import claims
from scheduler import decisions as d
from scheduler.protocols import Directory, Fire


def begin_run(db: Database, clock: Clock, chat_id: int, prompt: str, *, source: RunSource,
              lease_seconds: int, instance: str) -> Run:
    """Take the chat's run lock and log the prompt; raises PromptAlreadyRunning if a live run holds it."""
    try:
        with db.write() as s:
            run = begin_runs(s, clock.now(), [TurnSpec(chat_id, prompt, source)], lease_seconds=lease_seconds,
                             instance=instance)[0]
            if run is None:
                raise PromptAlreadyRunning()
            return run
    except IntegrityError:
        raise PromptAlreadyRunning() from None


def finish_run(db: Database, clock: Clock, run: Run, status: RunStatus, error: str | None = None) -> bool:
    """Release the lock with a final status; False if the run had already ended."""
    with db.write() as s:
        return finish_run_in(s, clock.now(), run.id, run.chat_id, status, error)


def issue_grant(db: Database, clock: Clock, ttl_seconds: int, scope: Scope | str, owner_id: int, chat_id: int,
                project_id: int, task_id: int | None = None, task_run_id: int | None = None) -> tuple[str, int]:
    """Mint a grant; returns (plain token, grant id)."""
    with db.write() as s:
        token, row = issue_grant_in(s, clock.now(), ttl_seconds, scope, owner_id, chat_id, project_id, task_id,
                                    task_run_id)
        s.flush()
        return token, row.id


def revoke_grant(db: Database, clock: Clock, grant_id: int) -> None:
    with db.write() as s:
        revoke_grant_in(s, clock.now(), grant_id)


def claim(db: Database, now: dt.datetime, task_id: int, instance: str, directory: Directory,
          limits: d.Limits) -> Fire | None:
    """Claim one task; the fire to start, or None."""
    fires = claims.claim_many(db, now, [task_id], instance, directory, limits)
    return fires[0] if fires else None
