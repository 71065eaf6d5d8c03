"""The UI's door to the inbox and read state: records shaped for the page, and blocking calls
(states call them through ``asyncio.to_thread``). Rules live in :mod:`app.attention.inbox` and
:mod:`app.attention.reads`; this module only adapts."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from app.attention import approvals, inbox, reads
from app.core.context import get_core
from app.core.models import User
from app.schedules.service import Actor
from app.ui import schedule_views, tasks
from app.ui.marks import SharedMark
from app.ui.transcript import OPTION_ORDER
from app.ui.usage import usage_line

PAGE = 30
MARK_MAX_AGE = 0.9  # s: a worker reads the change mark at most this often (its tabs poll every second)
KIND_LABELS = {"fire.finished": "Fire finished", "fire.failed": "Fire failed", "task.error": "Task stopped",
               "draft.created": "Draft to arm", "approval.requested": "Approval asked",
               "agent.start_failed": "Agent could not start", "budget.spent": "Budget spent"}
# what a draft or an approval item reads once settled (app.attention.inbox's "resolved")
RESOLVED_LABELS = {"armed": "Draft armed", "deleted": "Draft deleted", "allowed": "Approval: allowed",
                   "rejected": "Approval: rejected", "expired": "Approval expired", "cancelled": "Approval cancelled"}
USAGE_KINDS = {"fire.finished", "fire.failed"}  # a turn's tokens belong to its fire, not to what it asked meanwhile


@dataclasses.dataclass
class Option:
    option_id: str
    name: str
    kind: str


@dataclasses.dataclass
class ApprovalCard:
    id: int
    title: str
    chat_id: int
    chat_title: str
    requested_for: str
    options: list[Option]


@dataclasses.dataclass
class TaskCard:
    id: int
    name: str
    chat_id: int
    chat_title: str
    reason: str
    when: str = ""  # a draft's schedule in words ("Every hour")
    prompt: str = ""  # a draft's prompt (its first PROMPT_SHOWN characters)


@dataclasses.dataclass
class FeedItem:
    id: int
    kind: str
    label: str
    resolved: str  # "" while it waits; "armed", "allowed", "expired", … once settled
    chat_id: int
    chat_title: str
    task_name: str
    outcome: str
    line: str  # the reply's first line, or the error, or what an approval asks
    usage: str
    at: str
    unread: bool


@dataclasses.dataclass
class Counts:
    inbox: int
    chats: dict[str, int]  # chat id (as text: a JSON object's key) → unread finished turns


@dataclasses.dataclass
class Sections:
    approvals: list[ApprovalCard]
    drafts: list[TaskCard]
    errors: list[TaskCard]
    items: list[FeedItem]
    unread: int
    newest: int  # the newest feed item's id (what "Mark all read" marks)
    next_before: int  # 0: no older page


def feed_item(item: dict[str, Any]) -> FeedItem:
    line = item["first_line"] or item["error"] or item["title"]
    usage = usage_line(json.dumps(item["usage"])) if item["usage"] and item["kind"] in USAGE_KINDS else ""
    resolved = item.get("resolved") or ""
    label = RESOLVED_LABELS.get(resolved) or KIND_LABELS.get(item["kind"], item["kind"])
    return FeedItem(id=item["id"], kind=item["kind"], label=label, resolved=resolved,
                    chat_id=item["chat_id"], chat_title=item["chat_title"], task_name=item["task_name"],
                    outcome=item["outcome"], line=line, usage=usage, at=item["created_at"] or "",
                    unread=item["unread"])


def _task(row: dict[str, Any]) -> TaskCard:
    schedule = row.get("schedule") or {}
    zone = schedule_views.zone_of(schedule.get("timezone") or "UTC")
    return TaskCard(id=row["id"], name=row["name"], chat_id=row["chat_id"], chat_title=row["chat_title"],
                    reason=row["last_error"], when=schedule_views.describe(schedule, zone) if schedule else "",
                    prompt=row.get("prompt") or "")


def _approval(row: dict[str, Any]) -> ApprovalCard:
    options = [Option(str(o.get("option_id", "")), str(o.get("name") or o.get("option_id", "")),
                      str(o.get("kind", ""))) for o in row["options"] if isinstance(o, dict)]
    options.sort(key=lambda o: OPTION_ORDER.get(o.kind, len(OPTION_ORDER)))  # the one-time allow first
    return ApprovalCard(id=row["id"], title=row["title"], chat_id=row["chat_id"], chat_title=row["chat_title"],
                        requested_for=row["requested_for"], options=options)


def sections(user: User, before: int | None = None) -> Sections:
    """The inbox page's content: every section, and the feed from ``before`` (None: the newest)."""
    core = get_core()
    data = inbox.inbox(core.db, user, inbox.Page(before, PAGE), core.clock.now())
    items = [feed_item(i) for i in data["items"]]
    return Sections(approvals=[_approval(a) for a in data["approvals"]], drafts=[_task(d) for d in data["drafts"]],
                    errors=[_task(e) for e in data["errors"]], items=items, unread=data["unread"],
                    newest=items[0].id if items else 0, next_before=data["next_before"] or 0)


