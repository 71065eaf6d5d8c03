"""Device cookies: a browser that has logged in to an account is known to it afterwards.

OWASP's "Slow down online guessing attacks with device cookies": after a successful login the
browser gets ``chatcron_device`` = ``<user id>.<nonce>.<HMAC-SHA256>``, long-lived, HttpOnly and
SameSite=Lax. A later login to the same account that presents it is a *trusted* attempt: the
per-address lock does not apply to it, and its failures are counted for that device alone
(``app/core/auth.py``), so neither a crowd behind one address nor someone guessing the password
from elsewhere locks the owner out of the browser they always use.

The key is the account's own server-side secret, derived from its stored password hash: no
other node needs a file, every web process finds it in the database, and a new password (or a
deleted account) makes every device cookie of the account worthless. Nothing is stored per device.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

from app.core.models import User

DEVICE_COOKIE = "chatcron_device"
DEVICE_MAX_AGE = 400 * 24 * 3600  # the longest browsers keep a cookie (s)
DEVICE_MARK = "device:"  # LoginAttempt.address of a trusted attempt: "device:<digest of the nonce>"
_HEX_MAC = re.compile(r"[0-9a-f]{64}")
_NONCE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def _mac(user: User, nonce: str) -> str:
    key = hashlib.sha256(b"chatcron-device-cookie\x00" + user.password_hash.encode()).digest()
    return hmac.new(key, f"{user.id}.{nonce}".encode(), hashlib.sha256).hexdigest()


def _nonce_of(user: User, cookie: str) -> str:
    """The nonce of ``cookie`` when it is a genuine device cookie of ``user``; "" otherwise."""
    parts = (cookie or "").split(".")
    if len(parts) != 3 or not parts[0].isascii() or not parts[0].isdigit() or int(parts[0]) != user.id:
        return ""
    nonce, mac = parts[1], parts[2]
    if not 16 <= len(nonce) <= 64 or not set(nonce) <= _NONCE_CHARS or not _HEX_MAC.fullmatch(mac):
        return ""  # (compare_digest refuses non-ASCII text: a planted cookie must not break logins)
    return nonce if hmac.compare_digest(mac, _mac(user, nonce)) else ""


def issue(user: User, current: str = "") -> str:
    """The device cookie's value for ``user``: the browser's ``current`` one when it is already the
    user's (the device keeps its identity, and its failure count), else a fresh one."""
    nonce = _nonce_of(user, current) or secrets.token_urlsafe(16)
    return f"{user.id}.{nonce}.{_mac(user, nonce)}"


def device_key(user: User | None, cookie: str) -> str:
    """What a trusted attempt is counted against — ``"device:<digest>"`` (≤ 64 characters) — when
    ``cookie`` is a genuine device cookie of ``user``; "" when it is missing, forged, of another
    account, or there is no such user."""
    nonce = _nonce_of(user, cookie) if user is not None else ""
    if not nonce:
        return ""
    return DEVICE_MARK + hashlib.sha256(nonce.encode()).hexdigest()[:48]
