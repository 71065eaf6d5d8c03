"""What a decision writes to its task: a typed, immutable record of the columns to change.

The pure decisions (``scheduler/decisions.py``) return one; the store (``scheduler/claims.py``)
writes exactly its set fields. A field left unset is not written; an unknown column is refused
when the record is built, so the contract between the two is checked, not implied by strings.
It reads like a mapping of column name → value, so a decision's changes can be compared with a
plain dict in tests.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
from collections.abc import Iterator, Mapping

from app.schedules.model import RunOutcome, TaskStatus, Trigger


class _Unset(enum.Enum):
    UNSET = "unset"


UNSET = _Unset.UNSET  # a field the decision leaves as it is

# The fields that point at an occurrence; dropped alone when that occurrence turns out to have fired.
POINTERS = ("next_run_at", "next_occurrence_at", "pending_run", "pending_forced", "pending_occurrence_at", "retry_at")


@dataclasses.dataclass(frozen=True, eq=False)
class TaskChanges(Mapping[str, object]):
    """Columns of ``scheduled_tasks`` a decision sets (None is a value: it clears the column)."""

    status: TaskStatus | _Unset = UNSET
    next_run_at: dt.datetime | None | _Unset = UNSET
    run_count: int | _Unset = UNSET
    last_run_status: RunOutcome | _Unset = UNSET
    last_run_at: dt.datetime | None | _Unset = UNSET
    last_error: str | None | _Unset = UNSET
    pending_run: bool | _Unset = UNSET
    pending_forced: Trigger | None | _Unset = UNSET
    pending_occurrence_at: dt.datetime | None | _Unset = UNSET
    retry_at: dt.datetime | None | _Unset = UNSET
    active_run_id: int | None | _Unset = UNSET
    consecutive_failures: int | _Unset = UNSET
    next_occurrence_at: dt.datetime | None | _Unset = UNSET  # set with next_run_at when jitter moves it
    armed_at: dt.datetime | None | _Unset = UNSET
    paused_until: dt.datetime | None | _Unset = UNSET
    pause_note: str | None | _Unset = UNSET
    paused_by: str | None | _Unset = UNSET

    def __getitem__(self, key: str) -> object:
        value = getattr(self, key, UNSET) if key in _FIELDS else UNSET
        if value is UNSET:
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[str]:
        return (name for name in _FIELDS if getattr(self, name) is not UNSET)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"TaskChanges({dict(self.items())!r})"

    def but(self, **fields: object) -> TaskChanges:
        """A copy with these fields set as well (the record itself never changes)."""
        return dataclasses.replace(self, **fields)

    def only(self, names: tuple[str, ...]) -> TaskChanges:
        """A copy keeping only the set fields among ``names``."""
        return TaskChanges(**{name: value for name, value in self.items() if name in names})

    def columns(self) -> dict[str, object]:
        """The set fields as column values (enums by their value). A new ``next_run_at`` written
        without its nominal instant is its own nominal instant: ``next_occurrence_at`` is cleared."""
        values = {name: value.value if isinstance(value, enum.Enum) else value for name, value in self.items()}
        if "next_run_at" in values and "next_occurrence_at" not in values:
            values["next_occurrence_at"] = None
        return values


_FIELDS = tuple(field.name for field in dataclasses.fields(TaskChanges))


def changes(value: Mapping[str, object] | None = None, **fields: object) -> TaskChanges:
    """A TaskChanges from a mapping of column → value; raises TypeError for an unknown column."""
    return value if isinstance(value, TaskChanges) and not fields else TaskChanges(**{**(value or {}), **fields})
