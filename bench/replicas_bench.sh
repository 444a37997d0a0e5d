#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Gateway replicas sharing state in Redis (issue 15, "Measured, not assumed").
#
# Starts Debian's redis-server on a free loopback port (no persistence), two `llmux sim`
# backends A and B (DGX Spark preset, real time), and three `llmux gateway` replicas, each with
# deploy/replicas.yaml rewritten to loopback (listen 127.0.0.1:0, the Redis and the simulators
# here, one worker, its own access log) plus two API keys: `bench` (no limits) and `limited`
# (--quota-limit requests per minute). The clients (bench/replicas_bench.py) send each request to
# a replica drawn at random. One run, four parts:
#   1. conversations  USERS users x TURNS turns of /v1/responses with previous_response_id:
#                     not-found count, each backend's share of the turns
#   2. quota          the `limited` key at --quota-rate requests/minute for --quota-duration s:
#                     admitted per minute over the last 2 minutes against the limit
#   3. outage         USERS conversations begun over --outage-stagger s, --outage-think s between
#                     turns; redis-server stopped (SIGTERM) at --outage-at s and started again,
#                     empty, on the same port --outage-for s later: failed turns, and how the
#                     conversations begun while Redis was away are found afterwards
#   4. latency        the same conversations (max_output_tokens 1, two --zero-cost simulators)
#                     through three replicas on Redis (random replica per turn) and three on
#                     `state: memory` (each user always at the same replica, so every id is in
#                     that replica's own table; and, for reference, at random replicas, where a
#                     replica asks the backends for ids it never saw), taking turns for
#                     --latency-rounds rounds: p50/p99 of a follow-up turn, and the replicas' CPU
#                     time per request (/proc schedstat); also the Redis replicas with each user always at
#                     the same one (every lookup a hit in its own cache: the cost of the writes)
# Report: OUT/replicas_bench.md and OUT/replicas_bench.json.
#
# Usage: bench/replicas_bench.sh [--users 32] [--turns 20] [--quota-limit 600]
#          [--quota-rate 2000] [--quota-duration 180] [--outage-at 15] [--outage-for 20]
#          [--outage-stagger 40] [--outage-think 1] [--latency-rounds 6] [--latency-users 16]
#          [--parts conversations,quota,outage,latency] [--out bench/results/replicas_bench]
# Smoke run: bench/replicas_bench.sh --quota-duration 130 --latency-rounds 1 --out /tmp/rb-smoke
# Env: LLMUX (binary, default build/llmux; copied first), REDIS_SERVER (default
# /usr/bin/redis-server), KEEP_TMP=1 (keep the records and logs). Loopback only; servers on free
# ports, stopped by pid on exit; every wait is bounded.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
PY=/usr/bin/python3
HELPER=$ROOT/bench/replicas_bench.py
USERS=32 TURNS=20 QUOTA_LIMIT=600 QUOTA_RATE=2000 QUOTA_DURATION=180
OUTAGE_AT=15 OUTAGE_FOR=20 OUTAGE_STAGGER=40 OUTAGE_THINK=1 LAT_ROUNDS=6 LAT_USERS=16
PARTS=conversations,quota,outage,latency
OUT=$ROOT/bench/results/replicas_bench
CMDLINE="${LLMUX:+LLMUX=$LLMUX }bench/replicas_bench.sh $*"
while [ $# -gt 0 ]; do
  case $1 in
    --users) USERS=$2; shift 2 ;;
    --turns) TURNS=$2; shift 2 ;;
    --quota-limit) QUOTA_LIMIT=$2; shift 2 ;;
    --quota-rate) QUOTA_RATE=$2; shift 2 ;;
    --quota-duration) QUOTA_DURATION=$2; shift 2 ;;
    --outage-at) OUTAGE_AT=$2; shift 2 ;;
    --outage-for) OUTAGE_FOR=$2; shift 2 ;;
    --outage-stagger) OUTAGE_STAGGER=$2; shift 2 ;;
    --outage-think) OUTAGE_THINK=$2; shift 2 ;;
    --latency-rounds) LAT_ROUNDS=$2; shift 2 ;;
    --latency-users) LAT_USERS=$2; shift 2 ;;
    --parts) PARTS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
