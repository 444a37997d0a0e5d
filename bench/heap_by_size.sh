#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What a held-open stream costs the gateway in memory, by block size, from inside the process:
# the question bench/gateway_vs_peers.sh (d) answers with RSS, taken apart. A gateway
# (`gateway --threads 1`: worker 0 runs on the main thread, gateway/lifecycle.cpp) runs with
# bench/peers/heap_walk.c preloaded; gdb calls it in that thread (a mimalloc heap belongs to its
# thread) once idle, after one warm-up request, and once while the backend runs all N streams
# (client `llmux bench run`, completions, --output-len TOKENS, ignore_eos, against
# `llmux sim --t0 T0`: every stream open TOKENS x T0 s). For each block size: live blocks and
# bytes per stream (held - idle) / N, and the committed bytes of its pages (live or free) per
# stream: committed - live is memory held in partly used pages. For the block sizes with the most
# live bytes per stream, what the blocks are: the first of their first 4 words that points into
# the executable (a vtable, a coroutine's resume function, an Asio operation's completion
# function), named with addr2line (code) or nm (data).
#
# Usage: bench/heap_by_size.sh [--streams 2000] [--tokens 80] [--t0 0.25] [--names 3]
#          [--out bench/results/heap_by_size]
# Env: LLMUX (binary, default build/llmux), PROXY_CPU (0), LOAD_CPU (1), KEEP_TMP=1.
# Needs gdb (ptrace of a child: root, or kernel.yama.ptrace_scope 0), a C compiler and
# libmimalloc-dev. Loopback only; every wait is bounded; only processes it started are stopped.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
PY=/usr/bin/python3
N=2000 TOKENS=80 T0=0.25 NAMES=3 OUT=$ROOT/bench/results/heap_by_size
PROXY_CPU=${PROXY_CPU:-0} LOAD_CPU=${LOAD_CPU:-1}
CMDLINE="bench/heap_by_size.sh $*"
while [ $# -gt 0 ]; do
  case $1 in
    --streams) N=$2; shift 2 ;;
    --tokens) TOKENS=$2; shift 2 ;;
    --t0) T0=$2; shift 2 ;;
    --names) NAMES=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[[ $N =~ ^[1-9][0-9]*$ && $TOKENS =~ ^[1-9][0-9]*$ && $NAMES =~ ^[0-9]+$ ]] || { echo "--streams, --tokens, --names: numbers" >&2; exit 2; }
DUR=$(awk -v l="$TOKENS" -v t="$T0" 'BEGIN {d = l * t; if (d <= 0) exit 1; printf "%d", d + 0.999}') || { echo "--t0 $T0: a positive number" >&2; exit 2; }
for t in gdb cc addr2line curl taskset; do
  command -v $t >/dev/null || { echo "missing $t (scripts/setup --bench)" >&2; exit 1; }
done
ulimit -n 20000 2>/dev/null || true
[ $((2 * N + 200)) -le "$(ulimit -n)" ] || { echo "--streams $N needs $((2 * N + 200)) file descriptors; ulimit -n is $(ulimit -n)" >&2; exit 2; }

