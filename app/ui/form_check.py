"""The schedule dialog's live verdict: validate the fields as the service would on save, and
preview the next fires as the scheduler will make them — the active window and the jitter
included (app/schedules/plan.py), so the times shown are the times that fire.

Blocking (CPU-bound schedule checks): the dialog's state calls :func:`check_form` through
``asyncio.to_thread``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Iterable
from typing import Any

from app.core.errors import InvalidInput
from app.schedules import clock_notes, timing
from app.schedules import fields as task_fields
from app.schedules import preview as previews
from app.schedules.model import ScheduledTask
from app.schedules.service import TaskService
from app.schedules.spec import ScheduleError, format_instant, parse_instant, parse_schedule
from app.ui import calendar_form, calendar_views, schedule_form, schedule_notes, schedule_views
from app.ui.schedule_form import FormFields
from app.ui.tasks import task_service

PREVIEW_COUNT = 5


@dataclasses.dataclass
class FormCheck:
    """The dialog's verdict: the preview (when the schedule is valid) and the first error."""

    description: str = ""
    fires: list[dict[str, str]] = dataclasses.field(default_factory=list)
    error_field: str = ""
    error: str = ""
    window: str = ""  # "Ends Tue 31 Mar, 18:00 CEST: nothing fires from then on"
    jitter_hint: str = ""  # "At most a tenth of the smallest gap: up to 6 min here"


def check_form(fields: FormFields, original: dict[str, Any] | None, viewer_zone: str) -> FormCheck:
    """Validate like the service would on save, and preview the next 5 fires in the task's zone.

    No fire is listed while the schedule itself is in error (a 1-second interval shows its
    error, not five rows of "now"); an error in the name or prompt keeps the preview, and so does
    one in the advanced timing (the preview then leaves out what cannot be read).
    """
    service = task_service()
    check = FormCheck()
    try:
        schedule = schedule_form.schedule_of(fields)
        try:
            _preview(check, schedule, service, fields, viewer_zone, original)
        except InvalidInput:
            if original is None or original["schedule"] != schedule:
                raise  # an unchanged schedule whose time has passed may still be renamed
        if original is None:
            service.validate(schedule_form.body_of(fields))
        else:
            service.validate(schedule_form.patch_of(fields, original), partial_of=_as_task(original))
    except InvalidInput as exc:
        check.error_field, check.error = exc.field, schedule_form.explain(exc)
        if exc.field.startswith("schedule"):
            check.description, check.fires, check.window = "", [], ""
    return check


def _runs_left(fields: FormFields, original: dict[str, Any] | None) -> int | None:
    """The fires the task has left: the form's max runs minus its runs so far (a once task has no
    max runs: saving clears a stored one; a max runs that is not a whole number from 1 bounds
    nothing here: its own error says why)."""
    stored = original or {}
    try:
        raw = fields.max_runs.strip()
        max_runs = None if fields.kind == "once" else int(raw) if raw else None
    except ValueError:
        return None
    if max_runs is None or max_runs < 1:
        return None
    return timing.runs_left(max_runs, int(stored.get("run_count") or 0))


def _timing(fields: FormFields) -> dict[str, Any]:
    """The advanced timing as typed, or the defaults while it cannot be read (its error is told
    by the validation that follows)."""
    try:
        return schedule_form.timing_of(fields)
    except InvalidInput:
        return {"catchup_window_seconds": None, "jitter_seconds": 0, "starts_at": None, "ends_at": None}


def _armed_at(fields: FormFields, original: dict[str, Any] | None, now: dt.datetime) -> dt.datetime:
    """An edit that keeps the schedule and its window keeps the interval's grid; anything else
    arms the task anew on save (app/schedules/service.py ``update``)."""
    if original is None:
        return now
    try:
        patch = schedule_form.patch_of(fields, original)
    except InvalidInput:
        return now
    return now if set(patch) & task_fields.REARMS or original.get("armed_at") is None else original["armed_at"]


