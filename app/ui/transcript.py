"""Turn the event log into transcript rows (SPEC §11): pure functions, no database.

- Streamed chunks of one run become one row: consecutive ``assistant_text`` (and ``thought``) of a run.
- A ``tool`` event carries the call's whole current state as JSON; a later event with the same call
  id (in the same run) replaces the earlier row where it stands, so the card updates in place.
- The latest ``plan`` of a run replaces its earlier plan, in place.
- ``run_finished`` shows as a ``run_usage`` row when the run's usage is known (given by the caller).
- A reply whose last line is the completion marker (SPEC §3, ``app/core/envelope.py``) shows without
  it: the row's ``marker`` keeps the cut tail (so later chunks join the full text) and the page
  shows a "completed" badge for it.
- ``at`` is the row's first event's instant (ISO UTC, app/ui/times.py); a fire's row also has
  ``fired_at`` (its planned occurrence) and ``late`` ("on time", "2 min late") when the caller knows them,
  or, for a run-now, ``forced`` ("run now by ann@example.com") instead.

Every row is a ``dict[str, str]`` with the same keys (the page's state is typed that way).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from app.core import envelope
from app.core.models import Event, EventType
from app.ui.times import iso_utc

HIDDEN = {EventType.RUN_STARTED.value, EventType.RUN_FINISHED.value}
MERGED = {EventType.ASSISTANT_TEXT.value, EventType.THOUGHT.value}  # chunk streams joined per run
USAGE_ROW = "run_usage"  # not an event type: the usage line under a finished turn
INPUT_MAX_CHARS = 2048  # the provider bounds them too (2 KiB, 8 KiB); the page never trusts that
OUTPUT_MAX_CHARS = 8192
CUT_NOTE = "\n… (cut)"
TOOL_STATUSES = {"pending": "pending", "in_progress": "running", "completed": "completed", "failed": "failed",
                 "awaiting_approval": "awaiting approval", "refused": "refused"}
FINAL_STATUSES = {"completed", "failed", "refused"}
# "network": a connection the egress proxy refused (app.agents.egress.report), not an agent's tool
TOOL_KINDS = {"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other", "network"}
PLAN_MARKS = {"completed": "✓", "in_progress": "▸", "pending": "○"}
_BLANK = {"id": "", "type": "", "text": "", "run_id": "", "task": "", "fire": "", "body": "", "key": "",
          "title": "", "kind": "", "status": "", "status_label": "", "input": "", "output": "", "decision": "",
          "marker": "", "at": "", "fired_at": "", "late": "", "forced": "", "approval_id": "",
          "approval_state": "", "approval_options": "", "approval_note": "", "quiet": "", "summary": ""}
OPTION_ORDER = {"allow_once": 0, "allow_always": 1, "reject_once": 2, "reject_always": 3}  # ACP's option kinds
DECIDED = {"allow_once": "Allowed once", "allow_always": "Always allowed", "reject_once": "Rejected",
           "reject_always": "Always rejected"}


def envelope_parts(text: str) -> tuple[str, str, str]:
    """(task name, "3/12", stored prompt) of a scheduled prompt; ("", "", text) if it is not an envelope."""
    fire = envelope.parse(text)
    if fire is None:
        return "", "", text
    return fire.name, fire.fire_label, fire.prompt.strip()


def _bounded(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else "" if value is None else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + CUT_NOTE


def decision_text(decision: Any) -> str:
    """"allowed by policy", "rejected by ann@example.com", "allowed: capability-scoped schedule tool"…"""
    if not isinstance(decision, Mapping):
        return ""
    outcome = decision.get("outcome") if decision.get("outcome") in ("allowed", "cancelled") else "rejected"
    by = str(decision.get("by") or "").removeprefix("user:")
    if by == "cancelled":
        return "cancelled: the turn ended before an answer"
    if by in ("policy:allow", "policy:deny"):
        return f"{outcome} by policy"
    if by == "capability":
        return f"{outcome}: capability-scoped schedule tool"
    if by == "timeout":
        return f"{outcome}: no answer in time"
    return f"{outcome} by {by}" if by else outcome


def _duration(seconds: object) -> str:
    """900 → "15 minutes", 3600 → "1 hour", 45 → "45 seconds"."""
    value = int(seconds) if isinstance(seconds, int | float) and not isinstance(seconds, bool) else 0
    for size, unit in ((3600, "hour"), (60, "minute"), (1, "second")):
        if value >= size and value % size == 0:
            count = value // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return "the time allowed"


def approval_note(approval: Mapping[str, Any], decision: Any) -> str:
    """Who decided an approval card, in words: "Allowed once by ann@example.com", "Rejected — nobody
    answered within 15 minutes"; "" while it waits."""
    state = approval.get("state")
    if state == "expired":
        return f"Rejected — nobody answered within {_duration(approval.get('timeout_seconds'))}"
    if state == "cancelled":
        return "Cancelled — the turn ended before an answer"
    if state not in ("allowed", "rejected"):
        return ""
    decision = decision if isinstance(decision, Mapping) else {}
    kinds = {str(o.get("option_id")): str(o.get("kind")) for o in approval.get("options") or []
             if isinstance(o, Mapping)}
    words = DECIDED.get(kinds.get(str(decision.get("option")), ""), state.capitalize())
    by = str(decision.get("by") or "").removeprefix("user:")
    return f"{words} by {by}" if by else words


