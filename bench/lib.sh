# SPDX-License-Identifier: Apache-2.0
# Helpers the bench scripts share (sourced, not run): process start/stop by pid, readiness of an
# llmux process (its JSON ready line) and of an HTTP endpoint. Every wait is bounded.
# The caller sets STARTED=() and traps EXIT to stop what it started (stop_all).

log() { echo "[$(date +%T)] $*" >&2; }
now() { date +%s.%N; }

# stop_pid PID: SIGTERM, up to 5 s, then SIGKILL.
stop_pid() {
  local p=$1 i
  kill "$p" 2>/dev/null || return 0
  for i in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$p" 2>/dev/null || true
  wait "$p" 2>/dev/null || true
}
stop_all() { local p; for p in "${STARTED[@]}"; do stop_pid "$p"; done; }

# wait_ready FILE: the JSON ready line of an llmux process (up to 10 s); prints its port.
wait_ready() {
  local f=$1 i
  for i in $(seq 200); do grep -q '"event":"ready"' "$f" 2>/dev/null && break; sleep 0.05; done
  grep '"event":"ready"' "$f" | head -1 | grep -o '"port":[0-9]*' | cut -d: -f2
}

# wait_http URL: until it answers 2xx (up to 10 s); status 1 otherwise.
wait_http() {
  local i c
  for i in $(seq 100); do
    c=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1" || true)
    case $c in 2??) return 0 ;; esac
    sleep 0.1
  done
  return 1
}

# bench_workspace NAME: $TMP, a fresh /tmp/NAME.XXXXXX removed on exit (unless KEEP_TMP is set)
# after what the script started (STARTED) is stopped, and $LLMUX, a copy there of the binary
# under test (env LLMUX, default build/llmux), so that a rebuild during the run changes nothing.
# Checks $PY first when the script set one. Needs $ROOT.
bench_workspace() {
  if [ -n "${PY:-}" ] && [ ! -x "$PY" ]; then echo "missing $PY" >&2; exit 1; fi
  TMP=$(mktemp -d "/tmp/$1.XXXXXX")
  STARTED=()
  trap 'stop_all; [ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"' EXIT
  local source=${LLMUX:-$ROOT/build/llmux}
  [ -x "$source" ] || { echo "no llmux binary at $source (make build)" >&2; exit 1; }
  LLMUX=$TMP/llmux
  cp "$source" "$LLMUX"
}
