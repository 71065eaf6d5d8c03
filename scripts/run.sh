#!/usr/bin/env bash
# `make run`: set up, migrate, seed the demo on first start, then serve in the foreground.
# Ctrl-C (SIGINT to the terminal's process group), a closed terminal (SIGHUP) or SIGTERM to this
# script — or SIGTERM to `make`, which passes it on — at any moment of start-up or serving stops
# every process the script started (web process, its build and workers, the scheduler) with
# SIGTERM, and kills what is left after STOP_GRACE seconds; a second signal while stopping kills
# at once.
#
# Each step prints a `[run] …` line before it starts (tests/integration/test_run_script_signals.py
# waits for them to signal the script at each moment of start-up).
set -euo pipefail
STOP_GRACE=15  # seconds the children get to stop cleanly before they are killed

groups=()   # the process group of each background child (job control: each leads its own)
stopping="" # set once stop() has begun: nothing more starts, a second signal skips the grace
hurry=""

# The processes to stop: members of the children's groups (in this script's session: a group id
# is a pid, and a pid can be reused), and every descendant of this script (a step in its foreground,
# a child that moved to a group of its own). Fills `live` and `live_groups`; zombies are gone
# already. Reads /proc with builtins only: it forks nothing, so it runs at once however busy the
# machine is.
find_live() {
  live=()
  live_groups=()
  local stat line pid g own session
  local -a f
  local -A parent=() group=() mine=() seen=()
  for g in "${groups[@]}"; do mine[$g]=1; done
  for stat in /proc/[0-9]*/stat; do
    read -r line 2>/dev/null <"$stat" || continue
    pid=${line%% *}
    f=(${line##*) })  # state ppid pgrp session …, after the command name (it may hold spaces, parentheses)
    [ "${f[0]}" = Z ] && continue
    parent[$pid]=${f[1]}
    group[$pid]=${f[2]}:${f[3]}
  done
  own=${group[$$]:-}
  session=${own#*:}
  for pid in "${!parent[@]}"; do
    [ "$pid" = "$$" ] || [ "$pid" = "$BASHPID" ] && continue
    g=${group[$pid]%:*}
    if [ -n "${mine[$g]:-}" ] && [ "${group[$pid]}" = "$g:$session" ] && [ "${group[$pid]}" != "$own" ]; then
      live+=("$pid")
      [ -n "${seen[$g]:-}" ] || live_groups+=("$g")
      seen[$g]=1
      continue
    fi
    g=${parent[$pid]}  # a descendant of this script?
    while [ -n "$g" ] && [ "$g" != 0 ] && [ "$g" != 1 ] && [ "$g" != "$$" ]; do g=${parent[$g]:-}; done
    [ "$g" = "$$" ] && live+=("$pid")
  done
  return 0
}

signal_all() {  # signal_all SIG: each live group as a whole (it takes in what forks meanwhile), each live process
  local g pid
  find_live
  for g in "${live_groups[@]}"; do kill "-$1" -- "-$g" 2>/dev/null || true; done
  for pid in "${live[@]}"; do kill "-$1" "$pid" 2>/dev/null || true; done
}

stop() {
  [ -n "$stopping" ] && return 0
  stopping=1
  set +m  # a signal may land inside start(): this loop's sleeps stay in this script's group
  trap 'hurry=1' INT TERM HUP  # a second Ctrl-C or SIGTERM: no grace
  trap '' PIPE  # the reader of our output may be gone (`make run | tee`, Ctrl-C ended it too): stop anyway
  local g deadline=$((SECONDS + STOP_GRACE + 1))
  # A child started just before the signal may not be in `groups` yet; bash's job table has it.
  for g in $(jobs -p); do [[ " ${groups[*]} " == *" $g "* ]] || groups+=("$g"); done
  find_live
  if [ "${#live[@]}" -gt 0 ]; then
    echo "[run] stopping (Ctrl-C again kills at once)" 2>/dev/null || true
    signal_all TERM
    while [ -z "$hurry" ] && [ "$SECONDS" -lt "$deadline" ]; do
      find_live
      [ "${#live[@]}" -eq 0 ] && break
      sleep 0.2 || true
    done
    signal_all KILL
  fi
  wait 2>/dev/null || true
}
on_signal() {
  stop
  trap - EXIT
  exit "$1"
}
# First thing: from here on a signal stops whatever has started, and nothing starts after it.
trap 'on_signal 130' INT
trap 'on_signal 143' TERM
trap 'on_signal 129' HUP  # the terminal closed: its SIGHUP reaches this group, not the children's
trap stop EXIT

# Start "$@" in the background, in a process group of its own (job control: it keeps SIGINT at its
# default instead of ignoring it, and stop() can signal the whole group).
start() {
  set -m
  "$@" &
  groups+=("$!")
  set +m
}

# A signal during a set-up step takes effect once the step ends (Ctrl-C reaches the step itself,
# so it ends at once; a SIGTERM to this script alone lets a migration finish).
echo "[run] setting up"
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
bash scripts/setup.sh
PORT="${CHATCRON_PORT:-3000}"
HOST="${CHATCRON_HOST:-127.0.0.1}"
export CHATCRON_API_URL="${CHATCRON_API_URL:-http://127.0.0.1:$PORT}"
echo "[run] migrating the database"
python -m app.manage migrate
echo "[run] seeding the demo"
python -m app.manage seed-demo

poll_health() {  # in the background: say when the web process answers
  for _ in $(seq 240); do
    if curl -sf "http://127.0.0.1:$PORT/api/health" >/dev/null 2>&1; then
      echo
      # what keeps agents from starting, in plain words, after the build output (app/agents/doctor.py)
      python -m app.agents.doctor || true
      echo "chatcron is up: open http://127.0.0.1:$PORT/ (Ctrl-C stops it)"
      return 0
    fi
    sleep 0.5
  done
}

servers=()
if [ -f scheduler/__main__.py ]; then
  echo "[run] starting the scheduler"
  start python -m scheduler
  servers+=("$!")
fi
echo "[run] starting the web process (a production build first)"
start reflex run --env prod --frontend-port "$PORT" --backend-port "$PORT" --backend-host "$HOST"
servers+=("$!")
start poll_health

# Serve until the web process or the scheduler ends, then stop the other (the EXIT trap) and exit
# with its status. A short sleep in the foreground rather than `wait -n`: a signal is acted on
# within half a second whatever bash's wait does with one that lands while it reaps another child.
while :; do
  for pid in "${servers[@]}"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      status=0
      wait "$pid" || status=$?
      echo "[run] process $pid ended with status $status: stopping the rest"
      exit "$status"
    fi
  done
  sleep 0.5 || true
done
