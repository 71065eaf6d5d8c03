"""The new/edit schedule form: text fields in, an API-shaped body out (pure, no database).

Conversion problems (a non-number in "every", a malformed date) raise InvalidInput naming the
same dotted field the API would, so the dialog reports every error the same way.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from app.core.attention_tables import Notify
from app.core.errors import InvalidInput
from app.schedules import exclusions
from app.schedules.fields import MAX_CATCHUP_SECONDS, MAX_JITTER_SECONDS
from app.schedules.model import Overlap, ScheduledTask, SessionMode
from app.schedules.spec import format_instant, parse_instant
from app.ui import budget_views, calendar_form, checks, fire_rules_form

KINDS = ("once", "cron", "interval")
LABELS = {
    "name": "Name", "prompt": "Prompt", "schedule": "Schedule", "schedule.kind": "Kind",
    "schedule.cron": "Cron expression", "schedule.timezone": "Time zone", "schedule.at": "Date and time",
    "schedule.every_seconds": "Interval", "overlap": "Overlap", "max_runs": "Max runs", "session": "Session",
    "notify": "Notify", "catchup_window_seconds": "Catch-up window", "jitter_seconds": "Jitter",
    "starts_at": "Starts at", "ends_at": "Ends at",
    "max_tokens_per_fire": "Max tokens per fire", "max_cost_per_fire_usd": "Max cost per fire",
    **fire_rules_form.LABELS, **calendar_form.LABELS,
}
# The interval's unit selector: the stored value stays seconds (SPEC §2), the form multiplies.
UNITS = {"seconds": 1, "minutes": 60, "hours": 3600, "days": 86400}
# Which input shows a red outline for an error on each field.
INPUTS = {"schedule.cron": "cron", "schedule.timezone": "timezone", "schedule.at": "at",
          "schedule.every_seconds": "every", "max_runs": "max_runs", "name": "name", "prompt": "prompt",
          "catchup_window_seconds": "catchup", "jitter_seconds": "jitter", "starts_at": "starts", "ends_at": "ends",
          "max_tokens_per_fire": "cap_tokens", "max_cost_per_fire_usd": "cap_cost", **fire_rules_form.INPUTS,
          **calendar_form.INPUTS}
# The "Advanced options" disclosure: SPEC §14's timing, §15's spending caps per fire, §19's pacing.
ADVANCED = frozenset({"catchup", "catchup_unit", "catchup_mode", "jitter", "starts", "ends", "cap_tokens", "cap_cost",
                      "pace_min", "pace_max"})
# The catch-up window: a span ("window") or no limit ("late": fire however late, stored as null).
CATCHUP_MODES = ("window", "late")


@dataclasses.dataclass(frozen=True)
class FormFields:
    """The dialog's inputs, as typed."""

    name: str = ""
    prompt: str = ""
    kind: str = "interval"
    cron: str = "0 9 * * 1-5"
    timezone: str = "UTC"
    at: str = ""
    every: str = "1"
    every_unit: str = "hours"
    overlap: str = Overlap.QUEUE_ONE.value
    session: str = SessionMode.RESUME.value
    max_runs: str = ""
    notify: str = Notify.FAILURES.value
    catchup: str = "1"
    catchup_unit: str = "hours"
    catchup_mode: str = "window"
    jitter: str = "0"  # seconds
    starts: str = ""  # wall time in ``timezone`` (a datetime-local value), "" for none
    ends: str = ""
    cap_tokens: str = ""  # max tokens per fire, "" for no cap
    cap_cost: str = ""  # max cost per fire in US dollars, "" for no cap
    notify_on: str = "always"  # SPEC §19: which fires tell people
    queue_cap: str = "3"  # how many fires may wait (overlap queue_all only)
    pace_min: str = ""  # the soonest the agent may move the next fire to ("30m"); "" with pace_max: may not
    pace_max: str = ""
    exclude_dates: str = ""  # SPEC §20, cron only: "2026-12-24, 2026-12-31" (local dates)
    holidays_country: str = ""  # "US": skip that country's public holidays ("" for none)
    holidays_subdivision: str = ""  # "CA": and that region's


