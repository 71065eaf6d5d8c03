"""Users, passwords (argon2), login rate limits, personal API tokens and browser sessions.

Secrets are random, shown once, and stored only as SHA-256 digests; a lookup by digest is
followed by a constant-time comparison. Failed logins are counted in the database
(``login_attempts``), so every web worker refuses the same guessing.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import functools
import hashlib
import hmac
import logging
import math
import re
import secrets

import sqlalchemy as sa
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlmodel import Session, select

from app.core import devices
from app.core.clock import Clock, SystemClock
from app.core.config import Settings
from app.core.db import Database
from app.core.errors import AlreadyExists, InvalidCredentials, InvalidInput, NotFound
from app.core.models import ApiToken, LoginAttempt, SessionKind, User, WebSession

log = logging.getLogger("chatcron.auth")
_hasher = PasswordHasher()


@functools.cache
def _dummy_hash() -> str:
    """Verified against when the email is unknown, so both failures cost the same time."""
    return _hasher.hash("chatcron-no-such-user")


EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
MIN_PASSWORD = 8
TOKEN_PREFIX = "cct_"
SESSION_COOKIE = "chatcron_session"
LOGIN_COOKIE = "chatcron_login"  # pre-login nonce of a browser: binds its login tickets to it


def digest(token: str) -> str:
    """SHA-256 hex digest of a high-entropy secret."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def new_secret(prefix: str) -> str:
    """A fresh bearer secret: ``prefix`` plus 32 random bytes, URL-safe."""
    return prefix + secrets.token_urlsafe(32)


def normalize_email(email: str) -> str:
    value = (email or "").strip().lower()
    if not EMAIL_RE.match(value) or len(value) > 320:
        raise InvalidInput("email", f"{email!r} is not an email address")
    return value


def create_user(db: Database, clock: Clock, email: str, password: str, is_admin: bool = False) -> User:
    """Register a user; raises InvalidInput (email, password) or AlreadyExists."""
    address = normalize_email(email)
    if len(password or "") < MIN_PASSWORD:
        raise InvalidInput("password", f"must be at least {MIN_PASSWORD} characters")
    with db.write() as s:
        if s.exec(select(User).where(User.email == address)).first():
            raise AlreadyExists(f"a user with email {address} already exists")
        user = User(email=address, password_hash=_hasher.hash(password), is_admin=is_admin,
                    created_at=clock.now())
        s.add(user)
        s.flush()
        return user


def set_password(db: Database, email: str, password: str) -> None:
    """A new password for the user (the admin's reset); InvalidInput, NotFound."""
    if len(password or "") < MIN_PASSWORD:
        raise InvalidInput("password", f"must be at least {MIN_PASSWORD} characters")
    with db.write() as s:
        user = s.exec(select(User).where(User.email == normalize_email(email))).first()
        if user is None:
            raise NotFound(f"no user with email {email}")
        user.password_hash = _hasher.hash(password)
        s.add(user)


def find_user(db: Database, email: str) -> User:
    """The user with this email (any case); raises NotFound."""
    address = (email or "").strip().lower()
    with db.read() as s:
        user = s.exec(select(User).where(User.email == address)).first()
    if user is None:
        raise NotFound(f"no user with email {address}")
    return user


class TooManyAttempts(InvalidCredentials):
    """Too many failed logins; try again later."""

    code = "too_many_attempts"

    def __init__(self, minutes: int) -> None:
        self.minutes = minutes
        super().__init__(f"Too many failed logins; try again in {minutes} minute{'' if minutes == 1 else 's'}.")


@dataclasses.dataclass(frozen=True)
class LoginLimits:
    """Failed logins tolerated within a sliding window, per account (email) and per client address."""

    per_account: int = 5
    per_address: int = 20
    window_seconds: int = 900

    @classmethod
    def of(cls, settings: Settings) -> LoginLimits:
        return cls(settings.login_max_failures_per_account, settings.login_max_failures_per_address,
                   settings.login_window_seconds)