def approval_fields(call: Mapping[str, Any]) -> dict[str, str]:
    """The approval card of a tool call that asked a person; its options one per line as
    "option_id<TAB>name<TAB>kind" (the page splits them), the one-time allow first, the lasting
    choices after their one-time twins (an agent may list "Always allow" first)."""
    approval = call.get("approval")
    if not isinstance(approval, Mapping) or approval.get("id") is None:
        return {}
    options = [o for o in approval.get("options") or [] if isinstance(o, Mapping)][:8]
    options.sort(key=lambda o: OPTION_ORDER.get(str(o.get("kind") or ""), len(OPTION_ORDER)))
    lines = ["\t".join(" ".join(str(o.get(k) or "").split()) for k in ("option_id", "name", "kind"))
             for o in options]
    return {"approval_id": _bounded(approval.get("id"), 20), "approval_state": str(approval.get("state") or ""),
            "approval_options": "\n".join(lines), "approval_note": approval_note(approval, call.get("decision"))}


def tool_fields(text: str) -> dict[str, str]:
    """The card of a ``tool`` event; unreadable JSON gives a card that shows the raw text instead."""
    try:
        call = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: JSON nested deeper than Python parses
        call = None
    if not isinstance(call, dict):
        return {"key": "", "title": "Tool call (unreadable update)", "kind": "other", "status": "unknown",
                "status_label": "unknown", "input": "", "output": _bounded(text, OUTPUT_MAX_CHARS), "decision": ""}
    status = str(call.get("status") or "pending")
    kind = str(call.get("kind") or "other")
    return {
        "text": "",  # the card shows the fields; the raw JSON (up to 10 KiB) need not reach the page twice
        "key": str(call.get("id") or ""),
        "title": _bounded(call.get("title") or "Tool call", 200),
        "kind": kind if kind in TOOL_KINDS else "other",
        "status": status if status in TOOL_STATUSES else "unknown",
        "status_label": TOOL_STATUSES.get(status, "unknown"),
        "input": _bounded(call.get("input"), INPUT_MAX_CHARS),
        "output": _bounded(call.get("output"), OUTPUT_MAX_CHARS),
        "decision": decision_text(call.get("decision")),
        **approval_fields(call),
    }


def plan_fields(text: str) -> dict[str, str]:
    """Title ("Plan · 2 of 5 done") and one line per entry ("✓ done", "▸ doing", "○ to do");
    the raw text under a plain title when it is not a plan."""
    try:
        plan = json.loads(text)
    except (ValueError, RecursionError):
        plan = None
    entries = plan.get("entries") if isinstance(plan, dict) else None
    if not isinstance(entries, list):
        return {"title": "Plan", "body": text}
    lines, done = [], 0
    for entry in entries:
        entry = entry if isinstance(entry, dict) else {"content": entry}
        status = str(entry.get("status"))
        done += status == "completed"
        lines.append(f"{PLAN_MARKS.get(status, '○')} {_bounded(entry.get('content'), 500)}")
    return {"title": f"Plan · {done} of {len(lines)} done", "body": "\n".join(lines)}


