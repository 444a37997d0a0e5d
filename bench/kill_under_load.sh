#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One backend SIGKILLed under load (issue 37's opening measure: "32 closed-loop streams over the
# seed's two backends, one SIGKILLed: 16 of 291 streams end in an error event"), this binary
# beside a BASELINE one, each with fresh processes: two `llmux sim` backends (the seed's DGX
# Spark preset, --time-scale), `llmux gateway --config` (round_robin over both, defaults
# otherwise), CLIENTS closed-loop streaming chat clients (`llmux bench run`, greedy) for DURATION
# seconds; backend A is SIGKILLed KILL_AT seconds in and not restarted. Counted from the client's
# run.json: requests, those that failed (an error event, a broken stream, an error status) by
# kind; from the gateway's /metrics: streams migrated. Report: OUT/kill_under_load.md and .json.
#
# Usage: bench/kill_under_load.sh [--clients 32] [--duration 30] [--kill-at 10]
#          [--time-scale 1] [--baseline BIN] [--out bench/results/kill_under_load]
# Env: LLMUX (binary, default build/llmux; copied first). Loopback only; servers on free ports,
# stopped by pid on exit; every wait is bounded.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
PY=/usr/bin/python3
CLIENTS=32 DURATION=30 KILL_AT=10 TIME_SCALE=1 BASELINE=''
OUT=$ROOT/bench/results/kill_under_load
CMDLINE="bench/kill_under_load.sh $*"
while [ $# -gt 0 ]; do
  case $1 in
    --clients) CLIENTS=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --kill-at) KILL_AT=$2; shift 2 ;;
    --time-scale) TIME_SCALE=$2; shift 2 ;;
    --baseline) BASELINE=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
TMP=$(mktemp -d /tmp/kill-under-load.XXXXXX)
STARTED=()
trap 'stop_all; [ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"' EXIT
LLMUX_SRC=${LLMUX:-$ROOT/build/llmux}
[ -x "$LLMUX_SRC" ] || { echo "no llmux binary at $LLMUX_SRC (make build)" >&2; exit 1; }
cp "$LLMUX_SRC" "$TMP/llmux-new"
BINARIES=(new)
if [ -n "$BASELINE" ]; then cp "$BASELINE" "$TMP/llmux-base"; BINARIES+=(base); fi

for which in "${BINARIES[@]}"; do
  d=$TMP/$which; mkdir -p "$d"
  binary=$TMP/llmux-$which
  declare -A PORT PID
  for n in A B; do
    "$TMP/llmux-new" sim --port 0 --time-scale "$TIME_SCALE" >"$d/sim-$n.out" 2>"$d/sim-$n.err" &
    PID[$n]=$!; STARTED+=(${PID[$n]})
    PORT[$n]=$(wait_ready "$d/sim-$n.out")
    [ -n "${PORT[$n]}" ] || { cat "$d/sim-$n.err" >&2; echo "sim $n did not start" >&2; exit 1; }
  done
  {
    echo 'listen: "127.0.0.1:0"'
    echo "access_log: $d/access.log"
    echo 'backends:'
    for n in A B; do echo "  - {name: $n, url: \"http://127.0.0.1:${PORT[$n]}\"}"; done
    echo 'routes:'
    echo '  - {name: all, backends: [A, B], policy: round_robin}'
  } >"$d/gateway.yaml"
  "$binary" gateway --config "$d/gateway.yaml" >"$d/gateway.out" 2>"$d/gateway.err" &
  STARTED+=($!)
  gw_port=$(wait_ready "$d/gateway.out")
  [ -n "$gw_port" ] || { cat "$d/gateway.err" >&2; echo "gateway did not start" >&2; exit 1; }
  wait_http "http://127.0.0.1:$gw_port/health" || { echo "gateway /health not 200" >&2; exit 1; }
  log "$which: $CLIENTS streams for ${DURATION}s, A killed at ${KILL_AT}s"
  ( sleep "$KILL_AT"; kill -9 "${PID[A]}" 2>/dev/null || true ) &
  killer=$!
  "$TMP/llmux-new" bench run --url "http://127.0.0.1:$gw_port" --endpoint chat --temperature 0 \
    --input-len 256 --input-spread 0.5 --output-len 256 --output-spread 0.5 --seed 7 \
    --concurrency "$CLIENTS" --duration "$DURATION" --no-progress --no-plots --out "$d" \
    >"$d/bench.md" 2>"$d/bench.err" || {
    rc=$?; [ "$rc" -eq 1 ] || { cat "$d/bench.err" >&2; exit "$rc"; }
  }
  wait "$killer" 2>/dev/null || true
  curl -s --max-time 5 "http://127.0.0.1:$gw_port/metrics" >"$d/metrics.txt" || true
  stop_all; STARTED=()
done

mkdir -p "$OUT"
$PY - "$TMP" "$OUT" "$CMDLINE" "$CLIENTS" "$DURATION" "$KILL_AT" \
  "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
  "$(head -1 "${BASELINE}.rev" 2>/dev/null || true)" "${BINARIES[@]}" <<'EOF'
import json, os, re, sys
tmp, out, cmdline, clients, duration, kill_at, head, base_rev, *binaries = sys.argv[1:]
runs = {}
for which in binaries:
    agg = json.load(open(os.path.join(tmp, which, "run.json")))["levels"][0]["aggregate"]
    migrated = 0
    try:
        for line in open(os.path.join(tmp, which, "metrics.txt")):
            m = re.match(r"^llmux_migrations_total\{[^}]*\}\s+([0-9.e+]+)$", line)
            if m:
                migrated += float(m.group(1))
    except OSError:
        pass
    runs[which] = dict(requests=agg["requests"], ok=agg["ok"], failed=agg["failed"],
                       errors=agg.get("errors", {}), migrated=int(migrated))
doc = dict(cmdline=cmdline, git_head=head, baseline_rev=base_rev, clients=int(clients),
           duration_s=float(duration), kill_at_s=float(kill_at), runs=runs)
os.makedirs(out, exist_ok=True)
json.dump(doc, open(os.path.join(out, "kill_under_load.json"), "w"), indent=2)
names = dict(new=f"this binary ({head})", base=f"baseline {base_rev}")
lines = ["# One backend SIGKILLed under load", "",
         f"`{cmdline}`: two `llmux sim` (DGX Spark preset) behind `llmux gateway` (round_robin), "
         f"{clients} closed-loop streaming chat clients for {duration} s, backend A SIGKILLed "
         f"{kill_at} s in and not restarted.", "",
         "| binary | requests | ok | failed | failed by kind | streams migrated |",
         "|---|---:|---:|---:|---|---:|"]
for which, run in runs.items():
    kinds = ", ".join(f"{k}: {v}" for k, v in run["errors"].items()) or "—"
    lines.append(f"| {names[which]} | {run['requests']} | {run['ok']} | {run['failed']} | {kinds} "
                 f"| {run['migrated']} |")
open(os.path.join(out, "kill_under_load.md"), "w").write("\n".join(lines) + "\n")
EOF
log "report: $OUT/kill_under_load.md"
