#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# How much load can one `llmux bench` process drive on one core? (issue 3: >= 20,000 small
# requests/s and 2,000 concurrent streams, so the client is never the bottleneck.)
#
# `llmux sim --zero-cost` is pinned to one core, the client to another; in the same run wrk
# (requests/s) and h2load (streams) drive the same requests from the same core, and the report
# gives the ratios. When both tools reach the same figure the server is the limit; the client's
# own CPU time per request (user+sys) then says how far it could go: ceiling = requests / CPU s.
#
# Usage: bench/bench_client_ceiling.sh [DURATION_S=10] [STREAMS=2000] [TOKENS=200]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LLMUX=${LLMUX:-$ROOT/build/llmux}
DUR=${1:-10}
STREAMS=${2:-2000}
TOKENS=${3:-200}
CONC=${CONC:-64}
OUT=${OUT:-$ROOT/bench/results}
SIM_CPU=${SIM_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}
mkdir -p "$OUT"
tmp=$(mktemp -d)
SIM_PID=
trap '[ -n "$SIM_PID" ] && kill $SIM_PID 2>/dev/null; rm -rf "$tmp"' EXIT
ulimit -n $(( STREAMS * 2 + 1000 )) 2>/dev/null || ulimit -n 20000

taskset -c "$SIM_CPU" "$LLMUX" sim --port 0 --zero-cost --max-num-seqs $(( STREAMS * 2 )) \
  --output-len fixed:1 >"$tmp/ready" 2>"$tmp/sim.err" &
SIM_PID=$!
for _ in $(seq 100); do grep -q '"ready"' "$tmp/ready" 2>/dev/null && break; sleep 0.05; done
PORT=$(grep -o '"port":[0-9]*' "$tmp/ready" | cut -d: -f2)
[ -n "$PORT" ] || { echo "sim did not start" >&2; cat "$tmp/sim.err" >&2; exit 1; }
URL=http://127.0.0.1:$PORT
jq_() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# 1. Small non-streaming requests, keep-alive, closed loop at CONC.
TIMEFORMAT='%R %U %S'
{ time taskset -c "$CLIENT_CPU" "$LLMUX" bench run --url "$URL" --model Qwen3.6-35B-A3B \
    --no-stream --input-len 4 --output-len 1 --concurrency "$CONC" --duration "$DUR" \
    --warmup 1s --no-progress --no-plots --out "$tmp/rps" >/dev/null; } 2>"$tmp/rps.time"
bench_rps=$(jq_ "$tmp/rps/run.json" "round(d['summary']['c$CONC']['requests_per_s'])")
bench_reqs=$(jq_ "$tmp/rps/run.json" "len(d['levels'][0]['requests'])")
bench_fail=$(jq_ "$tmp/rps/run.json" "d['summary']['c$CONC']['failed']")
read -r real user sys <"$tmp/rps.time"
cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN {print u+s}')
util=$(awk -v c="$cpu" -v r="$real" 'BEGIN {printf "%.0f", 100*c/r}')
per_cpu=$(awk -v n="$bench_reqs" -v c="$cpu" 'BEGIN {printf "%.0f", n/c}')
us_per=$(awk -v n="$bench_reqs" -v c="$cpu" 'BEGIN {printf "%.1f", 1e6*c/n}')

body='{"model":"Qwen3.6-35B-A3B","prompt":"a b c d","max_tokens":1,"temperature":0}'
cat >"$tmp/post.lua" <<LUA
wrk.method = "POST"
wrk.body = '$body'
wrk.headers["Content-Type"] = "application/json"
LUA
wrk_rps=-
if command -v wrk >/dev/null; then
  taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONC" -d"${DUR}s" -s "$tmp/post.lua" "$URL/v1/completions" >"$tmp/wrk.txt" 2>&1 || true
  wrk_rps=$(awk '/Requests\/sec/ {printf "%.0f", $2}' "$tmp/wrk.txt")
fi
ratio_rps=$(awk -v a="$bench_rps" -v b="$wrk_rps" 'BEGIN {if (b+0>0) printf "%.2f", a/b; else print "-"}')

# 1b. The same small requests against a server faster than the sim: nginx answering a canned
# completion (scripts/setup --bench installs nginx-light), so the client is what is measured.
nx_bench=-; nx_wrk=-; nx_ratio=-; nx_fail=-
if command -v nginx >/dev/null; then
  NX_PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  mkdir -p "$tmp/nginx"
  cat >"$tmp/nginx/nginx.conf" <<NGX
