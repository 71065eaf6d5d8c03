#!/usr/bin/env bash
# `make run`: set up, migrate, seed the demo on first start, then serve in the foreground.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
bash scripts/setup.sh
PORT="${CHATCRON_PORT:-3000}"
HOST="${CHATCRON_HOST:-127.0.0.1}"
export CHATCRON_API_URL="${CHATCRON_API_URL:-http://127.0.0.1:$PORT}"
python -m app.manage migrate
python -m app.manage seed-demo

pids=()
stop() {
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop INT TERM EXIT

if [ -f scheduler/__main__.py ]; then
  python -m scheduler &
  pids+=($!)
fi
reflex run --env prod --frontend-port "$PORT" --backend-port "$PORT" --backend-host "$HOST" &
pids+=($!)
(
  for _ in $(seq 240); do
    if curl -sf "http://127.0.0.1:$PORT/api/health" >/dev/null 2>&1; then
      echo
      echo "chatcron is up: open http://127.0.0.1:$PORT/ (Ctrl-C stops it)"
      exit 0
    fi
    sleep 0.5
  done
) &
wait -n "${pids[@]}"
