"""Which browser origins the web process lets in (SPEC §17): parsing and the served-URL default."""

from __future__ import annotations

import pytest

from app.core.origins import allowed_origins, parse_origin

AS_BROWSERS_WRITE_THEM = [
    ("http://localhost:3000", "http://localhost:3000"),
    ("HTTPS://Chat.Example.COM", "https://chat.example.com"),
    ("https://chat.example.com:443", "https://chat.example.com"),  # the default port is never written
    ("http://chat.example.com:80/", "http://chat.example.com"),
    ("https://chat.example.com:8443", "https://chat.example.com:8443"),
    ("http://[::1]:3000", "http://[::1]:3000"),
]


@pytest.mark.parametrize(("raw", "origin"), AS_BROWSERS_WRITE_THEM, ids=[r for r, _ in AS_BROWSERS_WRITE_THEM])
def test_an_origin_is_normalized_as_a_browser_sends_it(raw: str, origin: str) -> None:
    assert parse_origin(raw) == origin


NOT_ORIGINS = ["*", "null", "chat.example.com", "https://", "https://chat.example.com/app",
               "https://chat.example.com?x=1", "https://user@chat.example.com", "ws://chat.example.com",
               "https://chat.example.com:70000"]


@pytest.mark.parametrize("raw", NOT_ORIGINS)
def test_what_is_not_an_origin_is_refused_saying_so(raw: str) -> None:
    with pytest.raises(ValueError, match="is not an origin"):
        parse_origin(raw)


def test_configured_origins_replace_the_default() -> None:
    assert allowed_origins(("https://chat.example.com",), "http://localhost:3000") == ("https://chat.example.com",)


def test_the_default_is_the_served_urls_origin() -> None:
    assert allowed_origins((), "https://chat.example.com/") == ("https://chat.example.com",)


def test_a_loopback_served_url_also_allows_the_other_loopback_names_on_its_port() -> None:
    expected = ("http://localhost:3000", "http://127.0.0.1:3000", "http://[::1]:3000")
    assert allowed_origins((), "http://localhost:3000") == expected
    assert set(allowed_origins((), "http://127.0.0.1:3000")) == set(expected)
    assert "http://localhost:3001" not in allowed_origins((), "http://localhost:3000")  # another port: another site


def test_no_served_url_and_nothing_configured_allows_no_browser_origin() -> None:
    assert allowed_origins((), None) == ()
