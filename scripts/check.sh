#!/usr/bin/env bash
# `make check`: the edit loop's tier — ruff, the unit tests and the fast SQLite integration tests,
# in parallel (docs/TESTING.md). `make test` stays the whole suite. Extra args go to pytest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
bash scripts/setup.sh
echo "[check] ruff"
ruff check .
echo "[check] pytest: unit and fast SQLite integration tests"
[ "$#" -gt 0 ] || set -- tests/unit tests/integration tests/agents
python -m pytest -n "${CHATCRON_TEST_WORKERS:-2}" -m "(unit or integration) and not postgres and not slow" "$@"
