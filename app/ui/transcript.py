"""Turn the event log into transcript rows: streamed chunks of one run become one message."""

from __future__ import annotations

from collections.abc import Iterable

from app.core.models import Event, EventType

HIDDEN = {EventType.RUN_STARTED.value, EventType.RUN_FINISHED.value}


def merge_events(rows: list[dict[str, str]], events: Iterable[Event]) -> list[dict[str, str]]:
    """Append ``events`` to ``rows`` (a new list); consecutive assistant text of one run is joined."""
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
            out.append({"id": str(event.id), "type": event.type, "text": event.text, "run_id": run})
    return out
