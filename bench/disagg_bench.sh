#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Does prefill/decode disaggregation pay on two DGX Sparks (issue 40)? Two simulated Sparks
# (`llmux sim --preset dgx-spark-qwen3.6-35b-a3b-fp8-atlas`, clock --time-scale times faster)
# behind `llmux gateway` on loopback, `llmux bench run` streaming chat closed loops through it,
# fresh processes for every case. Configurations:
#   unified   both backends role both, no disaggregation, today's best policy for the mix:
#             least_inflight and prefix_aware are both run on the agent mix first and the one
#             with the lower chat TTFT p99 is used everywhere (within 5%: the higher tok/s)
#   pd        spark1 role prefill (sim --kv-role producer), spark2 role decode (consumer),
#             disaggregation mode always
#   auto      both role both (sims --kv-role both), mode auto, threshold --threshold tokens:
#             long prompts prefill on one machine and decode on the other, the rest unified
# at link bandwidths 25 / 100 / 200 Gb/s (the sims' --kv-link-gbps), for three workloads:
#   agents    --workload agent-mix: 4 agents (5,000-60,000 prompt tokens, 200-2,000 out)
#             beside 16 short chats (100-500 in, 50-300 out)
#   light     2 agents beside the same 16 chats
#   chat      the 16 chats alone (auto at 200 Gb/s only: no prompt reaches its threshold)
# and a sensitivity table on the agent mix at --sens-gbps: pd with the transfer blocking the
# consumer's engine step instead of overlapping decode, the recurrent state 4x the model's,
# link efficiency 0.5 and 0.9 (base: 0.8), and the three pessimistic ones at once; auto with
# the transfer blocking, and with the three at once.
# Every figure is reported in simulated (model) time: the bench's wall-clock latencies times
# the time scale, its token rates divided by it; beside them the chats' ITL in the sims' own
# clock (each sim's /debug/requests: engine deadlines, free of wall-clock noise). Report:
# OUT/disagg_bench.md and OUT/disagg_bench.json (each case's settings, run.json's `mix` object,
# the sims' clock, the sims' transfer counters, the gateway's legs; run.json itself stays in the
# temporary directory, KEEP_TMP=1 keeps it). About 13 minutes on 2 cores.
#
# Usage: bench/disagg_bench.sh [--duration 22] [--warmup 3] [--time-scale 20] [--seed 1]
#          [--threshold 8192] [--sens-gbps 25] [--cases CASE,...] [--policy NAME]
#          [--out bench/results/disagg_bench]
# (--duration and --warmup in wall-clock seconds. --cases, e.g. agents/pd/200/base: a partial
# list is for trying, its cases' figures go to TMP, kept; with --policy the unified policy is
# not picked but given, and the trial cases are skipped. The report needs every case.)
# Env: LLMUX (binary, default build/llmux; copied first). Loopback only; servers on free ports,
# stopped by pid on exit; every wait is bounded (the bench's --timeout bounds a request).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
PY=/usr/bin/python3
DURATION=22 WARMUP=3 TIME_SCALE=20 SEED=1 THRESHOLD=8192 SENS_GBPS=25
PRESET=dgx-spark-qwen3.6-35b-a3b-fp8-atlas
OUT=$ROOT/bench/results/disagg_bench
CASES='' POLICY=''
CMDLINE="bench/disagg_bench.sh $*"
while [ $# -gt 0 ]; do
  case $1 in
    --duration) DURATION=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --time-scale) TIME_SCALE=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --threshold) THRESHOLD=$2; shift 2 ;;
    --sens-gbps) SENS_GBPS=$2; shift 2 ;;
    --cases) CASES=$2; shift 2 ;;
    --policy) POLICY=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
