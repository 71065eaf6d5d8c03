"""One ACP turn on the agent event loop: borrow the chat's agent, continue (or start) its session,
prompt, and answer a cancel the way the protocol and the agents want.

Session rules (SPEC §11): the chat's session is continued with ``session/resume`` when the agent
offers it (no history replay), else ``session/load``; a session this process has open is reused
as long as no other turn (another process, a cancel) moved it on, which the chat's previous run id
tells. A session that cannot be continued is replaced by a new one, seeded with the chat's
recent history, and the turn says so in a ``status`` event.

Cancel: ``session/cancel``, then up to the grace for the prompt to return; an agent that does not
is killed. After a cancelled prompt the Claude adapter (0.23.1) answers the next prompt of that
session with the stale result of the cancelled one, so a cancelled session is closed and resumed
before its next prompt.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any

import acp
from acp import text_block

from app.agents import egress
from app.agents.providers import openai
from app.agents.providers.acp_agent import AgentExited, Launch, WarmAgent
from app.agents.providers.acp_client import TurnSink
from app.agents.providers.acp_meter import MeterStart, usage_of
from app.agents.providers.acp_pool import AgentPool
from app.core.ports import AgentStartError, ProviderError, Usage

log = logging.getLogger("chatcron.acp")
LOST_SESSION = ("The agent could not continue this chat's earlier session; a new session started with the "
                "chat's recent history.")
SESSION_SECONDS = 300.0  # session/new, load or resume (a cold agent CLI can be slow to start)
STOP_NOTES = {"max_tokens": "The agent stopped: it reached its output token limit.",
              "max_turn_requests": "The agent stopped: it reached its limit of model requests for one turn.",
              "refusal": "The agent refused to continue."}


class Cancelled(ProviderError):
    def __init__(self, detail: str = "") -> None:
        super().__init__("cancelled" + (f": {detail}" if detail else ""))


class Hung(Cancelled):
    """Cancelled, and the agent did not stop: it is killed."""


@dataclasses.dataclass(frozen=True)
class TurnPlan:
    """Everything the loop side needs for one turn (built by the provider in the turn's thread)."""

    chat_id: int
    run_id: int
    key: tuple  # the launch's identity: a warm agent with another key is replaced
    launch: Callable[[], Launch]
    cwd: Path
    prompt: str
    session_id: str | None
    history: tuple[tuple[str, str], ...]
    history_budget: int
    previous_run_id: int | None
    fresh: bool
    policy: str
    model: str | None
    workspace: Path | None
    session_tokens: Callable[[str], Mapping[str, int] | None] | None = None  # the preset's session_usage


@dataclasses.dataclass
class TurnControl:
    """Shared by the turn's thread and the loop: the thread sets ``cancel`` through the loop."""

    sink: TurnSink
    cancel: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)


def seeded_prompt(history: tuple[tuple[str, str], ...], prompt: str, budget: int) -> str:
    """The prompt with the chat's recent history before it (the openai provider's budget rule)."""
    messages = openai.build_messages(history, prompt, budget)[:-1]
    if not messages:
        return prompt
    lines = [f"{m['role'].capitalize()}: {m['content']}" for m in messages]
    return ("[Earlier in this chat, oldest first; continue from it]\n\n" + "\n\n".join(lines)
            + "\n\n[End of the earlier conversation]\n\n" + prompt)


async def _race(work: Coroutine[Any, Any, Any], cancel: asyncio.Event) -> Any:
    """``work``'s result, or Cancelled (with ``work`` cancelled) once ``cancel`` is set."""
    task = asyncio.ensure_future(work)
    waiter = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    if task.done():
        return task.result()
    task.cancel()
    with contextlib.suppress(BaseException):
        await task
    raise Cancelled()


async def _open(agent: WarmAgent, plan: TurnPlan, sink: TurnSink) -> tuple[str, str]:
    """(session id, prompt text) for this turn; a lost session puts a status note in the sink."""
    wanted, cwd = plan.session_id, str(plan.cwd)
    if wanted and wanted in agent.sessions:
        if agent.sessions[wanted] == plan.previous_run_id and wanted not in agent.stale:
            return wanted, plan.prompt
        log.info("action=session_reopen chat_id=%s session=%s", plan.chat_id, wanted)
        agent.sessions.pop(wanted, None)
        agent.stale.discard(wanted)
        agent.client.costs.pop(wanted, None)
        if agent.can_close:
            await agent.call(agent.conn.close_session(session_id=wanted), SESSION_SECONDS)
    if wanted and (agent.can_resume or agent.can_load):
        try:
            if agent.can_resume:
                await agent.call(agent.conn.resume_session(cwd=cwd, session_id=wanted, mcp_servers=[]),
                                 SESSION_SECONDS)
            else:
                await agent.call(agent.conn.load_session(cwd=cwd, session_id=wanted, mcp_servers=[]),
                                 SESSION_SECONDS)
            agent.sessions[wanted] = None
            return wanted, plan.prompt
        except acp.RequestError as exc:
            log.warning("action=session_lost chat_id=%s session=%s error=%s", plan.chat_id, wanted, exc)
    if wanted:
        sink.put("status", LOST_SESSION)
    try:
        created = await agent.call(agent.conn.new_session(cwd=cwd, mcp_servers=[]), SESSION_SECONDS)
    except acp.RequestError as exc:  # e.g. auth_required: no usable API key — the administrator's to fix
        raise AgentStartError(f"the agent refused to open a session (session/new): {exc}") from None
    agent.sessions[created.session_id] = None
    text = plan.prompt if plan.fresh else seeded_prompt(plan.history, plan.prompt, plan.history_budget)
    return created.session_id, text


