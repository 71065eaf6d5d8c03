"""The transcript stays pinned to its newest entry (SPEC §16), measured in Chromium at 1280 × 800
and 390 × 844: on load, on send, while a slow demo turn streams, and after reopening a chat; a
reader who scrolled up is left in place and offered `jump-to-latest`, which pins again.

Positions are read from the transcript element (scrollTop + clientHeight against scrollHeight),
never assumed from what Playwright can see.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.conftest import api as _api
from tests.e2e.conftest import login

pytestmark = pytest.mark.e2e
SIZES = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
REPLY = "[data-testid=event][data-type=assistant_text]"
PINNED_PX = 4  # how far from the very bottom still reads as "at the newest entry" in a measurement
LINES = "\n".join("abcdefgh")  # a tall message of few words (the demo replies word by word)
SLEPT = "Working for 1 seconds… "  # the demo's first chunk for `/sleep 1`, a second before the rest
MEASURE_JS = """() => {
  const el = document.querySelector('[data-testid="transcript"]');
  return {top: el.scrollTop, view: el.clientHeight, height: el.scrollHeight,
          gap: el.scrollHeight - el.scrollTop - el.clientHeight};
}"""


def _finish(server, token: str, run_id: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while _api(server, token, "GET", f"/api/runs/{run_id}")["status"] in ("running", "queued"):
        assert time.monotonic() < deadline, f"run {run_id} still running after {timeout} s"
        time.sleep(0.1)


def _prompt(server, token: str, chat_id: int, text: str) -> int:
    try:
        return _api(server, token, "POST", f"/api/chats/{chat_id}/prompts", {"text": text})["run_id"]
    except urllib.error.HTTPError as exc:
        raise AssertionError(f"prompt refused: {exc.read()!r}") from None


class History:
    """A chat several screens tall, shared by this module's tests; ``replies`` counts its turns."""

    def __init__(self, chat_id: int, replies: int) -> None:
        self.id = chat_id
        self.replies = replies


@pytest.fixture(scope="module")
def long_chat(server, token: str) -> History:
    project = _api(server, token, "GET", "/api/projects")["projects"][0]["id"]
    chat = _api(server, token, "POST", f"/api/projects/{project}/chats", {"title": "Long history"})["id"]
    for turn in range(12):
        _finish(server, token, _prompt(server, token, chat, f"t{turn}\n{LINES}"))
    return History(chat, 12)


@pytest.fixture(params=sorted(SIZES))
def sized(request: pytest.FixtureRequest, browser: Browser, server) -> Iterator[Page]:
    context = browser.new_context(base_url=server.url, viewport=SIZES[request.param])
    page = context.new_page()
    page.size_name = request.param  # type: ignore[attr-defined]
    try:
        yield page
    finally:
        context.close()


SAMPLE_JS = """({selector, index}) => {
  window.__samples = [];
  window.__sampling = true;
  const tick = () => {
    const el = document.querySelector('[data-testid="transcript"]');
    const reply = document.querySelectorAll(selector)[index];
    const length = reply ? reply.textContent.length : 0;
    if (length) window.__samples.push({length, gap: el.scrollHeight - el.scrollTop - el.clientHeight});
    if (window.__sampling) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}"""


def _measure(page: Page) -> dict:
    return page.evaluate(MEASURE_JS)


def _open(page: Page, chat: History) -> None:
    page.goto(f"/chat/{chat.id}")
    expect(page.get_by_test_id("chat-title")).to_have_text("Long history")
    expect(page.locator(REPLY)).to_have_count(chat.replies, timeout=15_000)


def _choose(page: Page, chat_item) -> None:
    """Open a chat from the sidebar (on a phone it waits behind `sidebar-toggle`)."""
    if page.size_name == "phone":  # type: ignore[attr-defined]
        page.get_by_test_id("sidebar-toggle").click()
    chat_item.click()


def _expect_pinned(page: Page) -> dict:
    """Wait (bounded) for the layout to settle at the bottom; fail with the last measurement."""
    deadline = time.monotonic() + 5
    while True:
        m = _measure(page)
        if m["gap"] <= PINNED_PX or time.monotonic() > deadline:
            break
        page.wait_for_timeout(50)
    assert m["gap"] <= PINNED_PX, f"transcript not at its newest entry: {m}"
    return m


def _shot(page: Page, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}-{page.size_name}.png"  # type: ignore[attr-defined]
    page.screenshot(path=str(path))
    return path


def _stream(page: Page, reply_index: int, until: str) -> list[dict]:
    """Samples {length of reply ``reply_index``, gap} taken by the page on every animation frame
    while the reply grows to ``until`` (in the page, so a slow test process misses no frame)."""
    page.evaluate(SAMPLE_JS, {"selector": REPLY, "index": reply_index})
    expect(page.locator(REPLY).nth(reply_index)).to_have_text(until, timeout=30_000)
    return page.evaluate("() => { window.__sampling = false; return window.__samples; }")


def test_a_long_chat_opens_at_its_newest_entry(sized: Page, long_chat: History, tmp_path: Path) -> None:
    login(sized)
    _open(sized, long_chat)
    m = _expect_pinned(sized)
    assert m["height"] > 2 * m["view"], f"the chat is not long enough to prove anything: {m}"
    expect(sized.get_by_test_id("jump-to-latest")).to_be_hidden()
    expect(sized.locator(REPLY).last).to_be_in_viewport()
    _shot(sized, tmp_path, "opened")

    _choose(sized, sized.locator("[data-testid=chat-item]", has_text="Demo chat").first)
    expect(sized.get_by_test_id("chat-title")).to_have_text("Demo chat")
    _choose(sized, sized.locator(f'[data-testid=chat-item][data-chat-id="{long_chat.id}"]'))
    expect(sized.get_by_test_id("chat-title")).to_have_text("Long history")
    expect(sized.locator(REPLY)).to_have_count(long_chat.replies)
    _expect_pinned(sized)


