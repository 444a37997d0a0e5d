#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# llmux gateway vs its peers, side by side in one run (issue 4, "Measured, not assumed"; issue 13:
# one run, the same machine and pinning for every row, each proxy with one worker).
#
# Paths: direct (no proxy), llmux (`gateway --threads 1 --access-log off`, metrics on: the quick
# form), llmux-bare (the same binary from a YAML config written into the run's temp dir: one
# thread, `metrics: {enabled: false}`, `access_log: off`), llmux-logged (the same config with
# metrics on and the access log written to a file in the temp dir), llmux-base (as llmux with the
# --baseline binary, only when one is given), nginx (Debian's, one worker, keep-alive upstream,
# no buffering), HAProxy (Debian's, nbthread 1, http-no-delay, http-reuse always) and the seed's
# FastAPI + httpx proxy (one uvicorn worker). Configs are the templates in bench/peers/. Each
# proxy is pinned to PROXY_CPU, load generator and backend to LOAD_CPU. Every section runs ROUNDS
# rounds with the paths in a rotated order, and the report gives medians over rounds and the
# issue-13 goals as ratios of this run, each met or missed:
#   (a) serial streaming tok/s against `llmux sim` (DGX Spark preset)    llmux/direct >= 0.99
#   (b) req/s, p50/p99 and proxy CPU us/request of small POSTs via wrk    CPU/request llmux/nginx
#       against nginx `return 200`                                        <= 1.00 (stretch 0.85),
#                                                                         p99 llmux <= nginx,
#                                                                         llmux-logged/llmux-bare
#                                                                         CPU/request <= 1.10
#   (c) 1,000 streams x 50 tok/s (client `llmux bench run`): ITL, and the delay each path adds to
#       the first SSE event (TTFT) and the last (E2E) against direct          (reported)
#   (d) RSS per held-open stream at each --mem-streams count (2,000 and    llmux/HAProxy <= 1.00
#       5,000): client `llmux bench run` (completions, --output-len          at each count, every
#       MEM_TOKENS, ignore_eos) against `llmux sim --t0 MEM_T0`, RSS sampled  event delivered
#       while the backend runs all N streams; then every stream must end
#       with all its events (run.json: failed 0, N x MEM_TOKENS token events)
#   (e) where (b)'s tail comes from: (b)'s load again from bench/peers/latrec.cpp, which records   (reported)
#       every request; the p99 tail split into bursts (the whole path slow at once) and the rest,
#       p99 outside bursts, the proxy's involuntary context switches, periodicity at llmux's
#       50/200 ms timer periods
#
# Old vs new binary in one run: --baseline BIN (or env LLMUX_BASELINE) adds the path llmux-base,
# BIN run exactly like llmux (same flags, same pinning, copied first too) in every section,
# rotated with the others; the report then gives new/baseline ratios of proxy CPU us/request (b)
# and KiB per stream (d, each stream count) (plus req/s, p99, tok/s, CPU per token), names both
# binaries (path, mtime, sha256, git rev) and checks CPU/request against --baseline-budget (5%).
# Build BIN with bench/build_baseline.sh REV (a temporary git worktree; prints the binary's path):
#   bench/gateway_vs_peers.sh --baseline "$(bench/build_baseline.sh)" --out /tmp/gvp
#
# Usage: bench/gateway_vs_peers.sh [--rounds 3] [--sections abcde] [--serial-requests 5]
#          [--serial-tokens 128] [--wrk-duration 5] [--wrk-connections 64] [--itl-streams 1000]
#          [--itl-tokens 200] [--mem-streams 2000,5000] [--mem-tokens 80] [--mem-t0 0.25]
#          [--paths direct,llmux,llmux-bare,llmux-logged,nginx,haproxy,fastapi]
#          [--baseline BIN] [--baseline-budget 5] [--out bench/results]
# (d) keeps each stream open MEM_TOKENS x MEM_T0 s (default 80 x 0.25 = 20 s): the ramp of the
# largest count must end well before that. A proxy holds 2 sockets per stream: the largest
# --mem-streams must fit the fd limit (ulimit -n, raised to 20000 here: at most ~9,900 streams).
# The FastAPI path runs in (a) and (b) only (it cannot hold the streams of (c) and (d); FASTAPI_ALL=1
# runs it there too).
# Env: ITL_CLIENT_CPU (cores of the (c) client, default all), MEM_CLIENT_CPU (cores of the (d)
# client, default all: (d) measures memory, not CPU), LLMUX (binary, default build/llmux; copied
# first so a concurrent rebuild cannot change it mid-run), LLMUX_BASELINE (as --baseline),
# PROXY_CPU (0), LOAD_CPU (1), KEEP_TMP=1. Loopback only; every wait is bounded; only processes
# this script started are stopped (by pid).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
PEERS=$ROOT/bench/peers
PY=/usr/bin/python3
ROUNDS=3 SECTIONS=abcde SERIAL_REQS=5 SERIAL_TOKENS=128 WRK_DUR=5 WRK_CONN=64
ITL_STREAMS=1000 ITL_TOKENS=200 MEM_STREAMS=2000,5000 MEM_TOKENS=80 MEM_T0=0.25
ALL_PATHS=direct,llmux,llmux-bare,llmux-logged,nginx,haproxy,fastapi
OUT=$ROOT/bench/results
BASELINE=${LLMUX_BASELINE:-} BASELINE_BUDGET=5
PROXY_CPU=${PROXY_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
# (c): sim + client on one core cannot sustain 1,000 x 50 events/s (measured: ~32k tok/s, ITL p50
# 31 ms direct), so by default the client of (c) may run on any core; the sim stays on LOAD_CPU.
ITL_CLIENT_CPU=${ITL_CLIENT_CPU:-0-$(($(nproc) - 1))}
MEM_CLIENT_CPU=${MEM_CLIENT_CPU:-0-$(($(nproc) - 1))}
CMDLINE="${LLMUX_BASELINE:+LLMUX_BASELINE=$LLMUX_BASELINE }bench/gateway_vs_peers.sh $*"
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --sections) SECTIONS=$2; shift 2 ;;
    --serial-requests) SERIAL_REQS=$2; shift 2 ;;
    --serial-tokens) SERIAL_TOKENS=$2; shift 2 ;;
    --wrk-duration) WRK_DUR=$2; shift 2 ;;
    --wrk-connections) WRK_CONN=$2; shift 2 ;;
    --itl-streams) ITL_STREAMS=$2; shift 2 ;;
    --itl-tokens) ITL_TOKENS=$2; shift 2 ;;
    --mem-streams) MEM_STREAMS=$2; shift 2 ;;
    --mem-tokens) MEM_TOKENS=$2; shift 2 ;;
    --mem-t0) MEM_T0=$2; shift 2 ;;
    --paths) ALL_PATHS=$2; shift 2 ;;
    --baseline) BASELINE=$2; shift 2 ;;
    --baseline-budget) BASELINE_BUDGET=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
