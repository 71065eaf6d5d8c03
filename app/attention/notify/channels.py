"""A user's notification channels (SPEC §13): the rules behind the API and the settings page.

A user only ever sees and uses their own channels: someone else's id is answered like a missing
one (NotFound). Bad input raises InvalidInput naming the field.
"""

from __future__ import annotations

import json
import re
import secrets
from typing import Any
from urllib.parse import urlsplit

import sqlalchemy as sa
from sqlmodel import select

from app.attention.notify import deliverer, outbox
from app.attention.notify.destinations import STRICT, Destinations
from app.core.attention_tables import AttentionKind, ChannelKind, Delivery, NotificationChannel
from app.core.clock import Clock, rfc3339
from app.core.config import Settings
from app.core.db import Database
from app.core.errors import InvalidInput, NotFound
from app.core.models import User

URL_MAX = 2048
KINDS = tuple(k.value for k in AttentionKind)
_EMAIL = re.compile(r"^[^@\s<>,;]+@[^@\s<>,;]+\.[^@\s<>,;]+$|^[^@\s<>,;]+@localhost$")
LOG_LIMIT = 50  # deliveries per page of a channel's log unless ``limit`` says otherwise
LOG_MAX = 500


def check_url(value: Any, destinations: Destinations = STRICT) -> str:
    """An http(s) URL with a host that ``destinations`` allows (decided on the URL alone: nothing is
    looked up or sent; a name's addresses are checked at each delivery); else refused naming ``url``."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("url", "is required: the http:// or https:// address to POST events to")
    url = value.strip()
    if len(url) > URL_MAX:
        raise InvalidInput("url", f"is longer than {URL_MAX} characters")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        raise InvalidInput("url", "is not a valid URL") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise InvalidInput("url", "must be an http:// or https:// URL")
    if not parts.hostname or any(c.isspace() for c in url):
        raise InvalidInput("url", "must name a host (http://host/path)")
    if not destinations.allows_host(parts.hostname):
        raise InvalidInput("url", "points into the server's own network (a loopback, private, link-local or "
                                  "metadata address): not allowed unless CHATCRON_WEBHOOK_ALLOW_PRIVATE=1")
    return url


def check_address(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("address", "is required: the email address to send events to")
    address = value.strip()
    if len(address) > 320 or not _EMAIL.match(address):
        raise InvalidInput("address", "is not an email address (name@example.com)")
    return address


def check_events(value: Any) -> list[str]:
    """None or [] mean every kind; otherwise a list of distinct known kinds."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInput("events", f"must be a list of event names ({', '.join(KINDS)})")
    unknown = [v for v in value if v not in KINDS]
    if unknown:
        raise InvalidInput("events", f"{unknown[0]!r} is not one of {', '.join(KINDS)}")
    return list(dict.fromkeys(value))


def create(db: Database, clock: Clock, settings: Settings, user: User, body: dict[str, Any]) -> NotificationChannel:
    """Add a channel; a webhook gets a fresh secret (the caller shows it once)."""
    kind = body.get("kind")
    if kind not in (ChannelKind.WEBHOOK.value, ChannelKind.EMAIL.value):
        raise InvalidInput("kind", "must be 'webhook' or 'email'")
    allowed = {"kind", "events", "url" if kind == ChannelKind.WEBHOOK.value else "address"}
    extra = sorted(set(body) - allowed)
    if extra:
        raise InvalidInput(extra[0], f"unknown field for a {kind} channel")
    events = check_events(body.get("events"))
    if kind == ChannelKind.WEBHOOK.value:
        target, secret = check_url(body.get("url"), Destinations.of(settings)), secrets.token_hex(32)
    else:
        target, secret = check_address(body.get("address")), None
        if not settings.smtp_url:
            raise InvalidInput("kind", "email is not configured on this server (CHATCRON_SMTP_URL is unset)")
    channel = NotificationChannel(user_id=user.id, kind=kind, target=target, secret=secret,
                                  events=json.dumps(events), created_at=clock.now())
    with db.write() as s:
        s.add(channel)
        s.flush()
    return channel


def list_channels(db: Database, user: User) -> list[NotificationChannel]:
    with db.read() as s:
        return list(s.exec(select(NotificationChannel).where(NotificationChannel.user_id == user.id,
                                                            NotificationChannel.deleted_at.is_(None))
                           .order_by(NotificationChannel.id)).all())


def get(db: Database, user: User, channel_id: int) -> NotificationChannel:
    with db.read() as s:
        channel = s.get(NotificationChannel, channel_id)
    if channel is None or channel.user_id != user.id or channel.deleted_at is not None:
        raise NotFound(f"no notification channel with id {channel_id}")
    return channel


def delete(db: Database, clock: Clock, user: User, channel_id: int) -> None:
    """Soft delete: the channel gets no new deliveries; pending ones fail ("the channel was deleted")."""
    get(db, user, channel_id)
    with db.write() as s:
        s.connection().execute(sa.update(NotificationChannel.__table__)
                               .where(NotificationChannel.__table__.c.id == channel_id,
                                      NotificationChannel.__table__.c.deleted_at.is_(None))
                               .values(deleted_at=clock.now()))


def send_test(db: Database, clock: Clock, user: User, channel_id: int) -> int:
    """Queue a test delivery through the outbox; returns its id."""
    get(db, user, channel_id)
    delivery_id = outbox.queue_test(db, channel_id, clock.now())
    deliverer.kick_local()
    return delivery_id


def deliveries(db: Database, user: User, channel_id: int, limit: int = LOG_LIMIT,
               before: int | None = None) -> list[Delivery]:
    """The channel's delivery log, newest first: at most ``limit`` (not clamped: a pager asks for
    one more than it shows), only ids below ``before`` when it is given."""
    get(db, user, channel_id)
    query = select(Delivery).where(Delivery.channel_id == channel_id)
    if before is not None:
        query = query.where(Delivery.id < before)
    with db.read() as s:
        return list(s.exec(query.order_by(Delivery.id.desc()).limit(limit)).all())


def events_of(channel: NotificationChannel) -> list[str]:
    try:
        value = json.loads(channel.events or "[]")
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def channel_view(channel: NotificationChannel, with_secret: bool = False) -> dict[str, Any]:
    """A channel as the API and the page show it; the secret only when just created."""
    view: dict[str, Any] = {"id": channel.id, "kind": channel.kind, "events": events_of(channel),
                            "created_at": rfc3339(channel.created_at)}
    view["url" if channel.kind == ChannelKind.WEBHOOK.value else "address"] = channel.target
    if with_secret and channel.secret:
        view["secret"] = channel.secret
    return view


def delivery_view(d: Delivery) -> dict[str, Any]:
    return {"id": d.id, "kind": d.kind, "state": d.state, "attempts": d.attempts, "last_status": d.last_status,
            "last_error": d.last_error, "created_at": rfc3339(d.created_at),
            "delivered_at": rfc3339(d.delivered_at), "next_attempt_at": rfc3339(d.next_attempt_at),
            "event_id": d.event_id}
