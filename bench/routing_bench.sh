#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Routing benchmark of `llmux gateway` (issue 10, "Measured, not assumed"): each policy side by
# side with round_robin and with fixed splits of the same workload straight to the machines, in
# one run, on simulated DGX Sparks (`llmux sim`, clock --time-scale times faster).
#
# Workload (llmux bench run, the same seed everywhere): streaming chat, prompts of 20-380 tokens
# (--input-len 200 --input-spread 0.9), output caps 32-512 (--output-len 272 --output-spread
# 0.88), natural stops (the simulator's own output lengths), closed loop.
#   seed      two Spark presets, 16 clients: the split 8+8 straight to the machines, then the
#             gateway with round_robin, least_inflight and adaptive.
#   mixed     one Spark and one with every step cost tripled (--t0/--m/--c x3), 16 clients:
#             fixed splits k fast + (16-k) slow, k = 4..14 step 2, then the gateway with
#             round_robin, least_inflight and adaptive.
#   admission two Sparks with max_inflight 8 each behind least_inflight, 64 clients: the
#             simulators' own running count sampled every 100 ms (never above 8), FIFO order of
#             the queued requests from the gateway's access log; then queue.size 16 under
#             Poisson arrivals at ~3x what the 16 slots serve, where the excess is refused (429).
# Each case runs DURATION seconds after a WARMUP, with fresh processes. Report: OUT/routing_bench.md
# and OUT/routing_bench.json (bench/routing_bench.py). --preset chooses the simulators' preset
# (docs/sim.md): dgx-spark-qwen3.6-35b-a3b-fp8 (the seed's, default) or
# dgx-spark-qwen3.6-35b-a3b-fp8-atlas; the slow machine of `mixed` is that preset's step costs x3.
#
# Usage: bench/routing_bench.sh [--duration 40] [--warmup 5] [--time-scale 10]
#          [--cases seed,mixed,admission] [--preset NAME] [--out bench/results/routing_bench]
# Env: LLMUX (binary, default build/llmux; copied first). Loopback only; servers on free ports,
# stopped by pid on exit; every wait is bounded.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
PY=/usr/bin/python3
DURATION=40 WARMUP=5 TIME_SCALE=10 CASES=seed,mixed,admission ADMISSION_RATE=45
PRESET=dgx-spark-qwen3.6-35b-a3b-fp8
OUT=$ROOT/bench/results/routing_bench
CMDLINE="bench/routing_bench.sh $*"
while [ $# -gt 0 ]; do
  case $1 in
    --duration) DURATION=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --time-scale) TIME_SCALE=$2; shift 2 ;;
    --cases) CASES=$2; shift 2 ;;
    --preset) PRESET=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
bench_workspace routing-bench
case $PRESET in  # the preset's step costs x3 (src/sim/config.cpp)
  dgx-spark-qwen3.6-35b-a3b-fp8) SLOW_FLAGS=(--t0 0.0594 --m 0.00264 --c 0.00855) ;;
  dgx-spark-qwen3.6-35b-a3b-fp8-atlas) SLOW_FLAGS=(--t0 0.0519) ;;  # m = c = 0
  *) echo "unknown preset $PRESET" >&2; exit 2 ;;
esac
WORKLOAD=(--endpoint chat --input-len 200 --input-spread 0.9 --output-len 272 --output-spread 0.88
          --seed 7 --no-progress --no-plots)

declare -A PORT
start_sim() {  # start_sim NAME DIR [FLAGS...]
  local n=$1 d=$2; shift 2
  "$LLMUX" sim --port 0 --preset "$PRESET" --time-scale "$TIME_SCALE" "$@" \
    >"$d/sim-$n.out" 2>"$d/sim-$n.err" &
  STARTED+=($!)
  PORT[$n]=$(wait_ready "$d/sim-$n.out")
  [ -n "${PORT[$n]}" ] || { cat "$d/sim-$n.err" >&2; echo "sim $n did not start" >&2; exit 1; }
}
GW_PORT=''
ADMIN_TOKEN=routing-bench-admin-token  # GET /admin/backends: the learned capacity curves
start_gateway() {  # start_gateway DIR POLICY EXTRA_BACKEND_KEYS EXTRA_TOP_LEVEL NAMES...
  local d=$1 policy=$2 bextra=$3 top=$4; shift 4
  {
    echo 'listen: "127.0.0.1:0"'
    echo "threads: 1"
    echo "access_log: $d/access.log"
    echo "admin: {token: $ADMIN_TOKEN}"
    [ -z "$top" ] || echo "$top"
    echo 'backends:'
    for n in "$@"; do echo "  - {name: $n, url: \"http://127.0.0.1:${PORT[$n]}\"$bextra}"; done
    echo 'routes:'
    echo "  - {name: all, backends: [$(IFS=,; echo "$*" | sed 's/,/, /g')], policy: $policy}"
  } >"$d/gateway.yaml"
  "$LLMUX" gateway --config "$d/gateway.yaml" >"$d/gateway.out" 2>"$d/gateway.err" &
  STARTED+=($!)
  GW_PORT=$(wait_ready "$d/gateway.out")
  [ -n "$GW_PORT" ] || { cat "$d/gateway.err" >&2; echo "gateway did not start" >&2; exit 1; }
  wait_http "http://127.0.0.1:$GW_PORT/health" || { echo "gateway /health not 200" >&2; exit 1; }
}
stop_started() { stop_all; STARTED=(); }
# bench_into DIR CLIENTS ARGS...: llmux bench run with the workload, warm-up and duration
bench_into() {
  local d=$1 c=$2; shift 2
  mkdir -p "$d"
  "$LLMUX" bench run "${WORKLOAD[@]}" --concurrency "$c" --duration "$DURATION" \
    --warmup "${WARMUP}s" --out "$d" "$@" >"$d/bench.md" 2>"$d/bench.err" || {
    # Exit 1: some requests failed (counted in the report: 404s of round_robin's lost
    # conversations, 503s past a queue's bounds); anything else is the bench failing.
    local rc=$?; [ "$rc" -eq 1 ] || { cat "$d/bench.err" >&2; return "$rc"; }
  }
}
# sample_running DIR NAMES...: every 100 ms, each simulator's vllm:num_requests_running, until
# the file DIR/stop exists (bounded by the run's length)
sample_running() {
  local d=$1; shift
  local end=$(( $(date +%s) + DURATION + WARMUP + 60 )) n v
  while [ ! -e "$d/stop" ] && [ "$(date +%s)" -lt "$end" ]; do
    for n in "$@"; do
      # (a sample that times out is skipped, never the end of the sampling: set -e)
      v=$(curl -s --max-time 1 "http://127.0.0.1:${PORT[$n]}/metrics" |
          awk '/^vllm:num_requests_running/ {print $2; exit}' || true)
      echo "$(now) $n ${v:-nan}" >>"$d/running.txt"
    done
    sleep 0.1
  done
}

