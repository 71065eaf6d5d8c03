"""Only the deployment's own origins may use the web process from a browser (SPEC §17).

Against the real ``reflex run --env prod`` of tests/e2e/conftest.py, which serves at
``http://127.0.0.1:<port>`` with CHATCRON_ALLOWED_ORIGINS unset: the default is the served URL's
origin (Reflex's deploy_url, ``http://localhost:<port>``) and its loopback aliases on that port.
A page on another port of the same host is another origin and is refused.
"""

from __future__ import annotations

import urllib.parse

import httpx
import pytest

from tests.e2e.conftest import Server
from tests.e2e.origin_probe import WS_ACCEPTED, polling_handshake, preflight, websocket_handshake

pytestmark = pytest.mark.e2e


def origins(server: Server) -> tuple[str, list[str]]:
    """(the origin the suite's browser uses, origins that must be refused)."""
    port = urllib.parse.urlsplit(server.url).port
    own = f"http://127.0.0.1:{port}"
    return own, [f"http://127.0.0.1:{port + 1}", f"http://localhost:{port + 1}", "https://evil.example",
                 f"https://127.0.0.1:{port}", "null"]


def test_a_socket_handshake_from_a_foreign_origin_is_refused_on_both_transports(server: Server) -> None:
    own, foreign = origins(server)
    for origin in foreign:
        assert websocket_handshake(server.url, origin) == 403, origin
        refused = polling_handshake(server.url, origin)
        assert refused.status_code == 403, origin
        assert refused.json()["error"]["code"] == "forbidden_origin"
        assert "access-control-allow-origin" not in refused.headers


def test_the_served_origin_and_its_loopback_aliases_open_the_socket(server: Server) -> None:
    own, _ = origins(server)
    port = urllib.parse.urlsplit(server.url).port
    for origin in (own, f"http://localhost:{port}", f"http://[::1]:{port}", None):
        assert websocket_handshake(server.url, origin) == WS_ACCEPTED, origin
    # This deployment runs socket.io on the websocket transport only (Reflex's default): a polling
    # handshake from the own origin gets past the origin check and is answered by engine.io itself.
    answered = polling_handshake(server.url, own)
    assert (answered.status_code, answered.text) == (400, '"Invalid transport"')


def test_cors_headers_go_to_the_own_origin_only(server: Server) -> None:
    own, foreign = origins(server)
    allowed = preflight(server.url, "/api/projects", own)
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == own
    assert allowed.headers["access-control-allow-credentials"] == "true"
    for origin in foreign:
        answer = preflight(server.url, "/api/projects", origin)
        assert "access-control-allow-origin" not in answer.headers, origin
        assert answer.status_code in (400, 403), origin


def test_a_credentialed_request_from_a_foreign_origin_is_refused(server: Server) -> None:
    own, foreign = origins(server)
    cookie = {"Cookie": "chatcron_session=whatever"}
    mine = httpx.get(server.url + "/api/health", headers={**cookie, "Origin": own}, timeout=10)
    assert mine.status_code == 200
    assert mine.headers["access-control-allow-origin"] == own
    for origin in foreign:
        for method, path in (("GET", "/api/health"), ("POST", "/auth/logout"), ("GET", "/auth/claim?ticket=x")):
            answer = httpx.request(method, server.url + path, headers={**cookie, "Origin": origin}, timeout=10)
            assert answer.status_code == 403, (origin, method, path)
            assert "access-control-allow-origin" not in answer.headers


def test_requests_without_an_origin_still_work(server: Server) -> None:
    assert httpx.get(server.url + "/api/health", timeout=10).status_code == 200
    assert httpx.get(server.url + "/login", timeout=10, follow_redirects=True).status_code == 200
    assert httpx.get(server.url + "/api/projects", timeout=10).status_code == 401  # the API's own answer