FIELDS = tuple(f.name for f in dataclasses.fields(FormFields))
CHOICES = {"kind": KINDS, "every_unit": tuple(UNITS),
           "overlap": tuple(o.value for o in Overlap), "session": tuple(m.value for m in SessionMode),
           "notify": tuple(n.value for n in Notify), "catchup_unit": tuple(UNITS), "catchup_mode": CATCHUP_MODES,
           "notify_on": tuple(value for value, _ in fire_rules_form.NOTIFY_ON)}
# The most a field may hold while it is typed (the rules of a task are stricter: its errors show inline).
LIMITS = {"name": 200, "cron": 256, "timezone": 64, "at": 64, "every": 32, "max_runs": 32, "catchup": 32,
          "jitter": 32, "starts": 64, "ends": 64, "cap_tokens": 32, "cap_cost": 32, "queue_cap": 32, "pace_min": 32,
          "pace_max": 32, **calendar_form.LIMITS}


def typed(field: object, value: object, prompt_chars: int) -> tuple[str, str]:
    """(field, value) of one keystroke in the dialog, or InvalidInput for a field or value it cannot hold."""
    name = checks.choice(field, "field", FIELDS)
    if name in CHOICES:
        return name, checks.choice(value, name, CHOICES[name])
    return name, checks.text(value, name, prompt_chars if name == "prompt" else LIMITS[name])


def explain(exc: InvalidInput) -> str:
    """``Cron expression: minute: 61 is out of range 0-59`` — the field by its label (once), then why."""
    reason = fire_rules_form.dialog_words(budget_views.dialog_words(exc.message.removeprefix(f"{exc.field}: ")))
    return f"{LABELS.get(exc.field, exc.field)}: {reason}"