def authenticate(db: Database, email: str, password: str, *, address: str = "", device: str = "",
                 clock: Clock | None = None, limits: LoginLimits | None = None) -> User:
    """The user whose email and password match; raises InvalidCredentials without saying which failed.

    Every attempt is recorded. ``device`` is the browser's device cookie (:mod:`app.core.devices`):
    when it is a genuine one of the account the email names, the attempt is *trusted* — it is not
    limited per address, and only this device's failures count against the account. Otherwise it
    is counted with the client ``address`` (an IP; "" when unknown, which is then not limited per
    address). Before the password is looked at, raises TooManyAttempts when the email — known or
    not — has ``limits.per_account`` failures of the same kind (from this device; untrusted) within
    the window, or an untrusted attempt's address has ``limits.per_address``; a refused attempt
    counts as a failure, and a success erases none.
    """
    clock = clock or SystemClock()
    typed = (email or "").strip().lower()
    account = _storable(typed)
    user = None
    if account == typed:  # text no database can store is nobody's email
        with db.read() as s:
            user = s.exec(select(User).where(User.email == account)).first()
    client = _storable((address or "").strip())[:64]
    if client.startswith(devices.DEVICE_MARK):  # no address may pass for a device's count
        client = "invalid"
    attempt_id = _admit(db, clock.now(), account[:320], client, devices.device_key(user, device),
                        limits or LoginLimits())
    try:
        _hasher.verify(user.password_hash if user else _dummy_hash(), password or "")
    except (VerificationError, InvalidHashError, UnicodeEncodeError):
        raise InvalidCredentials() from None
    if user is None:
        raise InvalidCredentials()
    with db.write() as s:
        s.exec(sa.update(LoginAttempt).where(LoginAttempt.id == attempt_id).values(succeeded=True))
    return user


def _admit(db: Database, now: dt.datetime, email: str, address: str, device: str, limits: LoginLimits) -> int:
    """Record an attempt (as failed until proven otherwise) and return its id; raises TooManyAttempts.

    A trusted attempt (``device``, see :func:`authenticate`) is recorded and counted under its
    device key instead of its address. Counting and recording happen in one transaction serialized
    per email and address or device (SQLite: the write lock; PostgreSQL: advisory locks), so
    concurrent workers cannot all slip under the limit.
    """
    window = dt.timedelta(seconds=limits.window_seconds)
    counted = device or address
    with db.write() as s:
        if not db.sqlite:
            keys = {_lock_key("email", email)} | ({_lock_key("address", counted)} if counted else set())
            for key in sorted(keys):
                s.exec(sa.select(sa.func.pg_advisory_xact_lock(key)))
        s.exec(sa.delete(LoginAttempt).where(LoginAttempt.at <= now - window))  # opportunistic pruning
        if device:
            wait = _lockout(s, sa.and_(LoginAttempt.email == email, LoginAttempt.address == device),
                            limits.per_account, now, window)
        else:
            untrusted = sa.not_(LoginAttempt.address.startswith(devices.DEVICE_MARK, autoescape=True))
            wait = _lockout(s, sa.and_(LoginAttempt.email == email, untrusted), limits.per_account, now, window)
            if address:
                wait = max(wait, _lockout(s, LoginAttempt.address == address, limits.per_address, now, window))
        row = LoginAttempt(email=email, address=counted, succeeded=False, at=now)
        s.add(row)
        s.flush()
        attempt_id = row.id
    if wait > dt.timedelta(0):
        log.warning("action=login_refused address=%s trusted_device=%s retry_after_seconds=%d", address or "-",
                    "yes" if device else "no", wait.total_seconds())
        raise TooManyAttempts(max(1, math.ceil(wait.total_seconds() / 60)))
    return attempt_id


def _lockout(s: Session, who: sa.ColumnElement[bool], limit: int, now: dt.datetime,
             window: dt.timedelta) -> dt.timedelta:
    """How long until fewer than ``limit`` of ``who``'s failures remain in the window (zero: not locked)."""
    failed = sa.and_(who, LoginAttempt.succeeded == sa.false(), LoginAttempt.at > now - window)
    newest = s.exec(select(LoginAttempt.at).where(failed).order_by(LoginAttempt.at.desc()).limit(limit)).all()
    if len(newest) < limit:
        return dt.timedelta(0)
    return newest[-1] + window - now


def _storable(text: str) -> str:
    """``text`` with what no database can store (NUL, unpaired surrogates) replaced."""
    return text.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")


def _lock_key(kind: str, value: str) -> int:
    """A signed 64-bit advisory lock key for one email or address."""
    return int.from_bytes(hashlib.sha256(f"chatcron-login:{kind}:{value}".encode()).digest()[:8], "big", signed=True)


def create_api_token(db: Database, clock: Clock, user_id: int, name: str = "",
                     ttl_seconds: int | None = None) -> str:
    """Issue a personal API token (valid until revoked, or for ``ttl_seconds``); returned once, never stored."""
    token = new_secret(TOKEN_PREFIX)
    now = clock.now()
    expires = now + dt.timedelta(seconds=ttl_seconds) if ttl_seconds else None
    with db.write() as s:
        s.add(ApiToken(user_id=user_id, token_hash=digest(token), name=name[:120], created_at=now,
                       expires_at=expires))
    return token