async def _choose_model(agent: WarmAgent, session_id: str, model: str) -> None:
    """The project's ``model``: the session's "model" option, else the unstable session/set_model."""
    if agent.models.get(session_id) == model:
        return
    try:
        await agent.call(agent.conn.set_config_option(config_id="model", session_id=session_id, value=model), 60)
    except acp.RequestError:
        try:
            await agent.call(agent.conn._conn.send_request(  # no SDK helper for this unstable method
                "session/set_model", {"sessionId": session_id, "modelId": model}), 60)
        except acp.RequestError as exc:
            raise ProviderError(f"acp setting model: the agent does not accept {model!r}: {exc}") from None
    agent.models[session_id] = model


async def _prompt(agent: WarmAgent, plan: TurnPlan, control: TurnControl, grace: float, text: str) -> Any:
    """The prompt's response; on cancel: session/cancel, the grace, then the agent killed."""
    sink = control.sink
    task = asyncio.ensure_future(agent.call(agent.conn.prompt(session_id=sink.session_id,
                                                               prompt=[text_block(text)])))
    waiter = asyncio.ensure_future(control.cancel.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    if task.done():
        return task.result()
    sink.cancel()  # a permission request waiting for a person answers "cancelled"
    with contextlib.suppress(Exception):
        await agent.conn.cancel(session_id=sink.session_id)
    try:
        await asyncio.wait_for(asyncio.shield(task), grace)
    except TimeoutError:
        task.cancel()
        raise Hung(f"the agent did not stop within {grace:g} s and was killed") from None
    except ProviderError:
        pass
    except acp.RequestError:
        pass
    agent.stale.add(sink.session_id)  # the adapter's next answer would be out of step
    raise Cancelled()


def _usage(response: Any, sink: TurnSink, baseline: float | None,
           tokens: tuple[Mapping[str, int] | None, Mapping[str, int] | None] = (None, None)) -> Usage | None:
    """The turn's final usage (:func:`app.agents.providers.acp_meter.usage_of` with the sink's cost)."""
    return usage_of(response, sink.cost, baseline, tokens)


async def _session_tokens(plan: TurnPlan, session_id: str) -> Mapping[str, int] | None:
    if plan.session_tokens is None:
        return None
    try:
        return await asyncio.to_thread(plan.session_tokens, session_id)  # a file read, off the loop
    except OSError:
        return None


async def run_turn(pool: AgentPool, plan: TurnPlan, control: TurnControl, grace: float) -> None:
    """The turn; what it streams, its session, usage and notes go to ``control.sink``."""
    sink = control.sink
    agent, _ = await _race(pool.acquire(plan.chat_id, plan.key, plan.launch), control.cancel)
    keep, response = True, None
    route = agent.launch.route if agent.launch is not None else None
    if route is not None:  # a connection the proxy refuses is a card of this turn (SPEC §12.1)
        route.on_refused = egress.refusal_reporter(lambda text: sink.put("tool", text))
    try:
        try:
            session_id, text = await _race(_open(agent, plan, sink), control.cancel)
            if plan.model:
                await _race(_choose_model(agent, session_id, plan.model), control.cancel)
        except Cancelled:
            keep = False  # a request of its was left half-way
            raise
        sink.session_id = session_id
        sink.put("session", session_id)
        baseline = agent.client.costs.get(session_id)
        tokens_before = await _session_tokens(plan, session_id)
        sink.put("meter_start", MeterStart(session_id, baseline, tokens_before, plan.session_tokens))
        agent.client.turns[session_id] = sink
        try:
            response = await _prompt(agent, plan, control, grace, text)
        except acp.RequestError as exc:
            detail = (exc.data or {}).get("details") if isinstance(exc.data, dict) else None
            raise ProviderError(f"the agent failed the turn: {exc}" + (f" ({detail})" if detail else "")) from None
        finally:
            agent.client.turns.pop(session_id, None)
            usage = _usage(response, sink, baseline, (tokens_before, await _session_tokens(plan, session_id)))
            if sink.cost is not None:
                agent.client.costs[session_id] = sink.cost
            if usage is not None:
                sink.put("usage", usage)
            agent.sessions[session_id] = plan.run_id
        note = STOP_NOTES.get(str(getattr(response, "stop_reason", "")))
        if note:
            sink.put("status", note)
        if plan.fresh and agent.can_close:  # a fresh fire's session ends with it
            agent.sessions.pop(session_id, None)
            with contextlib.suppress(ProviderError, acp.RequestError):
                await agent.call(agent.conn.close_session(session_id=session_id), 30)
    except (AgentExited, Hung):
        keep = False
        raise
    finally:
        if route is not None:
            route.on_refused = None  # between turns a refusal is logged only
        if keep and agent.alive:
            await pool.release(plan.chat_id, agent)
        else:
            await pool.discard(plan.chat_id, agent)
