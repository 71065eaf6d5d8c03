"""Turn the event log into transcript rows: streamed chunks of one run become one message."""

from __future__ import annotations

from collections.abc import Iterable

from app.core import envelope
from app.core.models import Event, EventType

HIDDEN = {EventType.RUN_STARTED.value, EventType.RUN_FINISHED.value}


def envelope_parts(text: str) -> tuple[str, str, str]:
    """(task name, "3/12", stored prompt) of a scheduled prompt; ("", "", text) if it is not an envelope."""
    fire = envelope.parse(text)
    if fire is None:
        return "", "", text
    return fire.name, fire.fire_label, fire.prompt.strip()


def _row(event: Event, run: str) -> dict[str, str]:
    row = {"id": str(event.id), "type": event.type, "text": event.text, "run_id": run,
           "task": "", "fire": "", "body": ""}
    if event.type == EventType.SCHEDULED_PROMPT.value:
        row["task"], row["fire"], row["body"] = envelope_parts(event.text)
    return row


def merge_events(rows: list[dict[str, str]], events: Iterable[Event]) -> list[dict[str, str]]:
    """Append ``events`` to ``rows`` (a new list); consecutive assistant text of one run is joined.

    A scheduled prompt's row also carries ``task``, ``fire`` and ``body`` parsed from its envelope.
    """
    out = list(rows)
    for event in events:
        if event.type in HIDDEN:
            continue
        run = str(event.run_id or "")
        last = out[-1] if out else None
        if (event.type == EventType.ASSISTANT_TEXT.value and last is not None
                and last["type"] == event.type and last["run_id"] == run):
            out[-1] = {**last, "text": last["text"] + event.text}
        else:
            out.append(_row(event, run))
    return out


def open_runs(current: list[int], events: Iterable[Event]) -> list[int]:
    """Runs started and not yet finished, after ``events`` (the page's "agent is working" state)."""
    running = list(current)
    for event in events:
        if event.run_id is None:
            continue
        if event.type == EventType.RUN_STARTED.value and event.run_id not in running:
            running.append(event.run_id)
        elif event.type == EventType.RUN_FINISHED.value and event.run_id in running:
            running.remove(event.run_id)
    return running
