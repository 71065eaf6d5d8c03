"""The transcript of a real agent's turn, in Debian's Chromium: tool cards updated in place, Markdown
streaming in, unsafe HTML and links neutralised, thoughts and plans folded, usage under the turn.

The test process writes the turn into the chat's log the way the agent provider does — a run begun
on the product's path, then ``append_event`` / ``append_output``, and the end transaction with its
usage — while the page is open, so what is checked is what tails the log: the page itself.
Set CHATCRON_UPDATE_SCREENSHOTS=1 to refresh docs/screenshots/transcript-*.png.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from app.agents.egress import refusal_reporter
from app.core import runs
from app.core.config import load_settings
from app.core.context import Core
from app.core.models import EventType, Run, RunSource, RunStatus
from app.wiring import build_core
from tests.e2e.conftest import ROOT, login
from tests.store import begin_run

pytestmark = pytest.mark.e2e
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
FIRE = 20_000  # ms: a fire is claimed within 250 ms; the demo reply streams for a second or two
USAGE = {"input_tokens": 1234, "output_tokens": 567, "cached_tokens": 89, "cost_usd": 0.0123}
USAGE_LINE = "1,234 in · 567 out · 89 cached · $0.0123"
REPLY_START = """# Workspace report

Files found:

- `notes.md` — the meeting notes
- `build.log` — see [the build docs](https://example.com/build)

```sh
ls -la /workspace/a/very/long/path/that/goes/on/and/on/so/that/the/line/is/wider/than/any/phone/screen/there/is
"""
REPLY_END = """```

| file | lines |
|------|------:|
| notes.md | 12 |
| build.log | 400 |

Raw HTML stays text: <img src=x onerror="window.__ccPwned=1"> <script>window.__ccPwned=2</script>
and [a javascript link](javascript:window.__ccPwned=3) is dead, as is [a relative one](/chat/1).
"""
CALL = {"id": "toolu_01", "title": "List the workspace", "kind": "execute", "input": "ls -la /workspace"}


@pytest.fixture(scope="module")
def core(server) -> Iterator[Core]:
    """The server's store, opened by the test process (the provider's writes come from here)."""
    c = build_core(load_settings(server.env))
    yield c
    c.db.engine.dispose()


def _new_chat(page: Page) -> int:
    login(page)
    first = page.url
    page.get_by_test_id("new-chat").first.click()
    page.wait_for_url(lambda url: "/chat/" in url and url != first)
    expect(page.get_by_test_id("chat-title")).to_have_text("New chat")
    return int(page.url.rstrip("/").split("/")[-1])


def _write(core: Core, run: Run, kind: EventType, body: str | dict) -> None:
    text = body if isinstance(body, str) else json.dumps(body)
    assert runs.append_event(core.db, core.clock, run, kind, text)


def _stream(core: Core, run: Run, text: str, size: int = 24) -> None:
    for start in range(0, len(text), size):
        assert runs.append_output(core.db, core.clock, run, text[start:start + size])


def _finish(core: Core, run: Run, usage: dict) -> None:
    """The provider's end of a turn: the lock released and the usage recorded in one transaction."""
    with core.db.write() as s:
        assert runs.finish_run_in(s, core.clock.now(), run.id, run.chat_id, RunStatus.SUCCEEDED)
        runs.record_usage_in(s, run.id, json.dumps(usage))


def _is_open(details: Locator) -> bool:
    return details.evaluate("el => el.open")


def _shot(page: Page, tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    page.screenshot(path=str(path))
    if os.environ.get("CHATCRON_UPDATE_SCREENSHOTS"):
        target = ROOT / "docs" / "screenshots" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)


