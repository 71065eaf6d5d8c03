"""The web origins allowed to talk to the web process with the user's cookies (SPEC §17).

``CHATCRON_ALLOWED_ORIGINS`` lists them; by default it is the origin of the URL the UI is served
at (Reflex's ``deploy_url``, which ``reflex run --frontend-port P`` sets to ``http://localhost:P``).
A served URL on a loopback name also allows the other loopback names on the same port, since a
browser on the machine reaches the same server as ``localhost``, ``127.0.0.1`` or ``[::1]``.
"""

from __future__ import annotations

import urllib.parse

LOOPBACK = ("localhost", "127.0.0.1", "[::1]")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def parse_origin(text: str) -> str:
    """``scheme://host[:port]`` as a browser writes it in an Origin header (lower case, no default
    port); raises ValueError saying what is wrong."""
    raw = text.strip()
    try:
        parts = urllib.parse.urlsplit(raw)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"{raw!r} is not an origin ({exc})") from None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise ValueError(f"{raw!r} is not an origin: expected http(s)://host[:port]")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError(f"{raw!r} is not an origin: only scheme, host and port, no path")
    host = parts.hostname.lower()
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    suffix = "" if port in (None, _DEFAULT_PORTS[parts.scheme]) else f":{port}"
    return f"{parts.scheme}://{host}{suffix}"


def allowed_origins(configured: tuple[str, ...], served_url: str | None) -> tuple[str, ...]:
    """The configured origins, or else the served URL's origin (with its loopback aliases)."""
    if configured:
        return configured
    if not served_url:
        return ()
    origin = parse_origin(served_url)
    scheme, _, rest = origin.partition("://")
    host, port = _split_host(rest)
    if host not in LOOPBACK:
        return (origin,)
    return (origin, *(f"{scheme}://{alias}{port}" for alias in LOOPBACK if alias != host))


def _split_host(rest: str) -> tuple[str, str]:
    """``host[:port]`` → (host, ":port" or "")."""
    if rest.startswith("["):
        end = rest.index("]") + 1
        return rest[:end], rest[end:]
    host, colon, port = rest.partition(":")
    return host, colon + port
