#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The proxy's system calls per small request, by kind, for llmux and a baseline binary side by
# side: what the kernel's share of CPU per request (bench/gateway_vs_peers.sh, section b) is made
# of, counted rather than timed, so a change that adds or removes a call shows on a noisy machine.
#
# Each binary runs as gateway_vs_peers.sh's llmux path does (`gateway --threads 1 --access-log
# off`, on CPU 0), behind it nginx answering a canned completion (`return 200`,
# bench/peers/nginx-backend.conf.tmpl), in front of it wrk with small POSTs (bench/peers/post.lua);
# nginx and wrk share CPU 1. `perf stat` counts the gateway process's entries into each system
# call (tracepoints syscalls:sys_enter_*) while wrk runs; the figure is the count divided by the
# requests wrk completed. The binaries alternate, `--rounds` times each; the table gives medians.
#
# Usage: bench/syscalls_per_request.sh [--baseline BIN] [--connections 64,16] [--duration 4]
#          [--rounds 3] [--out DIR]
#   LLMUX=path overrides the new binary (default build/llmux).
# Writes DIR/syscalls_per_request.md and .json (default bench/results/syscalls_per_request).
# Needs root (or perf_event_paranoid ≤ -1) for the tracepoints.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PEERS=$ROOT/bench/peers
ARGS="$*"
BASELINE="" CONNS=64,16 DUR=4 ROUNDS=3 OUT=$ROOT/bench/results/syscalls_per_request
while [ $# -gt 0 ]; do
  case $1 in
    --baseline) BASELINE=$2; shift 2 ;;
    --connections) CONNS=$2; shift 2 ;;
    --duration) DUR=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
LLMUX=${LLMUX:-$ROOT/build/llmux}
[ -x "$LLMUX" ] || { echo "no llmux binary at $LLMUX (make build)" >&2; exit 1; }
[ -z "$BASELINE" ] || [ -x "$BASELINE" ] || { echo "--baseline $BASELINE: not executable" >&2; exit 2; }
for t in perf nginx wrk curl taskset; do
  command -v $t >/dev/null || { echo "missing $t (scripts/setup --bench)" >&2; exit 1; }
done
CALLS=(epoll_wait epoll_ctl recvfrom recvmsg sendmsg sendto writev read write)
EVENTS=$(printf 'syscalls:sys_enter_%s,' "${CALLS[@]}")context-switches
perf stat -e "$EVENTS" true >/dev/null 2>&1 ||
  { echo "perf cannot count the syscall tracepoints here (root? perf_event_paranoid?)" >&2; exit 1; }

tmp=$(mktemp -d /tmp/syscalls.XXXXXX)
chmod 755 "$tmp"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

BK=$(free_port); mkdir -p "$tmp/backend"
sed -e "s|@DIR@|$tmp/backend|g" -e "s|@PORT@|$BK|g" "$PEERS/nginx-backend.conf.tmpl" >"$tmp/backend/nginx.conf"
taskset -c 1 nginx -p "$tmp/backend" -e "$tmp/backend/error.log" -c "$tmp/backend/nginx.conf" \
  -g 'daemon off;' &
PIDS+=($!)
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$BK/" && break; sleep 0.1; done

# measure NAME BIN CONNECTIONS: one run; appends "name connections requests count..." to rows.
measure() {
  local name=$1 bin=$2 conns=$3 port d
  port=$(free_port) d=$tmp/$name-$conns; mkdir -p "$d"
  taskset -c 0 "$bin" gateway --port "$port" --backend "up=http://127.0.0.1:$BK" --threads 1 \
    --access-log off >"$d/out" 2>&1 &
  local gw=$!; PIDS+=("$gw")
  local url="http://127.0.0.1:$port/v1/completions" code=""
  for _ in $(seq 100); do
    code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -d '{}' "$url" || true)
    [ "$code" = 200 ] && break; sleep 0.1
  done
  [ "$code" = 200 ] || { echo "$name did not answer: $(tail -3 "$d/out")" >&2; exit 1; }
  timeout 60 taskset -c 1 wrk -t1 -c"$conns" -d1s -s "$PEERS/post.lua" "$url" >/dev/null  # warm
  perf stat -x, -e "$EVENTS" -p "$gw" -o "$d/perf.csv" &
  local perf_pid=$!
  sleep 0.2
  timeout $((DUR + 60)) taskset -c 1 wrk -t1 -c"$conns" -d"${DUR}s" -s "$PEERS/post.lua" "$url" \
    >"$d/wrk.txt" || { echo "$name: wrk did not finish" >&2; exit 1; }
  kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null || true
  kill "$gw"; wait "$gw" 2>/dev/null || true
  local requests
  requests=$(awk '/requests in/{print $1}' "$d/wrk.txt")
  local counts=""
  for c in "${CALLS[@]}"; do
    counts="$counts $(awk -F, -v e="syscalls:sys_enter_$c" '$3==e{print ($1 ~ /^[0-9]+$/) ? $1 : 0}' "$d/perf.csv")"
  done
  counts="$counts $(awk -F, '$3=="context-switches"{print ($1 ~ /^[0-9]+$/) ? $1 : 0}' "$d/perf.csv")"
  echo "$name $conns $requests$counts" >>"$tmp/rows"
  echo "$name c$conns: $requests requests" >&2
}

