"""Natural-language schedule entry (SPEC §20): a deterministic grammar, no model.

``parse_phrase("first Monday of every month at 9am", "Europe/Berlin", now)`` answers the API
schedule dict ``{"kind": "cron", "cron": "0 9 * * 1#1", "timezone": "Europe/Berlin"}`` with the
exclusions the phrase names. The grammar (case-insensitive; docs/CRON.md "Natural-language
entry" lists every phrase with an example)::

    phrase   := schedule [exclusions]
    schedule := "every" ("minute" | "hour" | "day" | "weekday" | "weekend" | DAYS | N UNIT
                         | "other" UNIT | "week" "on" DAYS | "month" "on" MONTHDAY | MONTHDAY) [TIME]
              | "hourly" | "daily" [TIME] | "weekly" "on" DAYS [TIME] | "monthly" "on" MONTHDAY [TIME]
              | ["on"] ("weekdays" | "weekends" | PLURAL-DAYS) [TIME]
              | ["on"] MONTHDAY "of" ("the" | "every" | "each") "month" [TIME]
              | ["on"] DATE [TIME] | ("today" | "tomorrow") [TIME]
              | "in" N UNIT ([","|"and"] N UNIT)*
    MONTHDAY := ["the"] (ORDINAL | "last") (DAYNAME | "weekday" | "day") | ["the"] ORDINAL | "day" N

Anything else is refused with a ScheduleError on field ``text`` (``timezone`` for the zone) that
quotes the part not understood. A day-based phrase without a time fires at 09:00.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import Any

from app.schedules.cron.fields import CronError, parse_cron
from app.schedules.cron.zone import load_zone
from app.schedules.phrases_except import INTRODUCERS, exclusions
from app.schedules.phrases_time import (
    DEFAULT_TIME,
    at_time,
    calendar_day,
    local_instant,
    next_date_instant,
    past,
    relative_day,
    starts_date,
)
from app.schedules.phrases_words import (
    DAY_NAMES,
    LAST,
    MAX_TEXT_CHARS,
    Cursor,
    Kind,
    ordinal_of,
    refuse,
    weekday_of,
)
from app.schedules.spec import MAX_EVERY_SECONDS, ScheduleError, format_instant

UNITS = {"minute": 60, "min": 60, "hour": 3600, "hr": 3600, "day": 86400, "week": 604800}
_UNIT_WORDS = {**{u: u for u in UNITS}, **{u + "s": u for u in UNITS}}
_START = ('a schedule such as "every day at 9", "every 15 minutes", "every Monday and Thursday at 18:00", '
          '"the first Monday of every month", "day 15 of every month", "on 2027-01-04 at 9" or "in 2 hours"')
_WEEKDAYS, _WEEKENDS = "1-5", "0,6"


@dataclass(frozen=True)
class Phrase:
    """What a phrase means: an API schedule dict and the exclusions a task stores beside it."""

    schedule: dict[str, Any]
    exclude_dates: list[str]
    holidays: dict[str, str | None] | None


def parse_phrase(text: Any, timezone: Any, now: datetime) -> Phrase:
    """Read ``text`` as a schedule in IANA zone ``timezone`` at instant ``now`` (aware).

    Raises ScheduleError: field ``timezone`` for a zone that does not load, field ``text`` for a
    phrase that is empty, too long or not understood (the message quotes the part), a date in
    the past, a wall time the clocks skip, or exclusions on a schedule without local dates.
    """
    if not isinstance(timezone, str):
        raise ScheduleError("timezone", "must be an IANA zone name such as Europe/Berlin")
    try:
        zone = load_zone(timezone.strip()).zone
    except CronError as exc:
        raise ScheduleError("timezone", exc.message) from None
    if not isinstance(text, str) or not text.strip():
        raise refuse(f"is empty; expected {_START}")
    if len(text) > MAX_TEXT_CHARS:
        raise refuse(f"is {len(text)} characters long; a phrase holds at most {MAX_TEXT_CHARS}")
    _not_cron(text)
    cursor = Cursor(text)
    schedule = _Grammar(cursor, timezone.strip(), zone, now).schedule()
    schedule_text = cursor.since(0)
    excluded = exclusions(cursor, now.astimezone(zone).date())
    if not cursor.done():
        raise cursor.unexpected('the end of the phrase, or "excluding" and dates or holidays')
    if (excluded.dates or excluded.holidays) and schedule["kind"] != "cron":
        raise refuse(f'"{excluded.typed}" needs a schedule with local dates: "{schedule_text}" is not one '
                     "(only a calendar schedule such as \"every day at 9\" takes exclusions)")
    return Phrase(schedule, excluded.dates, excluded.holidays)


def _not_cron(text: str) -> None:
    """A cron expression typed as a phrase is told where it goes (it would be refused at its first "*")."""
    try:
        parse_cron(text)
    except CronError:
        return
    raise refuse(f'"{text.strip()}" is a cron expression, not a phrase: give it as a cron schedule')


class _Grammar:
    """The recursive descent over one phrase's tokens."""

    def __init__(self, cursor: Cursor, zone_name: str, zone: Any, now: datetime) -> None:
        self.c = cursor
        self.zone_name = zone_name
        self.zone = zone
        self.now = now

    # -- results ----------------------------------------------------------------------------

    def cron(self, minute_hour: str, dom: str = "*", dow: str = "*") -> dict[str, Any]:
        return {"kind": "cron", "cron": f"{minute_hour} {dom} * {dow}", "timezone": self.zone_name}

    def at_day(self, dom: str = "*", dow: str = "*") -> dict[str, Any]:
        """A day-based cron schedule with the phrase's time (09:00 when none is given)."""
        clock = at_time(self.c) or DEFAULT_TIME
        return self.cron(f"{clock.minute} {clock.hour}", dom, dow)

    def once(self, instant: datetime) -> dict[str, Any]:
        return {"kind": "once", "at": format_instant(instant)}

    # -- schedule ---------------------------------------------------------------------------

    def schedule(self) -> dict[str, Any]:
        c = self.c
        rules: dict[str, Callable[[], dict[str, Any]]] = {
            "every": self.every, "each": self.every, "hourly": lambda: self.cron("0 *"),
            "daily": self.at_day, "weekly": self.week, "monthly": self.month, "in": self.after, "on": self.on,
        }
        token = c.peek()
        if token is not None and token.kind is Kind.WORD and token.value in rules:
            return rules[c.take().value]()
        if c.is_word("today", "tomorrow"):
            return self.relative()
        return self.on(leading=False)

    def on(self, leading: bool = True) -> dict[str, Any]:
        """After "on", or at the start: a date, plural days, or a day of the month."""
        c = self.c
        start = c.at - 1 if leading else c.at
        if starts_date(c):
            return self.date_once(start)
        if c.accept("weekdays", "weekday"):
            return self.at_day(dow=_WEEKDAYS)
        if c.accept("weekends", "weekend"):
            return self.at_day(dow=_WEEKENDS)
        day = c.peek()
        if weekday_of(day, plural=True) is not None:
            if weekday_of(day) is not None:  # one Monday: every week, or the next one?
                name = DAY_NAMES[weekday_of(day)]
                raise refuse(f'"{c.quote(c.tokens[start], day)}" is ambiguous: say "every {name}" for every week, '
                             'or a date such as "on January 4" for once')
            return self.at_day(dow=self.day_list())
        if c.is_word("the", "day", LAST) or ordinal_of(day) is not None:
            return self.month_day(start, of_month=True)
        raise c.unexpected(_START)

    def every(self) -> dict[str, Any]:
        c = self.c
        start = c.at - 1
        count = c.peek()
        if count is not None and count.kind is Kind.NUMBER:
            return self.every_count(start, int(c.take().value))
        if c.accept("other"):
            return self.every_count(start, 2)
        if c.peek() is not None and c.peek().value in _UNIT_WORDS:
            return self.every_count(start, 1)
        if c.accept("weekday", "weekdays"):
            return self.at_day(dow=_WEEKDAYS)
        if c.accept("weekend", "weekends"):
            c.accept("day", "days")
            return self.at_day(dow=_WEEKENDS)
        if c.accept("month"):
            return self.month()
        if weekday_of(c.peek(), plural=True) is not None:
            return self.at_day(dow=self.day_list())
        if c.is_word(LAST) or ordinal_of(c.peek()) is not None:
            return self.month_day(start, of_month=True)
        raise c.unexpected('a number, "minute", "hour", "day", "week", "weekday", "weekend", "month" or a '
                           'day name')

    def every_count(self, start: int, count: int) -> dict[str, Any]:
        """every N minutes|hours|days|weeks (N given, or 1, or 2 for "other")."""
        unit = self.unit()
        typed = self.c.since(start)
        if count < 1:
            raise refuse(f'"{typed}": the number must be at least 1')
        seconds = count * UNITS[unit]
        if seconds > MAX_EVERY_SECONDS:
            raise refuse(f'"{typed}" is longer than the longest interval, 8 years')
        if unit in ("day", "week") and count == 1:
            return self.at_day() if unit == "day" else self.week()
        self.no_time_after(typed)
        if seconds % 3600 == 0 and 86400 % seconds == 0:  # whole hours dividing a day
            hours = seconds // 3600
            return self.cron({1: "0 *", 24: "0 0"}.get(hours, f"0 */{hours}"))
        if seconds < 3600 and 3600 % seconds == 0:  # minutes dividing an hour
            return self.cron("* *" if seconds == 60 else f"*/{seconds // 60} *")
        return {"kind": "interval", "every_seconds": seconds}

    def unit(self) -> str:
        token = self.c.peek()
        if token is None or token.value not in _UNIT_WORDS:
            raise self.c.unexpected('"minutes", "hours", "days" or "weeks"')
        word = _UNIT_WORDS[self.c.take().value]
        return {"min": "minute", "hr": "hour"}.get(word, word)

    def no_time_after(self, typed: str) -> None:
        """Refuse a time or day after a schedule that cannot have one, quoting both."""
        c = self.c
        if c.done() or c.is_word(*INTRODUCERS):
            return
        start = c.at
        while not c.done() and not c.is_word(*INTRODUCERS):
            c.take()
        raise refuse(f'"{c.since(start)}" does not go with "{typed}": it fires at a fixed spacing, without a '
                     'time of day or a day of the week (say "every day at 9" or "every Monday at 9")')

    def week(self) -> dict[str, Any]:
        """every week / weekly: needs "on" and the days."""
        c = self.c
        typed = c.since(c.at - 1) if c.tokens[c.at - 1].value == "weekly" else "every week"
        if c.accept("on") is None and weekday_of(c.peek(), plural=True) is None:
            raise refuse(f'"{typed}" needs a day: say "{typed} on Monday" or "every Monday" (or "every 7 days" for '
                         "a spacing counted from when the task is armed)")
        return self.at_day(dow=self.day_list())

    def month(self) -> dict[str, Any]:
        """every month / monthly: needs "on" and the day of the month."""
        c = self.c
        typed = c.since(c.at - 2) if c.tokens[c.at - 1].value == "month" else c.since(c.at - 1)
        if c.accept("on") is None:
            raise refuse(f'"{typed}" needs a day: say "{typed} on the 15th", "{typed} on the first Monday" or '
                         '"day 1 of every month"')
        return self.month_day(c.at, of_month=False)

    def day_list(self) -> str:
        """Day names joined by ",", "and": the cron day-of-week list ("1,4")."""
        c = self.c
        days: set[int] = set()
        while True:
            day = weekday_of(c.peek(), plural=True)
            if day is None:
                raise c.unexpected("a day name such as Monday")
            c.take()
            days.add(day)
            ahead = 1 if c.peek() is not None and c.peek().kind is Kind.COMMA else 0
            ahead += 1 if c.is_word("and", ahead=ahead) else 0
            if not ahead or weekday_of(c.peek(ahead), plural=True) is None:
                return ",".join(str(d) for d in sorted(days))
            c.separator()

    # -- days of the month ------------------------------------------------------------------

    def month_day(self, start: int, *, of_month: bool) -> dict[str, Any]:
        """the first Monday / the last weekday / the last day / the 15th / day 15 [of every month] [TIME]."""
        c = self.c
        c.accept("the")
        if starts_date(c):  # "the 4th of January"
            return self.date_once(start)
        if c.accept("day"):
            number = c.peek()
            if number is None or number.kind is not Kind.NUMBER:
                raise c.unexpected('a day number, e.g. "day 15 of every month"')
            c.take()
            dom, dow = self.day_of_month(int(number.value), start), "*"
        else:
            dom, dow = self.nth(start)
        if of_month or c.is_word("of"):
            c.expect('"of the month" or "of every month"', "of")
            c.accept("the", "every", "each", "a")
            c.expect('"month" (as in "of every month")', "month")
        return self.at_day(dom, dow)

    def nth(self, start: int) -> tuple[str, str]:
        """(day-of-month, day-of-week) for ORDINAL|last followed by a day name, "weekday" or "day"."""
        c = self.c
        last = c.accept(LAST) is not None
        n = 0 if last else ordinal_of(c.peek())
        if n is None:
            raise c.unexpected('"first", "second", "third", "fourth", "fifth", "last" or "day N"')
        if not last:
            c.take()
        day = weekday_of(c.peek())
        if day is not None:
            c.take()
            if n > 5:
                raise refuse(f'"{c.since(start)}": a month has at most five {DAY_NAMES[day]}s')
            if n < 1 and not last:
                raise refuse(f'"{c.since(start)}" is not a day of the month (first to fifth, or last)')
            return "*", f"{day}L" if last else f"{day}#{n}"
        if c.accept("weekday"):
            if not (last or n == 1):
                raise refuse(f'"{c.since(start)}": only the first and the last weekday of the month can be said '
                             "(a cron expression has no Nth weekday)")
            return ("LW" if last else "1W"), "*"
        if c.accept("day") or c.is_word("of") or c.done() or c.is_word("at", *INTRODUCERS):
            return ("L" if last else self.day_of_month(n, start)), "*"
        raise c.unexpected('a day name, "weekday" or "day"')

    def day_of_month(self, n: int, start: int) -> str:
        if not 1 <= n <= 31:
            raise refuse(f'"{self.c.since(start)}": a day of the month goes from 1 to 31')
        return str(n)

    # -- once -------------------------------------------------------------------------------

    def date_once(self, start: int) -> dict[str, Any]:
        """on DATE [TIME]: that local wall time in the zone, once."""
        day = calendar_day(self.c)
        clock = at_time(self.c) or DEFAULT_TIME
        return self.once(next_date_instant(day, clock, self.zone, self.now, self.c.since(start)))

    def relative(self) -> dict[str, Any]:
        """today|tomorrow [TIME]."""
        start = self.c.at
        word = self.c.take().value
        clock: time = at_time(self.c) or DEFAULT_TIME
        day = relative_day(word, self.now, self.zone)
        typed = self.c.since(start)
        instant = local_instant(day, clock, self.zone, typed)
        if instant <= self.now:
            raise past(typed, instant.astimezone(self.zone), self.zone)
        return self.once(instant)

    def after(self) -> dict[str, Any]:
        """in N UNIT [[,|and] N UNIT ...]: once, that long after now."""
        c = self.c
        start = c.at - 1
        seconds = 0
        while True:
            count = c.peek()
            if c.accept("a", "an"):
                n = 1
            elif count is not None and count.kind is Kind.NUMBER:
                n = int(c.take().value)
            else:
                raise c.unexpected('a number and a unit, e.g. "in 2 hours"')
            unit = self.unit()
            if n < 1:
                raise refuse(f'"{c.since(start)}": the number must be at least 1')
            seconds += n * UNITS[unit]
            ahead = 1 if c.peek() is not None and c.peek().kind is Kind.COMMA else 0
            ahead += 1 if c.is_word("and", ahead=ahead) else 0
            following = c.peek(ahead)
            if following is None or not (following.kind is Kind.NUMBER or following.value in ("a", "an")):
                break
            c.separator()
        if seconds > MAX_EVERY_SECONDS:
            raise refuse(f'"{c.since(start)}" is more than 8 years away')
        return self.once(self.now.replace(microsecond=0) + timedelta(seconds=seconds))
