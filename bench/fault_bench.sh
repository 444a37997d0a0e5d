#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fault benchmark of `llmux gateway` (issue 9, "Measured, not assumed").
#
# Three `llmux sim` backends A, B, C (DGX Spark preset, --time-scale 2; streaming chat
# completions of --max-tokens 64 with ignore_eos at --temperature 0 (greedy: a stream another
# backend continued is checked against the whole answer, `fault_bench.py verify`): ~3 s each at
# ~33 streams per backend), STREAMS
# closed-loop streams for DURATION seconds through `llmux gateway` (round_robin over A, B, C) and
# this timeline, written for a 90 s run and scaled by DURATION/90:
#   A: SIGKILL at 20 s, restarted on the same port at 44 s
#   B: POST /admin/faults {"freeze": true} at 35 s, {} at 65 s          (its engine stops: every
#      stream stops where it is, new ones get their header and no token; --b-fault stall-after:
#      {"stall_after": N} instead, new streams stop after N tokens while running ones finish)
#   C: POST /admin/faults {"hang": true} at 45 s, {} at 75 s              (accepts, never answers)
# The issue asked for A back at ~50 s; with C out from 45 s and B stalling until 65 s that would
# leave no healthy backend during 45-50 s, so A comes back at 44 s (override with --timeline).
# Runs, one after the other, each with fresh processes:
#   faults            the gateway's shipped defaults (no health_checks / outlier_detection keys)
#   faults_no_health  the same with health_checks {enabled: false}, outlier_detection {enabled: false}
#   reference_no_c    the same load and the same A/B timeline with C removed from the config
#                     (the p99 reference for the time C is unreachable)
#   soak              SOAK_STREAMS streams for SOAK_MINUTES through the gateway (defaults, three
#                     healthy backends), the gateway's RSS read from /proc every 5 s
# The client is bench/fault_bench.py (asyncio, one JSON record per request: status, backend from
# X-Llmux-Backend, [DONE], error event, tokens); it polls the gateway's GET /health every 100 ms,
# and the gateway's log lines ("backend X ejected/unhealthy/healthy/back in service") are read
# with their timestamps. Report: OUT/fault_bench.md and OUT/fault_bench.json.
#
# Usage: bench/fault_bench.sh [--duration 90] [--streams 100] [--soak-minutes 10]
#          [--soak-streams 32] [--soak-warmup 60] [--time-scale 2] [--max-tokens 64]
#          [--temperature 0]
#          [--b-fault freeze|stall-after] [--stall-after 4] [--idle-timeout 10]
#          [--drain IDLE_TIMEOUT+15]
#          [--timeline a_kill=20,a_back=44,b_stall=35,b_clear=65,c_hang=45,c_clear=75]
#          [--runs faults,faults_no_health,reference_no_c,soak] [--out bench/results/fault_bench]
#        bench/fault_bench.sh --report-from DIR [--out ...]: only the report, again, from the raw
#          data of a run kept with KEEP_TMP=1 (DIR is the kept directory; nothing is run)
# Smoke run: bench/fault_bench.sh --duration 30 --soak-minutes 1 --out /tmp/fb-smoke
# Env: LLMUX (binary, default build/llmux; copied first, so a rebuild meanwhile changes nothing),
# KEEP_TMP=1 (keep the per-request records and logs). Loopback only; servers on free ports,
# stopped by pid on exit; every wait is bounded.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
PY=/usr/bin/python3
HELPER=$ROOT/bench/fault_bench.py
DURATION=90 STREAMS=100 SOAK_MIN=10 SOAK_STREAMS=32 SOAK_WARMUP='' TIME_SCALE=2 MAX_TOKENS=64
STALL_AFTER=4 IDLE_TIMEOUT=10 DRAIN= B_FAULT=freeze TEMPERATURE=0
TIMELINE=a_kill=20,a_back=44,b_stall=35,b_clear=65,c_hang=45,c_clear=75
RUNS=faults,faults_no_health,reference_no_c,soak
OUT=$ROOT/bench/results/fault_bench
CMDLINE="${LLMUX:+LLMUX=$LLMUX }bench/fault_bench.sh $*"
REPORT_FROM=
while [ $# -gt 0 ]; do
  case $1 in
    --duration) DURATION=$2; shift 2 ;;
    --streams) STREAMS=$2; shift 2 ;;
    --soak-minutes) SOAK_MIN=$2; shift 2 ;;
    --soak-streams) SOAK_STREAMS=$2; shift 2 ;;
    --soak-warmup) SOAK_WARMUP=$2; shift 2 ;;
    --time-scale) TIME_SCALE=$2; shift 2 ;;
    --max-tokens) MAX_TOKENS=$2; shift 2 ;;
    --temperature) TEMPERATURE=$2; shift 2 ;;
    --stall-after) STALL_AFTER=$2; shift 2 ;;
    --b-fault) B_FAULT=$2; shift 2 ;;
    --idle-timeout) IDLE_TIMEOUT=$2; shift 2 ;;
    --drain) DRAIN=$2; shift 2 ;;
    --timeline) TIMELINE=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --report-from) REPORT_FROM=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
