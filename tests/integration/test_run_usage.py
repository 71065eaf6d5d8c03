"""What a turn cost (SPEC §11): a provider's usage is stored on the run, returned by the API and
summed in /metrics; events a provider writes besides text keep their order with it. Both stores."""

from __future__ import annotations

import json
import threading

from fastapi.testclient import TestClient
from sqlmodel import select

from app.api import create_api
from app.core import auth, chats, projects
from app.core.context import Core
from app.core.models import Chat, Event, EventType, Run
from app.core.ports import Emit, ProviderError, TurnRequest, Usage, stream_of


class ReportingProvider:
    """Streams text, a thought and a tool event, reports usage and a session; fails if told to."""

    name = "reporting"

    def __init__(self, usage: Usage, fail: bool = False) -> None:
        self.usage, self.fail = usage, fail

    def run(self, request: TurnRequest, emit: Emit, cancel: threading.Event) -> None:
        stream = stream_of(emit)
        stream.report_session("session-1")
        stream.thought("thinking it over")
        stream("Here is ")
        stream.event(EventType.TOOL, json.dumps({"id": "t1", "title": "ls", "kind": "execute", "status": "completed"}))
        stream("the answer.")
        stream.report_usage(self.usage)
        if self.fail:
            raise ProviderError("the agent broke")


def _chat(core: Core) -> tuple[int, str]:
    user = auth.create_user(core.db, core.clock, "u@example.com", "password-1")
    project = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, "P", user)
    token = auth.create_api_token(core.db, core.clock, user.id, "t")
    return chats.create_chat(core.db, core.clock, user, project.id, "C").id, token


def _use(core: Core, provider: ReportingProvider) -> None:
    core.prompts.providers = lambda project: provider


def test_usage_is_recorded_returned_and_summed(core: Core) -> None:
    chat_id, token = _chat(core)
    _use(core, ReportingProvider(Usage(input_tokens=100, output_tokens=20, cached_tokens=5, cost_usd=0.25)))
    first = core.prompts.start(chat_id, "one").wait(30)
    _use(core, ReportingProvider(Usage(input_tokens=1, output_tokens=2, cost_usd=None), fail=True))
    second = core.prompts.start(chat_id, "two").wait(30)
    assert first.usage == {"input_tokens": 100, "output_tokens": 20, "cached_tokens": 5, "cost_usd": 0.25}
    assert second.error == "the agent broke" and second.usage == {"input_tokens": 1, "output_tokens": 2}

    client = TestClient(create_api(lambda: core, core.settings.request_max_bytes))
    auth_header = {"Authorization": f"Bearer {token}"}
    assert client.get(f"/api/runs/{first.run_id}", headers=auth_header).json()["usage"] == first.usage
    assert client.get(f"/api/runs/{second.run_id}", headers=auth_header).json()["usage"] == second.usage
    metrics = client.get("/metrics").text
    assert 'chatcron_tokens_total{direction="input"} 101.0' in metrics
    assert 'chatcron_tokens_total{direction="output"} 22.0' in metrics
    assert 'chatcron_tokens_total{direction="cached"} 5.0' in metrics
    assert "chatcron_cost_usd_total 0.25" in metrics


def test_events_keep_the_agents_order_and_the_session_is_the_chats(core: Core) -> None:
    chat_id, _ = _chat(core)
    _use(core, ReportingProvider(Usage(input_tokens=1)))
    result = core.prompts.start(chat_id, "one").wait(30)
    with core.db.read() as s:
        events = list(s.exec(select(Event).where(Event.run_id == result.run_id).order_by(Event.id)))
        chat = s.get(Chat, chat_id)
        run = s.get(Run, result.run_id)
    shown = [(e.type, e.text) for e in events if e.type not in ("prompt", "run_started", "run_finished")]
    assert [kind for kind, _ in shown] == ["thought", "assistant_text", "tool", "assistant_text"]
    assert shown[0][1] == "thinking it over" and shown[1][1] == "Here is " and shown[3][1] == "the answer."
    assert json.loads(shown[2][1])["id"] == "t1"
    assert run.output == "Here is the answer."  # thoughts and tool events are not the reply
    assert chat.provider_session_id == "session-1"


def test_a_run_without_usage_has_none(core: Core) -> None:
    chat_id, token = _chat(core)
    result = core.prompts.start(chat_id, "hello").wait(30)  # the demo provider reports nothing
    client = TestClient(create_api(lambda: core, core.settings.request_max_bytes))
    assert client.get(f"/api/runs/{result.run_id}", headers={"Authorization": f"Bearer {token}"}).json()["usage"] \
        is None
    assert "chatcron_cost_usd_total 0.0" in client.get("/metrics").text