IFS=, read -r -a PATHS <<<"$ALL_PATHS"
for p in "${PATHS[@]}"; do
  case $p in direct|llmux|llmux-bare|llmux-logged|llmux-base|nginx|haproxy|fastapi) ;; *) echo "unknown path $p" >&2; exit 2 ;; esac
done
IFS=, read -r -a MEM_LIST <<<"$MEM_STREAMS"
MEM_MAX=0
for n in "${MEM_LIST[@]}"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "--mem-streams $MEM_STREAMS: expected a comma list of stream counts, e.g. 2000,5000" >&2; exit 2; }
  [ "$n" -gt "$MEM_MAX" ] && MEM_MAX=$n
done
[[ $MEM_TOKENS =~ ^[1-9][0-9]*$ ]] || { echo "--mem-tokens $MEM_TOKENS: expected a positive number" >&2; exit 2; }
MEM_DUR=$(awk -v l="$MEM_TOKENS" -v t="$MEM_T0" 'BEGIN {d = l * t; if (d <= 0) exit 1; printf "%d", (d == int(d)) ? d : int(d) + 1}') \
  || { echo "--mem-t0 $MEM_T0: expected a positive number of seconds" >&2; exit 2; }
# --baseline: llmux-base runs right after llmux in the rotation (appended when llmux is not run)
if [ -n "$BASELINE" ]; then
  [ -x "$BASELINE" ] || { echo "--baseline $BASELINE: not an executable file" >&2; exit 2; }
  if [[ ",$ALL_PATHS," != *,llmux-base,* ]]; then
    np=()
    for p in "${PATHS[@]}"; do np+=("$p"); [ "$p" = llmux ] && np+=(llmux-base); done
    [[ ",$ALL_PATHS," == *,llmux,* ]] || { np+=(llmux-base); echo "warning: --baseline without the llmux path: no new/baseline ratios" >&2; }
    PATHS=("${np[@]}"); ALL_PATHS=$(IFS=,; echo "${PATHS[*]}")
  fi
elif [[ ",$ALL_PATHS," == *,llmux-base,* ]]; then
  echo "the llmux-base path needs --baseline BIN (or LLMUX_BASELINE)" >&2; exit 2
fi
for t in nginx haproxy wrk taskset curl jq; do
  command -v $t >/dev/null || { echo "missing $t (run scripts/setup --bench)" >&2; exit 1; }
done
$PY -c 'import fastapi, httpx, uvicorn' || { echo "missing python3-fastapi/-httpx/-uvicorn" >&2; exit 1; }

tmp=$(mktemp -d /tmp/gvp.XXXXXX)
chmod 755 "$tmp"   # nginx workers run as nobody when started by root
LINES=$tmp/lines.jsonl NOTES=$tmp/notes.txt
: >"$LINES"; : >"$NOTES"
LLMUX_SRC=${LLMUX:-$ROOT/build/llmux}
cp "$LLMUX_SRC" "$tmp/llmux"
LLMUX_MTIME=$(date -r "$LLMUX_SRC" "+%Y-%m-%d %H:%M:%S")
LLMUX=$tmp/llmux
LLMUX_BASE=$tmp/llmux-base   # the --baseline binary, copied the same way (the llmux-base path)
[ -n "$BASELINE" ] && cp "$BASELINE" "$LLMUX_BASE"
# bin_info ROLE SOURCE COPY: one JSON line on the binaries compared. Git rev: SOURCE.rev when
# there is one (bench/build_baseline.sh writes it), else the checkout SOURCE lies in (read only;
# its HEAD at run time, flagged when src/ or CMakeLists.txt have uncommitted changes).
bin_info() {
  local role=$1 src=$2 copy=$3 top rev="" desc="" how="" dirty=0
  src=$(realpath -m "$src")
  if [ -f "$src.rev" ]; then
    rev=$(sed -n 1p "$src.rev"); desc=$(sed -n 2p "$src.rev"); how="from $src.rev"
  elif top=$(git -C "$(dirname "$src")" rev-parse --show-toplevel 2>/dev/null); then
    rev=$(git -C "$top" rev-parse HEAD 2>/dev/null || true)
    desc=$(git -C "$top" log -1 --format='%h (%cs) %s' 2>/dev/null || true)
    how="HEAD of the checkout $top at run time (the binary may predate it)"
    if [ -n "$(git --no-optional-locks -C "$top" status --porcelain -- src CMakeLists.txt 2>/dev/null)" ]; then
      dirty=1; how="$how, with uncommitted changes under src/ or CMakeLists.txt"
    fi
  fi
  $PY -c 'import hashlib,json,sys; a=sys.argv[1:]; print(json.dumps(dict(role=a[0], path=a[1], mtime=a[2], sha256=hashlib.sha256(open(a[3],"rb").read()).hexdigest(), git_rev=a[4] or None, git_desc=a[5] or None, git_how=a[6] or None, git_dirty=a[7]=="1")))' \
    "$role" "$src" "$(date -r "$src" "+%Y-%m-%d %H:%M:%S")" "$copy" "$rev" "$desc" "$how" "$dirty" >>"$tmp/binaries.jsonl"
}
: >"$tmp/binaries.jsonl"
bin_info llmux "$LLMUX_SRC" "$LLMUX"
if [ -n "$BASELINE" ]; then
  bin_info llmux-base "$BASELINE" "$LLMUX_BASE"
  cmp -s "$LLMUX" "$LLMUX_BASE" && echo "warning: --baseline is byte-identical to $LLMUX_SRC" >&2