case $B_FAULT in
  freeze) B_FAULT_BODY='{"freeze": true}' ;;
  stall-after) B_FAULT_BODY="{\"stall_after\": $STALL_AFTER}" ;;
  *) echo "--b-fault: freeze or stall-after, not '$B_FAULT'" >&2; exit 2 ;;
esac
for t in curl taskset; do command -v $t >/dev/null || { echo "missing $t" >&2; exit 1; }; done
[ -x $PY ] || { echo "missing $PY" >&2; exit 1; }

if [ -n "$REPORT_FROM" ]; then
  [ -f "$REPORT_FROM/meta.json" ] || { echo "--report-from $REPORT_FROM: no meta.json there (a run kept with KEEP_TMP=1?)" >&2; exit 2; }
  DIRS=() SOAK_ARG=()
  for r in faults faults_no_health reference_no_c; do [ -f "$REPORT_FROM/$r/client.json" ] && DIRS+=("$REPORT_FROM/$r"); done
  [ -f "$REPORT_FROM/soak/client.json" ] && SOAK_ARG=(--soak "$REPORT_FROM/soak")
  meta=$(mktemp /tmp/fault_bench_meta.XXXXXX)
  trap 'rm -f "$meta"' EXIT
  $PY -c 'import json,sys; m=json.load(open(sys.argv[1])); m["notes"].append("This report was written again from the raw data of that run (per-request records, client and gateway logs) by `" + sys.argv[2] + "`: nothing was run again."); json.dump(m, open(sys.argv[3], "w"))' \
    "$REPORT_FROM/meta.json" "$CMDLINE" "$meta"
  mkdir -p "$OUT"
  $PY "$HELPER" report --runs "${DIRS[@]}" "${SOAK_ARG[@]}" --meta "$meta" \
    --out-md "$OUT/fault_bench.md" --out-json "$OUT/fault_bench.json"
  echo "wrote $OUT/fault_bench.md and .json" >&2
  exit 0
fi

# The timeline, scaled to DURATION; checks that some backend is healthy at every moment.
SCALED=$($PY - "$TIMELINE" "$DURATION" <<'PYEOF'
import sys
spec, dur = sys.argv[1], float(sys.argv[2])
t = {}
for item in spec.split(","):
    k, v = item.split("=")
    if k not in ("a_kill", "a_back", "b_stall", "b_clear", "c_hang", "c_clear"):
        sys.exit(f"--timeline: unknown event {k}")
    t[k] = float(v) * dur / 90.0
if set(t) != {"a_kill", "a_back", "b_stall", "b_clear", "c_hang", "c_clear"}:
    sys.exit("--timeline needs a_kill, a_back, b_stall, b_clear, c_hang and c_clear")
iv = [(t["a_kill"], t["a_back"]), (t["b_stall"], t["b_clear"]), (t["c_hang"], t["c_clear"])]
if any(lo >= hi for lo, hi in iv) or max(hi for _, hi in iv) >= dur:
    sys.exit("--timeline: each fault must end after it begins, and before the end of the load")
x, step = 0.0, 0.01
while x < dur:
    if all(lo <= x < hi for lo, hi in iv):
        print(f"warning: no backend is healthy at {x:.2f} s", file=sys.stderr)
        break
    x += step
print(" ".join(f"{k}={v:.3f}" for k, v in sorted(t.items(), key=lambda kv: kv[1])))
PYEOF
)
[ -n "$DRAIN" ] || DRAIN=$(awk -v i="$IDLE_TIMEOUT" 'BEGIN {printf "%d", i + 15}')
SOAK_S=$(awk -v m="$SOAK_MIN" 'BEGIN {printf "%d", m * 60}')
[ -n "$SOAK_WARMUP" ] || SOAK_WARMUP=$(awk -v s="$SOAK_S" 'BEGIN {w = (s >= 240) ? 60 : s / 4; printf "%d", w}')

