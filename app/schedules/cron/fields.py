"""Grammar of classic five-field cron expressions: text → validated, immutable field sets.

The grammar is Vixie/ISC cron's (``entry.c``): numbers, ``*``, ranges ``a-b``, lists ``a,b``,
steps ``*/n`` and ``a-b/n``, three-letter month and weekday names, 0 and 7 both Sunday, and
the macros ``@hourly @daily @weekly @monthly @yearly`` (plus Vixie's aliases ``@annually``
and ``@midnight``). Two deliberate refusals where classic cron silently does something the
author almost certainly did not mean: ``a/n`` (classic cron rejects it too, some forks read it
as ``a-max/n``) and a step longer than the field (``*/90`` minutes would fire hourly).
"""

from __future__ import annotations

import calendar
import datetime as dt
import enum
import re
from bisect import bisect_left
from dataclasses import dataclass, field
from functools import lru_cache

from app.schedules.cron import day_terms
from app.schedules.cron.day_terms import DayTerm

MAX_EXPRESSION_LENGTH = 1000
_DIGITS = re.compile(r"[0-9]{1,4}")
_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DOW_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
# Longest length of each month; 29 for February because leap years exist.
MAX_MONTH_DAYS = (0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


class CronError(ValueError):
    """The cron expression, its time zone or an argument is invalid; ``field`` names the culprit."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class FieldName(enum.StrEnum):
    """The five fields of a cron expression, in order, as error messages name them."""

    MINUTE = "minute"
    HOUR = "hour"
    DAY_OF_MONTH = "day-of-month"
    MONTH = "month"
    DAY_OF_WEEK = "day-of-week"


@dataclass(frozen=True)
class _Bounds:
    name: FieldName
    low: int
    high: int
    names: tuple[str, ...] = ()
    name_base: int = 0


_BOUNDS = (
    _Bounds(FieldName.MINUTE, 0, 59),
    _Bounds(FieldName.HOUR, 0, 23),
    _Bounds(FieldName.DAY_OF_MONTH, 1, 31),
    _Bounds(FieldName.MONTH, 1, 12, _MONTH_NAMES, 1),
    # 0-7 as in Vixie cron: 7 is Sunday too, and ``*`` spans 0-7 (so ``*/7`` is Sunday only).
    _Bounds(FieldName.DAY_OF_WEEK, 0, 7, _DOW_NAMES, 0),
)


@dataclass(frozen=True)
class Term:
    """One comma-separated item: every ``step``-th value from ``start`` to ``end`` inclusive."""

    start: int
    end: int
    step: int
    star: bool  # written as ``*`` or ``*/n``

    @property
    def is_single(self) -> bool:
        return self.start == self.end and not self.star


@dataclass(frozen=True)
class Field:
    """A parsed field: its text, its terms, and the sorted set of values it matches."""

    name: FieldName
    text: str
    terms: tuple[Term, ...]
    values: tuple[int, ...]  # sorted, day-of-week normalised to 0-6
    # SPEC §20 calendar items of day-of-month / day-of-week (L, L-n, LW, nW, dL, d#n), beside the terms
    calendar: tuple[DayTerm, ...] = ()

    @property
    def star(self) -> bool:
        """True when the field starts with ``*`` — the flag classic cron keys its rules on."""
        return self.text.startswith("*")

    @property
    def is_every(self) -> bool:
        """True for a plain ``*`` (or ``*/1``): every value of the field."""
        return len(self.terms) == 1 and self.terms[0].star and self.terms[0].step == 1 and not self.calendar


@dataclass(frozen=True)
class CronSpec:
    """A validated expression. Evaluation helpers are precomputed for speed."""

    text: str
    macro: str | None
    minute: Field
    hour: Field
    day_of_month: Field
    month: Field
    day_of_week: Field
    _day_cache: dict[tuple[int, int, int], tuple[int, ...]] = field(
        default_factory=dict, compare=False, hash=False, repr=False
    )

    @property
    def fixed_time(self) -> bool:
        """Neither minute nor hour starts with ``*`` (Vixie's MIN_STAR/HR_STAR flags unset)."""
        return not (self.minute.star or self.hour.star)

    @property
    def days_and(self) -> bool:
        """Day-of-month and day-of-week must both match (either field starts with ``*``)."""
        return self.day_of_month.star or self.day_of_week.star

    def matching_days(self, month: int, ndays: int, first_dow: int) -> tuple[int, ...]:
        """Days of a month (of ``ndays`` days, day 1 on weekday ``first_dow``, 0 = Sunday) that match."""
        key = (month, ndays, first_dow)
        days = self._day_cache.get(key)
        if days is None:
            days = self._compute_days(month, ndays, first_dow)
            self._day_cache[key] = days
        return days

    def _compute_days(self, month: int, ndays: int, first_dow: int) -> tuple[int, ...]:
        if month not in self.month.values:
            return ()
        doms = set(self.day_of_month.values) | day_terms.days_of(self.day_of_month.calendar, ndays, first_dow)
        dows = set(self.day_of_week.values)
        dow_days = day_terms.days_of(self.day_of_week.calendar, ndays, first_dow)
        both = self.days_and
        out = []
        for day in range(1, ndays + 1):
            dom_ok, dow_ok = day in doms, (first_dow + day - 1) % 7 in dows or day in dow_days
            if (dom_ok and dow_ok) if both else (dom_ok or dow_ok):
                out.append(day)
        return tuple(out)

    def first_time_from(self, second_of_day: int) -> int | None:
        """The first matching hour:minute at or after ``second_of_day``, in seconds; None if none today."""
        hours, minutes = self.hour.values, self.minute.values
        hour, rest = divmod(second_of_day, 3600)
        minute = -(-rest // 60)
        i = bisect_left(hours, hour)
        if i < len(hours) and hours[i] == hour:
            j = bisect_left(minutes, minute)
            if j < len(minutes):
                return hour * 3600 + minutes[j] * 60
            i += 1
        if i < len(hours):
            return hours[i] * 3600 + minutes[0] * 60
        return None


def parse_cron(expr: str) -> CronSpec:
    """Parse and validate ``expr``; raises CronError naming the bad field and value."""
    if not isinstance(expr, str):
        raise CronError("expression", f"must be a string, not {type(expr).__name__}")
    return _parse_cached(expr)


@lru_cache(maxsize=2048)
def _parse_cached(expr: str) -> CronSpec:
    text = expr.strip()
    if not text:
        raise CronError("expression", "is empty")
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise CronError("expression", f"is longer than {MAX_EXPRESSION_LENGTH} characters")
    macro = None
    if text.startswith("@"):
        macro = text.lower()
        if macro not in MACROS:
            raise CronError("expression", f"unknown macro {text!r} (use @hourly, @daily, @weekly, @monthly or @yearly)")
        text = MACROS[macro]
    parts = text.split()
    if len(parts) != 5:
        raise CronError(
            "expression",
            f"expected 5 fields (minute hour day-of-month month day-of-week), got {len(parts)} in {expr.strip()!r}",
        )
    fields = [_parse_field(bounds, part) for bounds, part in zip(_BOUNDS, parts, strict=True)]
    spec = CronSpec(expr.strip() if macro is None else macro, macro, *fields)
    _check_days_possible(spec)
    if spec.day_of_month.calendar or spec.day_of_week.calendar:
        _check_never_quiet_for_years(spec)
    return spec


def _parse_field(bounds: _Bounds, text: str) -> Field:
    terms, calendar = [], []
    for item in text.split(","):
        if not item:
            raise CronError(bounds.name, f"empty list item in {text!r}")
        term = _calendar_item(bounds, item)
        if term is not None:
            calendar.append(term)
            continue
        try:
            terms.append(_parse_term(bounds, item))
        except CronError:
            if day_terms.looks_like_calendar_item(item):
                raise CronError(bounds.name, f"{item!r}: {_misplaced(bounds.name)}") from None
            raise
    values = set()
    for term in terms:
        values.update(range(term.start, term.end + 1, term.step))
    if bounds.name is FieldName.DAY_OF_WEEK and 7 in values:
        values.discard(7)
        values.add(0)
    return Field(bounds.name, text, tuple(terms), tuple(sorted(values)), tuple(dict.fromkeys(calendar)))


def _misplaced(name: FieldName) -> str:
    if name is FieldName.DAY_OF_MONTH:
        return "# is only for day-of-week (d#n: the n-th d of the month)"
    if name is FieldName.DAY_OF_WEEK:
        return "W is only for day-of-month (nW, LW)"
    return "L, W and # are only for day-of-month and day-of-week"


def _calendar_item(bounds: _Bounds, item: str) -> DayTerm | None:
    """The SPEC §20 item ``item`` is in a day field, or None for a classic item (or another field)."""
    if bounds.name is FieldName.DAY_OF_MONTH and day_terms.is_dom_item(item):
        term, why = day_terms.parse_dom_item(item)
    elif bounds.name is FieldName.DAY_OF_WEEK and day_terms.is_dow_item(item):
        term, why = day_terms.parse_dow_item(item, bounds.names)
    else:
        return None
    if term is None:
        raise CronError(bounds.name, str(why))
    return term


def _parse_term(bounds: _Bounds, item: str) -> Term:
    base, slash, step_text = item.partition("/")
    star = base == "*"
    if star:
        start, end = bounds.low, bounds.high
    elif "-" in base:
        first, _, last = base.partition("-")
        start, end = _value(bounds, first, item), _value(bounds, last, item)
        if start > end:
            raise CronError(bounds.name, f"range {base!r} runs backwards (write the smaller value first)")
    else:
        start = end = _value(bounds, base, item)
        if slash:
            raise CronError(
                bounds.name,
                f"{item!r} has a step without a range (write {base}-{bounds.high}/{step_text} or */{step_text})",
            )
    step = _step(bounds, step_text, item) if slash else 1
    return Term(start, end, step, star)


def _value(bounds: _Bounds, token: str, item: str) -> int:
    if _DIGITS.fullmatch(token):
        number = int(token)
    elif token.lower() in bounds.names:
        return bounds.names.index(token.lower()) + bounds.name_base
    else:
        kind = "a number or name" if bounds.names else "a number"
        shown = token if token else item
        raise CronError(bounds.name, f"{shown!r} is not {kind}")
    if not bounds.low <= number <= bounds.high:
        raise CronError(bounds.name, f"{number} is out of range {bounds.low}-{bounds.high}")
    return number


def _step(bounds: _Bounds, text: str, item: str) -> int:
    span = bounds.high - bounds.low + 1
    if not _DIGITS.fullmatch(text):
        raise CronError(bounds.name, f"step {text!r} in {item!r} is not a number")
    step = int(text)
    if not 1 <= step <= span:
        raise CronError(bounds.name, f"step {step} in {item!r} is out of range 1-{span}")
    return step


# The Gregorian calendar repeats every 400 years (146,097 days, a whole number of weeks): a day
# pattern's longest silence over one cycle is its longest silence ever.
_CYCLE_START, _CYCLE_YEARS = 2000, 400
MAX_QUIET_YEARS = 8  # the scheduler's horizon (evaluate.HORIZON_DAYS)


def _check_never_quiet_for_years(spec: CronSpec) -> None:
    """Reject calendar items that leave more than 8 years between two matching days (``0 9 * 2 2#5``,
    a fifth Tuesday of February: 2028, then 2056) — past its first fire, such a task would have no
    next one within the scheduler's horizon. Classic items never do before 2096."""
    previous = first = None
    longest = 0
    for year in range(_CYCLE_START, _CYCLE_START + _CYCLE_YEARS):
        for month in spec.month.values:
            weekday, ndays = calendar.monthrange(year, month)
            days = spec.matching_days(month, ndays, (weekday + 1) % 7)
            if not days:
                continue
            start = dt.date(year, month, 1).toordinal()
            if previous is None:
                first = start + days[0] - 1
            else:
                longest = max(longest, start + days[0] - 1 - previous)
            previous = start + days[-1] - 1
    if previous is None or first is None:
        return  # never matches: _check_days_possible or the search says so
    longest = max(longest, first + 146_097 - previous)  # around the cycle's end
    if longest > MAX_QUIET_YEARS * 365.25:
        name = FieldName.DAY_OF_WEEK if spec.day_of_week.calendar else FieldName.DAY_OF_MONTH
        raise CronError(name, f"matching days can be {longest / 365.25:.0f} years apart, more than the "
                        f"{MAX_QUIET_YEARS} years a schedule may go without firing")


def _check_days_possible(spec: CronSpec) -> None:
    """Reject day-of-month/month combinations no calendar has (``31 2``), before any search."""
    if not spec.days_and:
        return  # OR rule: every month has every weekday
    months, doms = spec.month.values, spec.day_of_month.values
    if any(day <= MAX_MONTH_DAYS[month] for month in months for day in doms):
        return
    if any(term.possible_in(MAX_MONTH_DAYS[month]) for month in months for term in spec.day_of_month.calendar):
        return
    raise CronError(
        FieldName.DAY_OF_MONTH,
        f"{spec.day_of_month.text!r} never occurs in month {spec.month.text!r}, so the expression never fires",
    )
