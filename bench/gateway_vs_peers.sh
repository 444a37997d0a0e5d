#!/usr/bin/env bash
# llmux gateway vs its peers, side by side in one run (issue 4, "Measured, not assumed").
#
# Paths: direct (no proxy), llmux (`gateway --threads 1`), llmux-base (the same with the
# --baseline binary, only when one is given), nginx (Debian's, one worker,
# keep-alive upstream, no buffering), HAProxy (Debian's, nbthread 1, http-no-delay,
# http-reuse always) and the seed's FastAPI + httpx proxy (one uvicorn worker). Configs are the
# templates in bench/peers/. Each proxy is pinned to PROXY_CPU, load generator and backend to
# LOAD_CPU. Every section runs ROUNDS rounds with the paths in a rotated order, and the report
# gives medians over rounds:
#   (a) serial streaming tok/s against `llmux sim` (DGX Spark preset)     llmux within 1% of direct
#   (b) req/s, p50/p99 of small POSTs via wrk against nginx `return 200`  llmux >= nginx req/s,
#                                                                          p99 <= nginx + 50 us, >= 20x FastAPI
#   (c) ITL added at 1,000 streams x 50 tok/s                             (reported)
#   (d) RSS per held-open stream, 2,000 streams                           llmux <= HAProxy
#
# Old vs new binary in one run: --baseline BIN (or env LLMUX_BASELINE) adds the path llmux-base,
# BIN run exactly like llmux (same flags, same pinning, copied first too) in every section,
# rotated with the others; the report then gives new/baseline ratios of proxy CPU us/request (b)
# and KiB per stream (d) (plus req/s, p99, tok/s, CPU per token), names both binaries (path,
# mtime, sha256, git rev) and checks CPU/request against --baseline-budget (5%). Build BIN with
# bench/build_baseline.sh REV (a temporary git worktree; prints the binary's path):
#   bench/gateway_vs_peers.sh --baseline "$(bench/build_baseline.sh)" --out /tmp/gvp
#
# Usage: bench/gateway_vs_peers.sh [--rounds 3] [--sections abcd] [--serial-requests 5]
#          [--serial-tokens 128] [--wrk-duration 5] [--wrk-connections 64] [--itl-streams 1000]
#          [--itl-tokens 200] [--mem-streams 2000] [--mem-t0 0.25] [--paths direct,llmux,...]
#          [--baseline BIN] [--baseline-budget 5] [--out bench/results]
# Env: ITL_CLIENT_CPU (cores of the (c) client, default all), LLMUX (binary, default
# build/llmux; copied first so a concurrent rebuild cannot change it mid-run), LLMUX_BASELINE
# (as --baseline), PROXY_CPU (0), LOAD_CPU (1), KEEP_TMP=1. Loopback only; every wait is
# bounded; only processes this script started are stopped (by pid).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
PEERS=$ROOT/bench/peers
PY=/usr/bin/python3
ROUNDS=3 SECTIONS=abcd SERIAL_REQS=5 SERIAL_TOKENS=128 WRK_DUR=5 WRK_CONN=64
ITL_STREAMS=1000 ITL_TOKENS=200 MEM_STREAMS=2000 MEM_T0=0.25
ALL_PATHS=direct,llmux,nginx,haproxy,fastapi
OUT=$ROOT/bench/results
BASELINE=${LLMUX_BASELINE:-} BASELINE_BUDGET=5
PROXY_CPU=${PROXY_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
# (c): sim + client on one core cannot sustain 1,000 x 50 events/s (measured: ~32k tok/s, ITL p50
# 31 ms direct), so by default the client of (c) may run on any core; the sim stays on LOAD_CPU.
ITL_CLIENT_CPU=${ITL_CLIENT_CPU:-0-$(($(nproc) - 1))}
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
  case $p in direct|llmux|llmux-base|nginx|haproxy|fastapi) ;; *) echo "unknown path $p" >&2; exit 2 ;; esac
done
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
for t in nginx haproxy wrk h2load taskset curl jq; do
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
T_START=$(date +%s)
note() { echo "$*" | tee -a "$NOTES" >&2; }

