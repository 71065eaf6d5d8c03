"""chatcron's side of an ACP connection: the client methods an agent calls back.

One :class:`AgentClient` per agent process. A turn registers a :class:`TurnSink` for its session;
what the agent streams for that session goes into the sink's queue, which the turn's own thread
drains into the event log (so no database write ever runs on the event loop). Updates for a
session with no turn (``session/load`` replaying its history, stragglers after a cancel) are
dropped. Permission requests are answered by the project's ``tool_policy``: at once under
``allow``/``deny``; under ``ask`` the request becomes an approval and the request waits (on the
loop, without blocking it) until a person answers, the approval expires, or the turn ends.
Every ``usage_update`` and tool-call update of a turn's session also puts a ``("meter", None)``
item in its queue: the turn's thread then measures the usage so far (``acp_meter``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
import queue
from pathlib import Path
from typing import Any

import acp
from acp.connection import StreamDirection, StreamEvent
from acp.schema import AllowedOutcome, DeniedOutcome, PermissionOption, RequestPermissionResponse

from app.agents.providers.acp_events import ToolCalls, is_remote_schedule, now_utc, plan_json
from app.agents.providers.acp_policy import CANCELLED, Choice, choose, outcome_of
from app.core.attention_tables import ApprovalState
from app.core.ports import APPROVAL_RECHECK_SECONDS, Approvals

log = logging.getLogger("chatcron.acp")


@dataclasses.dataclass
class TurnSink:
    """One turn's side of the connection: where its updates go and how it answers permissions."""

    session_id: str
    policy: str  # allow, deny or ask
    workspace: Path | None
    approvals: Approvals | None = None  # where an ``ask`` turn asks (None: ask is answered "cancelled")
    items: queue.Queue = dataclasses.field(default_factory=queue.Queue)  # (kind, payload) for the turn thread
    tools: ToolCalls = dataclasses.field(default_factory=ToolCalls)
    raw_inputs: dict[str, object] = dataclasses.field(default_factory=dict)
    cost: float | None = None  # the session's cumulative cost as last reported during this turn
    cancelled: bool = False
    wakeups: set[asyncio.Event] = dataclasses.field(default_factory=set)  # permission requests waiting

    def put(self, kind: str, payload: object) -> None:
        self.items.put((kind, payload))

    def cancel(self) -> None:
        """The turn is being cancelled (on the loop): waiting permission requests answer "cancelled"."""
        self.cancelled = True
        for event in self.wakeups:
            event.set()


def _dump(model: Any) -> dict[str, Any]:  # any SDK model
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


def _options(options: list[PermissionOption]) -> list[dict[str, str]]:
    return [{"option_id": o.option_id, "name": o.name, "kind": str(o.kind)} for o in options]


def _response(choice: Choice) -> RequestPermissionResponse:
    if choice.option_id is None:
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
    return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=choice.option_id))


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
            sink.put("meter", None)  # a response ended, a tool ran: measure the usage (acp_meter)
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
        if sink is None:
            return
        cost = update.get("cost")
        amount = cost.get("amount") if isinstance(cost, dict) else None
        if isinstance(amount, int | float) and not isinstance(amount, bool) and math.isfinite(amount) \
                and (cost.get("currency") in (None, "USD")):
            sink.cost = float(amount)
        sink.put("meter", None)  # the turn's thread measures the usage so far (acp_meter)

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
        offered = _options(options)
        choice = choose(sink.policy, offered, is_remote_schedule(sink.raw_inputs.get(call_id), sink.workspace))
        if choice.outcome == "ask":
            choice = await self._ask(sink, call_id, data, offered)
        sink.put("tool", sink.tools.decide(call_id, choice.outcome, choice.option_id, choice.by, now_utc()))
        log.info("action=tool_permission session=%s tool=%s outcome=%s by=%s", session_id, call_id,
                 choice.outcome, choice.by)
        return _response(choice)

    async def _ask(self, sink: TurnSink, call_id: str, data: dict[str, Any], offered: list[dict[str, str]]) -> Choice:
        """An approval for the call; waits (on the loop) for its answer, its expiry or the turn's end."""
        asker = sink.approvals
        if asker is None:
            return Choice(CANCELLED, None, CANCELLED)
        call = sink.tools.get(call_id) or {}
        title = str(call.get("title") or data.get("title") or "a tool call")
        try:
            row = await asyncio.to_thread(asker.ask, call_id, title, sink.raw_inputs.get(call_id), offered)
        except Exception as exc:  # the store is down: nobody can be asked, so the call is not allowed
            log.warning("action=approval_failed session=%s tool=%s error=%s", sink.session_id, call_id, exc)
            return Choice(CANCELLED, None, "error")
        sink.put("tool", sink.tools.await_approval(call_id, {
            "id": row.id, "state": row.state, "options": offered, "timeout_seconds": asker.timeout_seconds,
            "expires_at": row.expires_at.isoformat().replace("+00:00", "Z")}))
        log.info("action=approval_requested session=%s tool=%s approval_id=%s", sink.session_id, call_id, row.id)
        settled = await _wait(sink, asker, row.id)
        state = settled.state if settled is not None else None
        sink.tools.approval_state(call_id, state or ApprovalState.CANCELLED.value)
        return outcome_of(state, settled.option_id if settled else None, settled.decided_by if settled else None,
                          offered)

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


async def _wait(sink: TurnSink, asker: Approvals, approval_id: int) -> Any:
    """The approval once it is no longer pending; None when the turn is cancelled first. Re-read
    on every wake hint and at least every APPROVAL_RECHECK_SECONDS."""
    listener = asker.listener()
    wakeup = listener.subscribe()
    sink.wakeups.add(wakeup)
    try:
        while not sink.cancelled:
            wakeup.clear()  # before the read: a hint that comes during it wakes the next wait
            try:
                row = await asyncio.to_thread(asker.settle, approval_id)
            except Exception as exc:  # the store is away for a moment: the answer waits in it, read again
                log.warning("action=approval_read_failed approval_id=%s error=%s", approval_id, exc)
            else:
                if row is None or row.state != ApprovalState.PENDING.value:
                    return row
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wakeup.wait(), APPROVAL_RECHECK_SECONDS)
        return None
    finally:
        sink.wakeups.discard(wakeup)
        listener.unsubscribe(wakeup)


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
