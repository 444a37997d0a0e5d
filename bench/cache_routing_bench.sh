#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Conversations and caches through `llmux gateway` (issue 11, "Measured, not assumed"): each case
# side by side with round_robin in one run, on simulated DGX Sparks (`llmux sim`, clock
# --time-scale times faster; fresh simulators, so fresh caches, for every run).
#
#   previous  32 users, each a 20-turn /v1/responses conversation chained by previous_response_id
#             (llmux bench run --conversation-turns 20 --conversation-mode previous):
#             round_robin without affinity; the seed's routing (every turn to server1); llmux
#             (affinity on, prefix_aware for new conversations); llmux again with the gateway
#             restarted mid-run (a new process, an empty table: ids found by asking; a user
#             whose turn failed while no gateway listened waits 500 ms: --error-pause 500).
#   codex     32 Codex-style conversations of 20 turns (store false, the history replayed each
#             turn, one prompt_cache_key each: --conversation-mode replay): round_robin;
#             prefix_aware; and the reference "each conversation on one fixed backend"
#             (consistent_hash on prompt_cache_key without a load bound).
#   prefix    12 distinct 2,000-token system prompts (24,000 tokens), simulators whose KV cache
#             holds 16,000 tokens (--num-kv-blocks 1000 of 16 tokens: the prompts are 1.5x one
#             backend's cache), 12 closed-loop clients, each request one system prompt drawn at
#             random plus a distinct 100-token question (chat): round_robin; prefix_aware.
# The simulators run with --enable-prompt-tokens-details (as a vLLM operator would). Report:
# OUT/cache_routing_bench.md and .json (bench/cache_routing_bench.py) with the issue's goals.
#
# --preset chooses the simulators' preset (docs/sim.md): dgx-spark-qwen3.6-35b-a3b-fp8 (the
# seed's, default) or dgx-spark-qwen3.6-35b-a3b-fp8-atlas.
#
# Usage: bench/cache_routing_bench.sh [--time-scale 2] [--prefix-time-scale 4]
#          [--cases previous,codex,prefix] [--preset NAME] [--out bench/results/cache_routing_bench]
# Env: LLMUX (binary, default build/llmux; copied first). Loopback only; servers on free ports,
# stopped by pid on exit; every wait is bounded.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
PY=/usr/bin/python3
TIME_SCALE=2 PREFIX_TIME_SCALE=4 CASES=previous,codex,prefix PRESET=dgx-spark-qwen3.6-35b-a3b-fp8
OUT=$ROOT/bench/results/cache_routing_bench
CMDLINE="bench/cache_routing_bench.sh $*"
while [ $# -gt 0 ]; do
  case $1 in
    --time-scale) TIME_SCALE=$2; shift 2 ;;
    --prefix-time-scale) PREFIX_TIME_SCALE=$2; shift 2 ;;
    --cases) CASES=$2; shift 2 ;;
    --preset) PRESET=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
bench_workspace cache-routing-bench
CONV=(--endpoint responses --conversation-turns 20 --concurrency 32 --input-len 64 --error-pause 500
      --output-len 32 --ignore-eos --seed 11 --no-progress --no-plots)
PREFIX=(--endpoint chat --shared-prefix 12 --prefix-len 2000 --input-len 100 --output-len 64
        --ignore-eos --concurrency 16 --num-requests 640 --warmup 64 --seed 13 --no-progress
        --no-plots)

