"""Plain-English descriptions of cron expressions ("At 09:00, Monday through Friday").

The text follows the parsed fields, not the characters typed, so equivalent spellings read
the same (``mon-fri`` and ``1-5``); a macro reads like its expansion.
"""

from __future__ import annotations

from app.schedules.cron.day_terms import DayKind, DayTerm
from app.schedules.cron.fields import Field, Term, parse_cron

_WEEKDAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = (
    "",
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_NTH_WORDS = ("", "first", "second", "third", "fourth", "fifth")
_MAX_LISTED_TIMES = 6
_MAX_LISTED_VALUES = 8


def describe(expr: str) -> str:
    """Plain English for a valid expression, e.g. "At 09:00, Monday through Friday".

    Raises CronError (naming the field) only when ``expr`` is invalid; never for a valid one.
    """
    spec = parse_cron(expr)
    return (
        _time_phrase(spec.minute, spec.hour)
        + _day_phrase(spec.day_of_month, spec.day_of_week, spec.days_and)
        + _month_phrase(spec.month)
    )


def _time_phrase(minute: Field, hour: Field) -> str:
    fixed = not (minute.star or hour.star)
    if fixed and len(minute.values) * len(hour.values) <= _MAX_LISTED_TIMES:
        return "At " + _join([f"{h:02d}:{m:02d}" for h in hour.values for m in minute.values])
    if minute.star:
        return _every_minute_phrase(minute) + _during_hours(hour)
    if len(minute.values) == 1:
        lead = f"At minute {minute.values[0]}"
    else:
        lead = "At minutes " + _terms(minute)
    return lead + _past_hours(hour)


def _every_minute_phrase(minute: Field) -> str:
    if minute.is_every:
        return "Every minute"
    if len(minute.terms) == 1 and minute.terms[0].star:
        step = minute.terms[0].step
        if 60 % step == 0:
            return f"Every {step} minutes"
        return f"Every {step} minutes from minute 0 through {minute.values[-1]}"
    return "At minutes " + _terms(minute)


def _during_hours(hour: Field) -> str:
    if hour.is_every:
        return ""
    if len(hour.terms) == 1 and hour.terms[0].star:
        return f", every {_ordinal(hour.terms[0].step)} hour"
    if len(hour.terms) == 1 and hour.terms[0].step == 1:
        term = hour.terms[0]
        return f", between {term.start:02d}:00 and {term.end:02d}:59"
    return ", during hours " + _terms(hour)


def _past_hours(hour: Field) -> str:
    if hour.is_every:
        return " past every hour"
    if len(hour.terms) == 1 and hour.terms[0].star:
        return f" past every {_ordinal(hour.terms[0].step)} hour"
    if len(hour.values) == 1:
        return f" past hour {hour.values[0]}"
    return " past hours " + _terms(hour)


def _day_phrase(dom: Field, dow: Field, days_and: bool) -> str:
    dom_text = None if dom.is_every else _dom_text(dom)
    if dow.is_every:
        return f" on {dom_text} of the month" if dom_text else ""
    if dow.calendar:
        days = _weekdays(dow, "and") + " of the month"
        if dom_text is None:
            return f", on {days}"
        if days_and:
            return f" on {dom_text} of the month, if it is {_weekdays(dow, 'or')} of the month"
        return f" on {dom_text} of the month and on {days}"
    single = len(dow.values) == 1
    if dom_text is None:
        if single:
            return f", only on {_WEEKDAYS[dow.values[0]]}"
        days = _weekdays(dow, "and")
        return f", {days}" if " through " in days else f", on {days}"
    if days_and:
        condition = f"it is a {_WEEKDAYS[dow.values[0]]}" if single else f"it falls on {_weekdays(dow, 'or')}"
        return f" on {dom_text} of the month, if {condition}"
    return f" on {dom_text} of the month and on {_weekdays(dow, 'and')}"


def _dom_text(dom: Field) -> str:
    calendar = [_calendar_day(term) for term in dom.calendar]
    if not dom.terms:
        return _join(calendar)
    if calendar and all(term.is_single for term in dom.terms):  # "days 1, 15 and the last day"
        return ("days " if len(dom.values) > 1 else "day ") + _join([*map(str, dom.values), *calendar])
    if len(dom.values) == 1:
        classic = f"day {dom.values[0]}"
    elif len(dom.terms) == 1 and dom.terms[0].star and len(dom.values) > _MAX_LISTED_VALUES:
        classic = f"every {_ordinal(dom.terms[0].step)} day"
    else:
        classic = "days " + _terms(dom)
    return _join([classic, *calendar])


def _calendar_day(term: DayTerm) -> str:
    """``the last day``, ``the 3rd-to-last day``, ``the last weekday``, ``the weekday nearest day 15``,
    ``the last Friday``, ``the second Monday`` (the caller adds "of the month")."""
    if term.kind is DayKind.LAST:
        return "the last day" if term.value == 0 else f"the {_ordinal(term.value + 1)}-to-last day"
    if term.kind is DayKind.LAST_WEEKDAY:
        return "the last weekday"
    if term.kind is DayKind.NEAREST_WEEKDAY:
        return f"the weekday nearest day {term.value}"
    if term.kind is DayKind.LAST_OF_WEEK:
        return f"the last {_WEEKDAYS[term.value]}"
    return f"the {_NTH_WORDS[term.nth]} {_WEEKDAYS[term.value]}"


def _weekdays(dow: Field, conjunction: str) -> str:
    calendar = [_calendar_day(term) for term in dow.calendar]
    if calendar:
        return _join([*(_WEEKDAYS[v] for v in dow.values), *calendar], conjunction)
    if len(dow.terms) == 1 and dow.terms[0].step == 1 and not dow.terms[0].star and not dow.terms[0].is_single:
        term = dow.terms[0]
        return f"{_WEEKDAYS[term.start]} through {_WEEKDAYS[term.end]}"
    return _join([_WEEKDAYS[v] for v in dow.values], conjunction)


def _month_phrase(month: Field) -> str:
    if month.is_every:
        return ""
    if len(month.terms) == 1 and month.terms[0].step == 1 and not month.terms[0].is_single:
        term = month.terms[0]
        return f", {_MONTHS[term.start]} through {_MONTHS[term.end]}"
    return ", only in " + _join([_MONTHS[v] for v in month.values])


def _terms(field: Field) -> str:
    """The field's values when a step makes them few enough to list, else its terms in words."""
    stepped = any(term.step > 1 for term in field.terms)
    if stepped and len(field.values) <= _MAX_LISTED_VALUES:
        return _join([str(v) for v in field.values])
    return _join([_term(term) for term in field.terms])


def _term(term: Term) -> str:
    if term.is_single:
        return str(term.start)
    span = f"{term.start} through {term.end}"
    return span if term.step == 1 else f"every {_ordinal(term.step)} from {span}"


def _ordinal(n: int) -> str:
    if n % 100 in (11, 12, 13):
        return f"{n}th"
    return f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th') }"


def _join(items: list[str], conjunction: str = "and") -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {conjunction} " + items[-1]