REDIS_SERVER=${REDIS_SERVER:-/usr/bin/redis-server}
for t in curl "$REDIS_SERVER"; do command -v "$t" >/dev/null || { echo "missing $t (scripts/setup installs redis-server)" >&2; exit 1; }; done
[ -x $PY ] && $PY -c 'import yaml' 2>/dev/null || { echo "missing $PY with yaml (python3-yaml)" >&2; exit 1; }
(( QUOTA_DURATION >= 120 )) || { echo "--quota-duration: at least 120 (the last 2 minutes are measured)" >&2; exit 2; }
has_part() { case ",$PARTS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

TMP=$(mktemp -d /tmp/replicas_bench.XXXXXX)
STARTED=()
cleanup() { stop_all; if [ "${KEEP_TMP:-0}" = 1 ]; then log "kept $TMP"; else rm -rf "$TMP"; fi; }
trap cleanup EXIT
LLMUX_SRC=${LLMUX:-$ROOT/build/llmux}
[ -x "$LLMUX_SRC" ] || { echo "no $LLMUX_SRC: make build first" >&2; exit 1; }
cp "$LLMUX_SRC" "$TMP/llmux"
LLMUX=$TMP/llmux
# CPU seconds of a process: the time its threads have run, in ns (schedstat), not /proc/PID/stat's
# 10 ms ticks (a set of part 4 uses ~0.2 s, where ticks are 5% apart per process).
cpu_s() { cat /proc/$1/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.6f", s / 1e9}'; }
free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# --- redis-server ------------------------------------------------------------------------
REDIS_PORT=$(free_port) REDIS_PID=
start_redis() {
  "$REDIS_SERVER" --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --daemonize no --dir "$TMP" >>"$TMP/redis.log" 2>&1 &
  REDIS_PID=$!
  STARTED+=("$REDIS_PID")
  local i
  for i in $(seq 100); do
    [ "$(redis-cli -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ] && return 0
    sleep 0.1
  done
  cat "$TMP/redis.log" >&2; echo "redis-server did not start on :$REDIS_PORT" >&2; exit 1
}
command -v redis-cli >/dev/null || { echo "missing redis-cli (redis-tools)" >&2; exit 1; }

# --- simulators --------------------------------------------------------------------------
declare -A SIM_PORT SIM_PID
start_sim() {  # start_sim NAME [extra sim flags...]
  local n=$1; shift
  "$LLMUX" sim --port 0 "$@" >"$TMP/sim-$n.out" 2>"$TMP/sim-$n.err" &
  SIM_PID[$n]=$!; STARTED+=("${SIM_PID[$n]}")
  SIM_PORT[$n]=$(wait_ready "$TMP/sim-$n.out")
  [ -n "${SIM_PORT[$n]}" ] || { cat "$TMP/sim-$n.err" >&2; echo "sim $n did not start" >&2; exit 1; }
}

# --- gateway replicas --------------------------------------------------------------------
# write_config FILE STATE(redis|memory) PREFIX SIM_A SIM_B ACCESS_LOG: deploy/replicas.yaml on loopback.
write_config() {
  $PY - "$ROOT/deploy/replicas.yaml" "$@" "$REDIS_PORT" "$QUOTA_LIMIT" <<'PYEOF'
import sys, yaml
src, out, state, prefix, a, b, log, redis_port, limit = sys.argv[1:]
c = yaml.safe_load(open(src))
c["listen"] = "127.0.0.1:0"
c["threads"] = 1
c["access_log"] = log
urls = [f"http://127.0.0.1:{a}", f"http://127.0.0.1:{b}"]
assert len(c["backends"]) == 2, "deploy/replicas.yaml: two backends expected"
for be, url in zip(c["backends"], urls):
    be["url"] = url
if state == "redis":
    c["state"]["url"] = f"redis://127.0.0.1:{redis_port}/0"
    c["state"]["prefix"] = prefix
else:
    del c["state"]
c["auth"] = {"keys": [{"name": "bench", "key": "sk-bench-unlimited"},
                      {"name": "limited", "key": "sk-bench-limited",
                       "limits": {"requests_per_minute": int(limit)}}]}
yaml.safe_dump(c, open(out, "w"), sort_keys=False)
PYEOF
}
declare -A GW_PORT GW_PID
start_replica() {  # start_replica NAME STATE PREFIX SIM_A SIM_B
  local n=$1
  write_config "$TMP/$n.yaml" "$2" "$3" "$4" "$5" "$TMP/$n.access.log"
  "$LLMUX" gateway --config "$TMP/$n.yaml" >"$TMP/$n.out" 2>"$TMP/$n.err" &
  GW_PID[$n]=$!; STARTED+=("${GW_PID[$n]}")
  GW_PORT[$n]=$(wait_ready "$TMP/$n.out")
  [ -n "${GW_PORT[$n]}" ] || { cat "$TMP/$n.err" >&2; echo "replica $n did not start" >&2; exit 1; }
  wait_http "http://127.0.0.1:${GW_PORT[$n]}/health" || { cat "$TMP/$n.err" >&2; echo "replica $n: /health not 200" >&2; exit 1; }
}
ports_of() { local n p=(); for n in "$@"; do p+=("${GW_PORT[$n]}"); done; (IFS=,; echo "${p[*]}"); }
cpu_sum() { local n t=0; for n in "$@"; do t=$(awk -v a="$t" -v b="$(cpu_s "${GW_PID[$n]}")" 'BEGIN {printf "%.3f", a + b}'); done; echo "$t"; }
# wait_redis_up NAME...: until each replica's /metrics says llmux_state_redis_up 1 (up to 15 s).
wait_redis_up() {
  local n i
  for n in "$@"; do
    for i in $(seq 150); do
      curl -s --max-time 2 "http://127.0.0.1:${GW_PORT[$n]}/metrics" | grep -q '^llmux_state_redis_up 1' && break
      sleep 0.1
    done
  done
}

start_redis
start_sim A
start_sim B
MAIN=(r1 r2 r3)
for n in "${MAIN[@]}"; do start_replica "$n" redis "llmux:bench:" "${SIM_PORT[A]}" "${SIM_PORT[B]}"; done
wait_redis_up "${MAIN[@]}"
MAIN_PORTS=$(ports_of "${MAIN[@]}")
log "redis :$REDIS_PORT, sims :${SIM_PORT[A]} :${SIM_PORT[B]}, replicas $MAIN_PORTS"

if has_part conversations; then
  log "1. conversations: $USERS users x $TURNS turns"
  timeout 600 $PY "$HELPER" conv --ports "$MAIN_PORTS" --users "$USERS" --turns "$TURNS" \
    --key sk-bench-unlimited --tag c --out "$TMP/conversations.jsonl"
fi

if has_part quota; then
  log "2. quota: $QUOTA_RATE/min on a $QUOTA_LIMIT/min key for ${QUOTA_DURATION}s"
  # Start on a fresh clock minute's window state: nothing was admitted for this key before.
  timeout $((QUOTA_DURATION + 60)) $PY "$HELPER" quota --ports "$MAIN_PORTS" --rate "$QUOTA_RATE" \
    --duration "$QUOTA_DURATION" --key sk-bench-limited --out "$TMP/quota.jsonl"
fi

OUTAGE_JSON=None
if has_part outage; then
  log "3. outage: Redis stopped at ${OUTAGE_AT}s for ${OUTAGE_FOR}s"
  T0=$(now)
  timeout 600 $PY "$HELPER" conv --ports "$MAIN_PORTS" --users "$USERS" --turns "$TURNS" \
    --stagger "$OUTAGE_STAGGER" --think "$OUTAGE_THINK" --key sk-bench-unlimited --tag o \
    --seed 3 --out "$TMP/outage.jsonl" &
  CONV=$!
  sleep "$OUTAGE_AT"
  DOWN=$(now); stop_pid "$REDIS_PID"
  log "   redis-server stopped"
  sleep "$OUTAGE_FOR"
  UP=$(now); start_redis
  log "   redis-server started again (empty)"
  wait "$CONV" || true
  OUTAGE_JSON="{\"t0\": $T0, \"redis_stopped\": $DOWN, \"redis_started\": $UP, \"settle\": 5}"
fi

declare -A LAT_CPU
LAT_SETS='[]'
if has_part latency; then
  start_sim ZA --zero-cost
  start_sim ZB --zero-cost
  for n in l1 l2 l3; do start_replica "$n" redis "llmux:bench-latency:" "${SIM_PORT[ZA]}" "${SIM_PORT[ZB]}"; done
  for n in m1 m2 m3; do start_replica "$n" memory "" "${SIM_PORT[ZA]}" "${SIM_PORT[ZB]}"; done
  wait_redis_up l1 l2 l3
  LAT_CPU[redis]=0 LAT_CPU[redis_sticky]=0 LAT_CPU[memory]=0 LAT_CPU[memory_random]=0
  log "4. latency: $LAT_ROUNDS rounds of $LAT_USERS users x $TURNS turns per set"
  for round in $(seq "$LAT_ROUNDS"); do
    for set in memory redis redis_sticky memory_random; do
      case $set in
        redis) reps=(l1 l2 l3) flags=() ;;
        redis_sticky) reps=(l1 l2 l3) flags=(--sticky) ;;
        memory) reps=(m1 m2 m3) flags=(--sticky) ;;
        memory_random) reps=(m1 m2 m3) flags=() ;;
      esac
      before=$(cpu_sum "${reps[@]}")
      timeout 300 $PY "$HELPER" conv --ports "$(ports_of "${reps[@]}")" --users "$LAT_USERS" \
        --turns "$TURNS" --max-output-tokens 1 --key sk-bench-unlimited --tag "$set-$round" \
        --seed "$round" "${flags[@]}" --out "$TMP/latency.jsonl"
      after=$(cpu_sum "${reps[@]}")
      LAT_CPU[$set]=$(awk -v t="${LAT_CPU[$set]}" -v a="$after" -v b="$before" 'BEGIN {printf "%.3f", t + a - b}')
    done
  done
  # The client tags rows "SET-ROUND": the report groups by SET.
  $PY - "$TMP/latency.jsonl" <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
