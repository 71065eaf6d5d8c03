"""What the Schedules drawer shows, computed from task rows: pure functions of (rows, now, zone).

Instants stay aware UTC until the last step; each one is displayed in the task's own zone (a
cron task's timezone) or else in the viewer's browser zone. Relative phrases ("in 4 min") are
recomputed on every poll, so they count down without any client-side clock.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from app.core import envelope
from app.core.spend import Spend
from app.schedules import timing
from app.schedules.model import RunOutcome, ScheduledTask, TaskRun, TaskStatus, Trigger
from app.schedules.spec import ScheduleError, describe_schedule, parse_instant
from app.ui import budget_views, calendar_views, outcomes, schedule_notes

STATUS_COLORS = {
    TaskStatus.DRAFT: "gray", TaskStatus.ACTIVE: "grass", TaskStatus.PAUSED: "amber",
    TaskStatus.COMPLETED: "blue", TaskStatus.EXHAUSTED: "violet", TaskStatus.ERROR: "red",
}
TRIGGER_LABELS = {
    Trigger.SCHEDULE: "on schedule", Trigger.FOLLOW_UP: "queued follow-up",
    Trigger.RUN_NOW_USER: "run now", Trigger.RUN_NOW_AGENT: "run now (agent)", Trigger.HOOK: "trigger URL",
}
MARKER_COLORS = ("indigo", "grass", "orange", "crimson", "cyan", "amber", "violet", "teal")  # timeline lanes


@dataclasses.dataclass
class RunRow:
    """One fire attempt in a task's history."""

    id: int
    run_id: str  # the chat Run of the turn ("" when no turn started): events carry it as data-run-id
    fire: str
    status: str
    color: str
    trigger: str
    nominal: str
    actual: str
    late: str
    duration: str
    error: str
    usage: str = ""  # "1,234 in · 567 out · $0.0123" of the turn, when the agent reported it
    summary: str = ""  # what the agent reported of its fire (SPEC §19), "" when nothing
    told: str = ""  # "told nobody" for a quiet fire (the task's notify_on), else ""
    label: str = ""  # the outcome in words: "missed (3 occurrences)"
    fired: bool = True  # False for a record of an occurrence that started no turn (skipped, missed, deferred)
    jitter: str = ""  # "+17 s jitter": how far the jitter moved the planned start from the occurrence
    error_color: str = "red"  # a failure's text is red; a skip's or a miss's is not


@dataclasses.dataclass
class TaskRow:
    """One task as a drawer row; ``can_*`` say which controls the rules allow in its status."""

    id: int
    name: str
    status: str
    status_color: str
    description: str
    kind: str  # the schedule's kind: "once" | "cron" | "interval" (a once task's row shows no repeat icon)
    prompt: str
    next_rel: str
    next_when: str  # "Tue 09:00": the next run's wall time in the row's zone ("" when none)
    next_abs: str
    last_rel: str
    last_status: str
    last_color: str
    last_abs: str
    runs: str
    owner: str
    created_by: str
    last_error: str
    pending: str
    can_arm: bool
    can_pause: bool
    can_resume: bool
    can_run_now: bool
    expanded: bool
    history: list[RunRow]
    accent: str  # the colour of its markers on the timeline
    can_skip: bool = False  # an active repeating task with a next occurrence (skip-next)
    pause_note: str = ""  # a paused task's note
    resumes: str = ""  # "resumes Tue 31 Mar, 09:00" for a pause with an end
    paused_until: str = ""  # that end as a datetime-local value in the viewer's zone (the pause form's)
    window: str = ""  # "starts Mon 30 Mar, 09:00 · until Tue 31 Mar, 18:00"
    timing: str = ""  # "jitter up to 30 s · catch-up 10 min" (only what is not the default)
    error_calm: bool = False  # last_error is no failure (its active window ended): shown in neutral text
    spend_today: str = ""  # "Spent today 12,345 tokens · $0.41" ("" before the fires spent anything)
    spend_all: str = ""  # "in all 98,000 tokens · $3.10"
    caps: str = ""  # "Cap 10,000 tokens / $0.50 per fire"
    budget_wait: str = ""  # "Waits for the project's daily budget until 00:00 UTC (in 5 h)": last_error says why
    paced: bool = False  # the next run is where the agent paced it (SPEC §19)
    rules: str = ""  # "tells you only of changes · queues up to 5 fires · the agent paces it within 30 min – 4 h"
    trigger_url: str = ""  # its trigger URL (app/ui/trigger_views.py), "" when it has none
    trigger_curl: str = ""  # a curl call of it
    trigger_since: str = ""  # "made 5 min ago by ann@example.com"
    trigger_made: str = ""  # when its secret was made (RFC 3339): a secret on show belongs to this one only
    exclusions: str = ""  # "Skips US public holidays and 2 dates" (SPEC §20), "" when it skips nothing
    excluded_dates: str = ""  # those dates by name, for the tooltip


