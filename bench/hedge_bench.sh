#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Hedging benchmark of `llmux gateway` (issue 37, "Hedging before the first token"): two
# simulated DGX Sparks (`llmux sim`, clock --time-scale times faster) behind the gateway's
# round_robin (--policy: another), one of them made SLOW times slower at random moments (POST
# /admin/faults {"slow_factor": SLOW} for a few seconds, then {}), a closed loop of streaming chat
# through the gateway (llmux bench run: prompts of 256-768 tokens, 32-96 tokens out). Four runs,
# each with fresh processes and the same workload seed:
#   healthy          no slowdown, no hedge: the healthy fleet's TTFT p99, the reference
#   healthy_hedge    no slowdown, `hedge: {after: AFTER}`: what hedging costs a healthy fleet
#   slowed           the slowdown timeline, no hedge
#   slowed_hedge     the same timeline, `hedge: {after: AFTER}`
# The timeline (seeded: the same in both slowed runs): from 3 s in, a pause of 4-10 s, then A or
# B slowed for 2-4 s, again until the run ends. Figures: each run's TTFT p50/p99 and its ratio to
# the healthy run's p99, and the extra upstream requests hedging made (llmux_hedges_total over
# the requests answered, from the gateway's /metrics). Report: OUT/hedge_bench.md and
# OUT/hedge_bench.json.
#
# Usage: bench/hedge_bench.sh [--duration 60] [--warmup 5] [--time-scale 2] [--clients 16]
#          [--slow 10] [--after 2x] [--seed 7] [--policy round_robin]
#          [--runs healthy,healthy_hedge,slowed,slowed_hedge] [--out bench/results/hedge_bench]
# (--runs: which runs, in this order; the report needs all four, a partial list is for trying.)
# Env: LLMUX (binary, default build/llmux; copied first). Loopback only; servers on free ports,
# stopped by pid on exit; every wait is bounded.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
PY=/usr/bin/python3
DURATION=60 WARMUP=5 TIME_SCALE=2 CLIENTS=16 SLOW=10 AFTER=2x SEED=7 POLICY=round_robin
RUNS=healthy,healthy_hedge,slowed,slowed_hedge
PRESET=dgx-spark-qwen3.6-35b-a3b-fp8
OUT=$ROOT/bench/results/hedge_bench
CMDLINE="bench/hedge_bench.sh $*"
while [ $# -gt 0 ]; do
  case $1 in
    --duration) DURATION=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --time-scale) TIME_SCALE=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    --slow) SLOW=$2; shift 2 ;;
    --after) AFTER=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --policy) POLICY=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
bench_workspace hedge-bench
WORKLOAD=(--endpoint chat --input-len 512 --input-spread 0.5 --output-len 64 --output-spread 0.5 --ignore-eos
          --seed "$SEED" --no-progress --no-plots)

declare -A PORT
start_sim() {  # start_sim NAME DIR
  local n=$1 d=$2
  "$LLMUX" sim --port 0 --preset "$PRESET" --time-scale "$TIME_SCALE" \
    >"$d/sim-$n.out" 2>"$d/sim-$n.err" &
  STARTED+=($!)
  PORT[$n]=$(wait_ready "$d/sim-$n.out")
  [ -n "${PORT[$n]}" ] || { cat "$d/sim-$n.err" >&2; echo "sim $n did not start" >&2; exit 1; }
}
GW_PORT=''
start_gateway() {  # start_gateway DIR HEDGE ("" for none)
  local d=$1 hedge=$2
  {
    echo 'listen: "127.0.0.1:0"'
    echo "threads: 1"
    echo "access_log: $d/access.log"
    echo 'backends:'
    for n in A B; do echo "  - {name: $n, url: \"http://127.0.0.1:${PORT[$n]}\"}"; done
    echo 'routes:'
    echo "  - {name: all, backends: [A, B], policy: $POLICY${hedge:+, hedge: {after: $hedge\}}}"
  } >"$d/gateway.yaml"
  "$LLMUX" gateway --config "$d/gateway.yaml" >"$d/gateway.out" 2>"$d/gateway.err" &
  STARTED+=($!)
  GW_PORT=$(wait_ready "$d/gateway.out")
  [ -n "$GW_PORT" ] || { cat "$d/gateway.err" >&2; echo "gateway did not start" >&2; exit 1; }
  wait_http "http://127.0.0.1:$GW_PORT/health" || { echo "gateway /health not 200" >&2; exit 1; }
}