bench_workspace disagg-bench
# What crosses the link per request for Qwen3.6-35B-A3B (docs/sim.md): KV bytes per prompt
# token and the fixed recurrent state, checked against the sims' defaults (`sim --help` shows
# them to 6 digits).
KV_BYTES_PER_TOKEN=10240 STATE_BYTES=64389120
sim_default_is() {  # sim_default_is FLAG VALUE
  local v
  v=$("$LLMUX" sim --help | grep -A1 -e "$1" | grep -o 'NONNEGATIVE=[0-9.e+]*' | cut -d= -f2)
  $PY -c "import sys; sys.exit(not abs(float('${v:-nan}') - $2) <= 1e-5 * $2)" ||
    { echo "llmux sim $1 default is '$v', not $2: update this script" >&2; exit 1; }
}
sim_default_is --kv-transfer-bytes-per-token "$KV_BYTES_PER_TOKEN"
sim_default_is --kv-transfer-state-bytes "$STATE_BYTES"

CHATS=chat:16:100-500/50-300
AGENT=5000-60000/200-2000
workload_args() {  # workload_args WORKLOAD: the bench's mix flags
  case $1 in
    agents) echo "--workload agent-mix" ;;
    light) echo "--mix agent:2:$AGENT --mix $CHATS" ;;
    chat) echo "--mix $CHATS" ;;
    *) echo "unknown workload $1" >&2; exit 2 ;;
  esac
}

# The cases, in order: WORKLOAD/CONFIG/GBPS/VARIANT (CONFIG unified-POLICY for the trial).
GBPS_LIST=(25 100 200)
all_cases() {
  local w c g v
  [ -n "$POLICY" ] || printf '%s\n' agents/unified-least_inflight/0/base \
    agents/unified-prefix_aware/0/base
  for w in agents light chat; do
    [ "$w" = agents ] && [ -z "$POLICY" ] || echo "$w/unified/0/base"
    for g in "${GBPS_LIST[@]}"; do echo "$w/pd/$g/base"; done
    if [ "$w" = chat ]; then echo "$w/auto/200/base"; continue; fi
    for g in "${GBPS_LIST[@]}"; do echo "$w/auto/$g/base"; done
  done
  for v in overlap_off state_x4 eff_0.5 eff_0.9 worst; do echo "agents/pd/$SENS_GBPS/$v"; done
  for v in overlap_off worst; do echo "agents/auto/$SENS_GBPS/$v"; done
}

declare -A PORT
start_sims() {  # start_sims DIR KV_ROLE_A KV_ROLE_B EXTRA_SIM_ARGS...
  local d=$1 role_a=$2 role_b=$3 n role; shift 3
  for n in spark1 spark2; do
    role=$role_a; [ "$n" = spark2 ] && role=$role_b
    "$LLMUX" sim --port 0 --preset "$PRESET" --time-scale "$TIME_SCALE" --kv-role "$role" \
      --kv-engine-id "$n" "$@" >"$d/sim-$n.out" 2>"$d/sim-$n.err" &
    STARTED+=($!)
    PORT[$n]=$(wait_ready "$d/sim-$n.out")
    [ -n "${PORT[$n]}" ] || { cat "$d/sim-$n.err" >&2; echo "sim $n did not start" >&2; exit 1; }
  done
}
GW_PORT=''
start_gateway() {  # start_gateway DIR ROLE_A ROLE_B POLICY DISAGGREGATION_YAML
  local d=$1 role_a=$2 role_b=$3 policy=$4 disagg=$5
  {
    echo 'listen: "127.0.0.1:0"'
    echo "threads: 1"
    echo "access_log: $d/access.log"
    echo 'backends:'
    echo "  - {name: spark1, url: \"http://127.0.0.1:${PORT[spark1]}\", role: $role_a}"
    echo "  - {name: spark2, url: \"http://127.0.0.1:${PORT[spark2]}\", role: $role_b}"
    echo 'routes:'
    echo "  - {name: chat, backends: [spark1, spark2], policy: $policy$disagg}"
  } >"$d/gateway.yaml"
  "$LLMUX" gateway --config "$d/gateway.yaml" >"$d/gateway.out" 2>"$d/gateway.err" &
  STARTED+=($!)
  GW_PORT=$(wait_ready "$d/gateway.out")
  [ -n "$GW_PORT" ] || { cat "$d/gateway.err" >&2; echo "gateway did not start" >&2; exit 1; }
  wait_http "http://127.0.0.1:$GW_PORT/health" || { echo "gateway /health not 200" >&2; exit 1; }
}