def _preview(check: FormCheck, schedule: dict[str, Any], service: TaskService, fields: FormFields,
             viewer_zone: str, original: dict[str, Any] | None) -> None:
    now = service.clock.now()
    window = _timing(fields)
    starts_at, ends_at = (parse_instant(window[k], k) if window[k] else None for k in ("starts_at", "ends_at"))
    try:
        shown = previews.preview(schedule, now, PREVIEW_COUNT, display_timezone=fields.timezone or viewer_zone,
                                 min_every_seconds=service.settings.min_interval_seconds,
                                 runs_left=_runs_left(fields, original), starts_at=starts_at, ends_at=ends_at,
                                 jitter_seconds=window["jitter_seconds"], task_id=(original or {}).get("id") or 0,
                                 armed_at=_armed_at(fields, original, now),
                                 **calendar_form.readable(fields.kind, fields.exclude_dates, fields.holidays_country,
                                                          fields.holidays_subdivision))
    except ScheduleError as exc:
        raise InvalidInput(exc.field, exc.message) from None
    tz = schedule_views.zone_of(shown["timezone"])
    check.description = schedule_views.describe(schedule, tz)
    check.window = window_line(starts_at, ends_at, now, tz)
    check.jitter_hint = _jitter_hint(schedule, now)
    for fire in shown["fires"]:
        at = parse_instant(fire["utc"], "utc")
        nominal = parse_instant(fire.get("nominal", fire["utc"]), "nominal")
        check.fires.append({"local": fire_text(fire, tz), "relative": schedule_views.relative(at, now),
                            "utc": fire["utc"], "note": _clock_note(schedule, fields, nominal), "excluded": ""})
    check.fires = with_excluded(check.fires, shown.get("excluded", []), tz, now)


def fire_text(fire: dict[str, str], zone: dt.tzinfo) -> str:
    """One preview row's time: ``Tue 31 Mar, 09:00 CEST``; with a jitter, the exact instant of a
    saved task (``09:00:17``) or an unsaved task's spread (``Tue 31 Mar, 09:00 – 09:00:30 CEST``)."""
    at = parse_instant(fire["utc"], "utc")
    local = at.astimezone(zone)
    if "latest" not in fire:
        return f"{schedule_views.short_time(at, zone)} {local.tzname()}"
    if fire["utc"] != fire["nominal"]:  # the task's own offset
        return f"{schedule_views.short_time(at, zone)}:{local:%S} {local.tzname()}"
    latest = parse_instant(fire["latest"], "latest").astimezone(zone)
    return f"{schedule_views.short_time(at, zone)} – {latest:%H:%M:%S} {local.tzname()}"


def window_line(starts_at: dt.datetime | None, ends_at: dt.datetime | None, now: dt.datetime,
                zone: dt.tzinfo) -> str:
    """``Starts Mon 30 Mar, 09:00 CEST · ends Tue 31 Mar, 18:00 CEST: nothing fires from then on``."""
    def at(instant: dt.datetime) -> str:
        return f"{schedule_views.short_time(instant, zone)} {instant.astimezone(zone).tzname()}"

    parts = []
    if starts_at is not None and starts_at > now:
        parts.append(f"starts {at(starts_at)}")
    if ends_at is not None:
        parts.append(f"ends {at(ends_at)}: nothing fires from then on")
    text = " · ".join(parts)
    return text[:1].upper() + text[1:]


def _jitter_hint(schedule: dict[str, Any], now: dt.datetime) -> str:
    """The jitter's bound for this schedule, in words (SPEC §14: a tenth of its smallest gap)."""
    try:
        parsed = parse_schedule(schedule)
        bound = task_fields.jitter_bound(parsed, now)
    except (ScheduleError, ValueError):
        return ""
    most = schedule_notes.duration_words(bound).replace(" ", "\u00a0")  # "2 h 18 min" stays on one line
    if parsed.kind == "once":
        return f"A once task takes at most {most}"
    return f"At most a tenth of the smallest gap: up to {most} here"


def _clock_note(schedule: dict[str, Any], fields: FormFields, at: Any) -> str:
    """What a clock change does to this fire, in words ("" for most fires)."""
    if schedule["kind"] == "cron":
        return clock_notes.cron_note(schedule["cron"], schedule["timezone"], at)
    if schedule["kind"] == "once":
        return clock_notes.once_note(schedule_form.wall_of(fields), fields.timezone.strip())
    return ""