with open(sys.argv[1], "w") as f:
    for r in rows:
        r["set"] = r["set"].rsplit("-", 1)[0]
        f.write(json.dumps(r) + "\n")
PYEOF
  LAT_SETS='[{"name": "memory", "desc": "state: memory, each user at one replica"}, {"name": "redis", "desc": "state: redis, random replica"}, {"name": "redis_sticky", "desc": "state: redis, each user at one replica (ids in its own cache: writes only)"}, {"name": "memory_random", "desc": "state: memory, random replica"}]'
fi

# Stopping the replicas writes out their access logs.
for n in "${!GW_PID[@]}"; do stop_pid "${GW_PID[$n]}"; done

mkdir -p "$OUT"
MACHINE="$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(uname -sr)"
$PY - "$TMP/meta.json" <<PYEOF
import json, sys
m = dict(command="$CMDLINE", date="$(date -u +%FT%TZ)", machine="$MACHINE",
         users=$USERS, turns=$TURNS, quota_limit=$QUOTA_LIMIT, quota_rate=$QUOTA_RATE,
         quota_duration=$QUOTA_DURATION, outage=$OUTAGE_JSON, outage_users=$USERS,
         outage_stagger=$OUTAGE_STAGGER, outage_think=$OUTAGE_THINK,
         latency_rounds=$LAT_ROUNDS, latency_users=$LAT_USERS, latency_sets=$LAT_SETS,
         latency_cpu={"redis": ${LAT_CPU[redis]:-0}, "redis_sticky": ${LAT_CPU[redis_sticky]:-0}, "memory": ${LAT_CPU[memory]:-0},
                      "memory_random": ${LAT_CPU[memory_random]:-0}},
         replica_logs=["r1", "r2", "r3", "l1", "l2", "l3", "m1", "m2", "m3"],
         notes=[
  "Everything on 127.0.0.1 on one machine: redis-server ($("$REDIS_SERVER" --version | awk '{print $3}')), two simulators, the replicas (one worker each), the clients. Replicas: deploy/replicas.yaml with listen, the Redis URL and the backend URLs rewritten to loopback, threads 1, an access log per replica, and the API keys bench and limited.",
  "Simulators for parts 1-3: \`llmux sim --port 0\` (DGX Spark preset, real time; non-streaming turns of max_output_tokens 16). Part 4: \`llmux sim --port 0 --zero-cost\`, so what is measured is the gateway and Redis, not the model.",
  "Each request goes to a replica drawn at random (part 4's memory set: user i always at replica i mod 3), as a DNS round robin or a load balancer without stickiness would.",
])
json.dump(m, open(sys.argv[1], "w"))
PYEOF
$PY "$HELPER" report --dir "$TMP" --meta "$TMP/meta.json" --out-md "$OUT/replicas_bench.md" \
  --out-json "$OUT/replicas_bench.json"
log "wrote $OUT/replicas_bench.md and .json"
cat "$OUT/replicas_bench.md"
