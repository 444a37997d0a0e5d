#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# How cheap is `llmux sim`? One sim process pinned to one core, every model cost set to zero
# (--zero-cost), held open by STREAMS concurrent streaming requests (h2load over HTTP/1.1 on
# another core), each generating TOKENS tokens (ignore_eos). Reports tokens/s the simulator
# emitted (from its own vllm:generation_tokens_total) and that every stream completed.
# Goal (issue 2): 2,000 concurrent streams and >= 50,000 tokens/s, so that in load tests the
# gateway, never the simulator, is what is measured.
#
# Usage: bench/sim_capacity.sh [STREAMS=2000] [TOKENS=200]   (needs h2load: scripts/setup --bench)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LLMUX=${LLMUX:-$ROOT/build/llmux}
STREAMS=${1:-2000}
TOKENS=${2:-200}
OUT=${OUT:-$ROOT/bench/results}
command -v h2load >/dev/null || { echo "h2load missing: run scripts/setup --bench" >&2; exit 2; }
mkdir -p "$OUT"
tmp=$(mktemp -d)
trap 'kill $SIM_PID 2>/dev/null || true; rm -rf "$tmp"' EXIT

ulimit -n $(( STREAMS * 2 + 1000 )) 2>/dev/null || ulimit -n 20000
taskset -c 0 "$LLMUX" sim --port 0 --zero-cost --max-num-seqs $(( STREAMS * 2 )) >"$tmp/ready" 2>"$tmp/sim.err" &
SIM_PID=$!
for _ in $(seq 100); do grep -q '"ready"' "$tmp/ready" 2>/dev/null && break; sleep 0.05; done
PORT=$(grep -o '"port":[0-9]*' "$tmp/ready" | cut -d: -f2)
[ -n "$PORT" ] || { echo "sim did not start" >&2; cat "$tmp/sim.err" >&2; exit 1; }

printf '{"model":"Qwen3.6-35B-A3B","prompt":"capacity test","max_tokens":%d,"ignore_eos":true,"stream":true}' \
  "$TOKENS" >"$tmp/body.json"
gen_tokens() { curl -s "http://127.0.0.1:$PORT/metrics" | awk '/^vllm:generation_tokens_total/ {print $2}'; }

before=$(gen_tokens)
start=$(date +%s.%N)
taskset -c 1 h2load --h1 -n "$STREAMS" -c "$STREAMS" -T 120 -N 120 -d "$tmp/body.json" \
  -H 'content-type: application/json' "http://127.0.0.1:$PORT/v1/completions" >"$tmp/h2load.txt" 2>&1 || true
end=$(date +%s.%N)
after=$(gen_tokens)
rss_kb=$(awk '/VmHWM/ {print $2}' /proc/$SIM_PID/status)
succeeded=$(awk '/requests:/ {for (i=1;i<=NF;i++) if ($(i)=="succeeded,") print $(i-1)}' "$tmp/h2load.txt")
tokens=$(awk -v a="$after" -v b="$before" 'BEGIN {printf "%d", a-b}')
secs=$(awk -v s="$start" -v e="$end" 'BEGIN {printf "%.3f", e-s}')
rate=$(awk -v t="$tokens" -v s="$secs" 'BEGIN {printf "%.0f", t/s}')
lag=$(curl -s "http://127.0.0.1:$PORT/metrics" | awk '/^llmux_sim_engine_lag_max_seconds/ {print $2}')

report=$(cat <<MD
# llmux sim capacity (zero-cost model, one core)

| streams | tokens each | streams completed | tokens emitted | wall s | tokens/s | peak RSS MiB |
|---:|---:|---:|---:|---:|---:|---:|
| $STREAMS | $TOKENS | ${succeeded:-?} | $tokens | $secs | $rate | $(( rss_kb / 1024 )) |

Goal: >= 2000 concurrent streams and >= 50000 tokens/s. Wall time includes connecting all
streams. (h2load --h1, one request per connection, every stream open at once.)
MD
)
echo "$report"
echo "$report" >"$OUT/sim_capacity.md"
grep -E 'finished in|requests:|status codes' "$tmp/h2load.txt" >&2 || true
