#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The size of each coroutine frame the gateway allocates for one streaming chat request, for one
# or more llmux binaries side by side: what a held-open stream keeps per stream in session(),
# proxy() and relay() (GCC keeps every local of a coroutine in its frame; docs/architecture.md).
#
# Each binary runs as `gateway --threads 1` in front of `llmux sim`. gdb attaches with a
# breakpoint on operator new (core/heap.cpp; the build turns Asio's frame recycling off, so every
# coroutine frame is one operator new of exactly the frame's size), one streaming request goes
# through, and every allocation made by a coroutine's ramp (the first frame of its backtrace that
# is an llmux function whose caller is not llmux's: the coroutine being started, called from
# Asio's co_spawn or an awaiting llmux coroutine) is named by that coroutine.
#
# Usage: bench/coroutine_frames.sh [--baseline BIN]... [--out bench/results/coroutine_frames]
# Env: LLMUX (the binary measured first, default build/llmux; its `sim` serves every run).
# Needs gdb and ptrace of a child (root, or kernel.yama.ptrace_scope 0); binaries built with
# debug info (RelWithDebInfo: make build, bench/build_baseline.sh). Loopback only; every wait is
# bounded; only processes it started are stopped.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
PY=/usr/bin/python3
OUT=$ROOT/bench/results/coroutine_frames
STREAMS=1
CMDLINE="bench/coroutine_frames.sh $*"
BINARIES=("${LLMUX:-$ROOT/build/llmux}")
while [ $# -gt 0 ]; do
  case $1 in
    --baseline) BINARIES+=("$2"); shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
for t in gdb curl; do
  command -v $t >/dev/null || { echo "missing $t (scripts/setup --bench)" >&2; exit 1; }
done
for b in "${BINARIES[@]}"; do [ -x "$b" ] || { echo "not an executable: $b" >&2; exit 2; }; done

tmp=$(mktemp -d /tmp/coroutine-frames.XXXXXX)
STARTED=()
cleanup() {
  stop_all
  [ "${KEEP_TMP:-0}" = 1 ] && echo "kept $tmp" >&2 || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"${BINARIES[0]}" sim --port 0 --time-scale 1 >"$tmp/sim.out" 2>"$tmp/sim.err" &
STARTED+=($!)
BK=$(wait_ready "$tmp/sim.out"); [ -n "$BK" ] || { cat "$tmp/sim.err" >&2; exit 1; }

# operator new's size, its first argument, read at the function's first instruction.
case $(uname -m) in
  x86_64) SIZE_REG='$rdi' ;;
  aarch64) SIZE_REG='$x0' ;;
  *) echo "unknown machine $(uname -m): which register holds the second argument?" >&2; exit 1 ;;
esac
cat >"$tmp/gdb.cmd" <<EOF
set pagination off
set confirm off
break *_Znwm if $SIZE_REG >= 256
commands
silent
printf "FRAME_ALLOC %lu\\n", $SIZE_REG
bt 3
continue
end
printf "ATTACHED\\n"
continue
EOF

