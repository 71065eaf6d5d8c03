"""Where a webhook may go (SPEC §19): never into the server's own network.

Any user picks a webhook's URL; unfenced, it would make the server POST (and retry) to its own
loopback services, its private network or a cloud metadata service. One address rule, applied
twice:

- when a channel is created: the URL's host as written — an address literal, in any form a
  resolver accepts (``[::ffff:127.0.0.1]``, ``127.1``, ``0x7f000001``), or an obvious local name
  (``localhost``, ``*.localhost``, ``metadata.google.internal``). Nothing is looked up or sent.
- at every connection of a delivery, redirects included (:meth:`Destinations.connect`): the name
  is resolved once, every address it resolved to must pass, and the socket connects to one of
  those very addresses — never to the name again, so a DNS answer that changes between the check
  and the connection (rebinding) reaches nothing. TLS still names the host (SNI, certificate).

``CHATCRON_WEBHOOK_ALLOW_PRIVATE=1`` turns both off (a single-host set-up, tests).
This rule mirrors the agents' egress rule (``app/agents/egress/policy.forbidden``), which this
room may not import.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import socket
from typing import Any

from app.core.config import Settings

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
REFUSED = "destination not allowed"  # the delivery log's words for a refused destination
# beyond what ipaddress calls private or link-local: cloud metadata services on ordinary addresses
METADATA = frozenset(ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200"))
LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "metadata.google.internal", "metadata"})
_SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT: not global, not "private" to ipaddress
_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # an IPv4 address behind the well-known NAT64 prefix


class DestinationRefused(ConnectionError):
    """destination not allowed"""

    def __init__(self) -> None:
        super().__init__(REFUSED)


def embedded_v4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one stands for (mapped ``::ffff:a.b.c.d``, NAT64, 6to4), if any."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address.sixtofour


def forbidden(address: Address) -> bool:
    """Loopback, private (incl. CGNAT 100.64/10, fc00::/7), link-local, unspecified, multicast,
    reserved, otherwise not globally reachable, or a cloud metadata address."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:  # the IPv4 address itself, whatever ::ffff:0:0/96 is
            return forbidden(address.ipv4_mapped)
        v4 = embedded_v4(address)
        if v4 is not None and forbidden(v4):
            return True
    return (address in METADATA or address.is_loopback or address.is_private or address.is_link_local
            or address.is_unspecified or address.is_multicast or address.is_reserved or not address.is_global
            or (isinstance(address, ipaddress.IPv4Address) and address in _SHARED))


def normal_host(host: str) -> str:
    """Lower case, without brackets or a trailing dot."""
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host.rstrip(".")


def literal(host: str) -> Address | None:
    """The address a host names by itself, in any form a resolver takes it (``127.1``,
    ``2130706433``, ``0x7f.0.0.1``, ``[::1]``, ``fe80::1%eth0``); None for a name."""
    host = normal_host(host)
    try:
        return ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        pass
    try:  # the legacy IPv4 forms getaddrinfo also accepts; parsed here, nothing is looked up
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except (OSError, ValueError):
        return None


def local_name(host: str) -> bool:
    """A name that means this machine or a metadata service wherever it is resolved."""
    host = normal_host(host)
    return host in LOCAL_NAMES or host.endswith(".localhost")


def host_refused(host: str) -> bool:
    """The creation-time check: refused by its literal or its name alone (no lookup)."""
    address = literal(host)
    return forbidden(address) if address is not None else local_name(host)


@dataclasses.dataclass(frozen=True)
class Destinations:
    """The fence of one deliverer's webhook connections.

    ``exempt``: exact (address, port) pairs let through in spite of the rule. No setting fills it:
    tests use it to have an allowed receiver and a refused one on the same loopback."""

    allow_private: bool = False
    exempt: frozenset[tuple[str, int]] = frozenset()

    @classmethod
    def of(cls, settings: Settings) -> Destinations:
        return cls(allow_private=settings.webhook_allow_private)

    def allows_host(self, host: str) -> bool:
        """Whether a channel may be created for ``host`` (decided without sending anything)."""
        return self.allow_private or not host_refused(host)

    def allows(self, address: Address, port: int) -> bool:
        return self.allow_private or not forbidden(address) or (str(address), port) in self.exempt

    def resolve(self, host: str, port: int) -> list[tuple[Any, ...]]:
        """``getaddrinfo`` for a TCP connection to ``host:port``; raises :class:`DestinationRefused`
        when the name is a local one or any address it resolved to is not allowed (a name with one
        private address among public ones could be steered to it)."""
        if not self.allow_private and local_name(host):
            raise DestinationRefused()
        found = socket.getaddrinfo(normal_host(host), port, type=socket.SOCK_STREAM)
        for *_, sockaddr in found:
            if not self.allows(ipaddress.ip_address(str(sockaddr[0]).split("%")[0]), port):
                raise DestinationRefused()
        return found

    def connect(self, address: tuple[str, int], timeout: Any = None,
                source_address: tuple[str, int] | None = None) -> socket.socket:
        """Like :func:`socket.create_connection`, to an address :meth:`resolve` let through (the
        checked one itself: the name is not looked up again)."""
        host, port = address
        error: OSError | None = None
        for family, kind, proto, _, sockaddr in self.resolve(host, port):
            sock = socket.socket(family, kind, proto)
            try:
                if isinstance(timeout, int | float):
                    sock.settimeout(timeout)
                if source_address:
                    sock.bind(source_address)
                sock.connect(sockaddr)
                return sock
            except OSError as exc:
                sock.close()
                error = exc
        raise error or OSError(f"{host} resolved to no address")


STRICT = Destinations()  # no loopback, private, link-local or metadata destination
