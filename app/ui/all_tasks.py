"""The All schedules page's door to the schedule domain: rows of every visible task, the project
filter's options, and bulk pause / resume, shaped for the page.

Everything here is blocking: the page's state calls it through ``asyncio.to_thread``. The rules
live in :mod:`app.schedules.overview` and :mod:`app.schedules.service`; this module only adapts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from app.core import projects
from app.core.models import User
from app.core.spend import Spend
from app.schedules import overview
from app.schedules.model import TaskStatus
from app.schedules.service import Actor
from app.ui import schedule_views, timeline
from app.ui.tasks import task_service

PAGE = overview.MAX_PAGE  # rows the page shows at most (it says so when there are more)
ALL = "all"  # the filters' "no filter" value
STATUSES = (ALL, *(s.value for s in TaskStatus))


@dataclasses.dataclass
class AllRow:
    """One task of the page: the drawer row's wording plus where it lives."""

    id: int
    name: str
    status: str
    status_color: str
    description: str
    next_rel: str
    next_when: str
    next_abs: str
    last_rel: str
    last_status: str
    last_color: str
    last_abs: str
    last_error: str
    pending: str
    owner: str
    chat_id: int
    chat_title: str
    project_name: str
    can_pause: bool
    can_resume: bool
    coming: str = ""  # "3 fires left", "10,080 fires in 7 days": the fires that will happen this week
    spend_today: str = ""  # "Spent today 1,200 tokens · $0.04" ("" before its fires spent anything)
    spend_all: str = ""  # "in all 9,800 tokens · $0.31"
    budget_wait: str = ""  # its fires wait for the project's daily budget (last_error says why)


@dataclasses.dataclass
class ProjectOption:
    value: str  # the project id as text (a <select> value)
    name: str


@dataclasses.dataclass
class Listing:
    rows: list[AllRow]
    projects: list[ProjectOption]
    more: bool  # more tasks than the page shows


def _row(listed: overview.Listed, now, viewer_zone: str, spend: tuple[Spend, Spend] | None = None) -> AllRow:
    view = schedule_views.task_row(listed.task, now, viewer_zone, spend=spend)
    return AllRow(
        id=view.id, name=view.name, status=view.status, status_color=view.status_color,
        description=view.description, next_rel=view.next_rel, next_when=view.next_when, next_abs=view.next_abs,
        last_rel=view.last_rel, last_status=view.last_status, last_color=view.last_color, last_abs=view.last_abs,
        last_error=view.last_error, pending=view.pending, owner=view.owner, chat_id=listed.task.chat_id,
        chat_title=listed.chat_title, project_name=listed.project_name,
        can_pause=view.can_pause, can_resume=view.can_resume, coming=timeline.coming(listed.task, now),
        spend_today=view.spend_today, spend_all=view.spend_all, budget_wait=view.budget_wait,
    )


def listing(user: User, status: str, project: int | None, viewer_zone: str) -> Listing:
    """The page's rows under the filters (``status`` one of STATUSES, ``project`` an id or None)
    and the projects the user can pick; raises NotFound for a project the user cannot see."""
    service = task_service()
    chosen = overview.parse_status(None if status == ALL else status)
    page = overview.visible_tasks(service.db, user, chosen, project, PAGE)
    now = service.clock.now()
    options = [ProjectOption(str(p.id), p.name) for p in projects.list_projects(service.db, user)]
    spent = service.spend([item.task.id for item in page.rows if item.task.id])  # one read (SPEC §15)
    return Listing([_row(item, now, viewer_zone, spent.get(item.task.id or 0)) for item in page.rows], options,
                   page.next_after is not None)


def act(user: User, action: str, ids: Sequence[int], names: Mapping[int, str]) -> tuple[list[int], str]:
    """Pause or resume each task as its own control would: (ids done, what to tell the user,
    naming each refused task by its ``names`` entry)."""
    outcomes = overview.bulk(task_service(), Actor(user), overview.parse_action(action), ids)
    done = [o.task_id for o in outcomes if o.ok]
    verb = "Paused" if action == overview.BulkAction.PAUSE else "Resumed"
    refused = [o for o in outcomes if not o.ok]
    message = f"{verb} {len(done)} of {len(outcomes)}."
    if refused:
        reasons = "; ".join(f"{names.get(o.task_id, f'#{o.task_id}')}: {o.error.message}" for o in refused[:5])
        message += f" Not changed: {reasons}" + (" …" if len(refused) > 5 else "")
    return done, message