tmp=$(mktemp -d /tmp/fault_bench.XXXXXX)
LLMUX_SRC=${LLMUX:-$ROOT/build/llmux}
cp "$LLMUX_SRC" "$tmp/llmux"
LLMUX=$tmp/llmux
LLMUX_MTIME=$(date -r "$LLMUX_SRC" "+%Y-%m-%d %H:%M:%S")
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
ulimit -n 8192 2>/dev/null || true
T_START=$(date +%s)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
# sleep_until EPOCH (bounded: at most 600 s)
sleep_until() {
  local d; d=$(awk -v t="$1" -v n="$(now)" 'BEGIN {d = t - n; if (d < 0) d = 0; if (d > 600) d = 600; printf "%.3f", d}')
  sleep "$d"
}
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' /proc/$1/stat 2>/dev/null || echo null; }
admin() {  # admin PORT JSON: POST /admin/faults, prints the answer
  curl -s --max-time 5 -H 'content-type: application/json' -d "$2" "http://127.0.0.1:$1/admin/faults" || echo "(admin call failed)"
}

declare -A SIM_PID SIM_PORT
start_sim() {  # start_sim NAME RUN_DIR [PORT]
  local n=$1 d=$2 port=${3:-0} i
  "$LLMUX" sim --port "$port" --time-scale "$TIME_SCALE" >>"$d/sim-$n.out" 2>>"$d/sim-$n.err" &
  SIM_PID[$n]=$!; STARTED+=("${SIM_PID[$n]}")
  # on a restart the ready line is the second one in the file
  for i in $(seq 200); do
    [ "$(grep -c '"event":"ready"' "$d/sim-$n.out" 2>/dev/null)" -ge "${4:-1}" ] && break; sleep 0.05
  done
  SIM_PORT[$n]=$(grep '"event":"ready"' "$d/sim-$n.out" | tail -1 | grep -o '"port":[0-9]*' | cut -d: -f2)
  [ -n "${SIM_PORT[$n]}" ] || { cat "$d/sim-$n.err" >&2; echo "sim $n did not start" >&2; exit 1; }
}

GW_PID='' GW_PORT=''
start_gateway() {  # start_gateway RUN_DIR HEALTH(on|off) BACKENDS...
  local d=$1 health=$2; shift 2
  {
    echo 'listen: "127.0.0.1:0"'
    echo 'backends:'
    for n in "$@"; do echo "  - {name: $n, url: \"http://127.0.0.1:${SIM_PORT[$n]}\"}"; done
    echo 'routes:'
    echo "  - {name: all, backends: [$(IFS=,; echo "$*" | sed 's/,/, /g')], policy: round_robin}"
    echo "access_log: $d/access.log"
    if [ "$health" = off ]; then
      echo 'health_checks: {enabled: false}'
      echo 'outlier_detection: {enabled: false}'
    fi
  } >"$d/gateway.yaml"
  "$LLMUX" gateway --config "$d/gateway.yaml" >"$d/gateway.out" 2>"$d/gateway.err" &
  GW_PID=$!; STARTED+=("$GW_PID")
  GW_PORT=$(wait_ready "$d/gateway.out")
  [ -n "$GW_PORT" ] || { cat "$d/gateway.err" >&2; echo "gateway did not start" >&2; exit 1; }
  wait_http "http://127.0.0.1:$GW_PORT/health" || { cat "$d/gateway.err" >&2; echo "gateway /health not 200" >&2; exit 1; }
  # one short request through it
  curl -s -o /dev/null --max-time 10 -H 'content-type: application/json' \
    -d '{"model":"Qwen3.6-35B-A3B","messages":[{"role":"user","content":"hi"}],"max_tokens":2}' \
    "http://127.0.0.1:$GW_PORT/v1/chat/completions" || true
}

