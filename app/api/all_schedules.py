"""All schedules of the caller (SPEC §13): the cross-chat list and bulk pause / resume.

``GET /api/schedules`` and ``POST /api/schedules/bulk`` live beside ``/api/schedules/{id}``
without clashing: the list has no id segment, and no ``POST /api/schedules/{id}`` exists.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict

from app.api.deps import MAX_ID, Digits
from app.api.errors import status_of
from app.api.schedules import TasksDep, UserDep, task_json
from app.core.errors import InvalidInput
from app.core.spend import Spend
from app.schedules import hooks, overview
from app.schedules.service import Actor

router = APIRouter(prefix="/api")


class BulkIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: Any = None
    ids: Any = None


def _project(value: str | None) -> int | None:
    """``project=`` as an id: empty means every project; anything but digits is refused."""
    if value is None or value == "":
        return None
    if not value.isascii() or not value.isdigit() or not 1 <= int(value) <= MAX_ID:
        raise InvalidInput("project", "must be a project id (a positive whole number)")
    return int(value)


def listed_json(row: overview.Listed, spend: tuple[Spend, Spend] | None = None,
                trigger: dict[str, Any] | None = None) -> dict[str, Any]:
    """The per-chat list's task JSON plus the names of its chat and project."""
    return {**task_json(row.task, spend), "trigger": trigger, "chat_title": row.chat_title,
            "project_name": row.project_name}


@router.get("/schedules")
def all_schedules(tasks: TasksDep, user: UserDep, status: str | None = None, project: str | None = None,
                  after: Annotated[int, Digits, Query(ge=1, le=MAX_ID)] | None = None,
                  limit: Annotated[int, Digits, Query(ge=1, le=overview.MAX_PAGE)] = overview.DEFAULT_PAGE,
                  ) -> dict[str, Any]:
    """Every task the caller can see, by project, chat and creation; ``next_after`` is the
    ``after`` of the next page, or null on the last one."""
    page = overview.visible_tasks(tasks.db, user, overview.parse_status(status), _project(project), limit, after)
    ids = [r.task.id for r in page.rows]
    spend, triggers = tasks.spend(ids), hooks.trigger_views(tasks.db, ids)
    return {"schedules": [listed_json(r, spend.get(r.task.id), triggers.get(r.task.id)) for r in page.rows],
            "next_after": page.next_after}


@router.post("/schedules/bulk")
def bulk(body: BulkIn, tasks: TasksDep, user: UserDep) -> dict[str, Any]:
    """Pause or resume each named task as its single endpoint would; 200 with one result per id
    (in the order given, duplicates once), each ``ok`` with the task or not with its error."""
    action = overview.parse_action(body.action)
    ids = overview.parse_ids(body.ids)
    results = []
    outcomes = overview.bulk(tasks, Actor(user), action, ids)
    shown = [o.task.id for o in outcomes if o.ok]
    spend, triggers = tasks.spend(shown), hooks.trigger_views(tasks.db, shown)  # one read each for all
    for outcome in outcomes:
        if outcome.ok:
            results.append({"id": outcome.task_id, "ok": True,
                            "schedule": task_json(outcome.task, spend.get(outcome.task.id))
                            | {"trigger": triggers.get(outcome.task_id)}})
        else:
            error = outcome.error
            results.append({"id": outcome.task_id, "ok": False, "status": status_of(error),
                            "error": {"code": error.code, "message": error.message}})
    done = sum(r["ok"] for r in results)
    return {"action": action.value, "results": results, "ok": done, "failed": len(results) - done}