def test_sending_and_a_streaming_turn_keep_the_newest_entry_in_view(
        sized: Page, server, token: str, long_chat: History, tmp_path: Path) -> None:
    login(sized)
    _open(sized, long_chat)
    _expect_pinned(sized)
    words = " ".join(f"w{i}" for i in range(30))
    sized.get_by_test_id("composer-input").fill(f"/sleep 1\n{words}")
    sized.get_by_test_id("composer-send").click()
    expect(sized.locator("[data-testid=event][data-type=prompt]").last).to_contain_text(words)
    _expect_pinned(sized)
    expect(sized.locator("[data-testid=event][data-type=prompt]").last).to_be_in_viewport()

    samples = _stream(sized, long_chat.replies, f"{SLEPT}Demo agent here. You said: {words}")
    long_chat.replies += 1
    lengths = [s["length"] for s in samples]
    assert len(set(lengths)) >= 3, f"the reply did not stream: lengths {sorted(set(lengths))}"
    assert max(s["gap"] for s in samples) <= PINNED_PX, f"the streaming reply left the view: {samples}"
    _expect_pinned(sized)
    expect(sized.get_by_test_id("agent-working")).to_be_hidden()
    _expect_pinned(sized)
    _shot(sized, tmp_path, "streamed")


def test_a_reader_who_scrolled_up_stays_put_and_can_jump_back(
        sized: Page, server, token: str, long_chat: History, tmp_path: Path) -> None:
    login(sized)
    _open(sized, long_chat)
    _expect_pinned(sized)
    jump = sized.get_by_test_id("jump-to-latest")
    sized.locator("[data-testid=transcript]").hover()
    sized.mouse.wheel(0, -900)
    expect(jump).to_be_visible()
    parked = _measure(sized)
    assert parked["gap"] > 300, f"the wheel did not scroll the transcript up: {parked}"

    words = " ".join(f"v{i}" for i in range(40))
    run = _prompt(server, token, long_chat.id, f"/sleep 1\n{words}")  # another process: the API
    reply = sized.locator(REPLY).nth(long_chat.replies)
    expect(reply).to_contain_text("Demo agent here. You said: v0", timeout=15_000)
    tops: list[int] = []
    for _ in range(5):  # a few chunks arrive; the reader is not moved
        tops.append(_measure(sized)["top"])
        sized.wait_for_timeout(80)
    assert set(tops) == {parked["top"]}, f"a reader who scrolled up was moved: {parked['top']} → {tops}"
    expect(jump).to_be_visible()
    expect(sized.locator(".cc-transcript-wrap")).to_have_attribute("data-unread", "true")
    _shot(sized, tmp_path, "scrolled-up")

    jump.click()
    expect(jump).to_be_hidden()
    _expect_pinned(sized)
    samples = _stream(sized, long_chat.replies, f"{SLEPT}Demo agent here. You said: {words}")
    long_chat.replies += 1
    assert max(s["gap"] for s in samples) <= PINNED_PX, f"after jump-to-latest the stream left the view: {samples}"
    _finish(server, token, run)


@pytest.mark.parametrize("size", [{"width": 1440, "height": 900}, {"width": 1280, "height": 800}],
                         ids=["1440x900", "1280x800"])
def test_a_run_now_beside_the_open_drawer_lands_in_view(
        browser: Browser, server, token: str, long_chat: History, size: dict, tmp_path: Path) -> None:
    """With the Schedules drawer open beside the transcript (it narrows the column, and the rows
    grow taller) a Run now's fire card and its reply arrive in view: the layout's own scrolls
    never unpin the transcript, only the user's do."""
    context = browser.new_context(base_url=server.url, viewport=size)
    page = context.new_page()
    try:
        login(page)
        _open(page, long_chat)
        _expect_pinned(page)
        name = f"beside {size['width']}"
        task = _api(server, token, "POST", f"/api/chats/{long_chat.id}/schedules", {
            "name": name, "prompt": "\n".join(f"line {i}" for i in range(6)),
            "schedule": {"kind": "interval", "every_seconds": 3600}})
        page.get_by_test_id("schedules-button").click()
        row = page.get_by_test_id("schedule-row").filter(has_text=name)
        expect(row).to_be_visible()
        _expect_pinned(page)
        row.get_by_test_id("schedule-run-now").click()
        card = page.locator("[data-testid=event][data-type=scheduled_prompt]").last
        expect(card).to_contain_text(name, timeout=20_000)
        expect(page.locator(REPLY)).to_have_count(long_chat.replies + 1, timeout=20_000)
        long_chat.replies += 1
        expect(page.locator(REPLY).last).to_contain_text("line 5", timeout=20_000)
        _expect_pinned(page)
        expect(page.locator(REPLY).last).to_be_in_viewport()
        expect(page.get_by_test_id("jump-to-latest")).to_be_hidden()
        page.screenshot(path=str(tmp_path / f"run-now-beside-drawer-{size['width']}.png"))
        _api(server, token, "DELETE", f"/api/schedules/{task['id']}")
    finally:
        context.close()