# ---- one fault run --------------------------------------------------------------------------
fault_run() {  # fault_run NAME HEALTH WITH_C
  local name=$1 health=$2 with_c=$3 d=$tmp/$1 t0 t cl ev n
  mkdir -p "$d"
  local names=(A B); [ "$with_c" = 1 ] && names+=(C)
  for n in "${names[@]}"; do start_sim "$n" "$d"; done
  start_gateway "$d" "$health" "${names[@]}"
  $PY -c 'import json,sys; print(json.dumps(dict(name=sys.argv[1], health=sys.argv[2], backends=sys.argv[3:])))' \
    "$name" "$health" "${names[@]}" >"$d/run.json"
  log "$name: gateway :$GW_PORT over ${names[*]} (sims :${SIM_PORT[A]} :${SIM_PORT[B]}${SIM_PORT[C]:+ :${SIM_PORT[C]}}), $STREAMS streams for ${DURATION}s"
  t0=$(awk -v n="$(now)" 'BEGIN {printf "%.3f", n + 1.5}')
  timeout $((${DURATION%.*} + ${DRAIN%.*} + 60)) $PY "$HELPER" load --url "http://127.0.0.1:$GW_PORT" \
    --streams "$STREAMS" --duration "$DURATION" --t0 "$t0" --max-tokens "$MAX_TOKENS" \
    --temperature "$TEMPERATURE" --idle-timeout "$IDLE_TIMEOUT" --drain "$DRAIN" --health-poll 0.1 \
    --out "$d" >"$d/client.out" 2>&1 &
  cl=$!; STARTED+=("$cl")
  : >"$d/events.txt"
  for ev in $SCALED; do
    local k=${ev%%=*} at=${ev#*=}
    [ "$with_c" = 1 ] || [[ $k != c_* ]] || continue
    sleep_until "$(awk -v a="$t0" -v b="$at" 'BEGIN {printf "%.3f", a + b}')"
    case $k in
      a_kill) echo "a_kill $(now)" >>"$d/events.txt"; kill -9 "${SIM_PID[A]}"; wait "${SIM_PID[A]}" 2>/dev/null || true ;;
      a_back) echo "a_back_cmd $(now)" >>"$d/events.txt"
              start_sim A "$d" "${SIM_PORT[A]}" 2
              echo "a_back $(now)" >>"$d/events.txt" ;;
      b_stall) t=$(now); echo "b_stall $t $(admin "${SIM_PORT[B]}" "$B_FAULT_BODY")" >>"$d/events.txt" ;;
      b_clear) t=$(now); echo "b_clear $t $(admin "${SIM_PORT[B]}" '{}')" >>"$d/events.txt" ;;
      c_hang) t=$(now); echo "c_hang $t $(admin "${SIM_PORT[C]}" '{"hang": true}')" >>"$d/events.txt" ;;
      c_clear) t=$(now); echo "c_clear $t $(admin "${SIM_PORT[C]}" '{}')" >>"$d/events.txt" ;;
    esac
    log "  $k at +$(awk -v a="$t0" -v n="$(now)" 'BEGIN {printf "%.2f", n - a}') s"
  done
  wait "$cl" || log "  client exited with $?"
  log "  client: $(tail -1 "$d/client.out")"
  {
    echo "cpu_gateway_s $(cpu_s "$GW_PID")"
    for n in "${names[@]}"; do echo "cpu_sim_${n}_s $(cpu_s "${SIM_PID[$n]}")"; done
  } >>"$d/events.txt"
  stop_pid "$GW_PID"
  # The streams the gateway continued on another backend, against whole answers from B (its
  # fault cleared by now; every simulator answers a greedy prompt alike).
  timeout 300 $PY "$HELPER" verify --url "http://127.0.0.1:${SIM_PORT[B]}" --run "$d" \
    --max-tokens "$MAX_TOKENS" --temperature "$TEMPERATURE" || log "  verify exited with $?"
  for n in "${names[@]}"; do stop_pid "${SIM_PID[$n]}"; done
  SIM_PORT=()
}

# ---- soak -----------------------------------------------------------------------------------
soak_run() {
  local d=$tmp/soak n cl
  mkdir -p "$d"
  for n in A B C; do start_sim "$n" "$d"; done
  start_gateway "$d" on A B C
  log "soak: $SOAK_STREAMS streams for ${SOAK_S}s, gateway RSS every 5 s (warm-up ${SOAK_WARMUP}s)"
  timeout $((SOAK_S + ${DRAIN%.*} + 60)) $PY "$HELPER" load --url "http://127.0.0.1:$GW_PORT" \
    --streams "$SOAK_STREAMS" --duration "$SOAK_S" --max-tokens "$MAX_TOKENS" \
    --idle-timeout "$IDLE_TIMEOUT" --drain "$DRAIN" --health-poll 1 --rss-pid "$GW_PID" --rss-every 5 \
    --out "$d" >"$d/client.out" 2>&1 &
  cl=$!; STARTED+=("$cl")
  wait "$cl" || log "  client exited with $?"
  log "  soak client: $(tail -1 "$d/client.out")"
  echo "cpu_gateway_s $(cpu_s "$GW_PID")" >"$d/events.txt"
  stop_pid "$GW_PID"
  for n in A B C; do stop_pid "${SIM_PID[$n]}"; done
  SIM_PORT=()
}

