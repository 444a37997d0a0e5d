#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Proxies' own user-space instructions per small request, side by side in one run (issue 13): a
# figure that does not move with the machine's load, where CPU time per request on this shared
# VM swings by 2x from one round to the next (bench/results/http_layer). Each proxy runs one
# worker under valgrind's callgrind (instrumentation switched on only while the measured load
# runs), behind it the same fixed nginx backend answering a canned completion (`return 200`),
# in front of it wrk with the same small POSTs as bench/gateway_vs_peers.sh (b). The figure is
# the proxy process's instructions (all its threads) divided by the requests wrk counted.
#
# Next to it, the allocator calls per request: calls, from the proxy's own code and its other
# libraries, into the C allocator's entry points (malloc, calloc, realloc, the aligned forms,
# mimalloc's mi_* forms, and operator new where the allocator's library defines it; calls inside
# the allocator's own library are not counted twice). llmux's operator new (src/core/heap.cpp)
# counts only when it goes to mimalloc, not when its thread's cache serves it (issue 13: "no
# allocation per request in the steady state").
#
# It counts user space only: the kernel's share (system calls, TCP) is not in it — compare that
# with gateway_vs_peers.sh (b), whose CPU time includes it. Instructions are not time (no cache
# misses, no branch mispredictions), but a change that removes work shows here run after run.
#
# Usage: bench/proxy_instructions.sh [--paths llmux,nginx,haproxy] [--baseline BIN]
#          [--duration 3] [--connections 16] [--out DIR]
#   --baseline BIN adds llmux-base (BIN run as llmux is) and the ratio new/baseline.
#   LLMUX=path overrides the binary (default build/llmux).
# Writes DIR/proxy_instructions.md and .json (default bench/results/proxy_instructions).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PEERS=$ROOT/bench/peers
ARGS="$*"
PATHS=llmux,nginx,haproxy BASELINE="" DUR=3 CONN=16 OUT=$ROOT/bench/results/proxy_instructions
while [ $# -gt 0 ]; do
  case $1 in
    --paths) PATHS=$2; shift 2 ;;
    --baseline) BASELINE=$2; shift 2 ;;
    --duration) DUR=$2; shift 2 ;;
    --connections) CONN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
LLMUX=${LLMUX:-$ROOT/build/llmux}
[ -x "$LLMUX" ] || { echo "no llmux binary at $LLMUX (make build)" >&2; exit 1; }
[ -z "$BASELINE" ] || [ -x "$BASELINE" ] || { echo "--baseline $BASELINE: not executable" >&2; exit 2; }
[ -z "$BASELINE" ] || PATHS="$PATHS,llmux-base"
for t in valgrind callgrind_control nginx haproxy wrk curl; do
  command -v $t >/dev/null || { echo "missing $t (scripts/setup --bench)" >&2; exit 1; }
done

tmp=$(mktemp -d /tmp/pinstr.XXXXXX)
chmod 755 "$tmp"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 300); do curl -s -o /dev/null "$1" && return 0; sleep 0.2; done; return 1; }

# The backend: nginx answering every POST with a canned completion.
BK=$(free_port); mkdir -p "$tmp/backend"
sed -e "s|@DIR@|$tmp/backend|g" -e "s|@PORT@|$BK|g" "$PEERS/nginx-backend.conf.tmpl" >"$tmp/backend/nginx.conf"
nginx -p "$tmp/backend" -e "$tmp/backend/error.log" -c "$tmp/backend/nginx.conf" -g 'daemon off;' &
PIDS+=($!)
wait_http "http://127.0.0.1:$BK/" || { echo "backend did not start" >&2; exit 1; }