def zone_of(name: str | None) -> dt.tzinfo:
    """The IANA zone ``name``, or UTC for an unknown or empty name (display only: never raises)."""
    try:
        return ZoneInfo(name) if name else dt.UTC
    except (ZoneInfoNotFoundError, ValueError):
        return dt.UTC


def relative(instant: dt.datetime, now: dt.datetime) -> str:
    """``in 4 min`` / ``2 h 5 min ago`` / ``now`` — coarse enough to read at a glance."""
    seconds = (instant - now).total_seconds()
    span = abs(seconds)
    if span < 5:
        return "now"
    if span < 60:
        text = f"{int(span)} s"
    elif span < 3600:
        text = f"{int(span // 60)} min"
    elif span < 86400:
        hours, minutes = divmod(int(span // 60), 60)
        text = f"{hours} h" + (f" {minutes} min" if minutes and hours < 10 else "")
    else:
        days, hours = divmod(int(span // 3600), 24)
        text = f"{days} day{'s' if days != 1 else ''}" + (f" {hours} h" if hours and days < 3 else "")
    return f"in {text}" if seconds > 0 else f"{text} ago"


def absolute(instant: dt.datetime, zone: dt.tzinfo) -> str:
    """``Tue 5 May 2026, 09:00:00 CEST (Europe/Paris)`` in ``zone`` (``… 09:00:00 UTC`` when the zone's
    name is its abbreviation)."""
    local = instant.astimezone(zone)
    key = getattr(zone, "key", "UTC")
    text = f"{local:%a} {local.day} {local:%b %Y, %H:%M:%S} {local.tzname()}"
    return text if key == local.tzname() else f"{text} ({key})"


def short_time(instant: dt.datetime, zone: dt.tzinfo) -> str:
    """``Tue 5 May, 09:00`` in ``zone``."""
    local = instant.astimezone(zone)
    return f"{local:%a} {local.day} {local:%b, %H:%M}"


def seconds_text(seconds: float) -> str:
    """A duration: ``850 ms``, ``4.2 s``, ``3 min 20 s``."""
    if seconds < 1:
        return f"{round(seconds * 1000)} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"


def task_zone(task: ScheduledTask, viewer_zone: str) -> dt.tzinfo:
    """A cron task's own zone; every other kind is shown in the viewer's zone."""
    schedule = task.schedule_dict()
    return zone_of(schedule.get("timezone") or viewer_zone)


def describe(schedule: Mapping[str, Any], zone: dt.tzinfo) -> str:
    """Plain English with the zone; a once task's instant is spelled in ``zone``."""
    try:
        if schedule.get("kind") == "once":
            at = parse_instant(schedule["at"], "at")
            return f"Once, {absolute(at, zone)}"
        return describe_schedule(schedule)
    except (ScheduleError, KeyError):  # stored schedules are valid: this only guards display
        return str(schedule.get("kind", ""))


def _enum_or(cls: Any, value: str | None, default: Any) -> Any:
    try:
        return cls(value)
    except ValueError:
        return default


def task_row(task: ScheduledTask, now: dt.datetime, viewer_zone: str,
             history: Sequence[TaskRun] | None = None, index: int = 0,
             usage: Mapping[int, str] | None = None, spend: tuple[Spend, Spend] | None = None) -> TaskRow:
    """The drawer row of ``task`` (``index``: its place in the list, for its colour); ``history``
    (newest first) is given for expanded rows only, ``usage`` maps chat run ids to usage lines,
    ``spend`` is what its fires spent (today in UTC, in all)."""
    zone = task_zone(task, viewer_zone)
    status = _enum_or(TaskStatus, task.status, TaskStatus.ERROR)
    bound = envelope.fire_bound(task.max_runs, task.schedule_dict().get("kind") == "once", task.run_count)
    next_at = task.retry_at if task.retry_at and (not task.next_run_at or task.retry_at < task.next_run_at) \
        else task.next_run_at
    next_at = next_at if status is TaskStatus.ACTIVE and _fires_again(task, next_at) else None
    last_rel, last_status = last_run(task, now)
    viewer = zone_of(viewer_zone)
    wait = budget_views.budget_wait(task, now)
    spent_today, spent_all = budget_views.spend_parts(*spend) if spend else ("", "")
    return TaskRow(
        id=task.id or 0, name=task.name, status=status.value, status_color=STATUS_COLORS[status],
        description=describe(task.schedule_dict(), zone), kind=str(task.schedule_dict().get("kind", "")),
        prompt=task.prompt,
        next_rel=relative(next_at, now) if next_at else "—",
        next_when=clock_time(next_at, now, zone, viewer) if next_at else "",
        next_abs=absolute(next_at, zone) if next_at else _no_next(status, task, now),
        last_rel=last_rel, last_status=last_status,
        last_color=outcomes.color(last_status),
        last_abs=absolute(task.last_run_at, zone) if task.last_run_at else "not run yet",
        runs=f"{task.run_count} / {'∞' if bound is None else bound}", owner=task.owner, created_by=task.created_by,
        last_error=task.last_error or "", pending="waits for budget" if wait else _pending(task),
        can_arm=status is TaskStatus.DRAFT,
        can_pause=status in (TaskStatus.ACTIVE, TaskStatus.ERROR),
        can_resume=status in (TaskStatus.PAUSED, TaskStatus.ERROR, TaskStatus.EXHAUSTED),
        can_run_now=status not in (TaskStatus.DRAFT, TaskStatus.COMPLETED),
        expanded=history is not None,
        history=[run_row(run, zone, (usage or {}).get(run.run_id or 0, "")) for run in history or ()],
        accent=MARKER_COLORS[index % len(MARKER_COLORS)],
        can_skip=status is TaskStatus.ACTIVE and task.schedule_dict().get("kind") != "once" and next_at is not None,
        pause_note=schedule_notes.pause_note(task), resumes=schedule_notes.resumes(task, zone, viewer),
        paused_until=schedule_notes.until_input(task, viewer),
        window=schedule_notes.window(task, now, zone, viewer), timing=schedule_notes.timing(task),
        error_calm=schedule_notes.calm_error(task),
        spend_today=spent_today, spend_all=spent_all,
        caps=budget_views.caps_line(task.max_tokens_per_fire, task.max_cost_per_fire_usd), budget_wait=wait,
        paced=next_at is not None and task.next_paced and next_at == task.next_run_at,
        rules=schedule_notes.rules(task),
        exclusions=calendar_views.exclusion_words(task), excluded_dates=calendar_views.exclusion_dates(task),
    )


def clock_time(instant: dt.datetime, now: dt.datetime, zone: dt.tzinfo, viewer: dt.tzinfo) -> str:
    """The wall time of ``instant`` in ``zone`` (the row's): ``Tue 09:00`` within the coming week,
    ``Tue 5 May, 09:00`` beyond; the zone's abbreviation is added when it is not the viewer's."""
    local = instant.astimezone(zone)
    text = f"{local:%a %H:%M}" if instant - now < dt.timedelta(days=6) else short_time(instant, zone)
    same = local.utcoffset() == instant.astimezone(viewer).utcoffset() and \
        getattr(zone, "key", "UTC") == getattr(viewer, "key", "UTC")
    return text if same else f"{text} {local.tzname()}"


def last_run(task: ScheduledTask, now: dt.datetime) -> tuple[str, str]:
    """(when, outcome) of the last-run cell: "running now" while a fire runs (the outcome of the
    one before is not its), "never" before the first fire ended, else "2 min ago" and its outcome."""
    outcome = _enum_or(RunOutcome, task.last_run_status, None)
    if task.active_run_id is not None or outcome is RunOutcome.RUNNING:
        return "running now", ""
    if task.last_run_at is None:
        # a first fire skipped or queued (busy chat) has an outcome but no end time yet
        return ("never", "") if outcome in (None, RunOutcome.SUCCEEDED) else ("", outcome.value)
    return relative(task.last_run_at, now), outcome.value if outcome else ""


def live_and_drafts(tasks: Iterable[ScheduledTask]) -> tuple[int, int]:
    """(tasks still in play, drafts waiting for a user to arm them) for the Schedules button:
    completed and exhausted tasks (their goal reached or their runs used up) are not counted."""
    statuses = [task.status for task in tasks]
    finished = {TaskStatus.COMPLETED.value, TaskStatus.EXHAUSTED.value}
    return (sum(status not in finished for status in statuses),
            sum(status == TaskStatus.DRAFT.value for status in statuses))


def _fires_again(task: ScheduledTask, next_at: dt.datetime | None) -> bool:
    """Whether the next run will fire: the task has runs left and its active window (SPEC §14
    ``[starts_at, ends_at)``, judged by the occurrence's nominal instant) has not ended by then."""
    end = task.ends_at
    nominal = task.next_occurrence_at or next_at
    return timing.runs_left(task.max_runs, task.run_count) != 0 and \
        (nominal is None or end is None or nominal < end)


def _no_next(status: TaskStatus, task: ScheduledTask, now: dt.datetime) -> str:
    if status is TaskStatus.ACTIVE and timing.runs_left(task.max_runs, task.run_count) == 0:
        return f"no runs left: all {task.max_runs} used"
    end = task.ends_at
    if status is TaskStatus.ACTIVE and end is not None and \
            (task.next_run_at is None or not _fires_again(task, task.next_run_at)):
        return "its active window has ended" if end <= now else "no occurrence is left before its active window ends"
    return {TaskStatus.DRAFT: "a draft does not fire until a user arms it",
            TaskStatus.PAUSED: "paused: resume to fire again"}.get(status, f"{status.value}: no next run")


def _pending(task: ScheduledTask) -> str:
    if task.active_run_id is not None:
        return "running now"
    if task.pending_forced:
        return "run now requested"
    if task.pending_run:
        return "follow-up queued"
    return ""


ERROR_TEXT_COLORS = {RunOutcome.MISSED: "orange", RunOutcome.SKIPPED: "gray", RunOutcome.DEFERRED: "gray",
                     RunOutcome.QUEUED: "gray", RunOutcome.SUPERSEDED: "gray"}


def run_row(run: TaskRun, zone: dt.tzinfo, usage: str = "") -> RunRow:
    """One history line: the planned start (the occurrence moved by its jitter) vs the actual one,
    lateness from the planned start, duration, error, the turn's usage. A record that started no
    turn (skipped, missed, deferred) says so instead of a start."""
    outcome = _enum_or(RunOutcome, run.status, RunOutcome.FAILED)
    planned = run.planned_at or run.occurrence_at
    started = run.started_at or run.claimed_at
    late = (started - planned).total_seconds() if started else 0.0
    duration = (run.finished_at - run.started_at).total_seconds() if run.finished_at and run.started_at else None
    shift = (planned - run.occurrence_at).total_seconds()
    return RunRow(
        id=run.id or 0, run_id=str(run.run_id or ""), fire=f"#{run.fire_number}" if run.fire_number else "",
        status=outcome.value, color=outcomes.report_color(outcome.value, run.outcome),
        label=outcomes.report_label(outcome.value, run.outcome, run.missed_count),
        summary=run.summary or "", told="told nobody" if run.quiet and outcome is RunOutcome.SUCCEEDED else "",
        trigger=f"run now by {run.requested_by}" if run.requested_by and run.trigger == Trigger.RUN_NOW_USER.value
        else TRIGGER_LABELS.get(_enum_or(Trigger, run.trigger, None), run.trigger),
        nominal=f"{short_time(planned, zone)}:{planned.astimezone(zone):%S}",
        actual=_same_day_time(started, planned, zone) if started else "—",
        late=f"+{seconds_text(late)}" if late >= 0.5 else "on time",
        duration=seconds_text(duration) if duration is not None else ("running" if outcome is RunOutcome.RUNNING
                                                                      else "—"),
        error=run.error or "", usage=usage, fired=outcome not in outcomes.NOT_FIRED,
        jitter=f"+{seconds_text(shift)} jitter" if shift >= 0.001 else "",
        error_color=ERROR_TEXT_COLORS.get(outcome, "red"),
    )


def _same_day_time(instant: dt.datetime, reference: dt.datetime, zone: dt.tzinfo) -> str:
    """``15:13:47`` when on the local day of ``reference``, else ``Mon 30 Nov, 15:13:47``."""
    local = instant.astimezone(zone)
    if local.date() == reference.astimezone(zone).date():
        return f"{local:%H:%M:%S}"
    return f"{short_time(instant, zone)}:{local:%S}"