def test_an_agent_turn_streams_as_cards_and_markdown(page: Page, core: Core, tmp_path: Path) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.set_viewport_size(DESKTOP)
    chat_id = _new_chat(page)
    run = begin_run(core.db, core.clock, chat_id, "What is in the workspace?", source=RunSource.USER,
                    lease_seconds=core.settings.run_lease_seconds, instance="e2e-agent")
    expect(page.get_by_test_id("agent-working")).to_be_visible()

    # The session note, the agent's thoughts and plan: present, folded, quiet.
    _write(core, run, EventType.STATUS, "The agent could not continue this chat's earlier session; "
                                        "a new session started with the chat's recent history.")
    for chunk in ("I should list ", "the workspace first."):
        _write(core, run, EventType.THOUGHT, chunk)
    _write(core, run, EventType.PLAN, {"entries": [
        {"content": "List the files", "status": "in_progress", "priority": "high"},
        {"content": "Summarise them", "status": "pending", "priority": "medium"}]})
    expect(page.get_by_test_id("status-note")).to_contain_text("a new session started")
    thought, plan = page.get_by_test_id("thought"), page.get_by_test_id("plan")
    expect(thought).to_have_count(1)
    expect(thought).to_contain_text("I should list the workspace first.")
    expect(plan).to_contain_text("Plan · 0 of 2 done")
    assert not _is_open(thought) and not _is_open(plan)

    # A tool call appears pending; the user opens its card.
    _write(core, run, EventType.TOOL, {**CALL, "status": "pending"})
    card = page.locator('[data-testid=tool-card][data-tool-id="toolu_01"]')
    expect(card).to_have_attribute("data-status", "pending")
    expect(card.get_by_test_id("tool-status")).to_have_text("pending")
    expect(card.get_by_test_id("tool-title")).to_have_text("List the workspace")
    card.locator("summary").click()
    expect(card.get_by_test_id("tool-input")).to_have_text("ls -la /workspace")

    # Markdown streams in while the call runs: partial Markdown (an open code fence) renders.
    reply = page.locator("[data-testid=event][data-type=assistant_text]")
    _stream(core, run, REPLY_START)
    expect(reply.locator("h1")).to_have_text("Workspace report")
    expect(reply.locator("li")).to_have_count(2)
    expect(reply.locator("pre")).to_contain_text("ls -la /workspace/a/very/long/path")
    expect(page.get_by_test_id("agent-working")).to_be_visible()

    # The same card moves on, in place and still open: allowed by policy, then completed with output.
    decision = {"outcome": "allowed", "option": "allow", "by": "policy:allow", "at": "2025-06-01T10:00:00Z"}
    _write(core, run, EventType.TOOL, {**CALL, "status": "in_progress", "decision": decision})
    expect(card.get_by_test_id("tool-status")).to_have_text("running")
    _write(core, run, EventType.TOOL, {**CALL, "status": "completed", "decision": decision,
                                       "output": "total 2\n-rw-r--r-- 1 agent agent 120 notes.md"})
    expect(card).to_have_attribute("data-status", "completed")
    expect(card).to_have_count(1)
    expect(card.get_by_test_id("tool-output")).to_be_visible()
    expect(card.get_by_test_id("tool-output")).to_contain_text("120 notes.md")
    expect(card.get_by_test_id("tool-decision")).to_have_text("allowed by policy")

    _stream(core, run, REPLY_END)
    _write(core, run, EventType.PLAN, {"entries": [
        {"content": "List the files", "status": "completed", "priority": "high"},
        {"content": "Summarise them", "status": "completed", "priority": "medium"}]})
    expect(reply).to_have_count(1)  # the card updated in place: the text went on in the same bubble
    answer = reply.last
    expect(answer.locator("table td")).to_have_text(["notes.md", "12", "build.log", "400"])
    expect(plan).to_have_count(1)
    expect(plan).to_contain_text("Plan · 2 of 2 done")

    # Unsafe content is inert: raw HTML is text, only http(s)/mailto links keep an href.
    expect(answer).to_contain_text('<img src=x onerror="window.__ccPwned=1">')
    expect(answer).to_contain_text("<script>window.__ccPwned=2</script>")
    assert answer.locator("img, script").count() == 0
    good = reply.first.get_by_role("link", name="the build docs")
    assert good.get_attribute("href") == "https://example.com/build"
    assert good.get_attribute("target") == "_blank"
    assert good.get_attribute("rel") == "noopener noreferrer nofollow"
    for name in ("a javascript link", "a relative one"):
        dead = answer.locator("a", has_text=name)
        assert dead.get_attribute("href") is None, name
        dead.click()
    assert page.evaluate("window.__ccPwned") is None
    assert dialogs == []
    assert page.context.pages == [page]  # a dead link opened no tab

    # A tool event that is not readable JSON still shows, as a card with its raw text.
    _write(core, run, EventType.TOOL, '{"id": "toolu_02", "title": <broken')
    odd = page.locator("[data-testid=tool-card][data-status=unknown]")
    expect(odd.get_by_test_id("tool-title")).to_have_text("Tool call (unreadable update)")
    expect(odd.get_by_test_id("tool-output")).to_have_text('{"id": "toolu_02", "title": <broken')
    expect(page.get_by_test_id("tool-card")).to_have_count(2)

    # The turn ends: its usage shows under it.
    _finish(core, run, USAGE)
    expect(page.get_by_test_id("agent-working")).to_be_hidden()
    expect(page.get_by_test_id("run-usage")).to_have_text(USAGE_LINE)

    thought.locator("summary").click()
    plan.locator("summary").click()
    page.get_by_test_id("transcript").evaluate("el => { el.scrollTop = el.scrollHeight }")
    _shot(page, tmp_path, "transcript-desktop.png")
    page.set_viewport_size(PHONE)
    page.get_by_test_id("transcript").evaluate("el => { el.scrollTop = el.scrollHeight }")
    _shot(page, tmp_path, "transcript-phone.png")
    widths = page.evaluate("""() => {
        const t = document.querySelector('[data-testid=transcript]');
        const pre = [...t.querySelectorAll('[data-type=assistant_text] pre')].pop();
        return {page: document.documentElement.scrollWidth, viewport: window.innerWidth,
                transcript: [t.scrollWidth, t.clientWidth], pre: [pre.scrollWidth, pre.clientWidth],
                preRight: pre.getBoundingClientRect().right};
    }""")
    assert widths["page"] <= widths["viewport"], widths
    assert widths["transcript"][0] <= widths["transcript"][1], widths  # nothing sticks out sideways
    assert widths["pre"][0] > widths["pre"][1], widths  # the long line scrolls inside its block
    assert widths["preRight"] <= widths["viewport"], widths


