"""Login limits behind a proxy, and the device cookie that lets a known browser past a locked
address (docs/SECURITY.md, "Login limits"); on SQLite and PostgreSQL.

A login is checked over the login page's websocket. Here a probe stands where Reflex mounts that
socket — inside the API app, under the trusted-proxy middleware — and does what a login over it
does: Reflex's own router data from the handshake's scope, then the login state's ``attempt``.
The device cookie comes from the real ``/auth/claim``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qsl

import pytest
from fastapi.testclient import TestClient
from reflex.app import EventNamespace
from reflex.istate.data import RouterData
from sqlmodel import select
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from app.api import behind_proxies, create_api
from app.core import auth, devices
from app.core.clock import FakeClock
from app.core.config import Settings
from app.core.context import Core
from app.core.errors import InvalidCredentials
from app.core.models import LoginAttempt, User
from app.ui.state import login
from tests.conftest import make_core, with_settings
from tests.integration.apiclient import BROWSER_NONCE, add_user

PASSWORD = "password-1"  # add_user's
LOCKED = "Too many failed logins; try again in 15 minutes."
PER_ACCOUNT, PER_ADDRESS = 2, 3


class LoginProbe:
    """A login over "the socket": the address and cookies its handshake carried, as the login state sees them."""

    def __init__(self, core: Core) -> None:
        self.core = core

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        query = dict(parse_qsl(scope["query_string"].decode()))
        # what Reflex computes when a socket connects (reflex/app.py), from the scope the middleware left
        data = EventNamespace._build_static_router_data(None, "sid", {"asgi.scope": scope})
        router = RouterData.from_router_data(data)
        try:
            ticket = await asyncio.to_thread(login.attempt, self.core, router, query["email"], query["password"])
            answer = JSONResponse({"ticket": ticket, "counted_as": login.client_address(router)})
        except auth.TooManyAttempts as exc:
            answer = JSONResponse({"code": exc.code, "message": exc.message}, status_code=429)
        except InvalidCredentials as exc:
            answer = JSONResponse({"code": exc.code, "message": exc.message}, status_code=401)
        await answer(scope, receive, send)


@dataclasses.dataclass
class Site:
    core: Core
    client: TestClient
    users: dict[str, User]

    def login(self, email: str, password: str = PASSWORD, *, via: str | None = None, device: str = "") -> Any:
        """One attempt; ``via``: the X-Forwarded-For the (test) peer sends; ``device``: a device cookie."""
        cookie = f"{auth.LOGIN_COOKIE}={BROWSER_NONCE}" + (f"; {devices.DEVICE_COOKIE}={device}" if device else "")
        headers = {"cookie": cookie, **({"x-forwarded-for": via} if via is not None else {})}
        return self.client.get("/_event/login", params={"email": email, "password": password}, headers=headers)

    def device_of(self, who: str, via: str = "198.51.100.200") -> str:
        """Log ``who`` in and claim the ticket, as a browser does; the device cookie it is given."""
        answer = self.login(f"{who}@example.com", via=via)
        assert answer.status_code == 200, answer.text
        claimed = self.client.get("/auth/claim", params={"ticket": answer.json()["ticket"]}, follow_redirects=False,
                                  headers={"cookie": f"{auth.LOGIN_COOKIE}={BROWSER_NONCE}"})
        assert claimed.status_code == 303 and claimed.headers["location"] == "/"
        [header] = [h for h in claimed.headers.get_list("set-cookie") if h.startswith(devices.DEVICE_COOKIE + "=")]
        attributes = [part.strip().lower() for part in header.split(";")]
        assert "httponly" in attributes and "samesite=lax" in attributes, header
        assert f"max-age={devices.DEVICE_MAX_AGE}" in attributes and "path=/" in attributes, header
        self.client.cookies.clear()  # each attempt below names its cookies itself
        return header.split(";")[0].split("=", 1)[1]


@pytest.fixture
def site_behind(settings: Settings, fake_clock: FakeClock) -> Iterator[Callable[[tuple[str, ...]], Site]]:
    opened: list[tuple[Core, TestClient]] = []

    def build(trusted: tuple[str, ...]) -> Site:
        core = make_core(with_settings(settings, login_max_failures_per_account=PER_ACCOUNT,
                                       login_max_failures_per_address=PER_ADDRESS, trusted_proxies=trusted),
                         fake_clock)
        users = {who: add_user(core, f"{who}@example.com") for who in ("alice", "bob")}
        api = create_api(lambda: core, core.settings.request_max_bytes)
        api.mount("/_event", LoginProbe(core))  # where Reflex mounts its socket app
        client = TestClient(behind_proxies(api, core.settings.trusted_proxies))
        opened.append((core, client))
        return Site(core, client, users)

    yield build
    for core, client in opened:
        client.close()
        core.prompts.shutdown(2.0)
        core.db.dispose()


def lock_address(site: Site, via: str | None, spoof: bool = False) -> None:
    """PER_ADDRESS failures from ``via`` against accounts nobody has (so no account lock is reached);
    ``spoof``: each with a different made-up client address left of the proxy's entry."""
    for i in range(PER_ADDRESS):
        forwarded = f"203.0.113.{i + 1}, {via}" if spoof else via
        assert site.login(f"nobody{i}@example.com", via=forwarded).status_code == 401


def refused_as_locked(answer: Any) -> None:
    assert answer.status_code == 429, answer.text
    assert answer.json() == {"code": "too_many_attempts", "message": LOCKED}


