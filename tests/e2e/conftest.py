"""Real processes and a real browser: `reflex run --env prod` on a free port, Debian's Chromium."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agents.anthropic_server import AnthropicServer
from tests.agents.rig import TEST_AGENTS_DIR, agents_dir
from tests.conftest import open_tmp
from tests.isolation import free_port, web_dir

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium-headless-shell"  # Debian's Chromium, headless build (scripts/setup.sh)
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
DEMO_EMAIL = "demo@example.com"
DEMO_PASSWORD = "demo-password"


def _wait_healthy(url: str, proc: subprocess.Popen, log: Path, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"web process exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(url + "/api/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.25)
    raise RuntimeError(f"web process not healthy after {timeout}s:\n{log.read_text()[-4000:]}")


class Server:
    def __init__(self, url: str, env: dict[str, str]) -> None:
        self.url = url
        self.env = env
        self.pid = 0  # the `reflex run` process (its workers are its descendants)
        self.log = Path()
        self.started = 0.0  # time.time() when it was started

    def manage(self, *args: str) -> str:
        out = subprocess.run([sys.executable, "-m", "app.manage", *args], env=self.env, cwd=ROOT,
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()


@pytest.fixture(scope="session")
def e2e_root() -> Iterator[Path]:
    """Where the served data dir lives: reachable by the sandboxed agents' uid (see open_tmp)."""
    with open_tmp("chatcron-e2e-") as folder:
        yield folder


@pytest.fixture(scope="session")
def server(e2e_root: Path) -> Iterator[Server]:
    data = e2e_root / "e2e-data"
    data.mkdir()
    port = free_port()
    env = {**os.environ, "CHATCRON_DATA_DIR": str(data), "CHATCRON_DEMO_WORD_DELAY_SECONDS": "0.06",
           "CHATCRON_API_URL": f"http://127.0.0.1:{port}", "PYTHONPATH": str(ROOT),
           "CHATCRON_AGENTS_DIR": str(TEST_AGENTS_DIR),  # the suite's installed agent CLIs (real-agent tests)
           # every module's schedules land in the shared demo project: its quota would fail whichever
           # test came later (the quotas are tested in tests/integration/test_user_quotas.py)
           "CHATCRON_MAX_TASKS_PER_PROJECT": "0", "CHATCRON_MAX_TASKS_PER_USER": "0",
           "CHATCRON_MAX_PROJECTS_PER_USER": "0",  # every module's projects belong to the demo user
           "CHATCRON_WEBHOOK_ALLOW_PRIVATE": "1",  # the notification tests' receivers listen on loopback
           "REFLEX_WEB_WORKDIR": str(web_dir("server"))}  # this worker's own build: a build embeds its port
    env.pop("CHATCRON_DATABASE_URL", None)
    server = Server(f"http://127.0.0.1:{port}", env)
    server.manage("migrate")
    server.manage("seed-demo")
    log = data / "web.log"
    with (data / "scheduler.log").open("w") as out:
        scheduler = subprocess.Popen([sys.executable, "-m", "scheduler"], cwd=ROOT, env=env, stdout=out,
                                     stderr=subprocess.STDOUT, start_new_session=True)
    server.log, server.started = log, time.time()
    with log.open("w") as out:
        proc = subprocess.Popen(
            [str(Path(sys.executable).parent / "reflex"), "run", "--env", "prod", "--frontend-port", str(port),
             "--backend-port", str(port), "--backend-host", "127.0.0.1"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    server.pid = proc.pid
    try:
        _wait_healthy(server.url, proc, log)
        yield server
    finally:
        for child in (proc, scheduler):
            os.killpg(child.pid, signal.SIGTERM)
        for child in (proc, scheduler):
            try:
                child.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait(10)


@pytest.fixture(scope="session")
def base_url(server: Server) -> str:
    return server.url


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs Debian's chromium-headless-shell package")
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "headless": True, "args": CHROMIUM_ARGS}


def login(page, email: str = DEMO_EMAIL, password: str = DEMO_PASSWORD) -> None:
    page.goto("/login")
    page.get_by_test_id("login-email").fill(email)
    page.get_by_test_id("login-password").fill(password)
    page.get_by_test_id("login-submit").click()
    page.wait_for_url("**/chat/**")
    page.get_by_test_id("chat-title").wait_for()


def reveal_sidebar(page) -> None:
    """On a narrow page the sidebar waits behind `sidebar-toggle`: open it (a no-op when wide or open)."""
    from playwright.sync_api import expect

    toggle = page.get_by_test_id("sidebar-toggle").first
    if not toggle.is_visible():
        return
    for _ in range(3):  # a click before the page has hydrated opens nothing: click again until it opens
        if toggle.get_attribute("aria-expanded") == "true":
            return
        toggle.click()
        try:
            expect(toggle).to_have_attribute("aria-expanded", "true", timeout=3_000)
            return
        except AssertionError:
            continue
    expect(toggle).to_have_attribute("aria-expanded", "true")


def open_new_chat(page) -> str:
    """Log in and open a fresh project chat; returns its id."""
    login(page)
    first = page.url
    reveal_sidebar(page)
    page.get_by_test_id("new-chat").first.click()
    page.wait_for_url(lambda url: "/chat/" in url and url != first)
    page.get_by_test_id("chat-title").wait_for()
    return page.url.rstrip("/").split("/")[-1]


def open_drawer(page) -> None:
    page.get_by_test_id("schedules-button").click()
    page.get_by_test_id("schedules-drawer").wait_for(state="visible", timeout=15_000)


def save_shot(page, tmp_path: Path, name: str, settle_ms: int = 0) -> None:
    """A screenshot in the test's folder; copied to docs/screenshots/ with CHATCRON_UPDATE_SCREENSHOTS=1."""
    if settle_ms:
        page.mouse.move(0, 0)
        page.wait_for_timeout(settle_ms)
    path = tmp_path / name
    page.screenshot(path=str(path))
    if os.environ.get("CHATCRON_UPDATE_SCREENSHOTS"):
        target = ROOT / "docs" / "screenshots" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())


def api(server: Server, token: str, method: str, path: str, body: dict | None = None) -> dict:
    """One call of the served HTTP API with a personal token; the JSON answer ({} when empty)."""
    request = urllib.request.Request(
        f"{server.url}{path}", data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"}, method=method)
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read() or b"{}")


SIZES = {1280: {"width": 1280, "height": 800}, 390: {"width": 390, "height": 844}}


@pytest.fixture
def model() -> Iterator[AnthropicServer]:
    """The scripted Anthropic model server for a test that runs the served ``claude`` preset (the
    suite's installed CLIs, where the served process looks: CHATCRON_AGENTS_DIR)."""
    agents_dir()
    server = AnthropicServer()
    yield server
    server.close()


@pytest.fixture
def sized(request: pytest.FixtureRequest, browser, base_url: str) -> Iterator:
    """A page of its own context at the size a test asks for (``by_size``; 1280 × 800 by default).
    Older modules keep a fixture of this name of their own."""
    context = browser.new_context(base_url=base_url, viewport=SIZES[getattr(request, "param", 1280)],
                                  timezone_id="Europe/Paris")
    page = context.new_page()
    yield page
    context.close()


def by_size(*widths: int) -> pytest.MarkDecorator:
    """Run the test at each of these widths (the ``sized`` page)."""
    return pytest.mark.parametrize("sized", list(widths), indirect=True, ids=[f"{w}px" for w in widths])


@pytest.fixture(scope="module")
def token(server: Server) -> str:
    """A personal API token of the demo user (one per test module)."""
    return server.manage("create-token", "--email", DEMO_EMAIL)
