"""What the agent sandbox adds to a turn's start: whole turns of a `command` agent that exits at once.

Three cores on one database take turns (alternating, so machine load hits all alike): the
sandbox with its network fence (``CHATCRON_AGENT_SANDBOX=bwrap``, ``CHATCRON_AGENT_NETWORK=proxy``,
the default), the sandbox on the host's network (``host``), and no sandbox (``off``). Each turn is
timed from ``PromptService.start`` to its recorded end, so it holds the run lock, the events, the
process start and the finish. The agent is ``/usr/bin/true``: the turn is nothing but overhead.
The difference of the medians is the sandbox's cost (prlimit, setpriv, bwrap's namespaces and
mounts; with the fence, the proxy's socket for the process, the network namespace and the relay
the agent waits for).

    python -m tests.perf.bench_sandbox [--quick]
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from app.core import auth, chats, projects
from app.core.config import Settings
from app.core.context import Core
from app.core.migrate import upgrade
from app.core.models import RunStatus
from app.wiring import build_core
from tests.conftest import open_tmp
from tests.perf.bench_scheduler import _database
from tests.perf.common import emit, main_for, median, percentile

AGENT = "/usr/bin/true"
OVERHEAD_P50_TARGET_MS = 30.0  # a turn of a real agent takes seconds: this must stay small beside it
METRICS = ["agent_turn_sandboxed_p50_ms", "agent_turn_sandboxed_p95_ms", "agent_turn_sandboxed_hostnet_p50_ms",
           "agent_turn_unfenced_p50_ms", "agent_turn_unfenced_p95_ms", "agent_sandbox_overhead_p50_ms",
           "agent_sandbox_hostnet_overhead_p50_ms", "agent_network_fence_overhead_p50_ms"]
MODES = {"proxy": ("bwrap", "proxy"), "host": ("bwrap", "host"), "off": ("off", "host")}


@dataclasses.dataclass(frozen=True)
class Sizes:
    turns: int  # per mode
    warmup: int


FULL = Sizes(turns=60, warmup=3)
QUICK = Sizes(turns=5, warmup=1)


def _core(root: Path, url: str, mode: str) -> Core:
    sandbox, network = MODES[mode]
    settings = Settings(data_dir=root / "data", database_url=url, provider="command", provider_command=AGENT,
                        agent_sandbox=sandbox, agent_network=network, demo_word_delay_seconds=0.0)
    core = build_core(settings)
    upgrade(core.db)
    return core


def _turn_ms(core: Core, chat_id: int) -> float:
    started = time.perf_counter()
    result = core.prompts.start(chat_id, "go").wait(60)
    elapsed = (time.perf_counter() - started) * 1000
    if result is None or result.status != RunStatus.SUCCEEDED:
        raise RuntimeError(f"the {core.settings.agent_sandbox} turn did not succeed: {result}")
    return elapsed


def bench(kind: str, sizes: Sizes) -> None:
    with open_tmp("chatcron-bench-sandbox-") as root, _database(kind, root) as url:
        cores = {mode: _core(root, url, mode) for mode in MODES}
        try:
            user = auth.create_user(cores["off"].db, cores["off"].clock, "bench@example.com", "password-1")
            project = projects.create_project(cores["off"].db, cores["off"].clock,
                                              cores["off"].settings.workspaces_dir, "bench", user)
            chat = {mode: chats.create_chat(core.db, core.clock, user, project.id, mode).id
                    for mode, core in cores.items()}
            times: dict[str, list[float]] = {mode: [] for mode in MODES}
            for i in range(sizes.warmup + sizes.turns):
                for mode, core in cores.items():
                    elapsed = _turn_ms(core, chat[mode])
                    if i >= sizes.warmup:  # the first turns pay for imports, the probe, the first chown
                        times[mode].append(elapsed)
        finally:
            for core in cores.values():
                core.prompts.shutdown(5.0)
                core.db.dispose()
    p50 = {mode: median(values) for mode, values in times.items()}
    emit("agent_turn_sandboxed_p50_ms", p50["proxy"], "ms", None, kind)
    emit("agent_turn_sandboxed_p95_ms", percentile(times["proxy"], 95), "ms", None, kind)
    emit("agent_turn_sandboxed_hostnet_p50_ms", p50["host"], "ms", None, kind)
    emit("agent_turn_unfenced_p50_ms", p50["off"], "ms", None, kind)
    emit("agent_turn_unfenced_p95_ms", percentile(times["off"], 95), "ms", None, kind)
    emit("agent_sandbox_overhead_p50_ms", p50["proxy"] - p50["off"], "ms", OVERHEAD_P50_TARGET_MS, kind)
    emit("agent_sandbox_hostnet_overhead_p50_ms", p50["host"] - p50["off"], "ms", None, kind)
    emit("agent_network_fence_overhead_p50_ms", p50["proxy"] - p50["host"], "ms", None, kind)

if __name__ == "__main__":
    main_for(__doc__, bench, FULL, QUICK)