tmp=$(mktemp -d /tmp/heap-by-size.XXXXXX)
STARTED=()
cleanup() {
  local p
  for p in "${STARTED[@]}"; do kill "$p" 2>/dev/null || true; done
  sleep 0.3
  for p in "${STARTED[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  [ "${KEEP_TMP:-0}" = 1 ] && echo "kept $tmp" >&2 || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
LLMUX_SRC=${LLMUX:-$ROOT/build/llmux}
cp "$LLMUX_SRC" "$tmp/llmux"; LLMUX=$tmp/llmux
cc -O2 -shared -fPIC -o "$tmp/libheapwalk.so" "$ROOT/bench/peers/heap_walk.c" -lmimalloc \
  || { echo "cannot build bench/peers/heap_walk.c (libmimalloc-dev?)" >&2; exit 1; }
ldd "$LLMUX" | grep -q libmimalloc || { echo "$LLMUX_SRC does not use mimalloc: nothing to walk" >&2; exit 1; }

taskset -c "$LOAD_CPU" "$LLMUX" sim --port 0 --preset none --t0 "$T0" --m 0 --c 0 --ctx-cost 0 --prefill-rate 0 \
  --prefill-overhead 0 --max-num-seqs $((N > 8192 ? N : 8192)) --no-enable-prefix-caching \
  --num-kv-blocks $((N * (TOKENS + 64) / 8 + 4096)) >"$tmp/sim.out" 2>"$tmp/sim.err" &
STARTED+=($!)
BK=$(wait_ready "$tmp/sim.out"); [ -n "$BK" ] || { cat "$tmp/sim.err" >&2; exit 1; }
LD_PRELOAD=$tmp/libheapwalk.so taskset -c "$PROXY_CPU" "$LLMUX" gateway --port 0 --backend "up=http://127.0.0.1:$BK" \
  --threads 1 --access-log off >"$tmp/gw.out" 2>"$tmp/gw.err" &
GW=$!; STARTED+=("$GW")
PORT=$(wait_ready "$tmp/gw.out"); [ -n "$PORT" ] || { cat "$tmp/gw.err" >&2; exit 1; }
curl -s -o /dev/null --max-time 10 -H 'content-type: application/json' \
  -d '{"model":"Qwen3.6-35B-A3B","prompt":"hi","max_tokens":2}' "http://127.0.0.1:$PORT/v1/completions" || true
sleep 0.5
rss() { awk '/^VmRSS/ {print $2}' "/proc/$GW/status"; }
# gdb_call EXPR: EXPR evaluated in the gateway's main thread (worker 0); its printed value
gdb_call() {
  timeout 60 gdb -p "$GW" -batch -nx -ex "thread 1" -ex "print (int)$1" 2>/dev/null | awk '/^\$1 = / {print $3}'
}
idle_rss=$(rss)
[ "$(gdb_call "llmux_heap_dump(\"$tmp/idle.txt\")")" -gt 0 ] 2>/dev/null || { echo "the heap walk failed (gdb, ptrace?)" >&2; exit 1; }

timeout $((DUR + 150)) "$LLMUX" bench run --url "http://127.0.0.1:$PORT" --model Qwen3.6-35B-A3B --no-progress --no-plots \
  --out "$tmp/run" --endpoint completions --concurrency "$N" --num-requests "$N" --input-len 4 --output-len "$TOKENS" \
  --ignore-eos --timeout $((DUR + 120)) --idle-timeout 30 --connect-timeout 30 >"$tmp/run.txt" 2>&1 &
BR=$!; STARTED+=("$BR")
running() { { curl -s --max-time 2 "http://127.0.0.1:$BK/metrics" || true; } | awk '/^vllm:num_requests_running/ {printf "%d", $2}'; }
n=0
for i in $(seq $((DUR * 5))); do n=$(running); [ "${n:-0}" -ge "$N" ] && break; sleep 0.2; done
[ "${n:-0}" -ge "$N" ] || { echo "only ${n:-0} of $N streams reached the backend in ${DUR}s" >&2; exit 1; }
sleep 1
held_rss=$(rss)
gdb_call "llmux_heap_dump(\"$tmp/held.txt\")" >/dev/null
# the sizes with the most live bytes per stream, named
sizes=$($PY - "$tmp/idle.txt" "$tmp/held.txt" "$NAMES" <<'EOF'
import sys
def rows(p): return {int(l.split()[0]): [int(x) for x in l.split()[1:]] for l in open(p) if l.strip()}
i, h = rows(sys.argv[1]), rows(sys.argv[2])
d = sorted(h, key=lambda s: -(h[s][1] - i.get(s, [0, 0, 0])[1]) * s)
print(" ".join(str(s) for s in d[:int(sys.argv[3])]))
EOF
)
for s in $sizes; do gdb_call "llmux_heap_names(\"$tmp/names.$s.txt\", $s)" >/dev/null; done
wait "$BR" || true

mkdir -p "$OUT"
$PY - "$tmp" "$N" "$idle_rss" "$held_rss" "$LLMUX" "$LLMUX_SRC" "$CMDLINE" "$OUT" "$TOKENS" "$T0" <<'EOF'
import collections, json, os, subprocess, sys, time
tmp, n, idle_rss, held_rss, exe, src, cmd, out, tokens, t0 = sys.argv[1:11]
n, idle_rss, held_rss = int(n), int(idle_rss), int(held_rss)
def rows(p): return {int(l.split()[0]): [int(x) for x in l.split()[1:]] for l in open(p) if l.strip()}
idle, held = rows(f"{tmp}/idle.txt"), rows(f"{tmp}/held.txt")
z = [0, 0, 0]
table = []
for s in sorted(set(idle) | set(held)):
    i, h = idle.get(s, z), held.get(s, z)
    table.append(dict(block_size=s, pages_held=h[0], live_idle=i[1], live_held=h[1],
                      blocks_per_stream=(h[1] - i[1]) / n, live_bytes_per_stream=(h[1] - i[1]) * s / n,
                      committed_bytes_per_stream=(h[2] - i[2]) / n))
# symbols: addr2line for code; the nearest symbol at or below for data (vtables), from nm
syms = []
for l in subprocess.run(["nm", "-C", "-S", "--defined-only", exe], capture_output=True, text=True).stdout.splitlines():
    p = l.split(" ", 3)
    if len(p) == 4:
        syms.append((int(p[0], 16), int(p[1], 16), p[3]))
syms.sort()
import bisect
def name(off):
    a = int(off, 16)
    r = subprocess.run(["addr2line", "-f", "-C", "-e", exe, hex(a)], capture_output=True, text=True).stdout.split("\n")[0]
    if r and r != "??":
        return r
    i = bisect.bisect_right(syms, (a, float("inf"), "")) - 1
    if i >= 0 and syms[i][0] <= a < syms[i][0] + max(syms[i][1], 1):
        return syms[i][2] + (f" + {a - syms[i][0]}" if a != syms[i][0] else "")
    return "??"
names = {}
for f in sorted(os.listdir(tmp)):
    if not f.startswith("names."):
        continue
    s = int(f.split(".")[1])
    lines = [l.rstrip("\n") for l in open(f"{tmp}/{f}") if l.strip()]
    c = collections.Counter(l.split("\t")[0] for l in lines)
    samples = collections.Counter(l.split("\t", 1)[1] for l in lines if l.startswith("-\t"))
    top = []
    for key, k in c.most_common(6):
        word, off = key.split(":") if ":" in key else ("-", "-")
        if off == "-":
            sym = "(no pointer into the executable in its first 4 words; most common first bytes: " + \
                ", ".join(f"'{t}' x{m}" for t, m in samples.most_common(3)) + ")"
        else:
            sym = name(off)
        top.append(dict(word=word, offset=off, symbol=sym, blocks=k, per_stream=k / n))
    names[s] = top
run = {}
try:
    run = json.load(open(f"{tmp}/run/run.json"))["summary"]
    run = next(iter(run.values()))
except Exception:
    pass
live = sum(r["live_bytes_per_stream"] for r in table)
comm = sum(r["committed_bytes_per_stream"] for r in table)
rev = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(src)), "log", "-1", "--format=%h %s"],
                     capture_output=True, text=True).stdout.strip()
