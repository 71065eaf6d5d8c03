"""Fire → first ``assistant_text`` with the real Claude Code agent and the scripted model (SPEC §11).

A task in a chat whose project runs the ``claude`` preset is run now and fired by one loop
iteration; the figure is the time from that iteration's start to the first ``assistant_text``
event of the fired run in the database (polled every millisecond). *Cold*: a chat with no warm
agent (the process is spawned, initialized and the session created or resumed). *Warm*: the
chat's agent and session are already running; warm fires alternate between an agent behind the
egress proxy (the default) and one sharing the host's network (``CHATCRON_AGENT_NETWORK=host``),
so the fence's cost is the difference of the two. Also the resident memory of one agent process
tree (the ACP adapter and the Claude Code process it runs for the session).

    python -m tests.perf.bench_agent [--quick]
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

from sqlmodel import select

from app.core import chats
from app.core.models import Event, Run, RunSource
from app.schedules.service import Actor, TaskService
from scheduler.__main__ import build_loop
from tests.agents.anthropic_server import AnthropicServer, text
from tests.agents.rig import AgentRig, build_rig
from tests.integration.test_scheduler_loop import settle
from tests.perf.common import emit, main_for, median, percentile, prepared

WARM_P95_TARGET_MS = 100.0
COLD_P95_TARGET_MS = 2500.0
SETTLE_S = 180.0


@dataclasses.dataclass(frozen=True)
class Sizes:
    cold: int
    warm: int


FULL, QUICK = Sizes(cold=5, warm=20), Sizes(cold=1, warm=2)
FENCE_TARGET_MS = 5.0  # what the egress proxy may add to a warm first text (issue: ≤ 5 ms)


def tree_rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and all its descendants, MiB."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total / 1024


def _first_text_ms(rig: AgentRig, loop, started: float, known: set[int]) -> float:  # a Loop
    """Wait for the new fired run's first assistant_text; ms since ``started``."""
    deadline = started + SETTLE_S
    while time.monotonic() < deadline:
        with rig.core.db.read() as s:
            row = s.exec(select(Event.run_id).join(Run, Run.id == Event.run_id).where(
                Run.source == RunSource.SCHEDULE.value, Run.chat_id == rig.chat, Event.type == "assistant_text",
                Run.id.not_in(known or {0})).limit(1)).first()
        if row is not None:
            elapsed = (time.monotonic() - started) * 1000
            known.add(row)
            return elapsed
        with rig.core.db.read() as s:
            ended = s.exec(select(Run).where(Run.source == RunSource.SCHEDULE.value, Run.chat_id == rig.chat,
                                             Run.status != "running", Run.id.not_in(known or {0}))).first()
        if ended is not None:
            raise AssertionError(f"the fired run ended without text: {ended.status}: {ended.error}")
        time.sleep(0.001)
    raise AssertionError("no assistant_text from the fired run")


def _fire(rig: AgentRig, tasks: TaskService, task_id: int, loop, known: set[int]) -> float:
    rig.model.play(text("Report: the build is green."))
    tasks.run_now(Actor(rig.user), task_id)
    started = time.monotonic()
    loop.tick()
    elapsed = _first_text_ms(rig, loop, started, known)
    settle(rig.core, SETTLE_S)
    return elapsed


def bench(kind: str, sizes: Sizes) -> None:
    models = AnthropicServer(), AnthropicServer()
    rigs: list[AgentRig] = []
    try:
        with prepared(kind, "bench-agent-") as fenced, prepared(kind, "bench-agent-hostnet-") as shared:
            for b in (fenced, shared):
                os.chmod(b.tmp, 0o711)  # a reachable data dir: no staging in either (docs/SECURITY.md)
            rigs.append(build_rig(fenced.settings, models[0], skill=False))  # the default: the egress proxy
            rigs.append(build_rig(shared.settings, models[1], skill=False, agent_network="host"))
            _measure(rigs[0], rigs[1], sizes, kind)
    finally:
        for rig in rigs:
            rig.close()
        for model in models:
            model.close()


def _measure(rig: AgentRig, hostnet: AgentRig, sizes: Sizes, kind: str) -> None:
    """Cold fires on the fenced rig; warm fires alternating between the fenced rig and one whose
    agent shares the host's network (CHATCRON_AGENT_NETWORK=host), so load hits both alike."""
    tasks = {id(r): TaskService(r.core.db, r.core.clock, r.core.settings) for r in (rig, hostnet)}
    loops = {id(r): build_loop(r.core, f"sched:bench-agent-{i}") for i, r in enumerate((rig, hostnet))}
    spec = {"name": "build watch", "prompt": "Check the build.",
            "schedule": {"kind": "interval", "every_seconds": 3600}}
    cold, rss = [], []
    seen: dict[int, set[int]] = {id(rig): set(), id(hostnet): set()}  # run ids seen, per database
    known = seen[id(rig)]
    for i in range(sizes.cold):  # each in a chat of its own: nothing is warm for it
        rig.chat = chats.create_chat(rig.core.db, rig.core.clock, rig.user, rig.project, f"cold {i}").id
        task, _ = tasks[id(rig)].create(Actor(rig.user), rig.chat, spec)
        cold.append(_fire(rig, tasks[id(rig)], task.id, loops[id(rig)], known))
        rss.append(tree_rss_mb(rig.pool.pids()[rig.chat]))
    warm: dict[int, list[float]] = {id(rig): [], id(hostnet): []}
    warm_tasks = {id(r): tasks[id(r)].create(Actor(r.user), r.chat, {**spec, "name": "warm watch"})[0].id
                  for r in (rig, hostnet)}
    for r in (rig, hostnet):  # each warm chat's agent and session start once, unmeasured
        _fire(r, tasks[id(r)], warm_tasks[id(r)], loops[id(r)], seen[id(r)])
    for _ in range(sizes.warm):
        for r in (rig, hostnet):
            warm[id(r)].append(_fire(r, tasks[id(r)], warm_tasks[id(r)], loops[id(r)], seen[id(r)]))
    rss.append(tree_rss_mb(rig.pool.pids()[rig.chat]))
    fenced, shared = warm[id(rig)], warm[id(hostnet)]
    emit("agent_first_text_cold_p50_ms", median(cold), "ms", None, kind)
    emit("agent_first_text_cold_p95_ms", percentile(cold, 95), "ms", COLD_P95_TARGET_MS, kind)
    emit("agent_first_text_warm_p50_ms", median(fenced), "ms", None, kind)
    emit("agent_first_text_warm_p95_ms", percentile(fenced, 95), "ms", WARM_P95_TARGET_MS, kind)
    emit("agent_first_text_warm_hostnet_p50_ms", median(shared), "ms", None, kind)
    emit("agent_first_text_warm_hostnet_p95_ms", percentile(shared, 95), "ms", None, kind)
    emit("agent_network_fence_first_text_p50_ms", median(fenced) - median(shared), "ms", FENCE_TARGET_MS, kind)
    emit("agent_process_rss_mb", max(rss), "MiB", None, kind)

if __name__ == "__main__":
    main_for(__doc__, bench, FULL, QUICK)
