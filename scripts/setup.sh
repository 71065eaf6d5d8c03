#!/usr/bin/env bash
# Idempotent set-up from nothing: venv + pinned packages, bun, Debian's bubblewrap and python3 (the agent
# sandbox and the remote-schedule CLI inside it), and (with --test) Debian's Chromium.
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
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
apt_updated=""
apt_install() {  # Debian packages, with one `apt-get update` per run
  if [ -z "$apt_updated" ]; then $SUDO apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}
# Every agent runs in a bubblewrap sandbox (CHATCRON_AGENT_SANDBOX=off runs them unfenced instead);
# inside it only the system's /usr is visible, so the workspace's remote-schedule needs /usr/bin/python3;
# its network is its own, and socat relays it to the egress proxy (CHATCRON_AGENT_NETWORK=host: no relay).
if [ "${CHATCRON_AGENT_SANDBOX:-bwrap}" != "off" ]; then
  missing=()
  [ -x /usr/bin/bwrap ] || missing+=(bubblewrap)
  [ -x /usr/bin/python3 ] || missing+=(python3)
  [ -x /usr/bin/socat ] || [ "${CHATCRON_AGENT_NETWORK:-proxy}" = host ] || missing+=(socat)
  if [ "${#missing[@]}" -gt 0 ]; then
    say "installing Debian's ${missing[*]} for the agent sandbox"
    apt_install "${missing[@]}"
  fi
fi
if [ "${1:-}" = "--test" ] && [ ! -x /usr/bin/chromium-headless-shell ]; then
  # Debian's Chromium, built headless only (the build Playwright itself uses for headless runs):
  # the same Blink as the browser, a quarter less CPU per browser test (docs/TESTING.md)
  say "installing Debian's Chromium (headless shell) for the browser tests"
  apt_install chromium-headless-shell
fi
if [ "${1:-}" = "--test" ]; then
  # The test suite's agents (SPEC §11), through the product's own command, into one shared folder
  # the tests read (CHATCRON_AGENTS_DIR): a no-op once installed.
  for agent in claude codex gemini opencode; do
    CHATCRON_DATA_DIR="$ROOT/.tools/agents-data" CHATCRON_AGENTS_DIR="$ROOT/.tools/agents" \
      .venv/bin/python -m app.manage install-agent "$agent" | sed 's/^/[setup] /'
  done
fi
