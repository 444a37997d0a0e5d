#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The gateway's cost on Anthropic's Messages API (issue 39's measure), against simulated DGX
# Sparks at real speed (time scale 1, ~50 tok/s a stream) behind `llmux gateway` with the seed's
# routing (examples/seed.yaml, whose default route sends /v1/messages to server1):
#  1. serial streams: STREAMS streamed /v1/messages requests one after the other (`llmux bench
#     run --concurrency 1`, 256 tokens each), straight to server1 and through the gateway,
#     alternating direct and gateway in ROUNDS rounds so that drift hits both; the ratio of
#     their output tok/s and the TTFT each adds;
#  2. the seed's compare (`llmux bench compare`, non-streaming as the seed's script) on
#     /v1/messages with chat beside it: REPEAT serial requests per path, then a burst of
#     CONCURRENCY.
#
# Usage: bench/messages_overhead.sh [REPEAT=3] [CONCURRENCY=8] [STREAMS=5] [ROUNDS=2]
# Writes bench/results/messages_overhead/ (run.json of each serial leg, compare.json, CSVs) and
# messages_overhead.md beside it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LLMUX=${LLMUX:-$ROOT/build/llmux}
REPEAT=${1:-3}
CONCURRENCY=${2:-8}
STREAMS=${3:-5}
ROUNDS=${4:-2}
OUT=${OUT:-$ROOT/bench/results}
source "$ROOT/bench/lib.sh"
tmp=$(mktemp -d)
STARTED=()
trap 'stop_all; rm -rf "$tmp"' EXIT

start_sim() {  # name -> prints the port
  "$LLMUX" sim --port 0 --preset dgx-spark-qwen3.6-35b-a3b-fp8 --time-scale 1 \
    >"$tmp/$1.ready" 2>"$tmp/$1.err" &
  STARTED+=($!)
}
start_sim server1
start_sim server2
PORT1=$(wait_ready "$tmp/server1.ready")
PORT2=$(wait_ready "$tmp/server2.ready")
[ -n "$PORT1" ] && [ -n "$PORT2" ] || { echo "a simulator did not start" >&2; exit 1; }
S1=http://127.0.0.1:$PORT1
# The example's backend URLs (the seed's LAN machines), in order, become the loopback simulators.
awk -v s1="$S1" -v s2="http://127.0.0.1:$PORT2" '
  /^ *url: http:\/\// { n++; sub(/http:\/\/[^ #]+/, n == 1 ? s1 : s2) }
  /^listen: / { $0 = "listen: \"127.0.0.1:0\"" }
  /^access_log: / { $0 = "access_log: off" }
  { print }' "$ROOT/examples/seed.yaml" >"$tmp/gateway.yaml"
"$LLMUX" gateway --config "$tmp/gateway.yaml" >"$tmp/gateway.ready" 2>"$tmp/gateway.err" &
STARTED+=($!)
GPORT=$(wait_ready "$tmp/gateway.ready")
[ -n "$GPORT" ] || { echo "the gateway did not start" >&2; cat "$tmp/gateway.err" >&2; exit 1; }
GW=http://127.0.0.1:$GPORT

# One serial leg: STREAMS streams of 256 tokens, one at a time, to URL; run.json under DIR.
# Each leg's prompts are its own (--seed), so that none finds another leg's prefix cached.
serial_leg() {  # URL DIR SEED
  "$LLMUX" bench run --url "$1" --endpoint messages --concurrency 1 --num-requests "$STREAMS" \
    --output-len 256 --ignore-eos --seed "$3" --no-plots --out "$2" >/dev/null
}
# Output tok/s and TTFT p50 over every leg of one path (the runs' aggregates, weighted by time).
path_figures() {  # DIR...
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
tokens = wall = 0.0
ttft = []
for leg in sys.argv[1:]:
    level = json.load(open(f"{leg}/run.json"))["levels"][0]
    aggregate = level["aggregate"]
    assert aggregate["failed"] == 0, f"{leg}: {aggregate['failed']} requests failed"
    tokens += aggregate["output_tokens"]
    wall += aggregate["wall_s"]
    ttft += [r["first_token_ns"] / 1e6 - r["start_ns"] / 1e6 for r in level["requests"]
             if r.get("first_token_ns") is not None and r.get("start_ns") is not None]
ttft.sort()
print(f"{tokens / wall:.3f} {ttft[len(ttft) // 2] if ttft else float('nan'):.2f}")
PY
}

rm -rf "$OUT/messages_overhead"
mkdir -p "$OUT/messages_overhead"
direct_legs=() gateway_legs=()
for round in $(seq "$ROUNDS"); do
  serial_leg "$S1" "$OUT/messages_overhead/serial_direct_$round" "$((2 * round))"
  direct_legs+=("$OUT/messages_overhead/serial_direct_$round")
  serial_leg "$GW" "$OUT/messages_overhead/serial_gateway_$round" "$((2 * round + 1))"
  gateway_legs+=("$OUT/messages_overhead/serial_gateway_$round")
done
read -r direct_tok_s direct_ttft < <(path_figures "${direct_legs[@]}")
read -r gateway_tok_s gateway_ttft < <(path_figures "${gateway_legs[@]}")

{
  echo "# /v1/messages through llmux gateway vs direct (llmux sim, DGX Spark preset, time scale 1)"
  echo
  echo "## Serial streams"
  echo
  echo "$((STREAMS * ROUNDS)) streamed requests a path, 256 tokens each, one at a time, in $ROUNDS rounds of direct then gateway, each leg with prompts of its own (no prefix found cached):"
  echo
  echo '```'
  echo "llmux bench run --url URL --endpoint messages --concurrency 1 --num-requests $STREAMS --output-len 256 --ignore-eos --seed LEG"
  echo '```'
  echo
  echo "| Path | Output tok/s | TTFT p50 ms |"
  echo "|---|---:|---:|"
  echo "| direct (server1) | $direct_tok_s | $direct_ttft |"
  echo "| gateway | $gateway_tok_s | $gateway_ttft |"
  echo
  /usr/bin/python3 -c "import sys; d, g = map(float, sys.argv[1:3]); print(f'Gateway / direct output tok/s: **{g / d:.3f}**')" \
    "$direct_tok_s" "$gateway_tok_s"
  echo
  echo "## The seed's compare on /v1/messages and chat"
  echo
  echo '```'
  echo "bench/messages_overhead.sh $REPEAT $CONCURRENCY $STREAMS $ROUNDS"
  echo "llmux bench compare --path 'direct messages=\$S1,messages' --path 'gateway messages=\$GW,messages' \\"
  echo "  --path 'direct chat=\$S1,chat' --path 'gateway chat=\$GW,chat' --repeat $REPEAT --concurrency $CONCURRENCY"
  echo '```'
  echo
  "$LLMUX" bench compare --path "direct messages=$S1,messages" --path "gateway messages=$GW,messages" \
    --path "direct chat=$S1,chat" --path "gateway chat=$GW,chat" \
    --repeat "$REPEAT" --concurrency "$CONCURRENCY" --no-plots --out "$OUT/messages_overhead" \
    || echo "(llmux bench compare exited with $?: some requests failed)"
} | tee "$OUT/messages_overhead.md"
# The data stay (run.json, compare.json, CSVs); the HTML pages made of them are not kept.
find "$OUT/messages_overhead" -name index.html -delete