: >"$tmp/rows"
for p in ${PATHS//,/ }; do
  port=$(free_port) d=$tmp/$p; mkdir -p "$d"
  vg=(valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$d/cg.out")
  case $p in
    llmux|llmux-base)
      bin=$LLMUX; [ "$p" = llmux-base ] && bin=$BASELINE
      "${vg[@]}" "$bin" gateway --port "$port" --backend "up=http://127.0.0.1:$BK" --threads 1 \
        --access-log off >"$d/out" 2>&1 &
      ;;
    nginx)
      sed -e "s|@DIR@|$d|g" -e "s|@PORT@|$port|g" -e "s|@UPSTREAM_PORT@|$BK|g" \
        "$PEERS/nginx-proxy.conf.tmpl" >"$d/nginx.conf"
      "${vg[@]}" nginx -p "$d" -e "$d/error.log" -c "$d/nginx.conf" \
        -g 'daemon off; master_process off;' >"$d/out" 2>&1 &
      ;;
    haproxy)
      sed -e "s|@PORT@|$port|g" -e "s|@UPSTREAM_PORT@|$BK|g" -e "s|@MAXCONN@|1000|g" \
        "$PEERS/haproxy.cfg.tmpl" >"$d/haproxy.cfg"
      "${vg[@]}" haproxy -db -f "$d/haproxy.cfg" >"$d/out" 2>&1 &
      ;;
    *) echo "unknown path $p" >&2; exit 2 ;;
  esac
  vpid=$!; PIDS+=("$vpid")
  url="http://127.0.0.1:$port/v1/completions"
  for _ in $(seq 300); do
    code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' -d '{}' "$url" || true)
    [ "$code" = 200 ] && break; sleep 0.2
  done
  [ "$code" = 200 ] || { echo "$p did not answer: $(tail -3 "$d/out")" >&2; exit 1; }
  # Every step bounded: a proxy that stops answering under valgrind ends the run with a message.
  timeout 60 wrk -t1 -c"$CONN" -d1s -s "$PEERS/post.lua" "$url" >/dev/null   # warm: pools, caches
  timeout 60 callgrind_control -i on "$vpid" >/dev/null || { echo "$p: callgrind_control -i on failed" >&2; exit 1; }
  timeout $((DUR + 60)) wrk -t1 -c"$CONN" -d"${DUR}s" -s "$PEERS/post.lua" "$url" >"$d/wrk.txt" ||
    { echo "$p: wrk did not finish" >&2; exit 1; }
  timeout 60 callgrind_control -i off "$vpid" >/dev/null || { echo "$p: callgrind_control -i off failed" >&2; exit 1; }
  # The counts written now (a proxy that ignores or is slow to act on a signal under valgrind
  # loses nothing), then the process stopped: SIGINT, SIGKILL after 20 s.
  timeout 60 callgrind_control -d "$vpid" >/dev/null || { echo "$p: callgrind_control -d failed" >&2; exit 1; }
  kill -INT "$vpid" 2>/dev/null || true
  for _ in $(seq 200); do kill -0 "$vpid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$vpid" 2>/dev/null || true
  wait "$vpid" 2>/dev/null || true
  req=$(awk '/requests in/{print $1}' "$d/wrk.txt")
  non2xx=$(awk '/Non-2xx/{print $NF}' "$d/wrk.txt"); non2xx=${non2xx:-0}
  ir=0
  for f in "$d"/cg.out*; do   # one file per process (and part): summed
    n=$(awk '/^totals:/{t = $2} END {print t + 0}' "$f"); ir=$((ir + n))
  done
  allocs=$(/usr/bin/python3 "$ROOT/bench/callgrind_alloc_calls.py" "$d"/cg.out*)
  # llmux's HTTP/1.1 parser's share: instructions in its functions (code inlined into them
  # included), and in the readers that give the gateway its request and the client's header
  # (gateway::RequestParser, gateway::UpstreamResponse). The names match the parser before and
  # after issue 35 (both live in llmux::http::parser_simd).
  parser_ir=0 readers_ir=0
  case $p in
    llmux|llmux-base)
      read -r parser_ir readers_ir < <(/usr/bin/python3 "$ROOT/bench/callgrind_function_share.py" \
        --group 'parser=llmux::http::parser_(simd|scalar)::' \
        --group 'readers=llmux::gateway::(RequestParser|UpstreamResponse)::' "$d"/cg.out* |
        awk '{printf "%s ", $2} END {print ""}')
      ;;
  esac
  echo "$p $req $ir $non2xx $allocs $parser_ir $readers_ir" >>"$tmp/rows"
  printf '%-11s %7d requests  %9.0f instructions/request  %6.2f allocator calls/request\n' "$p" "$req" \
    "$(echo "$ir / $req" | bc -l)" "$(echo "$allocs / $req" | bc -l)" >&2
