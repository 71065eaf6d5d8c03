"""What a new user tripped on, checked where they saw it: in Chromium at 1280 × 800 and 390 × 844.

The chat says which agent answers (`chat-agent-badge`) and its empty help describes that agent; a
tool card with a long command keeps one header line and wraps the command in its body; the chat's
title shows its descenders; a once task reads as once (no repeat icon, no "(UTC)" twice, no Max
runs in its form) and its next run keeps to one line; the Notifications page's own link is legible,
its select has a border, and no server variable is shown to users; on a phone neither the Inbox nor
the Notifications page has an empty bar above its header.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from app.core.config import load_settings
from app.core.context import Core, build_core
from app.core.models import Event, EventType
from tests.e2e.conftest import Server, api, login, open_new_chat, reveal_sidebar

pytestmark = pytest.mark.e2e
SIZES = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
MODEL = "claude-sonnet-4-5"
COMMAND = ("find /workspace -type f -name '*.log' -mtime -7 -exec du -sh {} + | sort -rh | head -n 20 "
           "&& echo done-with-the-listing-of-the-biggest-files")
CONTRAST_JS = """el => {
  const rgb = (s) => (s.match(/[\\d.]+/g) || []).slice(0, 3).map(Number);
  const lum = ([r, g, b]) => {
    const f = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  let bg = el, color = getComputedStyle(el).color;
  while (bg && getComputedStyle(bg).backgroundColor.match(/rgba?\\(0, 0, 0, 0\\)|transparent/)) bg = bg.parentElement;
  const [a, b] = [lum(rgb(color)), lum(rgb(getComputedStyle(bg || document.body).backgroundColor))];
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
}"""


@pytest.fixture(params=sorted(SIZES))
def sized(request: pytest.FixtureRequest, browser: Browser, server: Server) -> Iterator[Page]:
    context = browser.new_context(base_url=server.url, viewport=SIZES[request.param])
    page = context.new_page()
    page.size_name = request.param  # type: ignore[attr-defined]
    try:
        yield page
    finally:
        context.close()


@pytest.fixture(scope="module")
def core(server: Server) -> Iterator[Core]:
    core = build_core(load_settings(server.env))
    try:
        yield core
    finally:
        core.prompts.shutdown(2.0)
        core.db.dispose()


def _claude_chat(server: Server, token: str, title: str) -> int:
    """A chat of a project whose agent is Claude Code (set as an admin would; never started here)."""
    project = api(server, token, "POST", "/api/projects", {"name": f"Claude {uuid.uuid4().hex[:6]}"})
    server.manage("set-provider", "--project", str(project["id"]), "--provider", "acp", "--setting", "agent=claude",
                  "--setting", f"model={MODEL}", "--setting", "env.ANTHROPIC_API_KEY=sk-ant-never-shown")
    return api(server, token, "POST", f"/api/projects/{project['id']}/chats", {"title": title})["id"]


def test_the_chat_says_which_agent_answers_and_its_help_is_that_agents(
        sized: Page, server: Server, token: str) -> None:
    open_new_chat(sized)  # a chat of its own: the demo chat is shared with other tests, never empty for long
    badge = sized.get_by_test_id("chat-agent-badge")
    expect(badge).to_have_text("Demo agent")
    expect(badge).to_have_attribute("data-kind", "demo")
    expect(sized.get_by_test_id("empty-chat-help")).to_contain_text("/sleep 5")

    chat = _claude_chat(server, token, "Biggest folders, quarterly")
    sized.goto(f"/chat/{chat}")
    expect(badge).to_have_text(f"Claude Code · {MODEL}")
    expect(badge).to_have_attribute("data-kind", "agent")
    expect(badge).to_be_in_viewport(ratio=1)
    help_box = sized.get_by_test_id("empty-chat-help")
    expect(help_box).to_contain_text(f"Claude Code · {MODEL} answers in this chat")
    expect(help_box.get_by_test_id("empty-chat-directives")).to_have_count(0)
    for directive in ("/sleep", "/fail", "/schedule", "/marker"):
        expect(help_box).not_to_contain_text(directive)
    expect(sized.locator("body")).not_to_contain_text("sk-ant-never-shown")

    # the title's glyphs are not clipped: its box holds its line, descenders included
    title = sized.get_by_test_id("chat-title")
    expect(title).to_have_text("Biggest folders, quarterly")
    fits = title.evaluate("""el => { const s = getComputedStyle(el);
        return {line: parseFloat(s.lineHeight), font: parseFloat(s.fontSize),
                clipped: el.scrollHeight > el.clientHeight + 0.5}; }""")
    assert fits["line"] >= 1.25 * fits["font"] and not fits["clipped"], f"the title is clipped: {fits}"


def test_a_long_tool_command_keeps_one_header_line_and_wraps_in_the_body(
        sized: Page, server: Server, token: str, core: Core) -> None:
    chat = _claude_chat(server, token, "Disk report")
    now = dt.datetime.now(dt.UTC)
    call = {"id": "t1", "title": COMMAND, "kind": "execute", "status": "completed",
            "input": {"command": COMMAND, "description": "List the biggest log files"}, "output": "4.0K ./a.log"}
    with core.db.write() as s:
        s.add(Event(chat_id=chat, type=EventType.TOOL.value, text=json.dumps(call), created_at=now))
    login(sized)
    sized.goto(f"/chat/{chat}")
    card = sized.get_by_test_id("tool-card")
    summary = card.locator("summary")
    expect(summary).to_be_visible()
    parts = [summary.get_by_test_id(name).bounding_box() for name in ("tool-title", "tool-status", "event-time")]
    assert all(parts), parts
    middles = {round(box["y"] + box["height"] / 2) for box in parts}
    assert max(middles) - min(middles) <= 3, f"the header's parts are not on one line: {parts}"
    assert summary.bounding_box()["height"] < 44, "the header wrapped"
    ellipsis = summary.get_by_test_id("tool-title").evaluate("el => el.scrollWidth > el.clientWidth")
    assert ellipsis, "a long command's title should end in an ellipsis in the header"
    summary.click()
    whole = card.get_by_test_id("tool-title-full")
    expect(whole).to_have_text(COMMAND)
    box, card_box = whole.bounding_box(), card.bounding_box()
    assert box["x"] + box["width"] <= card_box["x"] + card_box["width"] + 0.5, "the full command overflows"
    wraps = card.get_by_test_id("tool-input").evaluate("el => el.scrollWidth <= el.clientWidth + 1")
    assert wraps, "the tool's input should wrap, not scroll sideways"


def test_a_once_task_reads_as_once(sized: Page, server: Server, token: str) -> None:
    chat = api(server, token, "POST", f"/api/projects/{api(server, token, 'GET', '/api/projects')['projects'][0]['id']}"
               "/chats", {"title": "Once only"})["id"]
    at = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=2)).replace(second=0, microsecond=0)
    api(server, token, "POST", f"/api/chats/{chat}/schedules", {
        "name": "build watch", "prompt": "Check the nightly build.",
        "schedule": {"kind": "once", "at": at.isoformat().replace("+00:00", "Z")}})
    login(sized)
    sized.goto(f"/chat/{chat}")
    sized.get_by_test_id("schedules-button").click()
    row = sized.get_by_test_id("schedule-row").filter(has_text="build watch")
    expect(row.get_by_test_id("schedule-when")).to_have_text(f"Once, {at:%a} {at.day} {at:%b %Y, %H:%M:%S} UTC")
    expect(row.locator("svg.lucide-repeat")).to_have_count(0)
    expect(row.get_by_test_id("schedule-run-count")).to_have_text("0 / 1")
    if sized.size_name == "desktop":  # type: ignore[attr-defined]
        nxt = row.get_by_test_id("schedule-next-run")
        line = nxt.locator("span, p").first.bounding_box()
        assert nxt.bounding_box()["height"] < 1.6 * line["height"], "the next run wrapped onto a second line"
    sized.get_by_test_id("schedules-new").click()
    expect(sized.get_by_test_id("schedule-form-max-runs")).to_have_count(1)  # a repeating kind has one
    sized.get_by_test_id("schedule-form-kind").get_by_role("radio", name="Once").click()
    expect(sized.get_by_test_id("schedule-form-max-runs")).to_have_count(0)


def test_the_notifications_and_inbox_pages_read_well(sized: Page) -> None:
    login(sized)
    sized.goto("/settings/notifications")
    expect(sized.get_by_test_id("channels-refresh")).to_be_visible()
    select = sized.locator("select.cc-native-select").first
    border = select.evaluate("el => { const s = getComputedStyle(el); return [s.borderTopStyle, s.borderTopWidth]; }")
    assert border[0] != "none" and float(border[1].removesuffix("px")) >= 1, f"the select has no border: {border}"
    expect(sized.locator("body")).not_to_contain_text("CHATCRON_")
    for path, heading in (("/settings/notifications", "Notifications"), ("/inbox", "Inbox")):
        sized.goto(path)
        expect(sized.get_by_role("heading", name=heading)).to_be_visible()
        expect(sized.locator(".cc-phone-bar")).to_have_count(0)  # no empty bar above the header
        if sized.size_name == "phone":  # type: ignore[attr-defined]
            expect(sized.get_by_test_id("sidebar-toggle")).to_be_visible()  # in the page's own header
    sized.goto("/settings/notifications")
    reveal_sidebar(sized)
    link = sized.get_by_test_id("nav-notifications")
    expect(link).to_have_attribute("aria-current", "page")
    ratio = link.locator("p, span").first.evaluate(CONTRAST_JS)
    assert ratio >= 4.5, f"the current page's link is pale on pale: contrast {ratio:.2f}"