run_case_seed() {
  local d=$TMP/seed p
  mkdir -p "$d"
  start_sim A "$d"; start_sim B "$d"
  log "seed: split 8+8"
  bench_into "$d/split" 16 --split "http://127.0.0.1:${PORT[A]}=8" --split "http://127.0.0.1:${PORT[B]}=8"
  for p in round_robin least_inflight adaptive; do
    log "seed: gateway $p"
    mkdir -p "$d/$p"
    start_gateway "$d/$p" "$p" "" "" A B
    bench_into "$d/$p" 16 --url "http://127.0.0.1:$GW_PORT"
    curl -s -H "Authorization: Bearer $ADMIN_TOKEN" "http://127.0.0.1:$GW_PORT/admin/backends" >"$d/$p/admin_backends.json" || true
    stop_pid "${STARTED[-1]}"; unset 'STARTED[-1]'
  done
  stop_started
}

run_case_mixed() {
  local d=$TMP/mixed k p
  mkdir -p "$d"
  start_sim F "$d"; start_sim S "$d" "${SLOW_FLAGS[@]}"
  for k in 4 6 8 10 12 14; do
    log "mixed: split $k fast + $((16 - k)) slow"
    bench_into "$d/split$k" 16 --split "http://127.0.0.1:${PORT[F]}=$k" --split "http://127.0.0.1:${PORT[S]}=$((16 - k))"
  done
  for p in round_robin least_inflight adaptive; do
    log "mixed: gateway $p"
    mkdir -p "$d/$p"
    start_gateway "$d/$p" "$p" "" "" F S
    bench_into "$d/$p" 16 --url "http://127.0.0.1:$GW_PORT"
    curl -s -H "Authorization: Bearer $ADMIN_TOKEN" "http://127.0.0.1:$GW_PORT/admin/backends" >"$d/$p/admin_backends.json" || true
    stop_pid "${STARTED[-1]}"; unset 'STARTED[-1]'
  done
  stop_started
}

run_case_admission() {
  local d=$TMP/admission q
  mkdir -p "$d"
  start_sim A "$d"; start_sim B "$d"
  for q in 256 16; do
    mkdir -p "$d/q$q"
    start_gateway "$d/q$q" least_inflight ", max_inflight: 8" "queue: {size: $q, timeout: 60s}" A B
    sample_running "$d/q$q" A B &
    local sampler=$!
    if [ "$q" = 256 ]; then
      log "admission: 64 closed-loop clients, max_inflight 8 each, queue.size $q"
      bench_into "$d/q$q" 64 --url "http://127.0.0.1:$GW_PORT"
    else
      # Open loop at about three times what 16 slots serve: the queue fills and the excess is
      # refused (a closed loop would resend each refused request at once, thousands a second).
      log "admission: Poisson arrivals at $ADMISSION_RATE/s, max_inflight 8 each, queue.size $q"
      bench_into "$d/q$q" 0 --url "http://127.0.0.1:$GW_PORT" --request-rate "$ADMISSION_RATE"
    fi
    touch "$d/q$q/stop"; wait "$sampler" 2>/dev/null || true
    stop_pid "${STARTED[-1]}"; unset 'STARTED[-1]'
  done
  stop_started
}

T_START=$(date +%s)
IFS=, read -ra RUN_CASES <<<"$CASES"
for c in "${RUN_CASES[@]}"; do
  case $c in
    seed|mixed|admission) "run_case_$c" ;;
    *) echo "unknown case $c" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT"
$PY "$ROOT/bench/routing_bench.py" --tmp "$TMP" --out "$OUT" --cmdline "$CMDLINE" \
  --duration "$DURATION" --warmup "$WARMUP" --time-scale "$TIME_SCALE" --preset "$PRESET" \
  --git-head "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
  --elapsed "$(( $(date +%s) - T_START ))"
log "report: $OUT/routing_bench.md"
