"""Browser login (ticket → HttpOnly cookie), logout, and how secrets are stored, on both databases."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator

import httpx
import pytest
import sqlalchemy as sa
from argon2 import PasswordHasher
from fastapi.testclient import TestClient
from sqlmodel import select

from app.api import create_api
from app.core import auth
from app.core.clock import FakeClock
from app.core.context import Core
from app.core.errors import InvalidCredentials, InvalidInput
from app.core.models import ApiToken, SessionKind, User, WebSession
from tests.integration.apiclient import BROWSER_NONCE, add_user, client_for, login_ticket, table_contents

PASSWORD = "password-1"  # what add_user's pre-computed hash verifies


@pytest.fixture
def user(core: Core) -> User:
    return add_user(core, "alice@example.com")


@pytest.fixture
def client(core: Core) -> Iterator[TestClient]:
    with client_for(core) as c:
        yield c


def claim(client: TestClient, ticket: str):  # an httpx response
    return client.get("/auth/claim", params={"ticket": ticket}, follow_redirects=False)


def cookie_attributes(response) -> dict[str, str]:  # an httpx response
    """The Set-Cookie attributes of the session cookie, names lower-cased ("httponly" → "")."""
    headers = [h for h in response.headers.get_list("set-cookie") if h.startswith(auth.SESSION_COOKIE + "=")]
    assert len(headers) == 1, response.headers.get_list("set-cookie")
    first, *rest = [part.strip() for part in headers[0].split(";")]
    attrs = {"value": first.split("=", 1)[1]}
    for part in rest:
        name, _, value = part.partition("=")
        attrs[name.lower()] = value
    return attrs


def sessions(core: Core, kind: SessionKind) -> list[WebSession]:
    with core.db.read() as s:
        return list(s.exec(select(WebSession).where(WebSession.kind == kind.value)))


# -- login ticket ------------------------------------------------------------------------------


def test_claim_sets_an_httponly_lax_cookie_and_redirects_home(core: Core, user: User, client: TestClient) -> None:
    ticket = login_ticket(core, user.id)
    response = claim(client, ticket)
    assert response.status_code == 303
    assert response.headers["location"] == "/"
    cookie = cookie_attributes(response)
    assert "httponly" in cookie
    assert cookie["samesite"].lower() == "lax"
    assert cookie["path"] == "/"
    assert int(cookie["max-age"]) == core.settings.session_ttl_seconds
    assert "secure" not in cookie  # plain http in tests; https would add it
    assert auth.user_for_session(core.db, core.clock, cookie["value"]).id == user.id
    assert cookie["value"] != ticket


def test_ticket_is_single_use(core: Core, user: User, client: TestClient) -> None:
    ticket = login_ticket(core, user.id)
    assert claim(client, ticket).status_code == 303
    again = claim(client, ticket)
    assert again.headers["location"] == "/login?error=expired"
    assert again.headers.get_list("set-cookie") == []
    assert len(sessions(core, SessionKind.SESSION)) == 1
    assert sessions(core, SessionKind.TICKET) == []


@pytest.mark.parametrize("ticket", ["", "cclt_not-a-ticket"], ids=["empty", "unknown"])
def test_bad_ticket_redirects_to_login_without_a_cookie(core: Core, user: User, client: TestClient,
                                                        ticket: str) -> None:
    before = table_contents(core)
    response = claim(client, ticket)
    assert (response.status_code, response.headers["location"]) == (303, "/login?error=expired")
    assert response.headers.get_list("set-cookie") == []
    assert table_contents(core) == before


def test_session_token_is_not_a_ticket_and_a_ticket_is_not_a_session(core: Core, user: User,
                                                                      client: TestClient) -> None:
    session = auth.create_session(core.db, core.clock, user.id, 3600)
    assert claim(client, session).headers["location"] == "/login?error=expired"
    assert auth.user_for_session(core.db, core.clock, session).id == user.id  # not burned by the attempt
    ticket = login_ticket(core, user.id)
    assert auth.user_for_session(core.db, core.clock, ticket) is None


@pytest.mark.parametrize(("age", "accepted"), [(auth.TICKET_SECONDS - 1, True), (auth.TICKET_SECONDS, False),
                                               (auth.TICKET_SECONDS + 60, False)],
                         ids=["just-in-time", "at-expiry", "long-expired"])
def test_ticket_expires(clocked_core: Core, fake_clock: FakeClock, age: int, accepted: bool) -> None:
    core = clocked_core
    user = add_user(core, "late@example.com")
    ticket = login_ticket(core, user.id)
    fake_clock.advance(age)
    with client_for(core) as client:
        response = claim(client, ticket)
    assert response.status_code == 303
    if accepted:
        assert response.headers["location"] == "/"
        assert auth.user_for_session(core.db, core.clock, cookie_attributes(response)["value"]).id == user.id
    else:
        assert response.headers["location"] == "/login?error=expired"
        assert response.headers.get_list("set-cookie") == []
        assert sessions(core, SessionKind.SESSION) == []
    assert sessions(core, SessionKind.TICKET) == []  # burned either way


def test_session_expires_after_its_ttl(clocked_core: Core, fake_clock: FakeClock) -> None:
    core = clocked_core
    user = add_user(core, "brief@example.com")
    token = auth.create_session(core.db, core.clock, user.id, 60)
    fake_clock.advance(59)
    assert auth.user_for_session(core.db, core.clock, token).id == user.id
    fake_clock.advance(1)
    assert auth.user_for_session(core.db, core.clock, token) is None


# -- the ticket is bound to the browser that logged in (SPEC §17) -------------------------------


def test_a_ticket_claimed_by_another_browser_is_refused_and_burned(core: Core, user: User,
                                                                   client: TestClient) -> None:
    ticket = login_ticket(core, user.id)
    with client_for(core) as other:
        other.cookies.set(auth.LOGIN_COOKIE, "the nonce of another browser")
        response = claim(other, ticket)
    assert (response.status_code, response.headers["location"]) == (303, "/login?error=browser")
    assert [h for h in response.headers.get_list("set-cookie") if h.startswith(auth.SESSION_COOKIE)] == []
    assert sessions(core, SessionKind.SESSION) == []
    assert sessions(core, SessionKind.TICKET) == []  # it leaked: nobody may use it now
    assert claim(client, ticket).headers["location"] == "/login?error=expired"  # the asker logs in again
    assert sessions(core, SessionKind.SESSION) == []


@pytest.mark.parametrize("cookie_header", [None, f"{auth.LOGIN_COOKIE}=",
                                           f"{auth.LOGIN_COOKIE}={BROWSER_NONCE}; {auth.LOGIN_COOKIE}=planted"],
                         ids=["no-cookie", "empty", "sent-twice"])
def test_a_ticket_without_exactly_one_pre_login_cookie_is_refused(core: Core, user: User,
                                                                   cookie_header: str | None) -> None:
    ticket = login_ticket(core, user.id)
    headers = {"cookie": cookie_header} if cookie_header is not None else {}
    with TestClient(create_api(lambda: core, core.settings.request_max_bytes)) as bare:
        response = bare.get("/auth/claim", params={"ticket": ticket}, headers=headers, follow_redirects=False)
    assert (response.status_code, response.headers["location"]) == (303, "/login?error=browser")
    assert sessions(core, SessionKind.SESSION) == [] and sessions(core, SessionKind.TICKET) == []


def test_the_ticket_row_keeps_only_the_digest_of_the_browsers_nonce(core: Core, user: User) -> None:
    login_ticket(core, user.id)
    [row] = sessions(core, SessionKind.TICKET)
    assert row.binding_hash == hashlib.sha256(BROWSER_NONCE.encode()).hexdigest()
    assert BROWSER_NONCE not in _database_text(core)


def test_no_ticket_without_a_nonce(core: Core, user: User) -> None:
    before = table_contents(core)
    with pytest.raises(InvalidInput, match="pre-login cookie"):
        auth.create_login_ticket(core.db, core.clock, user.id, "")
    assert table_contents(core) == before


# -- the pre-login cookie ----------------------------------------------------------------------

PAGE_LOAD = {"accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
FROM_PAGE = {"Origin": "http://testserver"}  # what a browser's form POST from the page sends


def login_cookies(response: httpx.Response) -> list[str]:
    return [h for h in response.headers.get_list("set-cookie") if h.startswith(auth.LOGIN_COOKIE + "=")]


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_page_load_without_the_pre_login_cookie_gets_a_fresh_one(core: Core, scheme: str) -> None:
    nonces = []
    for _ in range(2):
        with TestClient(create_api(lambda: core, 65536), base_url=f"{scheme}://testserver") as bare:
            [header] = login_cookies(bare.get("/login", headers=PAGE_LOAD))
        first, *rest = [part.strip() for part in header.split(";")]
        attributes = {name.lower(): value for name, _, value in (part.partition("=") for part in rest)}
        assert "httponly" in attributes and attributes["samesite"].lower() == "lax" and attributes["path"] == "/"
        assert int(attributes["max-age"]) >= 30 * 24 * 3600
        assert ("secure" in attributes) == (scheme == "https")
        nonces.append(first.split("=", 1)[1])
    assert len(nonces[0]) >= 43 and nonces[0] != nonces[1]


def test_the_pre_login_cookie_is_set_only_on_page_loads_of_browsers_without_one(core: Core,
                                                                                client: TestClient) -> None:
    assert login_cookies(client.get("/login", headers=PAGE_LOAD)) == []  # it has one: kept for every tab
    with TestClient(create_api(lambda: core, 65536)) as bare:
        assert login_cookies(bare.get("/api/health")) == []  # an API call is not a page load
        assert login_cookies(bare.post("/auth/logout", headers={**PAGE_LOAD, **FROM_PAGE},
                                       follow_redirects=False)) == []
        assert len(login_cookies(bare.head("/", headers=PAGE_LOAD))) == 1


# -- logout ------------------------------------------------------------------------------------


def test_logout_deletes_the_session_and_clears_the_cookie(core: Core, user: User, client: TestClient) -> None:
    token = cookie_attributes(claim(client, login_ticket(core, user.id)))["value"]
    other = auth.create_session(core.db, core.clock, user.id, 3600)  # another browser stays logged in
    assert client.cookies.get(auth.SESSION_COOKIE) == token

    response = client.post("/auth/logout", headers=FROM_PAGE, follow_redirects=False)
    assert (response.status_code, response.headers["location"]) == (303, "/login")
    cleared = cookie_attributes(response)
    assert cleared["value"] in ("", '""')
    assert cleared.get("max-age") == "0" or "expires" in cleared
    assert client.cookies.get(auth.SESSION_COOKIE) is None
    with core.db.read() as s:
        left = [row.token_hash for row in s.exec(select(WebSession))]
    assert left == [auth.digest(other)]
    assert auth.user_for_session(core.db, core.clock, token) is None
    assert auth.user_for_session(core.db, core.clock, other).id == user.id


@pytest.mark.parametrize(("method", "headers", "status"), [
    ("GET", {}, 405),  # <img src=".../auth/logout"> on another site
    ("GET", FROM_PAGE, 405),
    ("POST", {}, 403),  # no Origin: not a page's form (a foreign page's Origin is refused earlier, test_origins)
])
def test_logout_by_get_or_without_an_origin_ends_nothing(core: Core, user: User, client: TestClient, method: str,
                                                         headers: dict, status: int) -> None:
    token = cookie_attributes(claim(client, login_ticket(core, user.id)))["value"]
    before = table_contents(core)
    response = client.request(method, "/auth/logout", headers=headers, follow_redirects=False)
    assert response.status_code == status
    assert response.json()["error"]["code"] in ("method_not_allowed", "forbidden_origin")
    assert "set-cookie" not in response.headers
    assert table_contents(core) == before
    assert auth.user_for_session(core.db, core.clock, token).id == user.id


def test_logout_without_a_session_is_harmless(core: Core, user: User, client: TestClient) -> None:
    auth.create_session(core.db, core.clock, user.id, 3600)
    before = table_contents(core)
    response = client.post("/auth/logout", headers=FROM_PAGE, follow_redirects=False)
    assert (response.status_code, response.headers["location"]) == (303, "/login")
    assert table_contents(core) == before


# -- passwords ---------------------------------------------------------------------------------


def test_wrong_password_and_unknown_email_fail_the_same_way(core: Core, user: User) -> None:
    with pytest.raises(InvalidCredentials) as wrong_password:
        auth.authenticate(core.db, "alice@example.com", "not the password")
    with pytest.raises(InvalidCredentials) as unknown_email:
        auth.authenticate(core.db, "nobody@example.com", PASSWORD)
    with pytest.raises(InvalidCredentials) as empty:
        auth.authenticate(core.db, "alice@example.com", "")
    assert str(wrong_password.value) == str(unknown_email.value) == str(empty.value) == "Wrong email or password."
    assert wrong_password.value.code == unknown_email.value.code


@pytest.mark.real_passwords
def test_registration_stores_an_argon2_hash_and_logs_in_by_email_in_any_case(core: Core) -> None:
    password = "correct horse battery"
    user = auth.create_user(core.db, core.clock, " Carol@Example.COM ", password)
    assert user.email == "carol@example.com"
    with core.db.read() as s:
        stored = s.get(User, user.id).password_hash
    assert stored.startswith("$argon2id$v=19$m=65536,t=3,p=4$")  # the library's RFC 9106 defaults
    assert password not in stored and password not in repr(table_contents(core))
    assert PasswordHasher().verify(stored, password)
    assert auth.authenticate(core.db, "  CAROL@example.com", password).id == user.id


# -- tokens ------------------------------------------------------------------------------------

SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")


def _database_text(core: Core) -> str:
    return repr(table_contents(core))


def test_api_token_is_stored_only_as_its_sha256(core: Core, user: User) -> None:
    token = auth.create_api_token(core.db, core.clock, user.id, "laptop")
    with core.db.read() as s:
        (row,) = s.exec(select(ApiToken)).all()
    assert SHA256_HEX.match(row.token_hash)
    assert row.token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert token not in _database_text(core)
    assert auth.user_for_token(core.db, core.clock, token).id == user.id


def test_session_and_ticket_are_stored_only_as_their_sha256(core: Core, user: User, client: TestClient) -> None:
    ticket = login_ticket(core, user.id)
    assert ticket not in _database_text(core)
    assert [row.token_hash for row in sessions(core, SessionKind.TICKET)] == [
        hashlib.sha256(ticket.encode()).hexdigest()]
    token = cookie_attributes(claim(client, ticket))["value"]
    assert token not in _database_text(core)
    assert [row.token_hash for row in sessions(core, SessionKind.SESSION)] == [
        hashlib.sha256(token.encode()).hexdigest()]


def test_tokens_are_unique_and_long(core: Core, user: User) -> None:
    tokens = {auth.create_api_token(core.db, core.clock, user.id) for _ in range(5)}
    assert len(tokens) == 5
    assert all(len(t) >= 43 + len(auth.TOKEN_PREFIX) for t in tokens)  # 32 random bytes, base64url
    with core.db.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(ApiToken)).scalar_one() == 5
