#!/usr/bin/env bash
# `make bench`: every benchmark figure as JSON lines (docs/BENCHMARKS.md); pass --quick for a smoke run.
# PostgreSQL figures too when CHATCRON_TEST_POSTGRES_URL is set.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
bash scripts/setup.sh --test >&2
exec .venv/bin/python -m tests.perf.run "$@"
