"""What the UI says about spend and budgets (SPEC §15): pure functions, no database.

A task's fires' spend ("Spent today 12,345 tokens · $0.41 · in all 98,000 tokens · $3.10"), its
caps per fire ("Cap 10,000 tokens / $0.50 per fire"), a fire that waits for its project's daily
budget, the chat's line on the project's budget, and the dialog's two cap fields (typed text in,
the API's values out: a value the service refuses is left to its own error, named by field).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re

from app.core.clock import UTC
from app.core.errors import InvalidInput
from app.core.spend import Budget, Spend, next_utc_day
from app.schedules.model import RunOutcome, ScheduledTask, TaskStatus
from app.ui.schedule_notes import duration_words

TOKENS_FIELD, COST_FIELD = "max_tokens_per_fire", "max_cost_per_fire_usd"
WAIT_REASON = "project budget spent"  # how the scheduler's deferred record starts (app/core/spend.py)
NO_LIMIT = "(null: no limit)"  # the service's words for an API client; the dialog's are below
NO_CAP = "(leave it empty for no cap)"
_SEPARATORS = re.compile(r"[\s,_]")


def money(usd: float) -> str:
    """``$3.10``, ``$1,204.50``; a fraction of a cent keeps four decimals (``$0.0042``)."""
    if usd <= 0:
        return "$0.00"
    if usd < 0.0001:
        return "<$0.0001"
    return f"${usd:.4f}" if usd < 0.01 else f"${usd:,.2f}"


def spend_text(spend: Spend) -> str:
    """``12,345 tokens · $0.41``: what is known and non-zero; "" for nothing."""
    parts = [f"{spend.tokens:,} token{'s' if spend.tokens != 1 else ''}"] if spend.tokens else []
    if spend.cost_usd > 0:
        parts.append(money(spend.cost_usd))
    return " · ".join(parts)


def spend_parts(today: Spend, total: Spend) -> tuple[str, str]:
    """(``Spent today 12,345 tokens · $0.41``, ``in all 98,000 tokens · $3.10``): the two halves of
    a task's spend line, each kept on one line by the page; ("", "") while nothing was spent."""
    in_all = spend_text(total)
    if not in_all:
        return "", ""
    spent_today = spend_text(today)
    return f"Spent today {spent_today}" if spent_today else "Nothing spent today", f"in all {in_all}"


def spend_line(today: Spend, total: Spend) -> str:
    """A task's fires' spend, today (UTC) and in all; "" while they have spent nothing."""
    return " · ".join(part for part in spend_parts(today, total) if part)


def caps_line(tokens: int | None, cost_usd: float | None) -> str:
    """``Cap 10,000 tokens / $0.50 per fire``; "" without caps."""
    parts = ([f"{tokens:,} tokens"] if tokens is not None else []) + \
        ([money(cost_usd)] if cost_usd is not None else [])
    return f"Cap {' / '.join(parts)} per fire" if parts else ""


def utc_clock(instant: dt.datetime, now: dt.datetime) -> str:
    """``00:00 UTC`` within a day, ``Tue 5 May, 00:00 UTC`` beyond."""
    at = instant.astimezone(UTC)
    clock = f"{at:%H:%M} UTC"
    return clock if instant - now <= dt.timedelta(days=1) else f"{at:%a} {at.day} {at:%b}, {clock}"


def budget_wait(task: ScheduledTask, now: dt.datetime) -> str:
    """``Waits for the project's daily budget until 00:00 UTC (in 5 h 12 min)`` for a task whose
    due fire was deferred because its project's budget is spent; "" otherwise."""
    until = task.retry_at
    if task.status != TaskStatus.ACTIVE.value or task.last_run_status != RunOutcome.DEFERRED.value \
            or not task.pending_run or until is None or until <= now:
        return ""
    return f"Waits for the project's daily budget until {utc_clock(until, now)} " \
           f"(in {duration_words((until - now).total_seconds())})"


@dataclasses.dataclass(frozen=True)
class ChatBudget:
    """The chat's line on its project's daily budget (empty text: no budget, nothing shown)."""

    text: str = ""
    detail: str = ""  # the day's figures, beside a spent budget's sentence
    spent: bool = False


def _against(budget: Budget, spend: Spend) -> str:
    """``41,200 of 50,000 tokens · $1.20 of $5.00``: each limit the budget has."""
    parts = []
    if budget.tokens is not None:
        parts.append(f"{spend.tokens:,} of {budget.tokens:,} tokens")
    if budget.cost_usd is not None:
        parts.append(f"{money(spend.cost_usd)} of {money(budget.cost_usd)}")
    return " · ".join(parts)


def chat_budget(budget: Budget, spend: Spend, now: dt.datetime) -> ChatBudget:
    """What the composer shows for a project with a daily budget (people's turns are never
    blocked: the line only tells them where the day stands and what waits)."""
    if not budget.any:
        return ChatBudget()
    if budget.spent_by(spend) is None:
        return ChatBudget(f"Project budget today: {_against(budget, spend)}")
    return ChatBudget(f"The project's daily budget is spent: scheduled fires wait until "
                      f"{utc_clock(next_utc_day(now), now)}; your messages still run.",
                      f"Today (UTC): {_against(budget, spend)}", True)


def tokens_of(text: str) -> int | None:
    """The typed max tokens per fire: a whole number ("12,000" too), None when empty. Out of range
    is left to the service (its error names the field)."""
    raw = _SEPARATORS.sub("", text)
    if not raw:
        return None
    if not re.fullmatch(r"[+-]?\d{1,30}", raw):
        raise InvalidInput(TOKENS_FIELD, f"must be a whole number of tokens {NO_CAP}")
    return int(raw)


def cost_of(text: str) -> float | None:
    """The typed max cost per fire in US dollars ("0.50", "$2"), None when empty."""
    raw = _SEPARATORS.sub("", text).removeprefix("$")
    if not raw:
        return None
    if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", raw):
        raise InvalidInput(COST_FIELD, f"must be an amount in US dollars, like 0.50 {NO_CAP}")
    return float(raw)


def caps_body(cap_tokens: str, cap_cost: str) -> dict[str, int | float | None]:
    """The two caps as the API takes them (an empty field: no cap, sent as null)."""
    return {TOKENS_FIELD: tokens_of(cap_tokens), COST_FIELD: cost_of(cap_cost)}


def cost_input(value: float | None) -> str:
    """A stored cost cap as the dialog shows it: ``0.5``, ``12`` (never a rounding that would
    read back as another amount)."""
    if value is None:
        return ""
    short = f"{value:.6f}".rstrip("0").rstrip(".")
    return short if float(short) == value else repr(value)


def tokens_input(value: int | None) -> str:
    return "" if value is None else str(value)


def dialog_words(message: str) -> str:
    """The service's error as the dialog says it: "leave it empty", not the API's null."""
    return message.replace(NO_LIMIT, NO_CAP)