def counts(user: User) -> Counts:
    db = get_core().db
    return Counts(reads.inbox_unread(db, user),
                  {str(chat): n for chat, n in reads.chat_unread_counts(db, user).items()})


CHANGES = SharedMark(lambda: reads.change_mark(get_core().db), MARK_MAX_AGE)


def change_mark(max_age: float = MARK_MAX_AGE) -> tuple[int, ...]:
    """The store's change mark (:func:`reads.change_mark`), read at most once per ``max_age`` seconds
    in this worker however many tabs ask: the tabs' watchers share one read (app/ui/marks.py)."""
    return CHANGES.read(max_age)


def newest_event(user: User) -> int:
    return inbox.newest_id(get_core().db, user)


def to_notify(user: User, after: int) -> tuple[list[dict[str, str | int]], int]:
    """Browser notifications for the user's events after ``after`` that their task's ``notify`` lets
    through and that concern them (their own tasks' fires, approvals they are asked, their drafts),
    and the newest event id looked at (the next call's ``after``)."""
    found = inbox.since(get_core().db, user, after)
    out: list[dict[str, str | int]] = []
    for item in found:
        if not item["notify"] or item["user_id"] != user.id:  # by id: a later account with the email is not them
            continue
        view = feed_item(item)
        title = f"{view.label}: {view.task_name or view.chat_title}"
        out.append({"id": view.id, "title": title[:120], "body": (view.line or view.chat_title)[:200],
                    "chat_id": view.chat_id})
    return out, max([after, *(item["id"] for item in found)])


def mark_all_read(user: User, before: int) -> int:
    core = get_core()
    return reads.mark_inbox_read(core.db, core.clock.now(), user, before)


def answer(user: User, approval_id: int, option_id: str) -> None:
    core = get_core()
    approvals.answer(core.db, core.clock.now(), user, approval_id, option_id)


def arm(user: User, task_id: int) -> str:
    """Arm a draft through the schedule service, as the drawer's ``schedule-arm`` does; returns what
    the page says of it ("Armed “standup”: first fire in 59 min, Thu 3 Dec 2026, 09:00:00 UTC")."""
    task = tasks.task_service().arm(Actor(user), task_id)
    if task.next_run_at is None:
        return f"Armed “{task.name}”."
    now, zone = get_core().clock.now(), schedule_views.task_zone(task, "UTC")
    return (f"Armed “{task.name}”: first fire {schedule_views.relative(task.next_run_at, now)}, "
            f"{schedule_views.absolute(task.next_run_at, zone)}.")


def row_event_id(row: dict[str, str]) -> int:
    """The event id a transcript row starts at ("123", or "usage-123" for a usage line)."""
    digits = row["id"].rpartition("-")[2]
    return int(digits) if digits.isdigit() else 0


def divider_row(seen: int, rows: list[dict[str, str]]) -> str:
    """The id of the first row newer than ``seen`` (the newest event of the last visit), where the
    "New since your last visit" line goes; "" when none is newer or the chat was never opened (-1)."""
    if seen < 0:
        return ""
    return next((row["id"] for row in rows if row_event_id(row) > seen), "")


def chat_seen(user: User, chat_id: int) -> int | None:
    return reads.chat_seen(get_core().db, user, chat_id)


def mark_chat_seen(user: User, chat_id: int, event_id: int) -> None:
    core = get_core()
    reads.mark_chat_seen(core.db, core.clock.now(), user, chat_id, event_id)
