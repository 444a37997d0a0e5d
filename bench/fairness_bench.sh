#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sharing two machines between tenants (issue 38): two simulated DGX Sparks (`llmux sim`, clock
# --time-scale times faster), each `max_inflight: 4` in the gateway so its queue is used, and
# `llmux bench run --tenant ...` closed loops of streaming chat through the gateway. Each case
# with fresh processes:
#   alone          the interactive tenant (4 clients, 128 in / 64 out) alone, sharing on
#   fifo           interactive + a batch tenant (64 clients, 128 in / 256 out), the queue one
#                  FIFO (one class, one tenant: the headers are ignored), as before issue 38
#   fair           the same load, sharing on (interactive and batch classes, tenants)
#   heavy_light    two equal tenants of the default class, heavy 60 clients and light 6, both
#                  backlogged; light stops halfway: the token rates while both ran, and how soon
#                  after light's last request the heavy one holds all 8 slots (access log)
#   weights        tenants a (weight 3) and b (weight 1), 24 clients each: their token shares
#   weights_fifo   the same load through one FIFO: the fleet's throughput without sharing
#   vllm_fcfs      interactive + batch on sims scheduling by priority with 4 sequences each, the
#   vllm_priority  gateway letting 12 per backend through with every class filling every slot:
#                  send_priority off, then on (the class as vLLM's priority)
# Figures: the interactive TTFT p99 alone, under FIFO and under sharing (and their ratios), the
# heavy/light rate ratio and takeover time, the 3:1 share, the fleet's throughput with sharing
# over FIFO's (tokens per second of the whole fleet while every client runs, from the access
# log: the closed loops' drain after the run is left out), and the interactive TTFT p99 with
# send_priority off and on. Report:
# OUT/fairness_bench.md and OUT/fairness_bench.json.
#
# Usage: bench/fairness_bench.sh [--duration 30] [--warmup 5] [--time-scale 5] [--seed 3]
#          [--cases alone,fifo,fair,heavy_light,weights,weights_fifo,vllm_fcfs,vllm_priority]
#          [--out bench/results/fairness_bench]
# (--cases: a partial list is for trying; the report needs them all.)
# Env: LLMUX (binary, default build/llmux; copied first). Loopback only; servers on free ports,
# stopped by pid on exit; every wait is bounded (a request started before the end of a run may
# wait in the queue: the bench's --timeout bounds it).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
PY=/usr/bin/python3
DURATION=30 WARMUP=5 TIME_SCALE=5 SEED=3
CASES=alone,fifo,fair,heavy_light,weights,weights_fifo,vllm_fcfs,vllm_priority
ALL_CASES=$CASES
PRESET=dgx-spark-qwen3.6-35b-a3b-fp8
OUT=$ROOT/bench/results/fairness_bench
CMDLINE="bench/fairness_bench.sh $*"
while [ $# -gt 0 ]; do
  case $1 in
    --duration) DURATION=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --time-scale) TIME_SCALE=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --cases) CASES=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
bench_workspace fairness-bench
COMMON=(--endpoint chat --ignore-eos --seed "$SEED" --no-progress --no-plots --timeout 300)
INTERACTIVE=alice:4:interactive:128/64
BATCH=nightly:64:batch:128/256

