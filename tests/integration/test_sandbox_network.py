"""The network fence (SPEC §12.1), tried as an attacker would: a hostile `command` agent in one
project reaches no service of the host, no other agent's listener and nothing outside its allow
list, directly or through the egress proxy; each refusal is a card of its turn."""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import urllib.request
from collections.abc import Iterator

import pytest
from sqlmodel import select

from app.agents import sandbox
from app.agents.egress import refused_title
from app.core import projects
from app.core.config import Settings
from app.core.models import Event
from app.core.turns import RunStatus
from tests.integration.test_sandbox_hostile import fenced_core, health
from tests.isolation import free_port

pytestmark = pytest.mark.slow  # hostile agents in the sandbox: left out of `make check`


class Listening:
    """A TCP listener on the host's loopback that counts who reached it."""

    def __init__(self) -> None:
        self.port = free_port()
        self.sock = socket.create_server(("127.0.0.1", self.port))
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()


@contextlib.contextmanager
def listening() -> Iterator[Listening]:
    server = Listening()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def other_agent_api() -> Iterator[Listening]:
    """Stands in for another project's agent's local API (opencode serves one on 127.0.0.1:4096)."""
    with listening() as server:
        yield server


@pytest.fixture
def allowed_service() -> Iterator[Listening]:
    with listening() as server:
        yield server


def test_no_service_of_the_host_nor_another_agent_is_reachable(settings: Settings, monkeypatch: pytest.MonkeyPatch,
                                                                other_agent_api: Listening,
                                                                allowed_service: Listening) -> None:
    with fenced_core(settings, monkeypatch) as world:
        projects.set_provider(world.core.db, world.project, "command", {
            "allow_hosts": f"localhost:{other_agent_api.port}, 127.0.0.1:{allowed_service.port}"})
        web_port = int(world.server.url.rsplit(":", 1)[1])
        targets = {"postgres": ["127.0.0.1", 5432], "redis": ["127.0.0.1", 6379], "web": ["127.0.0.1", web_port],
                   "other_agent_api": ["127.0.0.1", other_agent_api.port], "raw_ip": ["93.184.216.34", 443],
                   "metadata": ["169.254.169.254", 80],
                   # an allowed name whose address is loopback (DNS rebinding): the address decides
                   "rebinding": ["localhost", other_agent_api.port]}
        chat = world.chat()
        result = world.finished(world.start("network", {"targets": targets,
                                                        "allowed": ["127.0.0.1", allowed_service.port]}, chat=chat))
        assert result.status == RunStatus.SUCCEEDED, result
        seen = json.loads(result.output)
        allowed = seen.pop("allowed")
        leaks = {name: detail for name, (stopped, detail) in seen.items() if not stopped}
        assert leaks == {}, f"the fence let these through: {leaks}"
        assert allowed[1].startswith("HTTP/1.1 200"), allowed  # what the project allows gets through
        assert other_agent_api.accepted == 0 and allowed_service.accepted == 1
        with world.core.db.read() as s:
            cards = [json.loads(e.text) for e in s.exec(select(Event).where(Event.chat_id == chat,
                                                                             Event.type == "tool"))]
        assert sorted(c["title"] for c in cards) == sorted(refused_title(h, p) for h, p in targets.values())
        assert {(c["kind"], c["status"]) for c in cards} == {("network", "refused")}
        assert health(world)["agent_network"] == "proxy"
        with urllib.request.urlopen(world.server.url + "/metrics", timeout=10) as response:
            metrics = response.read().decode()
        assert f'chatcron_agent_egress_refused_total{{project="{world.project}"}} {float(len(targets))}' in metrics


def test_network_host_shares_the_hosts_network_and_says_so(settings: Settings, monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture,
                                                             other_agent_api: Listening) -> None:
    with caplog.at_level(logging.WARNING, logger="chatcron.sandbox"), \
            fenced_core(settings, monkeypatch, agent_network="host") as world:
        assert any("action=agent_network_host" in r.getMessage() for r in caplog.records)
        assert health(world)["agent_network"] == "host"
        assert "network: host (agents share the host's network" in sandbox.describe_network(world.core.settings)
        result = world.finished(world.start("network", {"targets": {"other_agent_api": ["127.0.0.1",
                                                                                        other_agent_api.port]}}))
        seen = json.loads(result.output)
        assert seen["direct:other_agent_api"][0] is False, "shared, the host's loopback is reachable: as before"
        assert other_agent_api.accepted == 1