md = ["# Memory per held-open stream, by block size (inside the gateway's heap)\n",
      f"Run {time.strftime('%Y-%m-%d %H:%M:%S')}; `{cmd}`. llmux `{src}` (checkout at {rev[:80]}), "
      f"`gateway --threads 1` with bench/peers/heap_walk.c preloaded, walked in worker 0 (the main thread) by gdb: "
      f"once idle, once while the backend ran all {n:,} streams (completions, {tokens} tokens every {t0} s).\n",
      f"- client: {run.get('requests', '?')} streams, {run.get('failed', '?')} failed",
      f"- RSS: idle {idle_rss:,} KiB, held {held_rss:,} KiB: **{(held_rss - idle_rss) / n:.2f} KiB per stream**",
      f"- heap, live blocks: **{live / 1024:.2f} KiB per stream**; committed pages (live or free): "
      f"{comm / 1024:.2f} KiB per stream; the rest of RSS per stream is outside mimalloc's small-block pages "
      f"(kernel-side socket memory is not in RSS)\n",
      "| block size | live blocks per stream | live bytes per stream | committed bytes per stream | pages (held) |",
      "|---:|---:|---:|---:|---:|"]
for r in sorted(table, key=lambda r: -r["live_bytes_per_stream"]):
    if abs(r["live_bytes_per_stream"]) < 1 and abs(r["committed_bytes_per_stream"]) < 1:
        continue
    md.append(f"| {r['block_size']:,} | {r['blocks_per_stream']:.2f} | {r['live_bytes_per_stream']:.0f} | "
              f"{r['committed_bytes_per_stream']:.0f} | {r['pages_held']} |")
md.append("")
for s, top in names.items():
    md.append(f"**{s}-byte blocks** (held; the first of the first 4 words that points into the executable → what the block is):\n")
    md.append("| word | offset | symbol | blocks | per stream |")
    md.append("|---:|---|---|---:|---:|")
    for t in top:
        sym = (t["symbol"][:140] if t["offset"] != "-" else t["symbol"][:300]).replace("|", "/").replace("`", "'")
        md.append(f"| {t['word']} | {t['offset']} | `{sym}` | {t['blocks']:,} | {t['per_stream']:.2f} |")
    md.append("")
open(f"{out}/heap_by_size.md", "w").write("\n".join(md) + "\n")
json.dump(dict(command=cmd, streams=n, idle_rss_kib=idle_rss, held_rss_kib=held_rss, client=run,
               blocks=table, names=names), open(f"{out}/heap_by_size.json", "w"), indent=1)
print("\n".join(md))
EOF
