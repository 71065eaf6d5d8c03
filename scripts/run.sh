#!/usr/bin/env bash
# `make run`: set up, migrate, seed the demo on first start, then serve in the foreground.
# SIGTERM or SIGINT (Ctrl-C) to this script — or SIGTERM to `make`, which passes it on — stops the
# web process and the scheduler (each with the processes it started) within STOP_GRACE seconds.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
STOP_GRACE=15  # seconds a child gets to stop cleanly before it is killed

pids=()  # each child leads its own process group (job control below): stop() signals whole groups
stop() {
  trap - INT TERM EXIT
  local pid
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  for _ in $(seq $((STOP_GRACE * 4))); do
    alive=""
    for pid in "${pids[@]}"; do kill -0 -- "-$pid" 2>/dev/null && alive=1; done
    [ -z "$alive" ] && break
    sleep 0.25
  done
  for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
# A signal that arrives during the set-up steps takes effect once the running step ends (a
# migration is never cut in half); one that arrives while serving stops the children at once.
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM
trap stop EXIT

bash scripts/setup.sh
PORT="${CHATCRON_PORT:-3000}"
HOST="${CHATCRON_HOST:-127.0.0.1}"
export CHATCRON_API_URL="${CHATCRON_API_URL:-http://127.0.0.1:$PORT}"
python -m app.manage migrate
python -m app.manage seed-demo

# Job control: a background child gets its own process group and keeps SIGINT at its default
# (without it, bash starts background children with SIGINT ignored, and the web process
# never stops on Ctrl-C); the traps above forward the stop to each group.
set -m
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
pids+=($!)
set +m
wait -n "${pids[@]:0:${#pids[@]}-1}"  # the web process or the scheduler ended: stop the other
