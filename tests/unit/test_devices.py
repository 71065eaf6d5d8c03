"""Device cookies (app/core/devices.py): genuine ones are recognised; anything else is no device."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from app.core import devices

USER = SimpleNamespace(id=7, password_hash="$argon2id$stored-hash")
OTHER = SimpleNamespace(id=8, password_hash="$argon2id$another-hash")


def test_a_genuine_cookie_names_its_device_and_keeps_it() -> None:
    cookie = devices.issue(USER)
    key = devices.device_key(USER, cookie)
    assert key.startswith(devices.DEVICE_MARK) and len(key) <= 64
    assert devices.issue(USER, cookie) == cookie  # the device keeps its identity


@pytest.mark.parametrize("cookie", [
    "", "garbage", "7.short.abc", "7." + "a" * 20 + ".é…", "٧." + "a" * 20 + "." + "0" * 64,
    "7." + "a" * 20 + "." + "0" * 64, "7." + "a" * 20 + "." + "f" * 63 + "é",
])
def test_forged_or_malformed_cookies_are_no_device_and_raise_nothing(cookie: str) -> None:
    assert devices.device_key(USER, cookie) == ""


def test_another_accounts_cookie_or_a_new_password_voids_it() -> None:
    cookie = devices.issue(OTHER)
    assert devices.device_key(USER, cookie) == ""
    mine = devices.issue(USER)
    assert devices.device_key(SimpleNamespace(id=7, password_hash="$argon2id$new-password"), mine) == ""
    assert devices.device_key(None, mine) == ""