BODY='{"model":"Qwen3.6-35B-A3B","messages":[{"role":"user","content":"hi"}],"max_tokens":16,"stream":true}'
i=0
for bin in "${BINARIES[@]}"; do
  i=$((i + 1))
  log "binary $i: $bin"
  "$bin" gateway --port 0 --backend "up=http://127.0.0.1:$BK" --threads 1 --access-log off \
    >"$tmp/gw$i.out" 2>"$tmp/gw$i.err" &
  gw=$!; STARTED+=("$gw")
  port=$(wait_ready "$tmp/gw$i.out"); [ -n "$port" ] || { cat "$tmp/gw$i.err" >&2; exit 1; }
  timeout 120 gdb -p "$gw" -batch -nx -x "$tmp/gdb.cmd" >"$tmp/gdb$i.log" 2>&1 &
  gdb_pid=$!; STARTED+=("$gdb_pid")
  for _ in $(seq 300); do grep -q '^ATTACHED' "$tmp/gdb$i.log" 2>/dev/null && break; sleep 0.1; done
  grep -q '^ATTACHED' "$tmp/gdb$i.log" || { cat "$tmp/gdb$i.log" >&2; echo "gdb did not attach (ptrace?)" >&2; exit 1; }
  sleep 0.5
  clients=()
  for c in $(seq "$STREAMS"); do
    curl -s -N --max-time 60 -o "$tmp/answer$i.$c.txt" -H 'content-type: application/json' \
      -d "$BODY" "http://127.0.0.1:$port/v1/chat/completions" &
    clients+=($!)
  done
  for c in "${clients[@]}"; do wait "$c" || { echo "a request failed" >&2; exit 1; }; done
  for c in $(seq "$STREAMS"); do
    grep -q '\[DONE\]' "$tmp/answer$i.$c.txt" || { echo "no [DONE] in an answer" >&2; exit 1; }
  done
  kill -9 "$gw" 2>/dev/null || true
  wait "$gdb_pid" 2>/dev/null || true
  echo "$bin" >"$tmp/bin$i.txt"
  if [ -f "$bin.rev" ]; then head -2 "$bin.rev" | tail -1 >"$tmp/rev$i.txt"
  else git -C "$ROOT" log -1 --format='%h (%ad) %s' --date=short >"$tmp/rev$i.txt"; fi
done

mkdir -p "$OUT"
$PY - "$tmp" "$i" "$OUT" "$CMDLINE" <<'EOF'
import json, re, sys, time
tmp, count, out, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
runs = []
for k in range(1, count + 1):
    frames = {}
    size, stack = None, []
    def close():
        # The coroutine whose ramp asked: frame #1, when it is llmux's own code.
        if size is None or len(stack) < 2:
            return
        m = re.match(r"#1\s+(?:0x[0-9a-f]+ in )?([^\s(]+).* at (\S+):\d+", stack[1])
        if not m:
            return
        name, path = m.group(1), m.group(2)
        if name.startswith(("std::", "boost::", "__gnu_cxx::", "operator")) or "Allocator" in name:
            return
        if "/src/" not in path:
            return
        where = path.split("/src/")[-1]
        frames.setdefault(f"{name.split('::')[-1]} ({where})", []).append(size)
    for line in open(f"{tmp}/gdb{k}.log", errors="replace"):
        if line.startswith("FRAME_ALLOC "):
            close()
            size, stack = int(line.split()[1]), []
        elif line.startswith("#"):
            stack.append(line)
    close()
    runs.append(dict(binary=open(f"{tmp}/bin{k}.txt").read().strip(),
                     revision=open(f"{tmp}/rev{k}.txt").read().strip(),
                     frames={name: max(sizes) for name, sizes in frames.items()}))
names = sorted({n for r in runs for n in r["frames"]}, key=lambda n: -max(r["frames"].get(n, 0) for r in runs))
doc = dict(command=cmd, date=time.strftime("%Y-%m-%d %H:%M:%S"), runs=runs)
json.dump(doc, open(f"{out}/coroutine_frames.json", "w"), indent=1)
with open(f"{out}/coroutine_frames.md", "w") as md:
    md.write("# Coroutine frames of one streaming chat request\n\n")
    md.write(f"Run {doc['date']}; `{cmd}`. Bytes each coroutine's frame asked of operator new "
             "(its exact size: Asio's frame recycling is off in llmux's build) in `gateway "
             "--threads 1`, by the coroutine and its file; session, read_request's caller, proxy "
             "and relay are what a held-open stream keeps (the health checker's coroutines run "
             "beside it).\n\n")
    for k, r in enumerate(runs, 1):
        md.write(f"- binary {k}: `{r['binary']}`: {r['revision']}\n")
    md.write("\n| coroutine | " + " | ".join(f"binary {k}" for k in range(1, len(runs) + 1)) + " |\n")
    md.write("|---|" + "---:|" * len(runs) + "\n")
    for n in names:
        md.write(f"| `{n}` | " + " | ".join(f"{r['frames'][n]:,}" if n in r["frames"] else "-" for r in runs) + " |\n")
print(open(f"{out}/coroutine_frames.md").read())
EOF