run_case() {  # run_case WORKLOAD/CONFIG/GBPS/VARIANT
  local spec=$1 w c g v policy d
  IFS=/ read -r w c g v <<<"$spec"
  d=$TMP/cases/${spec//\//.}
  mkdir -p "$d"
  log "$spec"
  local link=()
  [ "$g" = 0 ] || link+=(--kv-link-gbps "$g")
  case $v in
    base) ;;
    overlap_off) link+=(--kv-transfer-overlap false) ;;
    state_x4) link+=(--kv-transfer-state-bytes $((STATE_BYTES * 4))) ;;
    eff_0.5) link+=(--kv-link-efficiency 0.5) ;;
    eff_0.9) link+=(--kv-link-efficiency 0.9) ;;
    worst) link+=(--kv-transfer-overlap false --kv-transfer-state-bytes $((STATE_BYTES * 4))
                  --kv-link-efficiency 0.5) ;;
    *) echo "unknown variant $v" >&2; exit 2 ;;
  esac
  case $c in
    unified-*) policy=${c#unified-}; c=unified ;;
    *) policy=$POLICY ;;
  esac
  case $c in
    unified)
      start_sims "$d" none none "${link[@]}"
      start_gateway "$d" both both "$policy" "" ;;
    pd)
      start_sims "$d" producer consumer "${link[@]}"
      start_gateway "$d" prefill decode "$policy" ", disaggregation: {mode: always}" ;;
    auto)
      start_sims "$d" both both "${link[@]}"
      start_gateway "$d" both both "$policy" \
        ", disaggregation: {mode: auto, threshold_tokens: $THRESHOLD}" ;;
    *) echo "unknown configuration $c" >&2; exit 2 ;;
  esac
  # shellcheck disable=SC2046
  "$LLMUX" bench run --url "http://127.0.0.1:$GW_PORT" --endpoint chat --ignore-eos \
    --seed "$SEED" --no-progress --no-plots --timeout 600 $(workload_args "$w") \
    --duration "$DURATION" --warmup "${WARMUP}s" --out "$d/run" >"$d/run.md" 2>"$d/run.err" || {
    local rc=$?; [ "$rc" -eq 1 ] || { cat "$d/run.err" >&2; exit "$rc"; }
  }
  local n
  for n in spark1 spark2; do
    curl -s --max-time 5 "http://127.0.0.1:${PORT[$n]}/metrics" >"$d/metrics-$n.txt" || true
    curl -s --max-time 10 "http://127.0.0.1:${PORT[$n]}/debug/requests?limit=100000" \
      >"$d/debug-$n.json" || true
  done
  stop_all; STARTED=()
  $PY "$ROOT/bench/disagg_bench.py" extract --dir "$d" --case "$spec" --policy "$policy" \
    --sim-args "${link[*]}" --time-scale "$TIME_SCALE"
}

T_START=$(date +%s)
if [ -n "$CASES" ]; then
  IFS=, read -ra CASE_LIST <<<"$CASES"
else
  mapfile -t CASE_LIST < <(all_cases)
fi
for spec in "${CASE_LIST[@]}"; do
  if [ -z "$POLICY" ] && [[ $spec != */unified-*/* ]]; then
    # The trial cases ran first: the unified policy for every other case.
    POLICY=$($PY "$ROOT/bench/disagg_bench.py" pick --tmp "$TMP")
    log "unified policy: $POLICY"
  fi
  run_case "$spec"
done
[ -z "$CASES" ] || { log "partial cases: $TMP"; KEEP_TMP=1; exit 0; }
mkdir -p "$OUT"
$PY "$ROOT/bench/disagg_bench.py" report --tmp "$TMP" --out "$OUT" --cmdline "$CMDLINE" \
  --duration "$DURATION" --warmup "$WARMUP" --time-scale "$TIME_SCALE" --preset "$PRESET" \
  --threshold "$THRESHOLD" --sens-gbps "$SENS_GBPS" --state-bytes "$STATE_BYTES" \
  --kv-bytes-per-token "$KV_BYTES_PER_TOKEN" \
  --git-head "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
  --elapsed "$(( $(date +%s) - T_START ))"
log "report: $OUT/disagg_bench.md"
