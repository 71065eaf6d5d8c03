#!/usr/bin/env bash
# `make test`: set up (incl. Chromium), lint, then every test suite on parallel workers
# (docs/TESTING.md; CHATCRON_TEST_WORKERS, default 4). Extra args go to pytest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
bash scripts/setup.sh --test
echo "[test] ruff"
ruff check .
if [ -z "${CHATCRON_TEST_POSTGRES_URL:-}" ]; then
  echo "[test] CHATCRON_TEST_POSTGRES_URL is not set: the PostgreSQL variants will be SKIPPED (CI sets it)"
fi
workers="${CHATCRON_TEST_WORKERS:-4}"
echo "[test] pytest on $workers workers"
python -m pytest -n "$workers" --dist worksteal "$@"