fi
STARTED=()   # every pid this script started
forget() { local p k=(); for p in "${STARTED[@]}"; do [ "$p" = "$1" ] || k+=("$p"); done; STARTED=("${k[@]}"); }
KEEP_TMP=${KEEP_TMP:-0}
cleanup() {
  local p
  for p in "${STARTED[@]}"; do kill "$p" 2>/dev/null || true; done
  sleep 0.3
  for p in "${STARTED[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  [ "$KEEP_TMP" = 1 ] && echo "kept $tmp" >&2 || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
ulimit -n 20000 2>/dev/null || true
FD_LIMIT=$(ulimit -n)
# (d): a proxy holds a client and an upstream socket per stream, the sim and the client one each
if [[ $SECTIONS == *d* ]] && [ "$FD_LIMIT" != unlimited ] && [ $((2 * MEM_MAX + 200)) -gt "$FD_LIMIT" ]; then
  echo "--mem-streams: $MEM_MAX streams need $((2 * MEM_MAX + 200)) file descriptors in the proxy; ulimit -n is $FD_LIMIT" >&2; exit 2
fi
T_START=$(date +%s)
note() { echo "$*" | tee -a "$NOTES" >&2; }

free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# stop_pid, wait_ready, wait_http: bench/lib.sh
rss_kib() { local s=0 p v; for p in "$@"; do v=$(awk '/^VmRSS/ {print $2}' /proc/$p/status 2>/dev/null || echo 0); s=$((s + ${v:-0})); done; echo $s; }
cpu_ticks() { local s=0 p v; for p in "$@"; do v=$(awk '{print $14 + $15}' /proc/$p/stat 2>/dev/null || echo 0); s=$((s + ${v:-0})); done; echo $s; }
CLK_TCK=$(getconf CLK_TCK)
preempted() { local s=0 p v; for p in "$@"; do v=$(awk '/^nonvoluntary_ctxt_switches/ {print $2}' /proc/$p/status 2>/dev/null || echo 0); s=$((s + ${v:-0})); done; echo $s; }

# ---- backends -------------------------------------------------------------------------------
BK_PID='' BK_PORT=''
start_sim() {  # args: sim flags
  taskset -c "$LOAD_CPU" "$LLMUX" sim --port 0 "$@" >"$tmp/sim.out" 2>"$tmp/sim.err" &
  BK_PID=$!; STARTED+=("$BK_PID")
  BK_PORT=$(wait_ready "$tmp/sim.out")
  [ -n "$BK_PORT" ] || { cat "$tmp/sim.err" >&2; echo "sim did not start" >&2; exit 1; }
  wait_http "http://127.0.0.1:$BK_PORT/v1/models" || { echo "sim not answering" >&2; exit 1; }
}
start_nginx_backend() {
  local d=$tmp/backend; mkdir -p "$d"; chmod 755 "$d"
  BK_PORT=$(free_port)
  sed -e "s|@DIR@|$d|g" -e "s|@PORT@|$BK_PORT|g" "$PEERS/nginx-backend.conf.tmpl" >"$d/nginx.conf"
  taskset -c "$LOAD_CPU" nginx -p "$d" -e "$d/error.log" -c "$d/nginx.conf" -g 'daemon off;' 2>"$d/stderr" &
  BK_PID=$!; STARTED+=("$BK_PID")
  wait_http "http://127.0.0.1:$BK_PORT/" || { cat "$d/stderr" "$d/error.log" >&2; echo "backend nginx did not start" >&2; exit 1; }
}
stop_backend() { [ -n "$BK_PID" ] && stop_pid "$BK_PID"; BK_PID=; }

# ---- proxies --------------------------------------------------------------------------------
# HAProxy's maxconn (global, frontend) counts client connections; it sizes its fd limit to about
# twice that, so keep it under the fd limit: 9,000 unless (d) needs more.
HAPROXY_MAXCONN=$((MEM_MAX + 1000 > 9000 ? MEM_MAX + 1000 : 9000))
# start_proxy NAME UPSTREAM_PORT READY_PATH: sets PX_PORT, PX_PID (to stop), PX_PIDS (RSS/CPU).
PX_PID='' PX_PORT='' PX_PIDS=()
start_proxy() {
  local name=$1 up=$2 rpath=$3 d=$tmp/px-$1
  rm -rf "$d"; mkdir -p "$d"; chmod 755 "$d"
  PX_PID='' PX_PIDS=()
  case $name in
    direct) PX_PORT=$up; return 0 ;;
    llmux|llmux-base)
      local bin=$LLMUX; [ "$name" = llmux-base ] && bin=$LLMUX_BASE
      taskset -c "$PROXY_CPU" "$bin" gateway --port 0 --backend "up=http://127.0.0.1:$up" \
        --threads 1 --access-log off >"$d/out" 2>"$d/err" &
      PX_PID=$!; STARTED+=("$PX_PID")
      PX_PORT=$(wait_ready "$d/out") ;;
    llmux-bare|llmux-logged)
      # What the quick form of the llmux path builds (one backend "up", one round-robin route, one
      # thread), on loopback, with metrics and the access log set: both off, or both on.
      local alog=off mon=false
      [ "$name" = llmux-logged ] && { alog=$d/access.log; mon=true; }
      cat >"$d/gateway.yaml" <<EOF