: >"$tmp/rows"
for round in $(seq "$ROUNDS"); do
  for conns in ${CONNS//,/ }; do
    if [ -n "$BASELINE" ] && [ $((round % 2)) -eq 0 ]; then
      measure llmux-base "$BASELINE" "$conns"; measure llmux "$LLMUX" "$conns"
    else
      measure llmux "$LLMUX" "$conns"; [ -z "$BASELINE" ] || measure llmux-base "$BASELINE" "$conns"
    fi
  done
done

mkdir -p "$OUT"
rev=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
/usr/bin/python3 - "$tmp/rows" "$OUT" "$ARGS" "$rev" "${CALLS[*]} context-switches" <<'PY'
import json, statistics, sys, time
rows_path, out, args, rev, names = sys.argv[1:6]
names = names.split()
runs = {}
for line in open(rows_path):
    f = line.split()
    name, conns, requests, counts = f[0], int(f[1]), int(f[2]), [int(x) for x in f[3:]]
    runs.setdefault((name, conns), []).append({n: c / requests for n, c in zip(names, counts)} |
                                               {"requests": requests})
table = {}
for key, rs in runs.items():
    table[key] = {n: statistics.median(r[n] for r in rs) for n in names}
    table[key]["total"] = statistics.median(sum(r[n] for n in names if n != "context-switches")
                                            for r in rs)
shown = [n for n in names if any(t[n] > 0.0005 for t in table.values())]
lines = ["# System calls per small request", "",
         f"Run {time.strftime('%Y-%m-%d %H:%M:%S')} at {rev}; `bench/syscalls_per_request.sh {args}`. "
         "Gateway on CPU 0 (`--threads 1 --access-log off`), nginx `return 200` behind it and wrk "
         "(small POSTs) on CPU 1; `perf stat` counts the gateway's entries into each system call "
         "while wrk runs, divided by the requests wrk completed; medians over rounds.", "",
         "| binary | connections | " + " | ".join(shown) + " | all calls |",
         "|---|---:|" + "---:|" * (len(shown) + 1)]
for (name, conns), t in sorted(table.items(), key=lambda kv: (kv[0][1] * -1, kv[0][0])):
    lines.append(f"| {name} | {conns} | " + " | ".join(f"{t[n]:.3f}" for n in shown) +
                 f" | {t['total']:.3f} |")
conns_seen = sorted({c for _, c in table}, reverse=True)
if any(n == "llmux-base" for n, _ in table):
    lines.append("")
    for c in conns_seen:
        if ("llmux", c) in table and ("llmux-base", c) in table:
            ratio = table[("llmux", c)]["total"] / table[("llmux-base", c)]["total"]
            lines.append(f"- {c} connections: system calls per request, new/baseline = **{ratio:.3f}**")
open(f"{out}/syscalls_per_request.md", "w").write("\n".join(lines) + "\n")
json.dump({"args": args, "revision": rev,
           "runs": [{"binary": n, "connections": c, "per_request": rs} for (n, c), rs in runs.items()],
           "medians": [{"binary": n, "connections": c, **t} for (n, c), t in table.items()]},
          open(f"{out}/syscalls_per_request.json", "w"), indent=1)
print("\n".join(lines))
PY
