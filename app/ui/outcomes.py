"""How a run outcome reads and which colour it wears — one table for every view that shows one
(the drawer's last run and history, the All schedules page).

Pure. ``missed`` and ``deferred`` (SPEC §14) are not failures: a missed record says the scheduler
found the occurrence too late to fire (warning colour), a deferred one that a due fire waits
(neutral amber). A fire cancelled for a newer one (``superseded``, SPEC §19) is no failure either;
a fire its agent reported ``no_change`` reads "nothing new".
"""

from __future__ import annotations

from app.schedules.model import Outcome, RunOutcome

OUTCOME_COLORS = {
    RunOutcome.RUNNING: "blue", RunOutcome.SUCCEEDED: "grass", RunOutcome.FAILED: "red",
    RunOutcome.SKIPPED: "gray", RunOutcome.QUEUED: "amber", RunOutcome.ABANDONED: "orange",
    RunOutcome.MISSED: "orange", RunOutcome.DEFERRED: "amber", RunOutcome.SUPERSEDED: "gray",
}
NOTHING_NEW = "nothing new"
NOT_FIRED = frozenset({RunOutcome.SKIPPED, RunOutcome.MISSED, RunOutcome.DEFERRED})  # no turn started


def outcome_of(value: str | None) -> RunOutcome | None:
    """The outcome named ``value``, None for an empty or unknown one."""
    try:
        return RunOutcome(value) if value else None
    except ValueError:
        return None


def color(value: str | None) -> str:
    """The Radix colour of an outcome (gray for an unknown one)."""
    outcome = outcome_of(value)
    return OUTCOME_COLORS.get(outcome, "gray") if outcome else "gray"


def label(value: str | None, missed_count: int | None = None) -> str:
    """``succeeded``, ``missed``, ``missed (3 occurrences)`` when one record stands for several."""
    outcome = outcome_of(value)
    if outcome is None:
        return value or ""
    if outcome is RunOutcome.MISSED and missed_count and missed_count > 1:
        return f"missed ({missed_count:,} occurrences)"
    return outcome.value


def _nothing_new(value: str | None, reported: str | None) -> bool:
    return outcome_of(value) is RunOutcome.SUCCEEDED and reported == Outcome.NO_CHANGE.value


def report_label(value: str | None, reported: str | None, missed_count: int | None = None) -> str:
    """:func:`label`, except a fire that succeeded and whose agent reported ``no_change``: "nothing new"."""
    return NOTHING_NEW if _nothing_new(value, reported) else label(value, missed_count)


def report_color(value: str | None, reported: str | None) -> str:
    """:func:`color`; a "nothing new" fire is gray (nobody needs to look at it)."""
    return "gray" if _nothing_new(value, reported) else color(value)