# The slowdown timeline, as lines "START_S BACKEND LENGTH_S" (seeded, the run's whole length).
TIMELINE=$TMP/timeline.txt
$PY - "$SEED" "$(( DURATION + WARMUP ))" >"$TIMELINE" <<'EOF'
import random, sys
rng = random.Random(int(sys.argv[1]))
end, t = float(sys.argv[2]), 3.0
while True:
    t += rng.uniform(4, 10)
    length = rng.uniform(2, 4)
    if t + length > end:
        break
    print(f"{t:.2f} {rng.choice('AB')} {length:.2f}")
    t += length
EOF

# play_timeline DIR: applies the timeline from now (each step bounded; stops at its end)
play_timeline() {
  local d=$1 start at n length
  start=$(now)
  while read -r at n length; do
    sleep "$($PY -c "print(max(0.0, $start + $at - $(now)))")"
    curl -s --max-time 2 -X POST -d "{\"slow_factor\": $SLOW}" \
      "http://127.0.0.1:${PORT[$n]}/admin/faults" >/dev/null || true
    echo "$(now) $n slow" >>"$d/faults.txt"
    sleep "$length"
    curl -s --max-time 2 -X POST -d '{}' "http://127.0.0.1:${PORT[$n]}/admin/faults" >/dev/null || true
    echo "$(now) $n clear" >>"$d/faults.txt"
  done <"$TIMELINE"
}

run() {  # run NAME HEDGE SLOWED(0|1)
  local name=$1 hedge=$2 slowed=$3 d=$TMP/$1 player=''
  mkdir -p "$d"
  start_sim A "$d"; start_sim B "$d"
  start_gateway "$d" "$hedge"
  log "$name: $CLIENTS clients for ${DURATION}s${hedge:+, hedge after $hedge}$([ "$slowed" = 1 ] && echo ", slowdowns x$SLOW")"
  if [ "$slowed" = 1 ]; then play_timeline "$d" & player=$!; fi
  "$LLMUX" bench run "${WORKLOAD[@]}" --url "http://127.0.0.1:$GW_PORT" --concurrency "$CLIENTS" \
    --duration "$DURATION" --warmup "${WARMUP}s" --out "$d" >"$d/bench.md" 2>"$d/bench.err" || {
    local rc=$?; [ "$rc" -eq 1 ] || { cat "$d/bench.err" >&2; exit "$rc"; }
  }
  [ -z "$player" ] || { kill "$player" 2>/dev/null || true; wait "$player" 2>/dev/null || true; }
  curl -s --max-time 5 "http://127.0.0.1:$GW_PORT/metrics" >"$d/metrics.txt" || true
  stop_all; STARTED=()
}

T_START=$(date +%s)
IFS=, read -ra RUN_NAMES <<<"$RUNS"
for r in "${RUN_NAMES[@]}"; do
  case $r in
    healthy) run healthy "" 0 ;;
    healthy_hedge) run healthy_hedge "$AFTER" 0 ;;
    slowed) run slowed "" 1 ;;
    slowed_hedge) run slowed_hedge "$AFTER" 1 ;;
    *) echo "unknown run $r" >&2; exit 2 ;;
  esac
done
[ "$RUNS" = healthy,healthy_hedge,slowed,slowed_hedge ] || { log "partial runs: $TMP"; KEEP_TMP=1; exit 0; }
mkdir -p "$OUT"
cp "$TIMELINE" "$OUT/timeline.txt"
$PY "$ROOT/bench/hedge_bench.py" --tmp "$TMP" --out "$OUT" --cmdline "$CMDLINE" \
  --after "$AFTER" --slow "$SLOW" --policy "$POLICY" --clients "$CLIENTS" --duration "$DURATION" \
  --time-scale "$TIME_SCALE" --preset "$PRESET" \
  --git-head "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
  --elapsed "$(( $(date +%s) - T_START ))"
log "report: $OUT/hedge_bench.md"