free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# stop_pid, wait_ready, wait_http: bench/lib.sh
rss_kib() { local s=0 p v; for p in "$@"; do v=$(awk '/^VmRSS/ {print $2}' /proc/$p/status 2>/dev/null || echo 0); s=$((s + ${v:-0})); done; echo $s; }
cpu_ticks() { local s=0 p v; for p in "$@"; do v=$(awk '{print $14 + $15}' /proc/$p/stat 2>/dev/null || echo 0); s=$((s + ${v:-0})); done; echo $s; }
CLK_TCK=$(getconf CLK_TCK)

# ---- backends -------------------------------------------------------------------------------
BK_PID= BK_PORT=
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
# start_proxy NAME UPSTREAM_PORT READY_PATH: sets PX_PORT, PX_PID (to stop), PX_PIDS (RSS/CPU).
PX_PID= PX_PORT= PX_PIDS=()
start_proxy() {
  local name=$1 up=$2 rpath=$3 d=$tmp/px-$1
  rm -rf "$d"; mkdir -p "$d"; chmod 755 "$d"
  PX_PID= PX_PIDS=()
  case $name in
    direct) PX_PORT=$up; return 0 ;;
    llmux|llmux-base)
      local bin=$LLMUX; [ "$name" = llmux-base ] && bin=$LLMUX_BASE
      taskset -c "$PROXY_CPU" "$bin" gateway --port 0 --backend "up=http://127.0.0.1:$up" \
        --threads 1 --access-log off >"$d/out" 2>"$d/err" &
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
      sed -e "s|@PORT@|$PX_PORT|g" -e "s|@UPSTREAM_PORT@|$up|g" "$PEERS/haproxy.cfg.tmpl" >"$d/haproxy.cfg"
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
      stop_proxy "$p"
      j=$($PY "$PEERS/gvp.py" wrk "$tmp/b-r$ROUND-$p.txt")
      cpu=null; [ "$p" != direct ] && cpu=$(awk -v a="$c0" -v b="$c1" -v t0="$t0" -v t1="$t1" -v hz="$CLK_TCK" 'BEGIN {printf "%.1f", 100*(b-a)/hz/(t1-t0)}')
      j=$($PY -c 'import json,sys; d=json.loads(sys.argv[1]); d["proxy_cpu_pct"]=json.loads(sys.argv[2]); d["proxy_alive_after"]=sys.argv[3]=="1"; d["wrk_output"]=open(sys.argv[4]).read(); print(json.dumps(d))' "$j" "$cpu" "$alive" "$tmp/b-r$ROUND-$p.txt")
      emit b $ROUND "$p" "$j"
      [ $alive = 1 ] || note "(b) round $ROUND $p: the proxy process died during the run"
      echo "$j" | $PY -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d["errors_total"]==0 and d["requests_per_s"] else 1)' \
        || note "(b) round $ROUND $p: wrk errors: $(grep -E 'Non-2xx|Socket errors' "$tmp/b-r$ROUND-$p.txt" | tr '\n' ' ')"
      log "  r$ROUND $p: $(awk '/Requests\/sec/ {print $2" req/s"}' "$tmp/b-r$ROUND-$p.txt") p99 $(awk '$1=="99%" {print $2}' "$tmp/b-r$ROUND-$p.txt") cpu ${cpu}%"
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
running() { curl -s --max-time 2 "http://127.0.0.1:$BK_PORT/metrics" | awk '/^vllm:num_requests_running/ {printf "%d", $2}'; }
if [[ $SECTIONS == *d* ]]; then
  SEC=d; log "(d) memory: $MEM_STREAMS held-open streams"
  start_sim --preset none --t0 "$MEM_T0" --m 0 --c 0 --ctx-cost 0 --prefill-rate 0 --prefill-overhead 0 --max-num-seqs 8192
  printf '{"model":"%s","prompt":"hello there","max_tokens":400,"ignore_eos":true,"stream":true}' "$MODEL" >"$tmp/d-body.json"
  for ((ROUND = 1; ROUND <= ROUNDS; ROUND++)); do
    for p in $(order $ROUND); do
      [ "$p" = direct ] && continue
      start_proxy "$p" "$BK_PORT" /v1/models
      warm_post "$PX_PORT"; sleep 0.5
      idle=$(rss_kib "${PX_PIDS[@]}")
      taskset -c "$LOAD_CPU" h2load --h1 -c "$MEM_STREAMS" -n "$MEM_STREAMS" -T 300 -N 300 -d "$tmp/d-body.json" \
        -H 'content-type: application/json' "http://127.0.0.1:$PX_PORT/v1/completions" >"$tmp/d-r$ROUND-$p.txt" 2>&1 &
      H2=$!; STARTED+=("$H2")
      n=0; t0=$(date +%s.%N)
      for i in $(seq 150); do   # up to 30 s for every stream to reach the backend
        n=$(running); [ "${n:-0}" -ge "$MEM_STREAMS" ] && break; sleep 0.2
      done
      ramp=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b-a}')
      sleep 2
      loaded=0
      for i in 1 2 3; do v=$(rss_kib "${PX_PIDS[@]}"); [ "$v" -gt "$loaded" ] && loaded=$v; sleep 0.5; done
      n2=$(running)
      stop_pid "$H2"
      t0=$(date +%s.%N); drain=null
      for i in $(seq 50); do   # up to 10 s for the proxy to abort its upstream requests
        [ "$(running)" = 0 ] && { drain=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b-a}'); break; }
        sleep 0.2
      done
      left=$(running)
      after=$(rss_kib "${PX_PIDS[@]}")
      alive=1; kill -0 "$PX_PID" 2>/dev/null || alive=0
      stop_proxy "$p"
      for i in $(seq 150); do [ "$(running)" = 0 ] && break; sleep 0.2; done
      j=$($PY -c 'import json,sys; a=sys.argv[1:]; n=int(a[6]); print(json.dumps(dict(idle_rss_kib=int(a[0]), loaded_rss_kib=int(a[1]), after_rss_kib=int(a[2]), backend_running=int(a[3] or 0), backend_running_at_sample=int(a[4] or 0), drain_s=json.loads(a[5]), streams=n, kib_per_stream=(int(a[1])-int(a[0]))/max(1, min(n, int(a[4] or 0) or n)), ramp_s=float(a[7]), backend_left_after_10s=int(a[8] or 0), proxy_alive_after=a[9]=="1")))' \
        "$idle" "$loaded" "$after" "${n:-0}" "${n2:-0}" "$drain" "$MEM_STREAMS" "$ramp" "${left:-0}" "$alive")
      emit d $ROUND "$p" "$j"
      [ "${n:-0}" -ge "$MEM_STREAMS" ] || note "(d) round $ROUND $p: only ${n:-0} of $MEM_STREAMS streams reached the backend within 30 s (per-stream figure divides by the streams reached)"
      [ "$drain" != null ] || note "(d) round $ROUND $p: ${left} streams still running on the backend 10 s after the clients left"
      [ $alive = 1 ] || note "(d) round $ROUND $p: the proxy process died during the run"
      log "  r$ROUND $p: idle $idle KiB, loaded $loaded KiB ($(( (loaded - idle) / MEM_STREAMS )) KiB/stream), backend ran $n, drain ${drain}s"
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
    mem_streams=$MEM_STREAMS, mem_t0=$MEM_T0, itl_client_cpu="$ITL_CLIENT_CPU",
    llmux_sha256=hashlib.sha256(open(llmux, "rb").read()).hexdigest(),
    llmux_mtime="$LLMUX_MTIME",
    binaries=[json.loads(l) for l in open("$tmp/binaries.jsonl") if l.strip()],
    baseline_budget_pct=float("$BASELINE_BUDGET"),
    versions=", ".join([v("nginx -v"), v("haproxy -v"), v("wrk -v"), v("h2load --version"),
                        f"FastAPI {fastapi.__version__} / httpx {httpx.__version__} / uvicorn {uvicorn.__version__} (h11, asyncio)"]),
    notes=[l.strip() for l in open("$NOTES") if l.strip()],
)
json.dump(meta, open(sys.argv[1], "w"))
PYEOF
$PY "$PEERS/gvp.py" report "$LINES" "$tmp/meta.json" "$OUT/gateway_vs_peers.md" "$OUT/gateway_vs_peers.json"
log "wrote $OUT/gateway_vs_peers.md and .json"
cat "$OUT/gateway_vs_peers.md"
