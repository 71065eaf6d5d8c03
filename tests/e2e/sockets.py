"""Driving Reflex's websocket as an attacker would: crafted socket.io frames from a real page (its
own socket, its own tab token and cookie) or from a bare python-socketio client, and every frame
the server sends back, recorded.

Reflex's frontend sends ``42/_event,["event",{"name": "<state path>.<handler>", "payload": {...},
"router_data": {...}}]``; the server answers with ``["event", {"delta": ..., "events": [...]}]``.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import BrowserContext, Page, WebSocket

NAMESPACE = "/_event"
# Keeps every WebSocket the page opens reachable from page.evaluate (Reflex does not expose its own).
CAPTURE_JS = """(() => {
  const Native = window.WebSocket;
  window.__sockets = [];
  window.WebSocket = class extends Native {
    constructor(...args) { super(...args); window.__sockets.push(this); }
  };
})();"""
SEND_JS = """(frame) => {
  const open = window.__sockets.filter((s) => s.readyState === 1);
  if (!open.length) return false;
  open[open.length - 1].send(frame);
  return true;
}"""


def event_name(state_cls: type, handler: str) -> str:
    return f"{state_cls.get_full_name()}.{handler}"


def frame(name: str, payload: Any, path: str = "/", query: dict | None = None) -> str:
    """One socket.io event packet, ASCII-escaped so that even a lone surrogate survives the trip."""
    body = {"name": name, "payload": payload,
            "router_data": {"pathname": path, "asPath": path, "query": query or {}}}
    return f"42{NAMESPACE}," + json.dumps(["event", body], ensure_ascii=True)


class Frames:
    """Every text frame a page's websockets receive, in order, with the time it arrived."""

    def __init__(self, page: Page) -> None:
        self.seen: list[tuple[float, str]] = []
        page.on("websocket", self._attach)

    def _attach(self, ws: WebSocket) -> None:
        ws.on("framereceived", lambda payload: self.seen.append((time.monotonic(), str(payload))))

    def mark(self) -> int:
        return len(self.seen)

    def since(self, mark: int) -> list[str]:
        return [text for _, text in self.seen[mark:]]

    def wait_for(self, page: Page, mark: int, predicate: Callable[[str], bool], timeout: float = 10.0,
                 what: str = "") -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for text in self.since(mark):
                if predicate(text):
                    return text
            page.wait_for_timeout(50)
        got = [t[:200] for t in self.since(mark)]
        raise AssertionError(f"{what}: no such frame within {timeout} s; got {got}")


    def hydrated(self, page: Page) -> None:
        """Wait until the page's newest socket has hydrated (an event sent earlier may be dropped)."""
        opened = max((i for i, (_, t) in enumerate(self.seen) if t.startswith('0{"sid"')), default=0)
        self.wait_for(page, opened, lambda text: '"is_hydrated_rx_state_":true' in text, what="hydration")

    def hydrate(self, page: Page, mark: int) -> str:
        """The first state frame of the next socket opened after ``mark``: all the tab's state holds."""
        def opened() -> int:
            return next((i for i, t in enumerate(self.since(mark)) if t.startswith('0{"sid"')), -1)
        self.wait_for(page, mark, lambda text: text.startswith('0{"sid"'), what="a new socket")
        return self.wait_for(page, mark + opened(), lambda text: '"delta"' in text, what="its hydrate")


def watch(page: Page) -> Frames:
    """Capture the page's sockets (for sending) and its received frames; call before the first goto."""
    page.add_init_script(CAPTURE_JS)
    return Frames(page)


def send(page: Page, text: str) -> None:
    assert page.evaluate(SEND_JS, text), "the page has no open websocket"


def log_problems(log: Path, since: int) -> list[str]:
    """Lines of the web log after byte ``since`` that show a handler raised or Reflex's error toast."""
    text = log.read_bytes()[since:].decode(errors="replace")
    markers = ("Traceback", "An error occurred", "ui_handler_failed", "Error transforming event")
    return [line for line in text.splitlines() if any(marker in line for marker in markers)]


def log_size(log: Path) -> int:
    return log.stat().st_size


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (Linux /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [pid], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of the processes, in seconds (/proc/<pid>/stat fields 14 and 15)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / 100  # USER_HZ


def cookie_header(context: BrowserContext) -> str:
    """The Cookie header a logged-in browser context would send."""
    return "; ".join(f"{c['name']}={c['value']}" for c in context.cookies())
