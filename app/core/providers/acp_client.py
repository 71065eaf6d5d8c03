"""chatcron's side of an ACP connection: the client methods an agent calls back.

One :class:`AgentClient` per agent process. A turn registers a :class:`TurnSink` for its session;
what the agent streams for that session goes into the sink's queue, which the turn's own thread
drains into the event log (so no database write ever runs on the event loop). Updates for a
session with no turn (``session/load`` replaying its history, stragglers after a cancel) are
dropped. Permission requests are answered at once by the project's ``tool_policy``.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
from pathlib import Path
from typing import Any

import acp
from acp.connection import StreamDirection, StreamEvent
from acp.schema import AllowedOutcome, DeniedOutcome, PermissionOption, RequestPermissionResponse

from app.core.providers.acp_events import ToolCalls, is_remote_schedule, now_utc, plan_json
from app.core.providers.acp_settings import ALLOW

log = logging.getLogger("chatcron.acp")


@dataclasses.dataclass
class TurnSink:
    """One turn's side of the connection: where its updates go and how it answers permissions."""

    session_id: str
    policy: str  # ALLOW or DENY
    workspace: Path | None
    items: queue.Queue = dataclasses.field(default_factory=queue.Queue)  # (kind, payload) for the turn thread
    tools: ToolCalls = dataclasses.field(default_factory=ToolCalls)
    raw_inputs: dict[str, object] = dataclasses.field(default_factory=dict)
    cost: float | None = None  # the session's cumulative cost as last reported during this turn
    cancelled: bool = False

    def put(self, kind: str, payload: object) -> None:
        self.items.put((kind, payload))


def _dump(model: Any) -> dict[str, Any]:  # any SDK model
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


def _pick(options: list[PermissionOption], kinds: tuple[str, ...]) -> PermissionOption | None:
    for kind in kinds:
        for option in options:
            if option.kind == kind:
                return option
    return None


class AgentClient:
    """The ``acp.Client`` of one agent process (duck-typed: the SDK calls these by name)."""

    def __init__(self) -> None:
        self.turns: dict[str, TurnSink] = {}
        self.costs: dict[str, float] = {}  # session → cumulative cost the agent last reported

    # -- the stream ---------------------------------------------------------------------------
    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        sink = self.turns.get(session_id)
        if sink is None:
            return
        kind = update.session_update
        if kind in ("agent_message_chunk", "agent_thought_chunk"):
            text = getattr(update.content, "text", None)
            if isinstance(text, str) and text:
                sink.put("text" if kind == "agent_message_chunk" else "thought", text)
        elif kind in ("tool_call", "tool_call_update"):
            data = _dump(update)
            if "rawInput" in data and data["rawInput"] != {}:
                sink.raw_inputs[data.get("toolCallId", "")] = data["rawInput"]
            changed = sink.tools.apply(data)
            if changed is not None:
                sink.put("tool", changed)
        elif kind == "plan":
            sink.put("plan", plan_json(_dump(update)))
        # usage_update is read from the raw frame (observe): the SDK may reject it

    def observe(self, event: StreamEvent) -> None:
        """Raw frames, before the SDK validates them: ``usage_update`` is taken from here, because
        some agents send ``used: null`` (the SDK then drops the whole notification)."""
        message = event.message
        if event.direction != StreamDirection.INCOMING or message.get("method") != "session/update":
            return
        params = message.get("params") or {}
        update = params.get("update") or {}
        if update.get("sessionUpdate") != "usage_update":
            return
        sink = self.turns.get(params.get("sessionId", ""))
        cost = update.get("cost")
        amount = cost.get("amount") if isinstance(cost, dict) else None
        if sink is not None and isinstance(amount, int | float) and not isinstance(amount, bool) \
                and (cost.get("currency") in (None, "USD")):
            sink.cost = float(amount)

    # -- permissions ----------------------------------------------------------------------------
    async def request_permission(self, options: list[PermissionOption], session_id: str, tool_call: Any,
                                 **kwargs: Any) -> RequestPermissionResponse:
        sink = self.turns.get(session_id)
        if sink is None or sink.cancelled:  # after a cancel the protocol wants "cancelled"
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        data = _dump(tool_call)
        call_id = data.get("toolCallId", "")
        if data.get("rawInput") not in (None, {}):
            sink.raw_inputs[call_id] = data["rawInput"]
        changed = sink.tools.apply(data)
        if changed is not None:
            sink.put("tool", changed)
        if is_remote_schedule(sink.raw_inputs.get(call_id), sink.workspace):
            allow, by = True, "capability"
        else:
            allow, by = sink.policy == ALLOW, f"policy:{sink.policy}"
        option = _pick(options, ("allow_once", "allow_always") if allow else ("reject_once", "reject_always"))
        outcome = "allowed" if allow and option is not None else "rejected"
        sink.put("tool", sink.tools.decide(call_id, outcome, option.option_id if option else None, by, now_utc()))
        log.info("action=tool_permission session=%s tool=%s outcome=%s by=%s", session_id, call_id, outcome, by)
        if option is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option.option_id))

    # -- what chatcron does not offer (its capabilities say so) ------------------------------------
    async def read_text_file(self, **kwargs: Any) -> None:
        raise acp.RequestError.method_not_found("fs/read_text_file")

    async def write_text_file(self, **kwargs: Any) -> None:
        raise acp.RequestError.method_not_found("fs/write_text_file")

    async def create_terminal(self, **kwargs: Any) -> None:
        raise acp.RequestError.method_not_found("terminal/create")

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise acp.RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None


class _UsageNoise(logging.Filter):
    """The SDK logs a traceback for every ``usage_update`` it cannot validate; observe() reads
    those frames anyway, so the traceback is noise in chatcron's logs."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.getMessage().startswith("Unhandled error while handling notification"):
            return True
        return "usage_update" not in str(record.exc_info[1] if record.exc_info else "")


_filter_installed = False


def quiet_sdk_usage_errors() -> None:
    global _filter_installed
    if not _filter_installed:
        logging.getLogger().addFilter(_UsageNoise())
        _filter_installed = True
