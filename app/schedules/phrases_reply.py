"""What ``POST /api/schedules/parse`` (and the agent API's twin) answers: a phrase read back.

The phrase's schedule and exclusions (``app/schedules/phrases.py``), its canonical form, its
English and the next five fires in the phrase's zone, with the occurrences the exclusions skip.
Nothing is stored.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from app.core.errors import InvalidInput
from app.schedules import preview as previews
from app.schedules.cron.zone import load_zone
from app.schedules.phrases import parse_phrase
from app.schedules.spec import ScheduleError, parse_instant

READ_BACK_FIRES = 5


def read_back(text: Any, timezone: Any, now: datetime) -> dict[str, Any]:
    """``{"schedule", "exclude_dates", "holidays", "canonical", "description", "next", "fires",
    "excluded"}`` for ``text`` read in IANA zone ``timezone`` at ``now``.

    Raises InvalidInput naming ``text`` (the message quotes the part not understood) or
    ``timezone``.
    """
    try:
        phrase = parse_phrase(text, timezone, now)
        shown = previews.preview(phrase.schedule, now, READ_BACK_FIRES, display_timezone=timezone.strip(),
                                 exclude_dates=phrase.exclude_dates, holidays=phrase.holidays)
    except ScheduleError as exc:
        raise _told(exc.field, exc.message) from None
    except InvalidInput as exc:  # the exclusions' own check; the phrase's were checked first
        raise _told(exc.field, str(exc).removeprefix(f"{exc.field}: ")) from None
    return {
        "schedule": phrase.schedule,
        "exclude_dates": phrase.exclude_dates,
        "holidays": phrase.holidays,
        "canonical": canonical(phrase.schedule, timezone.strip()),
        "description": _description(phrase.schedule, shown["description"], timezone.strip()),
        "next": [fire["utc"] for fire in shown["fires"]],
        "fires": shown["fires"],
        "excluded": shown.get("excluded", []),
    }


def _description(schedule: dict[str, Any], english: str, timezone: str) -> str:
    """The English; a once schedule's instant in the phrase's zone, as it was said ("Once, at
    2027-01-04 10:00 (Europe/Berlin time)"), not in UTC."""
    if schedule["kind"] != "once":
        return english
    at = parse_instant(schedule["at"], "schedule.at").astimezone(load_zone(timezone).zone)
    return f"Once, at {at:%Y-%m-%d %H:%M} ({timezone} time)"


def _told(field: str, message: str) -> InvalidInput:
    """The phrase's own fields keep their names; anything the schedule checks said is about the text."""
    if field in ("text", "timezone"):
        return InvalidInput(field, message)
    return InvalidInput("text", f"{field}: {message}")


def canonical(schedule: dict[str, Any], timezone: str) -> str:
    """``0 9 * * 1#1`` | ``every 3600 s`` | ``once at 2027-01-04T09:00:00+01:00`` (in ``timezone``)."""
    if schedule["kind"] == "cron":
        return str(schedule["cron"])
    if schedule["kind"] == "interval":
        return f"every {schedule['every_seconds']} s"
    at = parse_instant(schedule["at"], "schedule.at").astimezone(load_zone(timezone).zone)
    return f"once at {at.isoformat()}"