# -- the address counted behind a proxy ------------------------------------------------------------


def test_behind_a_trusted_proxy_each_forwarded_client_has_its_own_address_limit(
        site_behind: Callable[[tuple[str, ...]], Site]) -> None:
    site = site_behind(("testclient",))  # the test client's peer address is the proxy
    lock_address(site, "198.51.100.1")
    refused_as_locked(site.login("alice@example.com", via="198.51.100.1"))
    other = site.login("alice@example.com", via="198.51.100.2")
    assert other.status_code == 200 and other.json()["counted_as"] == "198.51.100.2"
    with site.core.db.read() as s:
        counted = set(s.exec(select(LoginAttempt.address)))
    assert counted == {"198.51.100.1", "198.51.100.2"}  # never the proxy's own address


def test_a_client_made_up_forwarded_address_does_not_escape_its_limit(
        site_behind: Callable[[tuple[str, ...]], Site]) -> None:
    """A proxy that appends to X-Forwarded-For keeps what the client wrote left of the real address."""
    site = site_behind(("testclient",))
    lock_address(site, "198.51.100.1", spoof=True)
    refused_as_locked(site.login("alice@example.com", via="203.0.113.77, 198.51.100.1"))


@pytest.mark.parametrize("trusted", [(), ("192.0.2.1",)], ids=["no-proxies", "another-proxy"])
def test_an_untrusted_peers_forwarded_for_is_ignored(site_behind: Callable[[tuple[str, ...]], Site],
                                                     trusted: tuple[str, ...]) -> None:
    site = site_behind(trusted)
    for i in range(PER_ADDRESS):  # a new "client" every time, all from one peer
        assert site.login(f"nobody{i}@example.com", via=f"198.51.100.{i + 1}").status_code == 401
    refused_as_locked(site.login("alice@example.com", via="198.51.100.99"))
    with site.core.db.read() as s:
        assert set(s.exec(select(LoginAttempt.address))) == {"testclient"}


# -- the way out: a device cookie ------------------------------------------------------------------


def test_a_known_browser_logs_in_from_a_locked_address_and_others_do_not(
        site_behind: Callable[[tuple[str, ...]], Site]) -> None:
    site = site_behind(("testclient",))
    alices, bobs = site.device_of("alice"), site.device_of("bob")
    lock_address(site, "198.51.100.1")  # a crowd behind one address, or someone guessing other accounts

    refused_as_locked(site.login("alice@example.com", via="198.51.100.1"))  # no device cookie
    allowed = site.login("alice@example.com", via="198.51.100.1", device=alices)
    assert allowed.status_code == 200 and allowed.json()["ticket"].startswith("cclt_")

    user_id, nonce, mac = alices.split(".")
    forged = [f"{user_id}.{nonce}.{'0' * len(mac)}", f"{user_id}.{'A' * len(nonce)}.{mac}",
              f"{site.users['bob'].id}.{nonce}.{mac}", alices + "x", "garbage"]
    for cookie in [bobs, *forged]:  # another account's cookie, or a forged one: no exemption
        refused_as_locked(site.login("alice@example.com", via="198.51.100.1", device=cookie))
    refused_as_locked(site.login("bob@example.com", via="198.51.100.1", device=alices))
    assert site.login("bob@example.com", via="198.51.100.1", device=bobs).status_code == 200


def test_guessing_an_account_from_elsewhere_does_not_lock_its_owners_browser(
        site_behind: Callable[[tuple[str, ...]], Site]) -> None:
    site = site_behind(("testclient",))
    alices = site.device_of("alice")
    for i in range(PER_ACCOUNT):  # the attacker, from fresh addresses
        assert site.login("alice@example.com", "guess", via=f"192.0.2.{i + 10}").status_code == 401
    refused_as_locked(site.login("alice@example.com", via="198.51.100.3"))  # the account is locked for strangers
    assert site.login("alice@example.com", via="198.51.100.3", device=alices).status_code == 200

    # the device is limited on its own: its owner's typos lock it, not the account for the others
    for _ in range(PER_ACCOUNT):
        assert site.login("alice@example.com", "typo", via="198.51.100.3", device=alices).status_code == 401
    refused_as_locked(site.login("alice@example.com", via="198.51.100.3", device=alices))
    site.core.clock.advance(15 * 60)
    assert site.login("alice@example.com", via="198.51.100.3", device=alices).status_code == 200


def test_a_claim_keeps_the_browsers_device_and_a_https_proxy_makes_it_secure(
        site_behind: Callable[[tuple[str, ...]], Site]) -> None:
    site = site_behind(("testclient",))
    first = site.device_of("alice")
    answer = site.login("alice@example.com", via="198.51.100.4", device=first)
    cookie = f"{auth.LOGIN_COOKIE}={BROWSER_NONCE}; {devices.DEVICE_COOKIE}={first}"
    claimed = site.client.get("/auth/claim", params={"ticket": answer.json()["ticket"]}, follow_redirects=False,
                              headers={"cookie": cookie, "x-forwarded-proto": "https"})
    [header] = [h for h in claimed.headers.get_list("set-cookie") if h.startswith(devices.DEVICE_COOKIE + "=")]
    assert header.split(";")[0] == f"{devices.DEVICE_COOKIE}={first}"  # the same device: its count goes on
    assert "secure" in [part.strip().lower() for part in header.split(";")]