worker_processes 1;
daemon off;
error_log $tmp/nginx/error.log;
pid $tmp/nginx/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  server {
    listen 127.0.0.1:$NX_PORT;
    keepalive_requests 10000000;
    location / {
      default_type application/json;
      return 200 '{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" hi","logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":4,"total_tokens":5,"completion_tokens":1}}';
    }
  }
}
NGX
  taskset -c "$SIM_CPU" nginx -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx" &
  NX_PID=$!
  for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$NX_PORT/" && break; sleep 0.05; done
  taskset -c "$CLIENT_CPU" "$LLMUX" bench run --url "http://127.0.0.1:$NX_PORT" --model m \
    --no-stream --input-len 4 --output-len 1 --concurrency "$CONC" --duration "$DUR" \
    --warmup 1s --no-progress --no-plots --out "$tmp/nx" >/dev/null 2>&1 || true
  nx_bench=$(jq_ "$tmp/nx/run.json" "round(d['summary']['c$CONC']['requests_per_s'])")
  nx_fail=$(jq_ "$tmp/nx/run.json" "d['summary']['c$CONC']['failed']")
  if command -v wrk >/dev/null; then
    taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONC" -d"${DUR}s" -s "$tmp/post.lua" "http://127.0.0.1:$NX_PORT/v1/completions" >"$tmp/nxwrk.txt" 2>&1 || true
    nx_wrk=$(awk '/Requests\/sec/ {printf "%.0f", $2}' "$tmp/nxwrk.txt")
  fi
  kill "$NX_PID" 2>/dev/null || true
  wait "$NX_PID" 2>/dev/null || true
  nx_ratio=$(awk -v a="$nx_bench" -v b="$nx_wrk" 'BEGIN {if (b+0>0) printf "%.2f", a/b; else print "-"}')
fi

# 2. Concurrent streams: STREAMS streams at once, TOKENS tokens each.
{ time taskset -c "$CLIENT_CPU" "$LLMUX" bench run --url "$URL" --model Qwen3.6-35B-A3B \
    --input-len 4 --output-len "$TOKENS" --ignore-eos --concurrency "$STREAMS" \
    --num-requests "$STREAMS" --no-progress --no-plots --out "$tmp/streams" >/dev/null; } 2>"$tmp/streams.time"
s_ok=$(jq_ "$tmp/streams/run.json" "d['summary']['c$STREAMS']['ok']")
s_inflight=$(jq_ "$tmp/streams/run.json" "d['levels'][0]['max_in_flight']")
s_tok=$(jq_ "$tmp/streams/run.json" "round(d['summary']['c$STREAMS']['output_tok_s'])")
s_wall=$(jq_ "$tmp/streams/run.json" "round(d['summary']['c$STREAMS']['wall_s'], 2)")
read -r sreal suser ssys <"$tmp/streams.time"
scpu=$(awk -v u="$suser" -v s="$ssys" 'BEGIN {print u+s}')
h2_wall=-; h2_ok=-
if command -v h2load >/dev/null; then
  printf '{"model":"Qwen3.6-35B-A3B","prompt":"a b c d","max_tokens":%d,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}' "$TOKENS" >"$tmp/s.json"
  taskset -c "$CLIENT_CPU" h2load --h1 -n "$STREAMS" -c "$STREAMS" -T 120 -N 120 -d "$tmp/s.json" \
    -H 'content-type: application/json' "$URL/v1/completions" >"$tmp/h2.txt" 2>&1 || true
  h2_wall=$(awk '/finished in/ {gsub(/s,|,/,"",$3); print $3}' "$tmp/h2.txt")
  h2_ok=$(awk '/requests:/ {for (i=1;i<=NF;i++) if ($(i)=="succeeded,") print $(i-1)}' "$tmp/h2.txt")
fi

report=$(cat <<MD
# llmux bench client ceiling (one core; \`llmux sim --zero-cost\` on another)

Small requests (non-streaming /v1/completions, 4 prompt tokens, 1 output token, keep-alive,
$CONC connections, ${DUR} s):

| client | requests/s | failed | client CPU | requests per client CPU-second | CPU µs per request |
|---|---:|---:|---:|---:|---:|
| llmux bench run | $bench_rps | $bench_fail | ${util}% | $per_cpu | $us_per |
| wrk -t1 | $wrk_rps | | | | |

llmux bench / wrk = **$ratio_rps** (same server, same core, same run). When the client's CPU is
below 100% the server is the limit; requests per CPU-second is the client's own ceiling.

The same requests against nginx answering a canned completion (a server faster than the sim, on
the other core), so that the client is the limit:

| client | requests/s | failed |
|---|---:|---:|
| llmux bench run | $nx_bench | $nx_fail |
| wrk -t1 | $nx_wrk | |

llmux bench / wrk = **$nx_ratio**. Goal: >= 20,000 requests/s from one core.

Concurrent streams ($STREAMS streams at once, $TOKENS tokens each, ignore_eos):

| client | streams completed | most in flight | wall s | output tok/s | client CPU s |
|---|---:|---:|---:|---:|---:|
| llmux bench run | $s_ok | $s_inflight | $s_wall | $s_tok | $scpu |
| h2load --h1 | $h2_ok | | $h2_wall | | |

Command: bench/bench_client_ceiling.sh $DUR $STREAMS $TOKENS (CONC=$CONC)
MD
)
echo "$report"
echo "$report" >"$OUT/bench_client_ceiling.md"
