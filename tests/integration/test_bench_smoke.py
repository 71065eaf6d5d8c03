"""The benchmark runner still runs: ``python -m tests.perf.run --quick`` on SQLite, small sizes.

No target is asserted (a smoke run's values mean nothing); what is asserted is the output
contract docs/BENCHMARKS.md relies on — every line JSON, every figure present with the six keys and
a value, and the machine line last.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.integration.procs import ROOT
from tests.isolation import web_dir

pytestmark = pytest.mark.slow  # the whole quick benchmark: web, scheduler and agent processes: left out of `make check`

KEYS = {"metric", "value", "unit", "target", "ok", "db"}
FIGURES = {"cron_next_per_s", "fire_lateness_p50_ms", "fire_lateness_p99_ms", "burst_fires_per_s",
           "db_single_row_writes_per_s", "burst_vs_db_limit", "idle_cpu_percent", "idle_rss_mb",
           "wake_latency_p50_ms", "wake_latency_p95_ms", "ui_event_latency_p50_ms", "ui_event_latency_p95_ms",
           "ui_event_latency_all_pages_p95_ms", "api_list_rps", "agent_first_text_cold_p50_ms",
           "agent_first_text_cold_p95_ms", "agent_first_text_warm_p50_ms", "agent_first_text_warm_p95_ms",
           "agent_process_rss_mb", "agent_first_text_warm_hostnet_p50_ms", "agent_first_text_warm_hostnet_p95_ms",
           "agent_network_fence_first_text_p50_ms", "agent_turn_sandboxed_p50_ms",
           "agent_turn_sandboxed_p95_ms", "agent_turn_unfenced_p50_ms", "agent_turn_unfenced_p95_ms",
           "agent_sandbox_overhead_p50_ms", "agent_turn_sandboxed_hostnet_p50_ms",
           "agent_sandbox_hostnet_overhead_p50_ms", "agent_network_fence_overhead_p50_ms",
           "webhook_latency_p50_ms", "webhook_latency_p95_ms",
           "approval_decision_p50_ms", "approval_decision_p95_ms",
           "approval_text_p50_ms", "approval_text_p95_ms", "approval_decision_nohint_p50_ms",
           "approval_decision_nohint_p95_ms"}


@pytest.mark.long  # every benchmark once, quick: about 80 s
def test_quick_benchmark_prints_every_figure_and_the_machine() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHATCRON_")}  # SQLite only
    env["PYTHONPATH"] = str(ROOT)
    env["REFLEX_WEB_WORKDIR"] = str(web_dir("bench"))  # the bench's web process builds in this worker's folder
    # the run takes about 50 s; the timeout leaves room for a first production build of the web app
    out = subprocess.run([sys.executable, "-m", "tests.perf.run", "--quick"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=400)
    assert out.returncode == 0, out.stderr[-4000:]
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    *figures, last = lines
    assert set(last) == {"machine"}, last
    assert {"cores", "python", "sqlite", "postgresql"} <= set(last["machine"])
    for figure in figures:
        assert set(figure) == KEYS, figure
        assert isinstance(figure["value"], int | float), figure
        assert figure["db"] in (None, "sqlite"), figure
    assert {f["metric"] for f in figures} == FIGURES