declare -A PORT
SIM_PIDS=()
start_sims() {  # start_sims DIR SCALE [FLAGS...]: server1 and server2
  local d=$1 scale=$2 n; shift 2
  SIM_PIDS=()
  for n in server1 server2; do
    "$LLMUX" sim --port 0 --preset "$PRESET" --time-scale "$scale" --enable-prompt-tokens-details "$@" \
      >"$d/sim-$n.out" 2>"$d/sim-$n.err" &
    STARTED+=($!); SIM_PIDS+=($!)
    PORT[$n]=$(wait_ready "$d/sim-$n.out")
    [ -n "${PORT[$n]}" ] || { cat "$d/sim-$n.err" >&2; echo "sim $n did not start" >&2; exit 1; }
  done
}
stop_sims() { local p; for p in "${SIM_PIDS[@]}"; do stop_pid "$p"; done; SIM_PIDS=(); }
GW_PORT='' GW_PID=''
# start_gateway DIR LISTEN_PORT POLICY RESPONSES_BACKENDS AFFINITY: one route for everything
start_gateway() {
  local d=$1 listen=$2 policy=$3 backends=$4 affinity=$5
  {
    echo "listen: \"127.0.0.1:$listen\""
    echo "threads: 1"
    echo "access_log: $d/access.log"
    echo "timeouts: {drain: 10s}"
    echo "affinity: {enabled: $affinity}"
    echo 'backends:'
    for n in server1 server2; do echo "  - {name: $n, url: \"http://127.0.0.1:${PORT[$n]}\"}"; done
    echo 'routes:'
    echo "  - {name: all, backends: [$backends], policy: $policy}"
  } >"$d/gateway.yaml"
  "$LLMUX" gateway --config "$d/gateway.yaml" >>"$d/gateway.out" 2>>"$d/gateway.err" &
  GW_PID=$!
  STARTED+=($GW_PID)
  GW_PORT=$(wait_ready "$d/gateway.out" | tail -1)
  [ -n "$GW_PORT" ] || { cat "$d/gateway.err" >&2; echo "gateway did not start" >&2; exit 1; }
  wait_http "http://127.0.0.1:$GW_PORT/health" || { echo "gateway /health not 200" >&2; exit 1; }
}
bench_into() {  # bench_into DIR ARGS...
  local d=$1; shift
  "$LLMUX" bench run --url "http://127.0.0.1:$GW_PORT" --out "$d" "$@" >"$d/bench.md" 2>"$d/bench.err" || {
    # Exit 1: some requests failed (counted in the report: 404s of round_robin's lost
    # conversations, 503s past a queue's bounds); anything else is the bench failing.
    local rc=$?; [ "$rc" -eq 1 ] || { cat "$d/bench.err" >&2; return "$rc"; }
  }
}
# run_one CASE NAME SCALE POLICY BACKENDS AFFINITY SIM_FLAGS -- BENCH_ARGS...
run_one() {
  local c=$1 name=$2 scale=$3 policy=$4 backends=$5 affinity=$6 simflags=$7; shift 8
  local d=$TMP/$c/$name
  mkdir -p "$d"
  log "$c: $name (policy $policy over [$backends], affinity $affinity)"
  # shellcheck disable=SC2086
  start_sims "$d" "$scale" $simflags
  start_gateway "$d" 0 "$policy" "$backends" "$affinity"
  bench_into "$d" "$@"
  stop_pid "$GW_PID"
  stop_sims
}

run_case_previous() {
  run_one previous round_robin "$TIME_SCALE" round_robin "server1, server2" false "" -- "${CONV[@]}"
  run_one previous seed "$TIME_SCALE" first "server1" true "" -- "${CONV[@]}"
  run_one previous llmux "$TIME_SCALE" prefix_aware "server1, server2" true "" -- "${CONV[@]}"
  # The same with the gateway restarted mid-run: SIGTERM (running turns finish, new connections
  # are refused while it drains), then a new process on the same port, its table empty.
  local d=$TMP/previous/restart
  mkdir -p "$d"
  log "previous: llmux, restarted mid-run"
  start_sims "$d" "$TIME_SCALE"
  start_gateway "$d" 0 prefix_aware "server1, server2" true
  local port=$GW_PORT
  bench_into "$d" "${CONV[@]}" &
  local bench=$!
  sleep 4
  echo "$(now) restart" >"$d/restart.txt"
  stop_pid "$GW_PID"
  start_gateway "$d" "$port" prefix_aware "server1, server2" true
  echo "$(now) ready" >>"$d/restart.txt"
  wait "$bench" || true
  stop_pid "$GW_PID"
  stop_sims
}

run_case_codex() {
  local replay=(--conversation-mode replay)
  run_one codex round_robin "$TIME_SCALE" round_robin "server1, server2" true "" -- "${CONV[@]}" "${replay[@]}"
  run_one codex prefix_aware "$TIME_SCALE" prefix_aware "server1, server2" true "" -- "${CONV[@]}" "${replay[@]}"
  run_one codex fixed "$TIME_SCALE" "{name: consistent_hash, key: prompt_cache_key, load_factor: 0}" \
    "server1, server2" true "" -- "${CONV[@]}" "${replay[@]}"
}

run_case_prefix() {
  run_one prefix round_robin "$PREFIX_TIME_SCALE" round_robin "server1, server2" true "--num-kv-blocks 1000" -- "${PREFIX[@]}"
  run_one prefix prefix_aware "$PREFIX_TIME_SCALE" prefix_aware "server1, server2" true "--num-kv-blocks 1000" -- "${PREFIX[@]}"
}

T_START=$(date +%s)
IFS=, read -ra RUN_CASES <<<"$CASES"
for c in "${RUN_CASES[@]}"; do
  case $c in
    previous|codex|prefix) "run_case_$c" ;;
    *) echo "unknown case $c" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT"
$PY "$ROOT/bench/cache_routing_bench.py" --tmp "$TMP" --out "$OUT" --cmdline "$CMDLINE" \
  --time-scale "$TIME_SCALE" --prefix-time-scale "$PREFIX_TIME_SCALE" --preset "$PRESET" \
  --git-head "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
  --elapsed "$(( $(date +%s) - T_START ))"
log "report: $OUT/cache_routing_bench.md"
