"""The dialog's "Describe it" field (SPEC §20): a phrase such as "first Monday of every month at
9am", read in the task's zone (the dialog's time zone, or the viewer's), fills the form — the kind,
the cron expression / interval / once instant, the time zone and the exclusions — and gives the
canonical form the read-back shows above the form's own preview. A phrase not understood changes
nothing; the parser's sentence says which part it did not understand.

Blocking (the parser reads the holiday calendars): the dialog's state calls :func:`read` through
``asyncio.to_thread``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from app.core.errors import InvalidInput
from app.schedules.phrases_reply import read_back
from app.schedules.spec import parse_instant
from app.ui import calendar_form, schedule_form
from app.ui.schedule_form import FormFields
from app.ui.schedule_views import zone_of
from app.ui.tasks import task_service

MAX_PHRASE_CHARS = 500
# the fields a phrase fills: one of them edited afterwards, the read-back no longer describes the form
SCHEDULE_FIELDS = ("kind", "cron", "timezone", "at", "every", "every_unit", *calendar_form.FIELDS)


@dataclasses.dataclass(frozen=True)
class Reading:
    """A phrase read: the form it fills and its canonical form, or why it was not understood."""

    fields: FormFields | None
    canonical: str = ""
    error: str = ""


def read(text: str, fields: FormFields, viewer_zone: str) -> Reading:
    """Read ``text`` in the form's zone (the viewer's when the form has none) at the service's now."""
    zone = fields.timezone.strip() or viewer_zone
    try:
        answer = read_back(text, zone, task_service().clock.now())
    except InvalidInput as exc:
        return Reading(None, error=words(exc))
    return Reading(filled(fields, answer, zone), str(answer["canonical"]))


def words(exc: InvalidInput) -> str:
    """The parser's refusal as the field says it: its sentence about the text, or the zone named."""
    reason = exc.message.removeprefix(f"{exc.field}: ")
    if exc.field != "text":
        return f"{schedule_form.LABELS.get('schedule.timezone')}: {reason}"
    if reason.startswith("is "):  # said of the phrase itself: "is empty; expected …"
        return f"The phrase {reason}"
    return reason[:1].upper() + reason[1:]


def filled(fields: FormFields, answer: dict[str, Any], zone_name: str) -> FormFields:
    """``fields`` with what the phrase says: its schedule in the form's terms and its exclusions
    (none when it names none: the phrase describes the whole calendar)."""
    schedule = answer["schedule"]
    kind = schedule["kind"]
    changes: dict[str, str] = {"kind": kind, "timezone": schedule.get("timezone") or zone_name,
                               **calendar_form.inputs_of(list(answer.get("exclude_dates") or []),
                                                         answer.get("holidays"))}
    if kind == "cron":
        changes["cron"] = schedule["cron"]
    elif kind == "interval":
        changes["every"], changes["every_unit"] = schedule_form.every_of(int(schedule["every_seconds"]))
    else:
        local = parse_instant(schedule["at"], "schedule.at").astimezone(zone_of(zone_name))  # read_back loaded it
        changes["at"] = f"{local:%Y-%m-%dT%H:%M:%S}" if local.second else f"{local:%Y-%m-%dT%H:%M}"
    return dataclasses.replace(fields, **changes)


def schedule_part(fields: FormFields) -> dict[str, str]:
    """The fields a phrase fills, to tell whether the form still says what the phrase said."""
    return {name: getattr(fields, name) for name in SCHEDULE_FIELDS}
