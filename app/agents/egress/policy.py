"""Where a sandboxed agent may connect (SPEC §12.1), decided without any I/O.

An agent's only way out is chatcron's egress proxy. For each connection it asks for a host and a
port; :class:`Policy` says whether that name is allowed, and then whether the addresses the name
resolved to may be reached. Allowed names come from the preset's model hosts, the hosts of the
project's ``env.*_BASE_URL`` settings and the project's ``allow_hosts`` setting; the reserved name
:data:`AGENT_API_NAME` is chatcron's own agent API, routed by the proxy itself.

A name that resolves to a loopback, link-local, private, shared, multicast, reserved or cloud
metadata address is refused unless that very address (the literal) is in ``allow_hosts`` (a
model host or a base URL never opens one: the project's owner allows it explicitly): an allowed name
that a resolver points at 127.0.0.1 (DNS rebinding) reaches nothing.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

AGENT_API_NAME = "chatcron-agent-api"
ANY_PORT = 0
DEFAULT_PORTS = {"http": 80, "https": 443}
# beyond what ipaddress calls private or link-local: cloud metadata services on ordinary addresses
METADATA = frozenset(ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200"))
_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-._*:[]")

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class BadHost(ValueError):
    """An ``allow_hosts`` entry that is not ``host``, ``host:port`` or ``*.suffix[:port]``."""


@dataclasses.dataclass(frozen=True)
class Rule:
    """One allowed destination: an exact host (a name or an address literal) or ``*.suffix``."""

    host: str  # lower case; an IPv6 literal without brackets; "*.example.com" for a suffix
    port: int = ANY_PORT

    def matches(self, host: str, port: int) -> bool:
        if self.port != ANY_PORT and self.port != port:
            return False
        if self.host.startswith("*."):
            return host.endswith(self.host[1:]) and len(host) > len(self.host) - 1
        return host == self.host


def normal_host(host: str) -> str:
    """A host as the proxy compares it: lower case, no trailing dot, an IPv6 literal unbracketed
    and an address literal in its canonical form."""
    host = host.strip().lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host


def parse_rule(entry: str) -> Rule:
    """``host``, ``host:port``, ``*.suffix``, ``[v6]:port`` → a Rule; raises BadHost."""
    text = entry.strip().lower()
    if not text or any(c not in _HOST_CHARS for c in text):
        raise BadHost(f"{entry!r} is not a host, host:port or *.suffix")
    host, port = text, ANY_PORT
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise BadHost(f"{entry!r}: an IPv6 address needs its closing ]")
        host, rest = text[1:end], text[end + 1:]
        if rest:
            if not rest.startswith(":"):
                raise BadHost(f"{entry!r} is not [address]:port")
            port = _port(entry, rest[1:])
    elif text.count(":") == 1:
        host, raw_port = text.split(":")
        port = _port(entry, raw_port)
    host = normal_host(host)
    if "*" in host and (not host.startswith("*.") or "*" in host[2:] or len(host) < 4):
        raise BadHost(f"{entry!r}: a wildcard stands only at the start, as *.example.com")
    if not host or host in ("*", "*."):
        raise BadHost(f"{entry!r} names no host")
    return Rule(host, port)


def _port(entry: str, raw: str) -> int:
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise BadHost(f"{entry!r}: the port must be a number from 1 to 65535")
    return int(raw)


def parse_allow_hosts(value: str) -> tuple[Rule, ...]:
    """The project setting ``allow_hosts``: entries separated by commas or white space."""
    return tuple(parse_rule(e) for e in value.replace(",", " ").split())


def url_rule(url: str) -> Rule | None:
    """The exact host:port of an ``http(s)://`` URL (a base URL setting), or None."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port or DEFAULT_PORTS.get(parts.scheme)
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname or port is None:
        return None
    return Rule(normal_host(parts.hostname), port)


def forbidden(address: Address) -> bool:
    """An address no name may lead to unless it is allowed as a literal."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return forbidden(address.ipv4_mapped)
    return (address in METADATA or address.is_loopback or address.is_link_local or address.is_private
            or address.is_multicast or address.is_reserved or address.is_unspecified
            or (isinstance(address, ipaddress.IPv4Address) and address in _SHARED))


_SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT: not global, not "private" to ipaddress


@dataclasses.dataclass(frozen=True)
class Policy:
    """One agent process's allowed destinations."""

    rules: tuple[Rule, ...]  # the names (and literals) a connection may ask for
    literals: tuple[Rule, ...] = ()  # allow_hosts: the only way to a forbidden address

    @classmethod
    def build(cls, model_hosts: Iterable[str], base_urls: Iterable[str], allow_hosts: Sequence[Rule]) -> Policy:
        rules = [parse_rule(h) for h in model_hosts]
        rules += [r for r in (url_rule(u) for u in base_urls) if r is not None]
        return cls(tuple(dict.fromkeys([*rules, *allow_hosts])), tuple(allow_hosts))

    def loopback_ports(self) -> tuple[int, ...]:
        """The host loopback ports allow_hosts names (a local model server): mirrored inside."""
        return tuple(sorted({r.port for r in self.literals if r.host == "127.0.0.1" and r.port != ANY_PORT}))

    def allows_name(self, host: str, port: int) -> bool:
        host = normal_host(host)
        return any(rule.matches(host, port) for rule in self.rules)

    def allows_address(self, host: str, port: int, address: Address) -> bool:
        """May a connection asked for ``host:port`` go to ``address`` (what the name resolved to)?"""
        if not forbidden(address):
            return True
        literal = str(address)
        return any(rule.host == literal and rule.matches(literal, port) for rule in self.literals)

    def pick(self, host: str, port: int, addresses: Iterable[Address]) -> Address | None:
        """The first resolved address this connection may use, or None: every one is refused."""
        for address in addresses:
            if self.allows_address(host, port, address):
                return address
        return None