IFS=, read -r -a RUN_LIST <<<"$RUNS"
DIRS=()
for r in "${RUN_LIST[@]}"; do
  case $r in
    faults) fault_run faults on 1; DIRS+=("$tmp/faults") ;;
    faults_no_health) fault_run faults_no_health off 1; DIRS+=("$tmp/faults_no_health") ;;
    reference_no_c) fault_run reference_no_c on 0; DIRS+=("$tmp/reference_no_c") ;;
    soak) soak_run ;;
    *) echo "unknown run $r" >&2; exit 2 ;;
  esac
done

# ---- report ---------------------------------------------------------------------------------
mkdir -p "$OUT"
GIT_HEAD=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git --no-optional-locks -C "$ROOT" status --porcelain -- src CMakeLists.txt 2>/dev/null)" ]; then
  GIT_HEAD="$GIT_HEAD (with uncommitted changes under src/ or CMakeLists.txt)"
fi
$PY - "$tmp/meta.json" <<PYEOF
import hashlib, json, os, platform, sys, time
tl = dict(kv.split("=") for kv in "$SCALED".split())
tl = {k: float(v) for k, v in tl.items()}
f = lambda x: f"{x:.1f}"
cpu = "?"
for ln in open("/proc/cpuinfo"):
    if ln.startswith("model name"):
        cpu = ln.split(":", 1)[1].strip(); break