declare -A PORT
start_sims() {  # start_sims DIR EXTRA_SIM_ARGS...
  local d=$1 n; shift
  for n in A B; do
    "$LLMUX" sim --port 0 --preset "$PRESET" --time-scale "$TIME_SCALE" "$@" \
      >"$d/sim-$n.out" 2>"$d/sim-$n.err" &
    STARTED+=($!)
    PORT[$n]=$(wait_ready "$d/sim-$n.out")
    [ -n "${PORT[$n]}" ] || { cat "$d/sim-$n.err" >&2; echo "sim $n did not start" >&2; exit 1; }
  done
}
GW_PORT=''
start_gateway() {  # start_gateway DIR MAX_INFLIGHT BACKEND_EXTRA SHARING_YAML
  local d=$1 max=$2 extra=$3 sharing=$4 n
  {
    echo 'listen: "127.0.0.1:0"'
    echo "threads: 1"
    echo "access_log: $d/access.log"
    echo "queue: {size: 1024, timeout: 300s}"
    echo 'backends:'
    for n in A B; do
      echo "  - {name: $n, url: \"http://127.0.0.1:${PORT[$n]}\", max_inflight: $max$extra}"
    done
    echo 'routes:'
    echo "  - {name: chat, backends: [A, B], policy: least_inflight}"
    printf '%s\n' "$sharing"
  } >"$d/gateway.yaml"
  "$LLMUX" gateway --config "$d/gateway.yaml" >"$d/gateway.out" 2>"$d/gateway.err" &
  STARTED+=($!)
  GW_PORT=$(wait_ready "$d/gateway.out")
  [ -n "$GW_PORT" ] || { cat "$d/gateway.err" >&2; echo "gateway did not start" >&2; exit 1; }
  wait_http "http://127.0.0.1:$GW_PORT/health" || { echo "gateway /health not 200" >&2; exit 1; }
}
bench() {  # bench DIR NAME DURATION TENANT...
  local d=$1 name=$2 duration=$3; shift 3
  local args=() t
  for t in "$@"; do args+=(--tenant "$t"); done
  "$LLMUX" bench run "${COMMON[@]}" --url "http://127.0.0.1:$GW_PORT" "${args[@]}" \
    --duration "$duration" --warmup "${WARMUP}s" --out "$d/$name" >"$d/$name.md" 2>"$d/$name.err" || {
    local rc=$?; [ "$rc" -eq 1 ] || { cat "$d/$name.err" >&2; exit "$rc"; }
  }
}
finish() {  # finish DIR
  curl -s --max-time 5 "http://127.0.0.1:$GW_PORT/metrics" >"$1/metrics.txt" || true
  stop_all; STARTED=()
}

# One FIFO: nobody's tenant or class header is read, one class that fills every slot.
FIFO_SHARING='tenants: {header: X-Llmux-Unused-Tenant}
priorities: {header: X-Llmux-Unused-Priority, classes: [{name: default}]}'
# Every class may fill every slot: the gateway reserves nothing (vLLM's queue is measured).
NO_RESERVE='priorities: {classes: [{name: interactive}, {name: default}, {name: batch}]}'

run_case() {
  local name=$1 d=$TMP/$1
  mkdir -p "$d"
  log "$name"
  case $name in
    alone)
      start_sims "$d"; start_gateway "$d" 4 "" ""
      bench "$d" run "$DURATION" "$INTERACTIVE" ;;
    fifo)
      start_sims "$d"; start_gateway "$d" 4 "" "$FIFO_SHARING"
      bench "$d" run "$DURATION" "$INTERACTIVE" "$BATCH" ;;
    fair)
      start_sims "$d"; start_gateway "$d" 4 "" ""
      bench "$d" run "$DURATION" "$INTERACTIVE" "$BATCH" ;;
    heavy_light)
      start_sims "$d"; start_gateway "$d" 4 "" ""
      bench "$d" heavy "$DURATION" heavy:60:default:128/256 &
      local heavy=$!
      bench "$d" light "$(( DURATION / 2 ))" light:6:default:128/256
      wait "$heavy" ;;
    weights)
      start_sims "$d"; start_gateway "$d" 4 "" "tenants: {weights: {a: 3, b: 1}}"
      bench "$d" run "$DURATION" a:24:default:128/256 b:24:default:128/256 ;;
    weights_fifo)
      start_sims "$d"; start_gateway "$d" 4 "" "$FIFO_SHARING"
      bench "$d" run "$DURATION" a:24:default:128/256 b:24:default:128/256 ;;
    vllm_fcfs|vllm_priority)
      start_sims "$d" --scheduling-policy priority --max-num-seqs 4
      start_gateway "$d" 12 "$([ "$name" = vllm_priority ] && echo ', send_priority: true')" \
        "$NO_RESERVE"
      bench "$d" run "$DURATION" "$INTERACTIVE" "$BATCH" ;;
    *) echo "unknown case $name" >&2; exit 2 ;;
  esac
  finish "$d"
}

T_START=$(date +%s)
IFS=, read -ra CASE_NAMES <<<"$CASES"
for c in "${CASE_NAMES[@]}"; do run_case "$c"; done
[ "$CASES" = "$ALL_CASES" ] || { log "partial cases: $TMP"; KEEP_TMP=1; exit 0; }
mkdir -p "$OUT"
$PY "$ROOT/bench/fairness_bench.py" --tmp "$TMP" --out "$OUT" --cmdline "$CMDLINE" \
  --duration "$DURATION" --warmup "$WARMUP" --time-scale "$TIME_SCALE" --preset "$PRESET" \
  --git-head "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
  --elapsed "$(( $(date +%s) - T_START ))"
log "report: $OUT/fairness_bench.md"
