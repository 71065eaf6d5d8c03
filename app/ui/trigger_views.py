"""What the drawer shows of a task's trigger URL (SPEC §19): pure functions, no database.

The URL is the address the viewer reached this server at (the page's origin, as the API's answer
uses the address its caller reached) plus the hook's path; the secret is never part of a row: it is
shown once, right after it was made, from the event that made it.
"""

from __future__ import annotations

import datetime as dt
import re
import shlex
from collections.abc import Iterable, Mapping
from typing import Any

from app.ui.schedule_views import TaskRow, relative

_ORIGIN = re.compile(r"https?://[A-Za-z0-9.\-\[\]:]{1,255}")
SHOWN_ONCE = ("Shown once: store it now. Calls send it as Authorization: Bearer <secret> or sign with it "
              "(Standard Webhooks).")
EXAMPLE_BODY = '{"text": "what happened"}'


def origin_of(url: object) -> str:
    """``https://host:port`` of the page's URL; "" for anything that is not an http(s) origin."""
    if not isinstance(url, str):
        return ""
    match = _ORIGIN.match(url)
    origin = match.group(0) if match else ""
    return origin if len(url) == len(origin) or url[len(origin)] in "/?#" else ""


def trigger_url(origin: str, path: str) -> str:
    """The URL a caller POSTs to; the path alone while the page's origin is not known."""
    return f"{origin}{path}" if path else ""


def curl_example(url: str) -> str:
    """A call of the URL with its secret as a Bearer token, ready to paste into a shell."""
    return (f"curl -X POST {shlex.quote(url)} -H 'Authorization: Bearer <secret>' "
            f"-H 'Content-Type: application/json' -d {shlex.quote(EXAMPLE_BODY)}")


def since(view: Mapping[str, Any], now: dt.datetime) -> str:
    """``made 5 min ago by ann@example.com`` (the secret's age: a rotation makes it anew)."""
    try:
        made = dt.datetime.fromisoformat(str(view.get("created_at", "")).replace("Z", "+00:00"))
    except ValueError:
        return ""
    who, ago = str(view.get("created_by") or ""), relative(made, now)
    return f"made {'just now' if ago == 'now' else ago}" + (f" by {who}" if who else "")


def apply(rows: Iterable[TaskRow], views: Mapping[int, Mapping[str, Any]], origin: str, now: dt.datetime) -> None:
    """Fill the rows' trigger fields from ``trigger_views`` (rows without one keep "")."""
    for row in rows:
        view = views.get(row.id)
        if view is None:
            continue
        row.trigger_url = trigger_url(origin, str(view["path"]))
        row.trigger_curl = curl_example(row.trigger_url)
        row.trigger_since = since(view, now)
        row.trigger_made = str(view.get("created_at") or "")
