"""What a project's daily budget costs the claim path (SPEC §15): the burst of ``bench_burst``
with and without a budget on the project, alternated.

Run: ``python -m tests.perf.bench_budget [--quick]``.

* ``budget_burst_fires_per_s``: N tasks in N chats of one project with a daily budget (10^12
  tokens: never spent) and a per-fire cap of 1,000 tokens on each task (so fires run side by side
  as their caps fit), all due at one instant, demo provider, one real scheduler process,
  ``CHATCRON_MAX_CONCURRENT_RUNS=0``; median over repeats.
* ``unbudgeted_burst_fires_per_s``: the same with no budget on the project, each repeat right
  before the budgeted one (a fresh set of tasks each).
* ``budget_burst_ratio``: the first ÷ the second (1.0: a budget costs the claim nothing).
"""

from __future__ import annotations

import time

import sqlalchemy as sa

from app.core.models import Project
from app.schedules.model import ScheduledTask
from tests.integration.procs import Schedulers
from tests.perf.bench_burst import FULL, QUICK, Sizes, burst_once, make_tasks
from tests.perf.common import Bench, emit, main_for, median, prepared

CAP = 1_000


def _budget(b: Bench, tokens: int | None) -> None:
    with b.core.db.write() as s:
        s.exec(sa.update(Project).where(Project.id == b.project_id).values(daily_token_budget=tokens))


def bench(kind: str, sizes: Sizes) -> None:
    with prepared(kind, "bench-budget-") as b:
        plain = [make_tasks(b, sizes.tasks) for _ in range(sizes.repeats)]
        capped = [make_tasks(b, sizes.tasks) for _ in range(sizes.repeats)]
        with b.core.db.write() as s:
            s.exec(sa.update(ScheduledTask).where(ScheduledTask.id.in_([i for ids in capped for i in ids]))
                   .values(max_tokens_per_fire=CAP))
        group = Schedulers(b.url, b.settings.data_dir, b.tmp / "logs")
        try:
            proc = group.start(b.core.db, CHATCRON_RUN_LEASE_SECONDS=60, CHATCRON_MAX_CONCURRENT_RUNS=0)
            without, with_budget = [], []
            for plain_ids, capped_ids in zip(plain, capped, strict=True):
                _budget(b, None)
                without.append(burst_once(b, plain_ids, [proc]))
                time.sleep(1)
                _budget(b, 10**12)
                with_budget.append(burst_once(b, capped_ids, [proc]))
                time.sleep(1)
        finally:
            group.close()
    budgeted, unbudgeted = median(with_budget), median(without)
    emit("budget_burst_fires_per_s", budgeted, "fires/s", None, kind, higher_is_better=True)
    emit("unbudgeted_burst_fires_per_s", unbudgeted, "fires/s", None, kind, higher_is_better=True)
    emit("budget_burst_ratio", budgeted / unbudgeted, "ratio", None, kind, higher_is_better=True)


def main() -> None:
    main_for(__doc__, bench, FULL, QUICK)


if __name__ == "__main__":
    main()