def _api(server, token: str, method: str, path: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        f"{server.url}{path}", data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"}, method=method,
    )
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read() or b"{}")


def test_a_fires_usage_shows_in_the_run_history(page: Page, server, core: Core) -> None:
    page.set_viewport_size(DESKTOP)
    chat_id = _new_chat(page)
    token = server.manage("create-token", "--email", "demo@example.com")
    task = _api(server, token, "POST", f"/api/chats/{chat_id}/schedules", {
        "name": "digest", "prompt": "collect the news", "schedule": {"kind": "interval", "every_seconds": 3600}})
    _api(server, token, "POST", f"/api/schedules/{task['id']}/run-now")
    reply = page.locator("[data-testid=event][data-type=assistant_text]").last
    expect(reply).to_contain_text("You said: collect the news", timeout=FIRE)
    expect(page.get_by_test_id("agent-working")).to_be_hidden(timeout=FIRE)
    run_id = int(reply.get_attribute("data-run-id") or 0)
    with core.db.write() as s:  # the demo agent reports no usage: give its finished run some
        runs.record_usage_in(s, run_id, json.dumps({"input_tokens": 42, "output_tokens": 7}))

    page.get_by_test_id("schedules-button").click()
    row = page.locator(f'[data-testid=schedule-row][data-schedule-id="{task["id"]}"]')
    expect(row.get_by_test_id("schedule-last-run")).to_contain_text("succeeded", timeout=FIRE)
    row.get_by_test_id("schedule-history-toggle").click()
    fire = row.get_by_test_id("schedule-run")
    expect(fire).to_have_attribute("data-run-id", str(run_id))
    expect(fire.get_by_test_id("run-usage")).to_have_text("42 in · 7 out")
    _api(server, token, "DELETE", f"/api/schedules/{task['id']}")


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["1280", "390"])
def test_a_refused_connection_is_a_red_network_card(page: Page, core: Core, tmp_path: Path, size: dict) -> None:
    """What the egress proxy writes when it refuses the agent a connection (SPEC §12.1)."""
    page.set_viewport_size(DESKTOP)  # the new-chat button is in the sidebar, folded away on a phone
    chat_id = _new_chat(page)
    page.set_viewport_size(size)
    run = begin_run(core.db, core.clock, chat_id, "Check the database.", source=RunSource.USER,
                    lease_seconds=core.settings.run_lease_seconds, instance="e2e-agent")
    refusal_reporter(lambda text: _write(core, run, EventType.TOOL, text))("127.0.0.1", 5432)
    _stream(core, run, "The database is not reachable from here.")
    _finish(core, run, {"input_tokens": 10, "output_tokens": 8})
    card = page.locator('[data-testid=tool-card][data-tool-id="network-refused-1"]')
    expect(card).to_have_attribute("data-status", "refused")
    expect(card.get_by_test_id("tool-status")).to_have_text("refused")
    expect(card.get_by_test_id("tool-title")).to_have_text("network: 127.0.0.1:5432 refused")
    box = card.bounding_box()
    assert box is not None and box["x"] + box["width"] <= size["width"]
    _shot(page, tmp_path, f"transcript-network-refused-{size['width']}.png")
