#!/usr/bin/env bash
# Idempotent set-up from nothing: venv + pinned packages, bun, and (with --test) Debian's Chromium.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
BUN_VERSION=1.4.4

say() { printf '[setup] %s\n' "$*"; }

if [ ! -x .venv/bin/python ]; then
  PY="${PYTHON:-python3}"
  "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "Python 3.11+ is required" >&2; exit 1; }
  say "creating .venv"
  "$PY" -m venv .venv
fi
stamp=".venv/.requirements.sha256"
want="$(sha256sum requirements.txt | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "installing Python packages"
  .venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
  echo "$want" > "$stamp"
fi
if [ ! -x "$REFLEX_BUN_PATH" ]; then
  say "installing bun $BUN_VERSION from the npm registry"
  npm install --prefix .tools --no-audit --no-fund --silent "@oven/bun-linux-x64@$BUN_VERSION"
fi
if [ "${1:-}" = "--test" ] && ! command -v chromium >/dev/null 2>&1; then
  say "installing Debian's Chromium for the browser tests"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
if [ "${1:-}" = "--test" ]; then
  # The test suite's agents (SPEC §11), through the product's own command, into one shared folder
  # the tests read (CHATCRON_AGENTS_DIR): a no-op once installed.
  for agent in claude codex gemini opencode; do
    CHATCRON_DATA_DIR="$ROOT/.tools/agents-data" CHATCRON_AGENTS_DIR="$ROOT/.tools/agents" \
      .venv/bin/python -m app.manage install-agent "$agent" | sed 's/^/[setup] /'
  done
fi
