#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The seed's two benchmark scripts, as `llmux bench throughput` and `llmux bench compare`, against
# two simulated DGX Sparks (`llmux sim --preset dgx-spark-qwen3.6-35b-a3b-fp8`, each on its own
# loopback port), with `llmux gateway` in front of them configured as the seed's gateway
# (examples/seed.yaml with the simulators' loopback addresses): /v1/responses* -> server1, chat
# round-robin over both, the rest -> server1. GATEWAY=http://host:port measures another gateway.
#
# Time scale 1 (default) gives figures directly comparable with the seed's (~50 tok/s single
# stream, ~300 tok/s at N=8); a larger TIME_SCALE runs faster and multiplies every tok/s by it.
#
# Usage: bench/bench_seed_scripts.sh [TIME_SCALE=1]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LLMUX=${LLMUX:-$ROOT/build/llmux}
SCALE=${1:-1}
OUT=${OUT:-$ROOT/bench/results}
mkdir -p "$OUT"
tmp=$(mktemp -d)
PIDS=()
cleanup() {
  for n in server1 server2; do
    if [ -s "$tmp/$n.err" ] && grep -qiE 'error|fatal|abort' "$tmp/$n.err"; then
      echo "--- $n stderr:" >&2; tail -5 "$tmp/$n.err" >&2
    fi
  done
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

start_sim() {  # name -> sets PORT_<name>
  "$LLMUX" sim --port 0 --preset dgx-spark-qwen3.6-35b-a3b-fp8 --time-scale "$SCALE" \
    >"$tmp/$1.ready" 2>"$tmp/$1.err" &
  PIDS+=($!)
  for _ in $(seq 100); do grep -q '"ready"' "$tmp/$1.ready" 2>/dev/null && break; sleep 0.05; done
  local port
  port=$(grep -o '"port":[0-9]*' "$tmp/$1.ready" | cut -d: -f2)
  [ -n "$port" ] || { echo "sim $1 did not start" >&2; cat "$tmp/$1.err" >&2; exit 1; }
  printf -v "PORT_$1" '%s' "$port"
}
start_sim server1
start_sim server2
S1=http://127.0.0.1:$PORT_server1
S2=http://127.0.0.1:$PORT_server2
if [ -z "${GATEWAY:-}" ]; then
  # The example's backend URLs (the seed's LAN machines), in order, become the two loopback
  # simulators: nothing here connects to the example's own addresses.
  awk -v s1="$S1" -v s2="$S2" '
    /^ *url: http:\/\// { n++; sub(/http:\/\/[^ #]+/, n == 1 ? s1 : s2) }
    /^listen: / { $0 = "listen: \"127.0.0.1:0\"" }
    /^access_log: / { $0 = "access_log: off" }
    { print }' "$ROOT/examples/seed.yaml" >"$tmp/gateway.yaml"
  "$LLMUX" gateway --config "$tmp/gateway.yaml" >"$tmp/gateway.ready" 2>"$tmp/gateway.err" &
  PIDS+=($!)
  for _ in $(seq 100); do grep -q '"ready"' "$tmp/gateway.ready" 2>/dev/null && break; sleep 0.05; done
  GPORT=$(grep -o '"port":[0-9]*' "$tmp/gateway.ready" | cut -d: -f2)
  [ -n "$GPORT" ] || { echo "gateway did not start" >&2; cat "$tmp/gateway.err" >&2; exit 1; }
  GW=http://127.0.0.1:$GPORT
else
  GW=$GATEWAY
fi

{
  echo "# The seed's benchmarks on two simulated DGX Sparks (llmux sim, time scale $SCALE)"
  echo
  echo "Figures are tok/s as the client sees them; at time scale $SCALE divide by $SCALE for model time."
  echo
  echo '```'
  echo "llmux bench throughput --target server1=\$S1 --target server2=\$S2 --out DIR"
  echo '```'
  echo
  "$LLMUX" bench throughput --target "server1=$S1" --target "server2=$S2" --out "$OUT/seed_throughput" \
    || echo "(llmux bench throughput exited with $?: some requests failed)"
  echo
  echo '```'
  echo "llmux bench compare --direct \$S1 --gateway \$GW --out DIR   # GW = $( [ -n "${GATEWAY:-}" ] && echo "$GATEWAY" || echo "llmux gateway, the seed's routing")"
  echo '```'
  echo
  "$LLMUX" bench compare --direct "$S1" --gateway "$GW" --out "$OUT/seed_compare" \
    || echo "(llmux bench compare exited with $?: some requests failed)"
  echo "Command: bench/bench_seed_scripts.sh $SCALE"
} | tee "$OUT/bench_seed_scripts.md"
