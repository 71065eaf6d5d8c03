"""Personal API tokens: optional expiry and revocation, both refused with 401."""

from __future__ import annotations

from fastapi.testclient import TestClient

from app.api import create_api
from app.core import auth
from tests.integration.apiclient import add_user


def _status(core, token: str) -> int:
    client = TestClient(create_api(lambda: core, core.settings.request_max_bytes))
    return client.get("/api/projects", headers={"Authorization": f"Bearer {token}"}).status_code


def test_an_expired_personal_token_is_refused(clocked_core, fake_clock) -> None:
    user = add_user(clocked_core, "exp@example.com")
    token = auth.create_api_token(clocked_core.db, fake_clock, user.id, "ci", ttl_seconds=3600)
    assert _status(clocked_core, token) == 200
    fake_clock.advance(3599)
    assert _status(clocked_core, token) == 200
    fake_clock.advance(1)
    assert _status(clocked_core, token) == 401


def test_revoked_personal_tokens_are_refused(core) -> None:
    user = add_user(core, "rev@example.com")
    tokens = [auth.create_api_token(core.db, core.clock, user.id) for _ in range(2)]
    assert [_status(core, t) for t in tokens] == [200, 200]
    assert auth.revoke_tokens(core.db, core.clock, user.id) == 2
    assert [_status(core, t) for t in tokens] == [401, 401]
    assert auth.revoke_tokens(core.db, core.clock, user.id) == 0