# written by bench/gateway_vs_peers.sh (path $name)
listen: [{address: 127.0.0.1, port: 0}]
threads: 1
backends:
  - {name: up, url: "http://127.0.0.1:$up"}
routes:
  - {name: all, backends: [up], policy: round_robin}
access_log: "$alog"
metrics: {enabled: $mon}
EOF
      taskset -c "$PROXY_CPU" "$LLMUX" gateway --config "$d/gateway.yaml" >"$d/out" 2>"$d/err" &
      PX_PID=$!; STARTED+=("$PX_PID")
      PX_PORT=$(wait_ready "$d/out") ;;
    nginx)
      PX_PORT=$(free_port)
      sed -e "s|@DIR@|$d|g" -e "s|@PORT@|$PX_PORT|g" -e "s|@UPSTREAM_PORT@|$up|g" \
        "$PEERS/nginx-proxy.conf.tmpl" >"$d/nginx.conf"
      taskset -c "$PROXY_CPU" nginx -p "$d" -e "$d/error.log" -c "$d/nginx.conf" -g 'daemon off;' >"$d/out" 2>"$d/err" &
      PX_PID=$!; STARTED+=("$PX_PID") ;;
    haproxy)
      PX_PORT=$(free_port)
      sed -e "s|@PORT@|$PX_PORT|g" -e "s|@UPSTREAM_PORT@|$up|g" -e "s|@MAXCONN@|$HAPROXY_MAXCONN|g" \
        "$PEERS/haproxy.cfg.tmpl" >"$d/haproxy.cfg"
      taskset -c "$PROXY_CPU" haproxy -db -f "$d/haproxy.cfg" >"$d/out" 2>"$d/err" &
      PX_PID=$!; STARTED+=("$PX_PID") ;;
    fastapi)
      PX_PORT=$(free_port)
      UPSTREAM="http://127.0.0.1:$up" taskset -c "$PROXY_CPU" $PY -m uvicorn fastapi_proxy:app \
        --app-dir "$PEERS" --host 127.0.0.1 --port "$PX_PORT" --workers 1 --backlog 4096 \
        --no-access-log --log-level warning >"$d/out" 2>"$d/err" &
      PX_PID=$!; STARTED+=("$PX_PID") ;;
    *) echo "unknown path $name" >&2; exit 2 ;;
  esac
  if [ -z "$PX_PORT" ] || ! wait_http "http://127.0.0.1:$PX_PORT$rpath"; then
    cat "$d/err" >&2; echo "$name did not start" >&2; exit 1
  fi
  PX_PIDS=("$PX_PID")
  if [ "$name" = nginx ]; then
    local w; for w in $(cat /proc/$PX_PID/task/*/children 2>/dev/null); do PX_PIDS+=("$w"); done
  fi
}
stop_proxy() {
  local name=$1
  [ -n "$PX_PID" ] || return 0
  stop_pid "$PX_PID"
  # keep only what looks like a problem (llmux logs its start and drain at [info])
  if grep -iE 'warn|error|alert|crit|emerg|exception|traceback|abort|fatal' "$tmp/px-$name/err" 2>/dev/null \
      | grep -v '\[info\]' >"$tmp/px-$name/problems"; then
    mkdir -p "$tmp/logs"; cp "$tmp/px-$name/problems" "$tmp/logs/$name-$SEC-r$ROUND.err"
  fi
  PX_PID=
}
# rotated order of PATHS for round r
order() { local r=$1 n=${#PATHS[@]} i; for ((i = 0; i < n; i++)); do echo "${PATHS[$(((i + r) % n))]}"; done; }
emit() {  # emit SECTION ROUND PATH JSON_OBJECT
  $PY -c 'import json,sys; d=json.loads(sys.argv[4]); d.update(section=sys.argv[1], round=int(sys.argv[2]), path=sys.argv[3]); print(json.dumps(d))' \
    "$1" "$2" "$3" "$4" >>"$LINES"
}
warm_post() {  # one short non-streaming completion through PORT
  curl -s -o /dev/null --max-time 10 -H 'content-type: application/json' \
    -d '{"model":"Qwen3.6-35B-A3B","prompt":"hi","max_tokens":2}' "http://127.0.0.1:$1/v1/completions" || true
}
bench_run() {  # bench_run CPUS PORT OUTDIR TIMEOUT_S args...
  local cpus=$1 port=$2 outd=$3 to=$4; shift 4
  timeout "$to" taskset -c "$cpus" "$LLMUX" bench run --url "http://127.0.0.1:$port" \
    --model Qwen3.6-35B-A3B --no-progress --no-plots --out "$outd" "$@" >"$outd.txt" 2>&1 || true
}
MODEL=Qwen3.6-35B-A3B

# ---- (a) serial streaming tok/s -------------------------------------------------------------
if [[ $SECTIONS == *a* ]]; then
  SEC=a; log "(a) serial streaming, DGX Spark preset, $SERIAL_REQS x $SERIAL_TOKENS tokens"
  start_sim --max-num-seqs 256 --no-enable-prefix-caching   # same prompts each path: no cache hits
  for ((ROUND = 1; ROUND <= ROUNDS; ROUND++)); do
    for p in $(order $ROUND); do
      start_proxy "$p" "$BK_PORT" /v1/models
      warm_post "$PX_PORT"
      o=$tmp/a-r$ROUND-$p; mkdir -p "$o"
      bench_run "$LOAD_CPU" "$PX_PORT" "$o" $((SERIAL_REQS * SERIAL_TOKENS / 10 + 60)) --endpoint chat --concurrency 1 \
        --num-requests "$SERIAL_REQS" --output-len "$SERIAL_TOKENS" --ignore-eos
      stop_proxy "$p"
      if [ -f "$o/run.json" ]; then
        j=$($PY "$PEERS/gvp.py" bench "$o/run.json"); emit a $ROUND "$p" "$j"
        log "  r$ROUND $p: $(echo "$j" | jq -r '"\(.output_tok_s) tok/s failed=\(.failed)"')"
      else
        note "(a) round $ROUND $p: llmux bench run produced no result: $(tail -3 "$o.txt" | tr '\n' ' ')"
      fi
    done
  done
  stop_backend
fi

# ---- (b) small non-streaming POSTs, wrk ------------------------------------------------------
if [[ $SECTIONS == *b* ]]; then
  SEC=b; log "(b) wrk -t1 -c$WRK_CONN -d${WRK_DUR}s small POSTs against nginx return 200"
  start_nginx_backend
  for ((ROUND = 1; ROUND <= ROUNDS; ROUND++)); do
    for p in $(order $ROUND); do
      start_proxy "$p" "$BK_PORT" /
      url=http://127.0.0.1:$PX_PORT/v1/completions
      # correctness probe: status and body through the path
      code=$(curl -s -D "$tmp/b-hdr" -o "$tmp/b-body" -w '%{http_code}' --max-time 5 -H 'content-type: application/json' \
        --data-binary '{"model":"Qwen3.6-35B-A3B","prompt":"a b c d","max_tokens":1,"temperature":0}' "$url" || true)
      grep -q cmpl-bench "$tmp/b-body" 2>/dev/null || note "(b) round $ROUND $p: probe POST answered $code with an unexpected body: $(head -c 200 "$tmp/b-body")"
      [ "$code" = 200 ] || note "(b) round $ROUND $p: probe POST answered HTTP $code"
      if [[ $p == llmux* ]] && ! grep -qi '^x-llmux-backend: up' "$tmp/b-hdr"; then note "(b) round $ROUND $p: no X-Llmux-Backend header on the probe"; fi
      timeout $((WRK_DUR + 30)) taskset -c "$LOAD_CPU" wrk -t1 -c"$WRK_CONN" -d1s -s "$PEERS/post.lua" "$url" >"$tmp/b-warm.txt" 2>&1 || true
      c0=$(cpu_ticks "${PX_PIDS[@]}"); t0=$(date +%s.%N)
      timeout $((WRK_DUR + 30)) taskset -c "$LOAD_CPU" wrk -t1 -c"$WRK_CONN" -d"${WRK_DUR}s" --latency \
        -s "$PEERS/post.lua" "$url" >"$tmp/b-r$ROUND-$p.txt" 2>&1 || true
      c1=$(cpu_ticks "${PX_PIDS[@]}"); t1=$(date +%s.%N)
      alive=1; [ -z "$PX_PID" ] || kill -0 "$PX_PID" 2>/dev/null || alive=0
      # metrics on or off as the path says: lines of the gateway's own Prometheus text
      mlines=null
      if [[ $p == llmux || $p == llmux-bare || $p == llmux-logged ]]; then
        mlines=$(curl -s --max-time 5 "http://127.0.0.1:$PX_PORT/metrics" | grep -c '^llmux_' || true)
        if [ "$p" = llmux-bare ]; then
          [ "${mlines:-0}" = 0 ] || note "(b) round $ROUND $p: GET /metrics gave $mlines llmux_ lines with metrics off"
        else
          [ "${mlines:-0}" -gt 0 ] || note "(b) round $ROUND $p: GET /metrics gave no llmux_ lines with metrics on"
        fi
      fi
      stop_proxy "$p"
      alines=null
      if [ "$p" = llmux-logged ]; then
        alines=$(wc -l <"$tmp/px-$p/access.log" 2>/dev/null || echo 0)
      fi
      j=$($PY "$PEERS/gvp.py" wrk "$tmp/b-r$ROUND-$p.txt")
      cpu=null; [ "$p" != direct ] && cpu=$(awk -v a="$c0" -v b="$c1" -v t0="$t0" -v t1="$t1" -v hz="$CLK_TCK" 'BEGIN {printf "%.1f", 100*(b-a)/hz/(t1-t0)}')
      j=$($PY -c 'import json,sys; d=json.loads(sys.argv[1]); d["proxy_cpu_pct"]=json.loads(sys.argv[2]); d["proxy_alive_after"]=sys.argv[3]=="1"; d["wrk_output"]=open(sys.argv[4]).read(); d["gateway_metrics_lines"]=json.loads(sys.argv[5]); d["access_log_lines"]=json.loads(sys.argv[6]); print(json.dumps(d))' \
        "$j" "$cpu" "$alive" "$tmp/b-r$ROUND-$p.txt" "$mlines" "$alines")
      emit b $ROUND "$p" "$j"
      if [ "$alines" != null ]; then   # every request of the warm-up, the probe and the run logged
        echo "$j" | $PY -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if (d["requests"] or 0) <= d["access_log_lines"] else 1)' \
          || note "(b) round $ROUND $p: the access log has $alines lines, fewer than wrk's requests"
      fi
      [ $alive = 1 ] || note "(b) round $ROUND $p: the proxy process died during the run"
      echo "$j" | $PY -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d["errors_total"]==0 and d["requests_per_s"] else 1)' \
        || note "(b) round $ROUND $p: wrk errors: $(grep -E 'Non-2xx|Socket errors' "$tmp/b-r$ROUND-$p.txt" | tr '\n' ' ')"
      log "  r$ROUND $p: $(awk '/Requests\/sec/ {print $2" req/s"}' "$tmp/b-r$ROUND-$p.txt") p99 $(awk '$1=="99%" {print $2}' "$tmp/b-r$ROUND-$p.txt") cpu ${cpu}%"
    done
  done
  stop_backend
fi

# ---- (e) where (b)'s tail comes from ----------------------------------------------------------
# The load of (b) again, from bench/peers/latrec.cpp (closed loop, WRK_CONN keep-alive connections,
# the same POST), which records every request's send time and latency; gvp.py tail (gvp_tail.py)
# splits the requests at or above the p99 into bursts (at least half the connections slow
# together: the whole path slowed or stopped, e.g. descheduled) and the rest, and looks for
# periodicity at the gateway's timer periods. direct shows what the machine alone does. Reported,
# no goal.
if [[ $SECTIONS == *e* ]]; then
  SEC=e; log "(e) tail of small POSTs: every request recorded (latrec, $WRK_CONN connections, ${WRK_DUR}s)"
  g++ -O2 -std=c++20 -o "$tmp/latrec" "$PEERS/latrec.cpp" || { echo "cannot build bench/peers/latrec.cpp" >&2; exit 1; }
  BODY=$(sed -n "s/^wrk.body = '\(.*\)'\$/\1/p" "$PEERS/post.lua")
  start_nginx_backend
  for ((ROUND = 1; ROUND <= ROUNDS; ROUND++)); do
    for p in $(order $ROUND); do
      [ "$p" = fastapi ] && continue   # ~700 req/s: its tail is its speed
      start_proxy "$p" "$BK_PORT" /
      o=$tmp/e-r$ROUND-$p
      c0=$(cpu_ticks "${PX_PIDS[@]}"); v0=$(preempted "${PX_PIDS[@]}")
      timeout $((WRK_DUR + 30)) taskset -c "$LOAD_CPU" "$tmp/latrec" "$PX_PORT" "$WRK_CONN" "$WRK_DUR" 1 "$o.bin" "$BODY" >"$o.txt" 2>&1 || true
      c1=$(cpu_ticks "${PX_PIDS[@]}"); v1=$(preempted "${PX_PIDS[@]}")
      stop_proxy "$p"
      if j=$($PY "$PEERS/gvp.py" tail "$o.bin" "$o.txt" 2>"$o.err"); then
        # CPU over warm-up and run (the records start after the 1 s warm-up)
        cpu=null pre=null
        [ "$p" != direct ] && { cpu=$(awk -v a="$c0" -v b="$c1" -v d="$((WRK_DUR + 1))" -v hz="$CLK_TCK" 'BEGIN {printf "%.1f", 100*(b-a)/hz/d}'); pre=$((v1 - v0)); }
        j=$(echo "$j" | jq -c --argjson c "$cpu" --argjson v "$pre" '. + {proxy_cpu_pct: $c, proxy_preempted: $v}')
        emit e $ROUND "$p" "$j"
        log "  r$ROUND $p: $(echo "$j" | jq -r '"\(.requests_per_s | round) req/s p99 \(.lat_p99_us | round) us, \(.bursts) bursts, p99 outside bursts \(.lat_p99_outside_bursts_us | round) us, preempted \(.proxy_preempted)"')"
        [ "$(echo "$j" | jq '.not_2xx + .reconnects')" = 0 ] || note "(e) round $ROUND $p: $(echo "$j" | jq -r '"\(.not_2xx) answers not 2xx, \(.reconnects) reconnects"')"
      else
        note "(e) round $ROUND $p: no records: $(tail -c 300 "$o.txt" "$o.err" | tr '\n' ' ')"
      fi
    done
  done
  stop_backend
fi

# ---- (c) ITL at a high event rate ------------------------------------------------------------
if [[ $SECTIONS == *c* ]]; then
  SEC=c; log "(c) ITL: $ITL_STREAMS streams x $ITL_TOKENS tokens at 50 tok/s"
  start_sim --preset none --t0 0.02 --m 0 --c 0 --ctx-cost 0 --prefill-rate 0 --prefill-overhead 0 --max-num-seqs 4096 --no-enable-prefix-caching
  for ((ROUND = 1; ROUND <= ROUNDS; ROUND++)); do
    for p in $(order $ROUND); do
      # the seed's FastAPI proxy cannot hold 1,000 streams (it is measured in (a) and (b))
      [ "$p" = fastapi ] && [ "${FASTAPI_ALL:-0}" != 1 ] && continue
      start_proxy "$p" "$BK_PORT" /v1/models
      warm_post "$PX_PORT"
      o=$tmp/c-r$ROUND-$p; mkdir -p "$o"
      c0=$(cpu_ticks "${PX_PIDS[@]}"); t0=$(date +%s.%N)
      bench_run "$ITL_CLIENT_CPU" "$PX_PORT" "$o" 180 --endpoint chat --concurrency "$ITL_STREAMS" --num-requests "$ITL_STREAMS" \
        --input-len 16 --output-len "$ITL_TOKENS" --ignore-eos --timeout 150 --idle-timeout 30
      c1=$(cpu_ticks "${PX_PIDS[@]}"); t1=$(date +%s.%N)
      stop_proxy "$p"
      if [ -f "$o/run.json" ]; then
        j=$($PY "$PEERS/gvp.py" bench "$o/run.json")
        [ "$p" != direct ] && j=$(echo "$j" | jq -c --argjson c "$(( c1 - c0 ))" --argjson w "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b-a}')" --argjson hz "$CLK_TCK" \
          '. + {proxy_cpu_pct: (100 * $c / $hz / $w), proxy_cpu_us_per_token: (if .output_tokens > 0 then 1e6 * $c / $hz / .output_tokens else null end)}')
        emit c $ROUND "$p" "$j"
        log "  r$ROUND $p: $(echo "$j" | jq -c '"ITL p50 \(.itl_ms_p50) p99 \(.itl_ms_p99) ms, failed=\(.failed) \(.errors)"')"
        echo "$j" | $PY -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d["failed"]==0 else 1)' \
          || note "(c) round $ROUND $p: $(echo "$j" | $PY -c 'import json,sys; d=json.load(sys.stdin); print(d["failed"], "of", d["requests"], "streams failed:", d["errors"])')"
      else
        note "(c) round $ROUND $p: llmux bench run produced no result (timeout?): $(tail -3 "$o.txt" | tr '\n' ' ')"
      fi
      # let the backend finish anything a slow proxy left behind (bounded)
      for i in $(seq 100); do
        r=$(curl -s --max-time 2 "http://127.0.0.1:$BK_PORT/metrics" | awk '/^vllm:num_requests_running/ {print $2}')
        [ "${r:-0}" = 0 ] && break; sleep 0.2
      done
    done
  done
  stop_backend
fi

# ---- (d) memory per held-open stream ---------------------------------------------------------
# The client is `llmux bench run` (completions, ignore_eos, MEM_TOKENS tokens each): N streams at
# once through a fresh proxy, each open MEM_TOKENS x MEM_T0 s. RSS is sampled while the backend
# runs all N; then the streams end on their own and run.json says whether every stream ended
# well with all its token events.
running() { { curl -s --max-time 2 "http://127.0.0.1:$BK_PORT/metrics" || true; } | awk '/^vllm:num_requests_running/ {printf "%d", $2}'; }
if [[ $SECTIONS == *d* ]]; then
  SEC=d; log "(d) memory: $MEM_STREAMS held-open streams, $MEM_TOKENS tokens every ${MEM_T0}s (${MEM_DUR}s each)"
  # KV blocks for every stream (prompt + output, with room to spare): no preemption
  start_sim --preset none --t0 "$MEM_T0" --m 0 --c 0 --ctx-cost 0 --prefill-rate 0 --prefill-overhead 0 \
    --max-num-seqs $((MEM_MAX > 8192 ? MEM_MAX : 8192)) --no-enable-prefix-caching \
    --num-kv-blocks $((MEM_MAX * (MEM_TOKENS + 64) / 8 + 4096))
  for ((ROUND = 1; ROUND <= ROUNDS; ROUND++)); do
    for N in "${MEM_LIST[@]}"; do
      for p in $(order $ROUND); do
        [ "$p" = direct ] && continue
        # measured once: 1,492 of 5,000 streams reached the backend through it, 3,582 timed out
        [ "$p" = fastapi ] && [ "${FASTAPI_ALL:-0}" != 1 ] && continue
        for i in $(seq 100); do [ "$(running)" = 0 ] && break; sleep 0.2; done   # a clean backend
        start_proxy "$p" "$BK_PORT" /v1/models
        warm_post "$PX_PORT"; sleep 0.5
        idle=$(rss_kib "${PX_PIDS[@]}")
        o=$tmp/d-r$ROUND-n$N-$p; rm -rf "$o"; mkdir -p "$o"
        timeout $((MEM_DUR + 150)) taskset -c "$MEM_CLIENT_CPU" "$LLMUX" bench run --url "http://127.0.0.1:$PX_PORT" \
          --model "$MODEL" --no-progress --no-plots --out "$o" --endpoint completions --concurrency "$N" \
          --num-requests "$N" --input-len 4 --output-len "$MEM_TOKENS" --ignore-eos \
          --timeout $((MEM_DUR + 120)) --idle-timeout 30 --connect-timeout 30 >"$o.txt" 2>&1 &
        BR=$!; STARTED+=("$BR")
        n=0; t0=$(date +%s.%N); tend=$(awk -v a="$t0" -v d="$MEM_DUR" 'BEGIN {printf "%.3f", a + d}')
        while :; do   # until the backend runs all N (at most one stream's duration)
          n=$(running); [ "${n:-0}" -ge "$N" ] && break
          kill -0 "$BR" 2>/dev/null || break
          awk -v e="$tend" -v t="$(date +%s.%N)" 'BEGIN {exit !(t < e)}' || break
          sleep 0.2
        done
        ramp=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b-a}')
        reached=1; [ "${n:-0}" -ge "$N" ] || reached=0
        [ $reached = 1 ] && awk -v r="$ramp" -v d="$MEM_DUR" 'BEGIN {exit !(r + 4 > d)}' \
          && note "(d) round $ROUND $N $p: the ramp took ${ramp}s of each stream's ${MEM_DUR}s: the RSS samples may miss streams (raise --mem-tokens)"
        sleep 2
        loaded=0
        for i in 1 2 3; do v=$(rss_kib "${PX_PIDS[@]}"); [ "$v" -gt "$loaded" ] && loaded=$v; sleep 0.5; done
        n2=$(running)
        brc=0; wait "$BR" 2>/dev/null || brc=$?   # bounded: the client's --timeout, and timeout(1) around it
        forget "$BR"   # reaped: its pid may be reused, never signal it again
        left=1
        for i in $(seq 50); do left=$(running); [ "${left:-1}" = 0 ] && break; sleep 0.2; done
        after=$(rss_kib "${PX_PIDS[@]}")
        alive=1; kill -0 "$PX_PID" 2>/dev/null || alive=0
        stop_proxy "$p"
        if [ -f "$o/run.json" ]; then
          bj=$($PY "$PEERS/gvp.py" bench "$o/run.json" "$MEM_TOKENS")
        else
          bj='{}'; note "(d) round $ROUND $N $p: llmux bench run produced no result (exit $brc): $(tail -3 "$o.txt" | tr '\n' ' ')"
        fi
        j=$($PY -c '
import json, sys
a = sys.argv[1:]
b = json.loads(a[10])
n, l = int(a[5]), int(a[9])
at_sample = int(a[4] or 0)
d = dict(idle_rss_kib=int(a[0]), loaded_rss_kib=int(a[1]), after_rss_kib=int(a[2]),
         backend_running=int(a[3] or 0), backend_running_at_sample=at_sample, streams=n,
         kib_per_stream=(int(a[1]) - int(a[0])) / max(1, min(n, at_sample or n)), ramp_s=float(a[6]),
         backend_left_after_10s=int(a[7] or 0), proxy_alive_after=a[8] == "1", tokens_per_stream=l,
         client_exit=int(a[11]), events_expected=n * l, events_delivered=b.get("events", 0),
         event_tokens=b.get("event_tokens", 0), failed=b.get("failed"), ok=b.get("ok"),
         errors=b.get("errors"), output_tokens=b.get("output_tokens"),
         streams_short=b.get("streams_short"), client_max_in_flight=b.get("max_in_flight"),
         client_wall_s=b.get("wall_s"))
d["all_events_delivered"] = bool(b) and d["failed"] == 0 and d["ok"] == n and \
    d["events_delivered"] == d["events_expected"] and d["output_tokens"] == d["events_expected"]
print(json.dumps(d))' "$idle" "$loaded" "$after" "${n:-0}" "${n2:-0}" "$N" "$ramp" "${left:-0}" "$alive" "$MEM_TOKENS" "$bj" "$brc")
        emit d $ROUND "$p" "$j"
        [ $reached = 1 ] || note "(d) round $ROUND $N $p: only ${n:-0} of $N streams reached the backend within ${MEM_DUR}s (per-stream figure divides by the streams running at the sample, ${n2:-0})"
        [ "${left:-1}" = 0 ] || note "(d) round $ROUND $N $p: ${left} streams still running on the backend 10 s after the client ended"
        [ $alive = 1 ] || note "(d) round $ROUND $N $p: the proxy process died during the run"
        echo "$j" | jq -e .all_events_delivered >/dev/null \
          || note "(d) round $ROUND $N $p: not every event delivered: $(echo "$j" | jq -r '"\(.events_delivered) of \(.events_expected) token events, \(.ok // 0) of \(.streams) streams ok, failed \(.failed), errors \(.errors | tostring), usage tokens \(.output_tokens), client exit \(.client_exit)"')"
        log "  r$ROUND $N $p: idle $idle KiB, loaded $loaded KiB ($(echo "$j" | jq -r '.kib_per_stream * 100 | round / 100') KiB/stream), backend ran ${n:-0} (ramp ${ramp}s), events $(echo "$j" | jq -r '"\(.events_delivered)/\(.events_expected)"')"
      done
    done
  done
  stop_backend
fi

# ---- report -----------------------------------------------------------------------------------
mkdir -p "$OUT"
if [ -d "$tmp/logs" ]; then
  for f in "$tmp/logs"/*; do note "stderr of $(basename "$f" .err): $(head -c 300 "$f" | tr '\n' ' ')"; done
fi
$PY - "$tmp/meta.json" <<PYEOF
import hashlib, json, os, platform, subprocess, sys, time
def v(cmd):
    try:
        r = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=10)
        return (r.stdout + r.stderr).strip().splitlines()[0]
    except Exception as e:
        return str(e)
import fastapi, httpx, uvicorn
llmux = "$LLMUX"
meta = dict(
    started=time.strftime("%Y-%m-%d %H:%M:%S", time.localtime($T_START)), host=platform.node(),
    cpus=os.cpu_count(), rounds=$ROUNDS, proxy_cpu="$PROXY_CPU", load_cpu="$LOAD_CPU",
    command="$CMDLINE".strip(), elapsed_s=time.time() - $T_START, paths="$ALL_PATHS".split(","),
    serial_requests=$SERIAL_REQS, serial_tokens=$SERIAL_TOKENS, wrk_duration=$WRK_DUR,
    wrk_connections=$WRK_CONN, itl_streams=$ITL_STREAMS, itl_tokens=$ITL_TOKENS,
    mem_streams=[int(x) for x in "$MEM_STREAMS".split(",")], mem_tokens=$MEM_TOKENS, mem_t0=$MEM_T0,
    mem_duration_s=$MEM_TOKENS * $MEM_T0, itl_client_cpu="$ITL_CLIENT_CPU", mem_client_cpu="$MEM_CLIENT_CPU",
    fd_limit="$FD_LIMIT", haproxy_maxconn=$HAPROXY_MAXCONN,
    llmux_sha256=hashlib.sha256(open(llmux, "rb").read()).hexdigest(),
    llmux_mtime="$LLMUX_MTIME",
    binaries=[json.loads(l) for l in open("$tmp/binaries.jsonl") if l.strip()],
    baseline_budget_pct=float("$BASELINE_BUDGET"),
    versions=", ".join([v("nginx -v"), v("haproxy -v"), v("wrk -v"),
                        f"FastAPI {fastapi.__version__} / httpx {httpx.__version__} / uvicorn {uvicorn.__version__} (h11, asyncio)"]),
    notes=[l.strip() for l in open("$NOTES") if l.strip()],
)
json.dump(meta, open(sys.argv[1], "w"))
PYEOF
$PY "$PEERS/gvp.py" report "$LINES" "$tmp/meta.json" "$OUT/gateway_vs_peers.md" "$OUT/gateway_vs_peers.json"
log "wrote $OUT/gateway_vs_peers.md and .json"
cat "$OUT/gateway_vs_peers.md"