def _as_task(original: dict[str, Any]) -> ScheduledTask:
    return ScheduledTask(chat_id=0, project_id=0, owner="", name=original["name"], prompt=original["prompt"],
                         schedule=json.dumps(original["schedule"]), overlap=original["overlap"],
                         session=original["session"], max_runs=original["max_runs"],
                         catchup_window_seconds=original.get("catchup_window_seconds"),
                         jitter_seconds=original.get("jitter_seconds") or 0,
                         starts_at=_instant(original.get("starts_at"), "starts_at"),
                         ends_at=_instant(original.get("ends_at"), "ends_at"), armed_at=original.get("armed_at"),
                         max_tokens_per_fire=original.get("max_tokens_per_fire"),
                         max_cost_per_fire_usd=original.get("max_cost_per_fire_usd"),
                         notify_on=original.get("notify_on") or "always", queue_cap=original.get("queue_cap") or 3,
                         pace_min_seconds=original.get("pace_min_seconds"),
                         pace_max_seconds=original.get("pace_max_seconds"),
                         **calendar_form.stored_columns(original))


def _instant(value: str | None, field: str) -> dt.datetime | None:
    return parse_instant(value, field) if value else None


def with_excluded(fires: list[dict[str, str]], excluded: Iterable[dict[str, Any]], zone: dt.tzinfo,
                  now: dt.datetime) -> list[dict[str, str]]:
    """The preview's rows: its fires (``"excluded": ""``) and the occurrences the exclusions skip
    (``"excluded": "excluded · New Year's Day"``), in time order. Skipped occurrences of one day with
    no fire between them are one row from ``GROUPED`` on, counted by the preview's ``day_count`` (a
    frequent schedule skips many a day; the preview lists only the first few of each)."""
    skipped: list[list[dt.datetime]] = []
    reasons: list[str] = []
    counts: list[int] = []
    fired = sorted(parse_instant(fire["utc"], "utc") for fire in fires)
    for item in excluded:
        at = parse_instant(item["utc"], "utc")
        if skipped and reasons[-1] == item["reason"] and _same_day(skipped[-1][-1], at, zone) and \
                not any(skipped[-1][-1] < fire < at for fire in fired):
            skipped[-1].append(at)
        else:
            skipped.append([at])
            reasons.append(item["reason"])
            counts.append(0)
        counts[-1] = max(counts[-1], int(item.get("day_count") or 0), len(skipped[-1]))
    rows = list(fires)
    for group, reason, count in zip(skipped, reasons, counts, strict=True):
        rows += _skipped_rows(group, reason, count, zone, now)
    return sorted(rows, key=lambda row: parse_instant(row["utc"], "utc"))


GROUPED = 3


def _same_day(a: dt.datetime, b: dt.datetime, zone: dt.tzinfo) -> bool:
    return a.astimezone(zone).date() == b.astimezone(zone).date()


def _skipped_rows(group: list[dt.datetime], reason: str, count: int, zone: dt.tzinfo,
                  now: dt.datetime) -> list[dict[str, str]]:
    def row(at: dt.datetime, local: str, label: str) -> dict[str, str]:
        return {"local": local, "relative": schedule_views.relative(at, now), "utc": format_instant(at), "note": "",
                "excluded": label}

    label = calendar_views.excluded_label(reason)
    if count < GROUPED:
        return [row(at, f"{schedule_views.short_time(at, zone)} {at.astimezone(zone).tzname()}", label)
                for at in group]
    first, last = group[0], group[-1].astimezone(zone)
    if len(group) == count:
        return [row(first, f"{schedule_views.short_time(first, zone)} – {last:%H:%M} {last.tzname()}",
                    f"{label} · {count} times")]
    return [row(first, f"{schedule_views.short_time(first, zone)} {first.astimezone(zone).tzname()} and later",
                f"{label} · {_thousands(count)} times")]


def _thousands(count: int) -> str:
    return f"{count:,}"