def every_of(seconds: int) -> tuple[str, str]:
    """(number, unit) for a stored interval: the largest unit that divides it (3600 → 1 hours)."""
    for unit, size in sorted(UNITS.items(), key=lambda item: -item[1]):
        if seconds % size == 0:
            return str(seconds // size), unit
    return str(seconds), "seconds"


def wall_of(fields: FormFields) -> dt.datetime:
    """The once task's typed wall time (naive), or InvalidInput on ``schedule.at``."""
    try:
        return dt.datetime.fromisoformat(fields.at.strip()).replace(tzinfo=None)
    except ValueError:
        raise InvalidInput("schedule.at", "pick a date and time") from None


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidInput("schedule.timezone", f"{name.strip()!r} is not a known IANA time zone "
                                                "(pick one from the list, e.g. Europe/Paris)") from None


def schedule_of(fields: FormFields) -> dict[str, Any]:
    """The API schedule dict; a once time is read as wall time in the chosen zone."""
    if fields.kind == "cron":
        return {"kind": "cron", "cron": fields.cron.strip(), "timezone": fields.timezone.strip()}
    if fields.kind == "interval":
        try:
            every = int(fields.every.strip())
        except ValueError:
            raise InvalidInput("schedule.every_seconds", f"must be a whole number of {fields.every_unit}") from None
        return {"kind": "interval", "every_seconds": every * UNITS.get(fields.every_unit, 1)}
    if fields.kind == "once":
        zone = _zone(fields.timezone)
        return {"kind": "once", "at": format_instant(wall_of(fields).replace(tzinfo=zone))}
    raise InvalidInput("schedule.kind", "must be once, cron or interval")


def _whole(text: str, field: str, what: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise InvalidInput(field, f"must be a whole number of {what}") from None


def _instant_of(wall: str, zone_name: str, field: str) -> str | None:
    """A typed wall time (a datetime-local value) in the form's zone as an API instant, None when empty."""
    if not wall.strip():
        return None
    try:
        naive = dt.datetime.fromisoformat(wall.strip()).replace(tzinfo=None)
    except ValueError:
        raise InvalidInput(field, "pick a date and time, or leave it empty") from None
    if not FIRST_YEAR <= naive.year <= LAST_YEAR:
        raise InvalidInput(field, f"pick a date between {FIRST_YEAR} and {LAST_YEAR}")
    return format_instant(naive.replace(tzinfo=_zone(zone_name)))


FIRST_YEAR, LAST_YEAR = 1970, 2200  # typed dates outside are refused, never overflowed


def _wall_of(instant: dt.datetime | None, zone: dt.tzinfo) -> str:
    """An instant as a datetime-local value in ``zone`` (seconds only when it has some), "" for None."""
    if instant is None:
        return ""
    local = instant.astimezone(zone)
    return f"{local:%Y-%m-%dT%H:%M:%S}" if local.second else f"{local:%Y-%m-%dT%H:%M}"


def pause_body(note: str, until: str, zone_name: str) -> dict[str, Any]:
    """The pause form as the pause call's body: the note ("" clears it) and the end, typed as wall
    time in the viewer's zone ("" for none: resumed by hand). Both are always sent, so saving the
    form of a paused task changes both; on an active task empty fields make a plain pause."""
    return {"note": note.strip() or None, "until": _instant_of(until, zone_name, "until")}


def timing_of(fields: FormFields) -> dict[str, Any]:
    """The SPEC §14 part of the body: the catch-up window in seconds (None: fire however late), the
    jitter in seconds, and the active window's ends as instants (wall times in the form's zone).
    A once task takes no window: one typed before switching to once is cleared."""
    if fields.catchup_mode == "late":
        catchup = None
    else:
        catchup = _whole(fields.catchup, "catchup_window_seconds", fields.catchup_unit) * \
            UNITS.get(fields.catchup_unit, 1)
    jitter = _whole(fields.jitter or "0", "jitter_seconds", "seconds (0 for none)")
    if jitter > MAX_JITTER_SECONDS:
        raise InvalidInput("jitter_seconds", f"is more than a day ({MAX_JITTER_SECONDS} s)")
    if catchup is not None and catchup > MAX_CATCHUP_SECONDS:
        raise InvalidInput("catchup_window_seconds", "is more than a year")
    once = fields.kind == "once"
    return {"catchup_window_seconds": catchup, "jitter_seconds": jitter,
            "starts_at": None if once else _instant_of(fields.starts, fields.timezone, "starts_at"),
            "ends_at": None if once else _instant_of(fields.ends, fields.timezone, "ends_at")}


def body_of(fields: FormFields) -> dict[str, Any]:
    """The create body (every editable field). A once task's max runs is none: it fires once, the
    form hides the field, and a value typed before switching to once — or one stored when the task
    was repeating — is cleared rather than left to exhaust it unseen. So are its pace bounds."""
    raw = "" if fields.kind == "once" else fields.max_runs.strip()
    try:
        max_runs = int(raw) if raw else None
    except ValueError:
        raise InvalidInput("max_runs", "must be a whole number (leave it empty for no limit)") from None
    return {"name": fields.name, "prompt": fields.prompt, "schedule": schedule_of(fields),
            "overlap": fields.overlap, "session": fields.session, "max_runs": max_runs, "notify": fields.notify,
            **timing_of(fields), **budget_views.caps_body(fields.cap_tokens, fields.cap_cost),
            **calendar_form.body(fields.kind, fields.exclude_dates, fields.holidays_country,
                                 fields.holidays_subdivision),
            **fire_rules_form.rules_body(fields.notify_on, fields.overlap, fields.queue_cap,
                                         *(("", "") if fields.kind == "once" else (fields.pace_min, fields.pace_max)))}


def patch_of(fields: FormFields, original: dict[str, Any]) -> dict[str, Any]:
    """Only what changed against ``original`` (a body), so an unchanged schedule keeps its grid."""
    body = body_of(fields)
    patch = {key: value for key, value in body.items() if original.get(key) != value}
    zone = original["schedule"].get("timezone") or fields.timezone  # the zone the window was shown in
    for key, typed in (("starts_at", fields.starts), ("ends_at", fields.ends)):
        stored = original.get(key)
        if key in patch and stored and typed.strip() == _wall_of(dt.datetime.fromisoformat(
                stored.replace("Z", "+00:00")), _zone(zone)):
            del patch[key]  # untouched: the stored instant stays (a repeated wall hour, another zone)
    return patch


def _stored(instant: dt.datetime | None) -> str | None:
    """A stored instant as the form sends it back (whole seconds), so an untouched field is no change."""
    return None if instant is None else format_instant(instant.replace(microsecond=0))


def original_of(task: ScheduledTask) -> dict[str, Any]:
    """A stored task as a body, to diff edits against (``run_count``, ``armed_at`` and ``id`` ride
    along for the preview — its runs left, its interval grid and its jitter; no body field, so no
    edit ever sends them)."""
    return {"name": task.name, "prompt": task.prompt, "schedule": task.schedule_dict(),
            "overlap": task.overlap, "session": task.session, "max_runs": task.max_runs, "notify": task.notify,
            "catchup_window_seconds": task.catchup_window_seconds, "jitter_seconds": task.jitter_seconds or 0,
            "starts_at": _stored(task.starts_at), "ends_at": _stored(task.ends_at),
            "max_tokens_per_fire": task.max_tokens_per_fire, "max_cost_per_fire_usd": task.max_cost_per_fire_usd,
            **fire_rules_form.rules_of(task), **exclusions.of_task(task).as_json(),
            "run_count": task.run_count, "armed_at": task.armed_at, "id": task.id or 0}


def fields_of(task: ScheduledTask, viewer_zone: str) -> FormFields:
    """Pre-fill the dialog from ``task``; a once instant and the active window are shown as wall
    time in the dialog's zone (a cron task's own, else the viewer's)."""
    schedule = task.schedule_dict()
    kind = schedule["kind"]
    catchup, unit = every_of(task.catchup_window_seconds) if task.catchup_window_seconds else ("1", "hours")
    base = FormFields(name=task.name, prompt=task.prompt, kind=kind, overlap=task.overlap, session=task.session,
                      max_runs="" if task.max_runs is None else str(task.max_runs), timezone=viewer_zone,
                      notify=task.notify, catchup=catchup, catchup_unit=unit,
                      catchup_mode="late" if task.catchup_window_seconds is None else "window",
                      jitter=str(task.jitter_seconds or 0),
                      cap_tokens=budget_views.tokens_input(task.max_tokens_per_fire),
                      cap_cost=budget_views.cost_input(task.max_cost_per_fire_usd),
                      **fire_rules_form.rules_fields(task), **calendar_form.stored_inputs(task))
    if kind == "cron":
        base = dataclasses.replace(base, cron=schedule["cron"], timezone=schedule["timezone"])
    zone = _zone(base.timezone)
    base = dataclasses.replace(base, starts=_wall_of(task.starts_at, zone), ends=_wall_of(task.ends_at, zone))
    if kind == "interval":
        every, unit = every_of(schedule["every_seconds"])
        return dataclasses.replace(base, every=every, every_unit=unit)
    if kind == "once":
        at = parse_instant(schedule["at"], "schedule.at").astimezone(zone)
        return dataclasses.replace(base, at=f"{at:%Y-%m-%dT%H:%M:%S}" if at.second else f"{at:%Y-%m-%dT%H:%M}")
    return base


def default_at(now: dt.datetime, zone_name: str) -> str:
    """A sensible first value for a once task: the next full hour, as wall time in the zone."""
    try:
        zone: dt.tzinfo = _zone(zone_name)
    except InvalidInput:
        zone = dt.UTC
    local = (now + dt.timedelta(hours=1)).astimezone(zone)
    return f"{local:%Y-%m-%dT%H}:00"


def blocked_reason(error_field: str, fields: FormFields) -> str:
    """Why Create/Save is disabled, shown beside the button: the field, and missing or invalid."""
    if not error_field:
        return ""
    label = LABELS.get(error_field, error_field.rsplit(".", 1)[-1])
    value = getattr(fields, INPUTS.get(error_field, ""), None)
    if isinstance(value, str) and not value.strip():
        return f"{label} is missing"
    return f"{label} needs fixing (see the message above)"


def timing_set(fields: FormFields) -> bool:
    """True when the advanced options hold anything but the defaults (the dialog opens them then)."""
    default = FormFields()
    return any(getattr(fields, name) != getattr(default, name) for name in sorted(ADVANCED))


def changed(fields: FormFields, opened_with: dict[str, str]) -> bool:
    """True when the dialog holds something other than what it opened with (closing would lose it)."""
    return bool(opened_with) and dataclasses.asdict(fields) != opened_with