mem = open("/proc/meminfo").readline().split()[1]
meta = dict(
    command="$CMDLINE".strip(), started=time.strftime("%Y-%m-%d %H:%M:%S", time.localtime($T_START)),
    elapsed_s=time.time() - $T_START,
    machine=f"{os.cpu_count()} cores ({cpu}), {int(mem) // 1024 // 1024} GiB, {platform.system()} {platform.release()}, shared with other engineers",
    loadavg_start="$LOAD_START", loadavg_end=" ".join(open("/proc/loadavg").read().split()[:3]),
    binary="$LLMUX_SRC", binary_mtime="$LLMUX_MTIME",
    binary_sha256=hashlib.sha256(open("$LLMUX", "rb").read()).hexdigest(), git_head="$GIT_HEAD",
    duration_s=$DURATION, streams=$STREAMS, time_scale=$TIME_SCALE, max_tokens=$MAX_TOKENS,
    stall_after=$STALL_AFTER, b_fault="$B_FAULT", idle_timeout_s=$IDLE_TIMEOUT, drain_s=$DRAIN, timeline=tl,
    timeline_spec="$TIMELINE",
    c_window=[tl["c_hang"], tl["c_clear"]],
    c_solo_window=[max(tl["a_back"], tl["b_clear"]), tl["c_clear"]],
    soak_minutes=$SOAK_MIN, soak_streams=$SOAK_STREAMS, soak_warmup_s=$SOAK_WARMUP, soak_rss_every=5,
    setup=[
        f"Backends A, B, C: \`llmux sim --port 0 --time-scale $TIME_SCALE\` (DGX Spark preset, clock $TIME_SCALE× faster), each its own process on 127.0.0.1.",
        f"Requests: streaming \`POST /v1/chat/completions\`, a ~15-token prompt, max_tokens $MAX_TOKENS with ignore_eos (exactly $MAX_TOKENS tokens), include_usage; ~3 s each at ~33 streams per backend.",
        f"Load: bench/fault_bench.py, $STREAMS closed-loop streams (a stream sends its next request when one ends) on kept-alive connections for $DURATION s, then up to $DRAIN s for the running ones; the client gives up on a request after $IDLE_TIMEOUT s without a byte (counted as 'client gave up'). Why a client timeout at all: the gateway's own timeouts (first_byte 300 s, idle 120 s) are longer than the run, and in a closed loop every stalled or held stream keeps its client slot for as long as the client waits, taking load away from the healthy backends; $IDLE_TIMEOUT s is ~3x a whole request and ~200x the normal gap between tokens, so it only fires on a stream that has stopped. A longer one (--idle-timeout) shrinks the load for longer; it changes nothing in what the gateway does.",
        "Gateway: \`llmux gateway --config\` with \`listen: 127.0.0.1:0\`, backends A, B, C, one route \`round_robin\` over them, access log to a file, every other key at its default (health_checks every 2 s, timeout 1 s, unhealthy after 2 failures, healthy after 1 pass; outlier_detection after 3 failures, 5 s doubling to 60 s; retries max_attempts 2; timeouts first_byte 300 s, idle 120 s). The comparison run adds \`health_checks: {enabled: false}\` and \`outlier_detection: {enabled: false}\`; the reference run lists only A and B.",
        (f"B stalls with \`POST /admin/faults {{\"freeze\": true}}\`: its engine stops, as a vLLM engine that hangs while its HTTP server goes on — every running stream stops where it is (connection open), new requests are accepted and get their response header but no token, \`/health\` stays 200. \`{{}}\` lets everything go on from where it stood." if "$B_FAULT" == "freeze" else
         f"B stalls with \`POST /admin/faults {{\"stall_after\": $STALL_AFTER}}\`: every request arriving at B from then on stops after $STALL_AFTER tokens and its connection stays open; requests already running finish. \`{{}}\` clears it for new requests; a stream already stalled stays stalled (the simulator dropped it from its engine) until the client or the gateway leaves."),
        "C 'unreachable' is \`POST /admin/faults {\"hang\": true}\`: C still accepts connections, and every request read from then on (\`/health\` included, on new and kept-alive connections) is held unanswered; requests already running go on. This is the most faithful option without root: truly hanging connects (SYNs dropped) need a firewall rule (root) or a blackhole address the gateway's fixed backend URL cannot point to; \`refuse_new\` gives an immediate ECONNREFUSED, which is a different and easier failure (the gateway retries a refused connect on another backend); SIGSTOP of the simulator would also freeze the running streams, but connects would still complete in the kernel's 4096-deep accept queue, so it is no closer for new requests. Held requests are served when the hang is cleared (unlike a real partition).",
        "A is killed with SIGKILL (its running streams are cut by the kernel's close) and restarted on the same port with the same flags.",
        "Time to take a backend out / bring it back: from the gateway's log lines (their millisecond timestamps) and from GET /health polled every 100 ms through the gateway (each backend's state: up, trial, ejected, unhealthy).",
    ],
    timeline_rows=[("A", "SIGKILL / restarted on its port", f(tl["a_kill"]), f(tl["a_back"])),
                   ("B", ("freeze" if "$B_FAULT" == "freeze" else f"stall_after {$STALL_AFTER}") + " / cleared", f(tl["b_stall"]), f(tl["b_clear"])),
                   ("C", "hang (unreachable) / cleared", f(tl["c_hang"]), f(tl["c_clear"]))],
    timeline_notes=[
        "The issue's timeline restarts A at ~50 s. With C unreachable from 45 s and B stalling until 65 s, that leaves no healthy backend from 45 to 50 s, against the issue's own rule (at every moment at least one backend healthy); A is therefore restarted at 44 s (all times scale with --duration: x × duration / 90).",
        "A request 'failed although a healthy backend existed' is any request that did not end ok (200, [DONE], no error event) and began while at least one backend was healthy by this timeline, except the streams already running on A when it was killed (counted apart).",
    ] if "$TIMELINE" == "a_kill=20,a_back=44,b_stall=35,b_clear=65,c_hang=45,c_clear=75" else [
        f"Custom timeline: $TIMELINE (seconds for a 90 s run, scaled by duration / 90).",
        "A request 'failed although a healthy backend existed' is any request that did not end ok (200, [DONE], no error event) and began while at least one backend was healthy by this timeline, except the streams already running on A when it was killed (counted apart).",
    ],
    notes=[],
)
json.dump(meta, open(sys.argv[1], "w"), indent=1)
PYEOF
SOAK_ARG=()
[ -f "$tmp/soak/client.json" ] && SOAK_ARG=(--soak "$tmp/soak")
$PY "$HELPER" report --runs "${DIRS[@]}" "${SOAK_ARG[@]}" --meta "$tmp/meta.json" \
  --out-md "$OUT/fault_bench.md" --out-json "$OUT/fault_bench.json"
log "wrote $OUT/fault_bench.md and .json"
cat "$OUT/fault_bench.md"