def _with_text(row: dict[str, str], text: str) -> dict[str, str]:
    """``row`` showing ``text``; a reply's trailing completion marker moves to ``marker``."""
    if row["type"] != EventType.ASSISTANT_TEXT.value:
        return {**row, "text": text}
    body, tail = envelope.split_marker(text)
    return {**row, "text": body, "marker": tail}


def _row(event: Event, run: str, fires: Mapping[int, tuple[str, str, str]]) -> dict[str, str]:
    row = _with_text({**_BLANK, "id": str(event.id), "type": event.type, "run_id": run,
                      "at": iso_utc(event.created_at)}, event.text)
    if event.type == EventType.SCHEDULED_PROMPT.value:
        row["task"], row["fire"], row["body"] = envelope_parts(event.text)
        row["fired_at"], row["late"], row["forced"] = fires.get(event.run_id, ("", "", "")) if event.run_id \
            else ("", "", "")
    elif event.type == EventType.TOOL.value:
        row.update(tool_fields(event.text))
    elif event.type == EventType.PLAN.value:
        row.update(plan_fields(event.text))
    return row


def _find(rows: list[dict[str, str]], kind: str, run: str, key: str) -> int:
    """Index of the newest row of this kind, run and key; -1 when none."""
    for index in range(len(rows) - 1, -1, -1):
        row = rows[index]
        if row["type"] == kind and row["run_id"] == run and row["key"] == key:
            return index
    return -1


def _fold_tool(out: list[dict[str, str]], row: dict[str, str]) -> None:
    """Replace the call's earlier card where it stands. A late, stale update (one that would move a
    finished call back to running) does not undo the outcome: the card keeps the final state."""
    index = _find(out, row["type"], row["run_id"], row["key"]) if row["key"] else -1
    if index < 0:
        out.append(row)
        return
    old = out[index]
    if old["status"] in FINAL_STATUSES and row["status"] not in FINAL_STATUSES:
        return
    merged = {**row, "id": old["id"], "at": old["at"]}  # the card's time: when the call began
    for field in ("input", "output", "decision", "approval_id", "approval_state", "approval_options",
                  "approval_note"):  # an update that leaves a field out keeps what was shown
        merged[field] = row[field] or old[field]
    out[index] = merged


def merge_events(rows: list[dict[str, str]], events: Iterable[Event],
                 usage: Mapping[int, str] | None = None,
                 fires: Mapping[int, tuple[str, str, str]] | None = None) -> list[dict[str, str]]:
    """Append ``events`` to ``rows`` (a new list), folding as the module docstring says.

    ``usage`` maps a run id to its usage line ("1,234 in · 567 out"); a ``run_finished`` of such a
    run adds a ``run_usage`` row. ``fires`` maps a fire's run id to (planned occurrence, lateness,
    run-now words) as app/ui/times.py reads them.
    """
    out = list(rows)
    for event in events:
        run = str(event.run_id or "")
        if event.type == EventType.RUN_FINISHED.value and usage and event.run_id in usage:
            out.append({**_BLANK, "id": f"usage-{event.id}", "type": USAGE_ROW, "text": usage[event.run_id],
                        "run_id": run})
            continue
        if event.type in HIDDEN:
            continue
        last = out[-1] if out else None
        if event.type in MERGED and last is not None and last["type"] == event.type and last["run_id"] == run:
            out[-1] = _with_text(last, last["text"] + last["marker"] + event.text)
            continue
        row = _row(event, run, fires or {})
        if event.type == EventType.TOOL.value:
            _fold_tool(out, row)
            continue
        index = _find(out, row["type"], run, "") if event.type == EventType.PLAN.value and run else -1
        if index >= 0:
            out[index] = {**row, "id": out[index]["id"]}
        else:
            out.append(row)
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
