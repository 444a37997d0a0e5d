#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CTest entry point for the dashboard's browser test (label `e2e`).
#   run.sh SOURCE_DIR WORK_DIR
# Starts two `llmux sim` and `llmux gateway` routing chat completions over both (free loopback
# ports), puts them under load with `llmux bench run` (8 streams, in the background), and opens
# http://127.0.0.1:PORT/dashboard in headless Chromium (Debian's /usr/bin/chromium, or $CHROMIUM)
# driven by playwright-core (pinned in package-lock.json): check_dashboard.mjs checks that each
# backend appears, up, with tokens/s > 0, and that the tokens/s chart has drawn their lines. The
# screenshot lands in WORK_DIR/dashboard.png; with UPDATE_SCREENSHOT=1 also in docs/dashboard.png
# (the README shows it). LLMUX_BINARY and LLMUX_SOURCE_DIR come from CTest.
#
# Offline: as tests/e2e/npm_install.sh, an existing WORK_DIR/node_modules or the npm cache is
# used; only when neither works is the test skipped (exit 77, CTest's SKIP_RETURN_CODE).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$1
work=$2
: "${LLMUX_BINARY:?LLMUX_BINARY must name the llmux binary under test}"
: "${LLMUX_SOURCE_DIR:?LLMUX_SOURCE_DIR must name the source tree}"
chromium=${CHROMIUM:-/usr/bin/chromium}

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "FAIL: node and npm are needed for this test (scripts/setup installs nodejs and npm)" >&2
  exit 1
fi
if [[ ! -x $chromium ]]; then
  echo "FAIL: $chromium is needed for this test (scripts/setup installs Debian's chromium;" \
       "or set CHROMIUM to another Chromium binary)" >&2
  exit 1
fi
mkdir -p "$work"
cp "$src/package.json" "$src/package-lock.json" "$src/check_dashboard.mjs" "$work/"
cd "$work"
echo "node $(node --version), npm $(npm --version), $("$chromium" --version 2>/dev/null || echo chromium)"

. "$here/../npm_install.sh"
npm_install node_modules/playwright-core

tmp=$(mktemp -d "${TMPDIR:-/tmp}/llmux-e2e-dashboard.XXXXXX")
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do  # each gets 10 s to stop, then SIGKILL
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

# start NAME ARGS...: runs `llmux ARGS` in the background and sets $port from its JSON ready line
# (the first line on stdout; at most 10 s).
start() {
  local name=$1
  shift
  "$LLMUX_BINARY" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  pids+=($!)
  port=
  for _ in $(seq 100); do
    port=$(head -n 1 "$tmp/$name.out" | grep -o '"port":[0-9]*' | cut -d: -f2 || true)
    [[ -n $port ]] && return 0
    kill -0 "${pids[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  echo "FAIL: llmux $* printed no ready line; stderr:" >&2
  cat "$tmp/$name.err" >&2
  exit 1
}

# Two simulated DGX Sparks at twice their real speed, so tokens flow from the first seconds.
start sim1 sim --host 127.0.0.1 --port 0 --time-scale 2
sim1=$port
start sim2 sim --host 127.0.0.1 --port 0 --time-scale 2
sim2=$port
cat >"$tmp/gateway.yaml" <<EOF
listen: "127.0.0.1:0"
threads: 2
access_log: "off"
backends:
  - name: sim1
    url: http://127.0.0.1:$sim1
  - name: sim2
    url: http://127.0.0.1:$sim2
routes:
  - name: chat
    match: {path: /v1/chat/completions}
    backends: [sim1, sim2]
    policy: least_inflight
  - name: default
    backends: [sim1, sim2]
    policy: round_robin
backend_metrics: {enabled: true}
EOF
start gateway gateway --config "$tmp/gateway.yaml"
gateway=$port
echo "sims on :$sim1 and :$sim2, gateway on :$gateway"

# The README's screenshot shows half a minute of history; the test itself needs a few seconds.
if [[ ${UPDATE_SCREENSHOT:-0} == 1 ]]; then export SCREENSHOT_DELAY_MS=${SCREENSHOT_DELAY_MS:-30000}; fi

# Load for the whole check: 8 streams of chat completions, bounded by --duration.
"$LLMUX_BINARY" bench run --url "http://127.0.0.1:$gateway" --endpoint chat --concurrency 8 \
  --duration 60 --input-len 256 --output-len 96 --output-spread 0.5 --no-progress --no-plots \
  >"$tmp/bench.out" 2>"$tmp/bench.err" &
pids+=($!)
bench_pid=$!
sleep 3  # a few seconds of history before the page opens

status=0
timeout 90 node check_dashboard.mjs "http://127.0.0.1:$gateway/dashboard" --backends sim1,sim2 \
  --screenshot "$work/dashboard.png" --timeout 20 || status=$?
if [[ $status -ne 0 ]]; then
  echo "--- gateway stderr" >&2
  tail -n 30 "$tmp/gateway.err" >&2
  if ! kill -0 "$bench_pid" 2>/dev/null; then
    echo "--- bench run (ended early)" >&2
    tail -n 30 "$tmp/bench.out" "$tmp/bench.err" >&2
  fi
  exit 1
fi
if [[ ${UPDATE_SCREENSHOT:-0} == 1 ]]; then
  cp "$work/dashboard.png" "$LLMUX_SOURCE_DIR/docs/dashboard.png"
  echo "updated $LLMUX_SOURCE_DIR/docs/dashboard.png"
fi
