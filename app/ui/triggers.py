"""The UI's door to trigger URLs (SPEC §19): make or rotate one, revoke it (the drawer reads them
with its rows: app/ui/tasks.py).

Blocking (database): states call these through ``asyncio.to_thread``. Who may: anyone who may see
the task (TaskService.get raises NotFound otherwise), as the API's POST/DELETE .../trigger.
"""

from __future__ import annotations

import functools

from app.core.models import User
from app.schedules import hooks
from app.schedules.hooks import HOOK_PATH, HookService
from app.schedules.service import Actor
from app.ui.tasks import task_service


@functools.cache
def hook_service() -> HookService:
    """The web process's trigger URL service, over the UI's task service (built on first use; it
    holds no state, so a second one built by a race would do no harm)."""
    tasks = task_service()
    return HookService(tasks.db, tasks.clock, fire=tasks.ask)


def make(user: User, task_id: int, rotate: bool) -> tuple[str, str, str]:
    """Create the task's trigger URL (``rotate``: or rotate its secret); returns (its path, the secret,
    shown once, and when it was made, as the rows show it). Raises NotFound when the user may not see
    the task, Conflict when it has one already and ``rotate`` is off."""
    service = hook_service()
    task = task_service().get(Actor(user), task_id)
    hook_id, secret = service.make(task.id or 0, user.email, rotate=rotate)
    made = hooks.trigger_views(service.db, [task.id or 0]).get(task.id or 0, {})
    return HOOK_PATH + hook_id, secret, str(made.get("created_at") or "")


def revoke(user: User, task_id: int) -> bool:
    """End the task's trigger URL at once; returns whether it had one. Raises NotFound as :func:`make`."""
    task = task_service().get(Actor(user), task_id)
    return hook_service().revoke(task.id or 0)