done

mkdir -p "$OUT"
/usr/bin/python3 - "$tmp/rows" "$OUT" "$LLMUX" "$BASELINE" "$DUR" "$CONN" "$ARGS" <<'EOF'
import json, subprocess, sys, datetime, os
rows_file, out, llmux, baseline, dur, conn, args = sys.argv[1:]
rows = {}
for line in open(rows_file):
    p, req, ir, non2xx, allocs, parser_ir, readers_ir = line.split()
    rows[p] = {"requests": int(req), "instructions": int(ir), "non_2xx": int(non2xx),
               "per_request": int(ir) / int(req), "allocator_calls": int(allocs),
               "allocator_calls_per_request": int(allocs) / int(req),
               "parser_per_request": int(parser_ir) / int(req),
               "parser_and_readers_per_request": (int(parser_ir) + int(readers_ir)) / int(req)}
def ver(cmd):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
        return (r.stdout + r.stderr).strip().splitlines()[0]
    except Exception:
        return "?"
rev = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(llmux)), "rev-parse", "--short", "HEAD"],
                     capture_output=True, text=True).stdout.strip() or "?"
meta = {"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"), "duration_s": int(dur),
        "connections": int(conn), "llmux": llmux, "llmux_git": rev, "baseline": baseline or None,
        "nginx": ver(["nginx", "-v"]), "haproxy": ver(["haproxy", "-v"]), "valgrind": ver(["valgrind", "--version"])}
json.dump({"meta": meta, "rows": rows}, open(os.path.join(out, "proxy_instructions.json"), "w"), indent=1)
L = ["# Proxies' user-space instructions per small request", "",
     f"Run {meta['date']}; `bench/proxy_instructions.sh {args}`. Each proxy: one worker under callgrind "
     f"(instrumented only while measured), wrk -t1 -c{conn} -d{dur}s small POSTs (bench/peers/post.lua), "
     "behind it nginx `return 200` with a canned completion. User space only (no kernel time). "
     f"llmux: `{llmux}` (checkout at {rev}); {meta['nginx']}; {meta['haproxy']}; {meta['valgrind']}.", "",
     "Allocator calls: calls into malloc, calloc, realloc, the aligned forms, mimalloc's mi_* forms and "
     "the allocator library's operator new, from outside that library (bench/callgrind_alloc_calls.py); "
     "llmux's own operator new counts only when its thread's block cache cannot serve it.", "",
     "| path | requests | non-2xx | instructions/request | allocator calls/request |",
     "|---|---:|---:|---:|---:|"]
for p, r in rows.items():
    L.append(f"| {p} | {r['requests']:,} | {r['non_2xx']} | {r['per_request']:,.0f} | "
             f"{r['allocator_calls_per_request']:.2f} |")
L.append("")
def ratio(a, b):
    if a in rows and b in rows:
        L.append(f"- {a}/{b}: **{rows[a]['per_request'] / rows[b]['per_request']:.3f}**")
for b in ("nginx", "haproxy", "llmux-base"):
    ratio("llmux", b)
L += ["", "The HTTP/1.1 parser's share of llmux's instructions per request: instructions in its "
      "functions (llmux::http::parser_simd::..., code inlined into them included; "
      "bench/callgrind_function_share.py), and with the readers that give the gateway the request "
      "and the client's header (gateway::RequestParser, gateway::UpstreamResponse):", "",
      "| path | parser/request | parser and readers/request | share of all |", "|---|---:|---:|---:|"]
for p, r in rows.items():
    if p.startswith("llmux"):
        L.append(f"| {p} | {r['parser_per_request']:,.0f} | {r['parser_and_readers_per_request']:,.0f} | "
                 f"{r['parser_and_readers_per_request'] / r['per_request']:.1%} |")
open(os.path.join(out, "proxy_instructions.md"), "w").write("\n".join(L) + "\n")
print("\n".join(L))
EOF
