"""A project's daily budget held by two real scheduler processes (SPEC §15), on both stores.

The agent is the product's ``openai`` provider against a model server of ours on loopback that
streams a reply and then its usage (6,000 tokens a turn), holding each reply a moment so fires
overlap. Twelve tasks of one project come due at once before two schedulers; the project's budget
is 20,000 tokens. The bound (scheduler/budgets.py): a fire starts only while the day's spend plus
what the fires in flight may still spend is below the budget, so the project ends at most one
fire past its budget — without caps, one fire at a time; with a cap of 7,000 per fire, several at
once, and at most one cap past it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import sqlalchemy as sa
from sqlmodel import func, select

from app.core.config import Settings
from app.core.context import Core
from app.core.models import Project
from app.core.spend import projects_spent, utc_day
from app.core.wake import DatabaseWaker
from app.schedules.model import RunOutcome, ScheduledTask, TaskRun
from app.schedules.service import Actor, TaskService
from tests.conftest import with_settings
from tests.integration.procs import Schedulers, clone_tasks, wait_for, wait_ready
from tests.integration.procs import new_chat as _chat
from tests.integration.procs import new_owner as _owner

pytestmark = pytest.mark.slow  # real scheduler processes: left out of `make check`

TASKS = 12
BUDGET = 20_000
PER_TURN = 6_000  # 4,500 in + 1,500 out
HOLD = 0.4  # s each reply is held open: fires that may overlap do


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return with_settings(settings, run_lease_seconds=5, max_tasks_per_project=0)


class ModelServer:
    """An OpenAI-compatible chat completions endpoint: a streamed reply, then its usage; it counts
    the replies it serves at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = self.most = self.served = 0
        handler = type("Handler", (_Handler,), {"model": self})
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"
        threading.Thread(target=self.http.serve_forever, args=(0.05,), daemon=True).start()

    def enter(self) -> None:
        with self.lock:
            self.now += 1
            self.served += 1
            self.most = max(self.most, self.now)

    def leave(self) -> None:
        with self.lock:
            self.now -= 1


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    model: ModelServer

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers["Content-Length"]))
        self.model.enter()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self._chunk({"choices": [{"index": 0, "delta": {"content": "Checked."}}]})
            time.sleep(HOLD)
            self._chunk({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            self._chunk({"choices": [], "usage": {"prompt_tokens": 4_500, "completion_tokens": 1_500}})
            self._raw("data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
        finally:
            self.model.leave()

    def _chunk(self, payload: dict) -> None:
        self._raw("data: " + json.dumps(payload) + "\n\n")

    def _raw(self, text: str) -> None:
        raw = text.encode()
        self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
        self.wfile.flush()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet test output
        pass


@pytest.fixture
def model() -> Iterator[ModelServer]:
    server = ModelServer()
    yield server
    server.http.shutdown()
    server.http.server_close()


def _settled(core: Core, ids: list[int]) -> list[TaskRun] | None:
    """Each task's first occurrence fired (and ended) or deferred, and nothing in flight."""
    with core.db.read() as s:
        rows = list(s.exec(select(TaskRun).where(TaskRun.task_id.in_(ids))))
        running = s.exec(select(func.count()).select_from(TaskRun).where(
            TaskRun.status == RunOutcome.RUNNING.value)).one()
    ended = [r for r in rows if r.status in (RunOutcome.SUCCEEDED.value, RunOutcome.DEFERRED.value)]
    return rows if len(ended) == len(ids) and not running else None


@pytest.mark.parametrize("cap", [None, 7_000], ids=["no-cap", "cap-7000"])
def test_two_schedulers_take_a_project_at_most_one_fire_past_its_daily_budget(
        core: Core, procs: Schedulers, model: ModelServer, cap: int | None) -> None:
    user, project_id = _owner(core)
    with core.db.write() as s:
        s.get(Project, project_id).daily_token_budget = BUDGET
    service = TaskService(core.db, core.clock, core.settings, DatabaseWaker(core.db))
    template, _ = service.create(Actor(user), _chat(core, user, project_id, "C0").id, {
        "name": "watch", "prompt": "check", "schedule": {"kind": "interval", "every_seconds": 3600},
        "max_tokens_per_fire": cap})
    ids = clone_tasks(core, template, TASKS)
    env = {"CHATCRON_PROVIDER": "openai", "CHATCRON_OPENAI_BASE_URL": model.url, "CHATCRON_OPENAI_MODEL": "m",
           "CHATCRON_RUN_LEASE_SECONDS": 5}
    group = [procs.start(core.db, **env), procs.start(core.db, **env)]
    wait_ready(core.db, group)
    with core.db.write() as s:  # every task due now, before both schedulers
        s.exec(sa.update(ScheduledTask).where(ScheduledTask.id.in_(ids)).values(next_run_at=core.clock.now()))
    DatabaseWaker(core.db).notify()
    rows = wait_for(lambda: _settled(core, ids), 120, "every task to fire or be deferred", group, every=0.2)

    with core.db.read() as s:
        spent = projects_spent(s.connection(), [project_id], utc_day(core.clock.now()))[project_id].tokens
    fired = [r for r in rows if r.status == RunOutcome.SUCCEEDED.value]
    deferred = [r for r in rows if r.status == RunOutcome.DEFERRED.value]
    assert spent == PER_TURN * len(fired) == PER_TURN * model.served
    assert BUDGET <= spent <= BUDGET + (cap or PER_TURN)  # past the line by at most one fire
    assert len(fired) == 4 and len(deferred) == TASKS - 4  # 0 → 6,000 → 12,000 → 18,000 → 24,000
    assert {r.instance for r in rows} <= {p.instance(core.db).id for p in group}
    assert all(r.error.startswith("project budget spent: ") for r in deferred)
    if cap is None:
        assert model.most == 1  # a fire with no cap may take all that is left: alone in flight
    else:
        assert model.most <= 3  # 0 + 7,000 + 7,000 < 20,000 ≤ 0 + 3 × 7,000: at most three at once
