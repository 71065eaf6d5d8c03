"""Whether agents can start here, for the people who can fix it: ``/api/health`` and ``make run``.

A problem is the sandbox's when bubblewrap cannot build it on this machine (asked live), or one
that turns met and recorded (``app.core.agent_starts``: open while under a day old and no turn
of its project has succeeded since). Users only ever see that the agent could not start; the
detail — paths, commands, the fix — is shown here to administrators:

- ``/api/health`` (no auth): ``"agents": {"ok": bool, "count": n}``; with an admin's personal
  token also ``"problems": [{"scope", "project_id", "provider", "detail", "at", "first_at",
  "failures"}]`` and ``agent_sandbox_problem``;
- ``python -m app.agents.doctor`` prints them in plain words (``make run`` prints it last, before
  the line saying chatcron is up) and the modes that leave agents less fenced.
"""

from __future__ import annotations

import datetime as dt
import logging
import sys
from typing import Any

from app.agents import sandbox
from app.core import agent_starts
from app.core.clock import SystemClock, rfc3339
from app.core.config import ConfigError, Settings, load_settings
from app.core.db import Database, first_line

log = logging.getLogger("chatcron.agents")
SANDBOX, PROJECT, LOOSE_CHATS = "sandbox", "project", "loose_chats"  # a problem's scope


def problems(settings: Settings, db: Database | None, now: dt.datetime) -> list[dict[str, Any]]:
    """The sandbox's problem first (when it cannot run here), then the open ones turns recorded
    (none when ``db`` is None or cannot be read: health answers even when the store does not)."""
    return _problems(settings, db, now)[0]


def _problems(settings: Settings, db: Database | None, now: dt.datetime) -> tuple[list[dict[str, Any]], str | None]:
    """(:func:`problems`, why the recorded ones could not be read, or None)."""
    found: list[dict[str, Any]] = []
    broken = sandbox.problem(settings)
    if broken is not None:
        found.append({"scope": SANDBOX, "project_id": None, "provider": None, "detail": broken,
                      "at": rfc3339(now), "first_at": None, "failures": 0})
    if db is None:
        return found, None
    try:
        recorded = agent_starts.open_problems(db, now)
    except Exception as exc:
        log.warning("action=agent_problems_unread error=%s", first_line(exc))
        return found, first_line(exc)
    return found + [{"scope": PROJECT if p["project_id"] else LOOSE_CHATS, **p} for p in recorded], None


def health(settings: Settings, db: Database | None, now: dt.datetime, *, admin: bool) -> dict[str, Any]:
    """The ``agents`` object of /api/health and, for an admin, the sandbox's problem text."""
    found = problems(settings, db, now)
    out: dict[str, Any] = {"agents": {"ok": not found, "count": len(found)}}
    if admin:
        out["agents"]["problems"] = found
        broken = next((p["detail"] for p in found if p["scope"] == SANDBOX), None)
        if broken is not None:
            out["agent_sandbox_problem"] = broken
    return out


def _where(problem: dict[str, Any]) -> str:
    if problem["scope"] == SANDBOX:
        return "the agent sandbox"
    where = f"project {problem['project_id']}" if problem["scope"] == PROJECT else "loose chats"
    times = "once" if problem["failures"] == 1 else f"{problem['failures']} times"
    return f"{where} (provider {problem['provider']}; failed {times}, last at {problem['at']})"


def report(settings: Settings, db: Database | None, now: dt.datetime) -> list[str]:
    """What ``make run`` prints: the problems in plain words, then the modes that fence agents less."""
    found, unread = _problems(settings, db, now)
    lines = []
    if found:
        lines += ["AGENTS CANNOT START. Users see only: "
                  f"\"{agent_starts.USER_MESSAGE}\" The cause, for you:"]
        lines += [f"  - {_where(p)}: {agent_starts.one_line(p['detail'])}" for p in found]
        lines.append("  Each project's owner has it in their inbox; /api/health with an admin's token lists it.")
    else:
        lines.append("Agents: no start problem known.")
    if unread is not None:
        lines.append(f"(Problems agents met are unknown: the database could not be read: {unread}.)")
    if settings.agent_sandbox == "off":
        lines.append("Warning: agents run unfenced, as the server's user (CHATCRON_AGENT_SANDBOX=off).")
    elif sandbox.network(settings) == "host":
        lines.append("Warning: agents share the host's network (CHATCRON_AGENT_NETWORK=host).")
    return lines


def main() -> int:
    """Print :func:`report`; exit 0 whatever it says (1 only for bad settings)."""
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 1
    logging.basicConfig(level=logging.ERROR)  # what the store could not say is in the report, in words
    store = Database(settings.db_url)
    try:
        lines = report(settings, store, SystemClock().now())
    finally:
        store.dispose()
    print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