def user_for_token(db: Database, clock: Clock, token: str) -> User | None:
    """The owner of an unrevoked, unexpired personal token, or None."""
    if not token:
        return None
    wanted = digest(token)
    with db.read() as s:
        row = s.exec(
            select(ApiToken, User).join(User, User.id == ApiToken.user_id).where(ApiToken.token_hash == wanted)
        ).first()
    if row is None:
        return None
    record, user = row
    if record.revoked_at is not None or not hmac.compare_digest(record.token_hash, wanted):
        return None
    if record.expires_at is not None and record.expires_at <= clock.now():
        return None
    return user


def revoke_tokens(db: Database, clock: Clock, user_id: int) -> int:
    """Revoke every live personal token of a user; returns how many."""
    with db.write() as s:
        result = s.exec(sa.update(ApiToken).where(ApiToken.user_id == user_id, ApiToken.revoked_at.is_(None))
                        .values(revoked_at=clock.now()))
        return result.rowcount or 0


TICKET_SECONDS = 30


def create_session(db: Database, clock: Clock, user_id: int, ttl_seconds: int) -> str:
    """Start a browser session; returns its secret (the cookie's value)."""
    return _new_web_session(db, clock, user_id, ttl_seconds, SessionKind.SESSION, None)


def _new_web_session(db: Database, clock: Clock, user_id: int, ttl_seconds: int, kind: SessionKind,
                     binding: str | None) -> str:
    token = new_secret("ccs_" if kind == SessionKind.SESSION else "cclt_")
    now = clock.now()
    with db.write() as s:
        s.add(WebSession(kind=kind.value, user_id=user_id, token_hash=digest(token), binding_hash=binding,
                         created_at=now, expires_at=now + dt.timedelta(seconds=ttl_seconds)))
    return token


def cookie_value(header: str, name: str) -> str:
    """The value of cookie ``name`` in a Cookie header; "" when it is absent, empty or sent twice
    (two values mean someone else also set one: take neither)."""
    values = [value.strip() for key, sep, value in (part.strip().partition("=") for part in (header or "").split(";"))
              if sep and key == name]
    return values[0] if len(values) == 1 else ""


def create_login_ticket(db: Database, clock: Clock, user_id: int, browser_nonce: str) -> str:
    """A proof of login valid for a few seconds and one use, exchanged for the cookie over HTTP by
    the browser whose pre-login cookie (``LOGIN_COOKIE``) holds ``browser_nonce``, and by no other."""
    if not browser_nonce:
        raise InvalidInput("browser", "the pre-login cookie is missing; reload the page and log in again")
    return _new_web_session(db, clock, user_id, TICKET_SECONDS, SessionKind.TICKET, digest(browser_nonce))


class TicketRefusal(enum.StrEnum):
    """Why ``/auth/claim`` refused a ticket (the ``error`` the login page is sent back with)."""

    EXPIRED = "expired"  # unknown, used or expired
    OTHER_BROWSER = "browser"  # presented without the pre-login cookie of the browser that logged in


def redeem_login_ticket(db: Database, clock: Clock, ticket: str, browser_nonce: str,
                        ttl_seconds: int) -> str | TicketRefusal:
    """Burn a ticket and open a session for its user, if ``browser_nonce`` is the one it was issued
    to. Any presentation burns it: a ticket shown by another browser has leaked, so the asker must
    log in again rather than race the other one."""
    if not ticket:
        return TicketRefusal.EXPIRED
    with db.write() as s:
        row = s.exec(select(WebSession).where(WebSession.token_hash == digest(ticket),
                                              WebSession.kind == SessionKind.TICKET.value)).first()
        if row is None:
            return TicketRefusal.EXPIRED
        s.delete(row)
    if row.expires_at <= clock.now():
        return TicketRefusal.EXPIRED
    if not browser_nonce or not hmac.compare_digest(row.binding_hash or "", digest(browser_nonce)):
        log.warning("action=login_ticket_refused reason=other_browser user_id=%s", row.user_id)
        return TicketRefusal.OTHER_BROWSER
    return create_session(db, clock, row.user_id, ttl_seconds)


def user_for_session(db: Database, clock: Clock, token: str) -> User | None:
    """The user of a live session cookie, or None when missing, unknown or expired."""
    if not token:
        return None
    wanted = digest(token)
    with db.read() as s:
        row = s.exec(
            select(WebSession, User).join(User, User.id == WebSession.user_id)
            .where(WebSession.token_hash == wanted, WebSession.kind == SessionKind.SESSION.value)
        ).first()
    if row is None:
        return None
    session, user = row
    if session.expires_at <= clock.now() or not hmac.compare_digest(session.token_hash, wanted):
        return None
    return user


def end_session(db: Database, token: str) -> None:
    """Log out: the session row is deleted, so the cookie is worthless even if kept."""
    if token:
        with db.write() as s:
            s.exec(sa.delete(WebSession).where(WebSession.token_hash == digest(token)))
