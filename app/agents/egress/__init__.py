"""The agents' egress (SPEC §12.1): the policy, the proxy, and what a turn makes of them.

:func:`policy_of` turns a project's settings (``allow_hosts``, ``env.*_BASE_URL``) and a
preset's model hosts into the :class:`~app.agents.egress.policy.Policy` one agent process runs
under; :func:`refusal_reporter` turns a refused connection into a ``tool`` event of the turn
(kind ``network``, status ``refused``), which ``/metrics`` counts per project.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Mapping

from app.agents.egress.policy import BadHost, Policy, parse_allow_hosts
from app.core.models import EventType
from app.core.ports import ProviderError, TurnStream

ALLOW_HOSTS = "allow_hosts"
REFUSED_KIND, REFUSED_STATUS = "network", "refused"

__all__ = ["ALLOW_HOSTS", "BadHost", "Policy", "policy_of", "refusal_reporter", "refused_title", "stream_writer"]


def policy_of(settings: Mapping[str, object], model_hosts: Iterable[str] = ()) -> Policy:
    """The egress policy of a project's agent; raises ProviderError naming a bad ``allow_hosts``."""
    raw = settings.get(ALLOW_HOSTS) or ""
    try:
        allow = parse_allow_hosts(str(raw))
    except BadHost as exc:
        raise ProviderError(f"setting {ALLOW_HOSTS}: {exc}") from None
    base_urls = [str(v) for k, v in settings.items() if k.startswith("env.") and k.endswith("_BASE_URL") and v]
    return Policy.build(model_hosts, base_urls, allow)


def refused_title(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"network: {shown}:{port} refused"


def refusal_reporter(write_tool: Callable[[str], None]) -> Callable[[str, int], None]:
    """What the proxy calls when it refuses this turn's agent a connection: ``write_tool`` gets a
    ``tool`` event's JSON (the turn's stream, or an ACP turn's sink)."""
    numbers = itertools.count(1)

    def report(host: str, port: int) -> None:
        call = {"id": f"network-refused-{next(numbers)}", "title": refused_title(host, port), "kind": REFUSED_KIND,
                "status": REFUSED_STATUS}
        write_tool(json.dumps(call))

    return report


def stream_writer(stream: TurnStream) -> Callable[[str], None]:
    return lambda text: stream.event(EventType.TOOL, text)
