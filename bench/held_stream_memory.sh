#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Memory per held stream for long streams on a route another backend may continue (issue 37:
# "memory per held stream for long streams (4k tokens streamed) reported beside it"). A stream on
# a route of two backends keeps what migration needs to continue it elsewhere: the client's
# request body and the text generated so far (up to migration.max_kept_bytes). This measures what
# that costs the gateway, beside the same gateway with migration off and beside a BASELINE binary
# (the issue's parent commit, which kept neither).
#
# Two `llmux sim` backends that hold every stream without preemption (--preset none, one token
# every T0 s, no other cost); STREAMS streaming chat requests at once (llmux bench run, prompts of
# INPUT tokens, TOKENS tokens each with ignore_eos) through `llmux gateway --config` (one thread,
# access log off, round_robin over the two). The gateway's RSS is read from /proc before the load
# (idle) and every 0.5 s while the streams run; KiB per stream = (the highest reading - idle) /
# STREAMS, near the streams' end, when each holds ~TOKENS tokens of text. Variants, rotated in
# each of ROUNDS rounds, each with a fresh gateway: new (the binary, migration on), new_off (the
# binary, `migration: {enabled: false}`), base (BASELINE, when given). Report: the medians over
# rounds, OUT/held_stream_memory.md and .json.
#
# Usage: bench/held_stream_memory.sh [--streams 256] [--tokens 4096] [--t0 0.01] [--input 512]
#          [--rounds 3] [--baseline BIN] [--out bench/results/held_stream_memory]
# Env: LLMUX (binary, default build/llmux; copied first). Loopback only; servers on free ports,
# stopped by pid on exit; every wait is bounded.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
PY=/usr/bin/python3
STREAMS=256 TOKENS=4096 T0=0.01 INPUT=512 ROUNDS=3 BASELINE=''
OUT=$ROOT/bench/results/held_stream_memory
CMDLINE="bench/held_stream_memory.sh $*"
while [ $# -gt 0 ]; do
  case $1 in
    --streams) STREAMS=$2; shift 2 ;;
    --tokens) TOKENS=$2; shift 2 ;;
    --t0) T0=$2; shift 2 ;;
    --input) INPUT=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --baseline) BASELINE=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
bench_workspace held-stream-memory
VARIANTS=(new new_off)
if [ -n "$BASELINE" ]; then cp "$BASELINE" "$TMP/llmux-base"; VARIANTS+=(base); fi
STREAM_S=$($PY -c "print(round($TOKENS * $T0, 1))")

declare -A PORT
for n in A B; do
  "$LLMUX" sim --port 0 --preset none --t0 "$T0" --m 0 --c 0 --ctx-cost 0 --prefill-rate 0 \
    --prefill-overhead 0 --max-num-seqs $((STREAMS + 64)) --no-enable-prefix-caching \
    --num-kv-blocks $((STREAMS * (TOKENS + INPUT + 64) / 8 + 4096)) \
    >"$TMP/sim-$n.out" 2>"$TMP/sim-$n.err" &
  STARTED+=($!)
  PORT[$n]=$(wait_ready "$TMP/sim-$n.out")
  [ -n "${PORT[$n]}" ] || { cat "$TMP/sim-$n.err" >&2; echo "sim $n did not start" >&2; exit 1; }
done
running() {  # the streams both simulators run
  local n s=0 v
  for n in A B; do
    v=$({ curl -s --max-time 2 "http://127.0.0.1:${PORT[$n]}/metrics" || true; } |
        awk '/^vllm:num_requests_running/ {printf "%d", $2; exit}')
    s=$((s + ${v:-0}))
  done
  echo $s
}
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

RESULTS=$TMP/results.jsonl
: >"$RESULTS"
for ((round = 1; round <= ROUNDS; round++)); do
  for ((k = 0; k < ${#VARIANTS[@]}; k++)); do
    v=${VARIANTS[$(( (k + round - 1) % ${#VARIANTS[@]} ))]}
    d=$TMP/r$round-$v; mkdir -p "$d"
    binary=$LLMUX; [ "$v" = base ] && binary=$TMP/llmux-base
    {
      echo 'listen: "127.0.0.1:0"'
      echo 'threads: 1'
      echo 'access_log: "off"'
      [ "$v" = new_off ] && echo 'migration: {enabled: false}'
      echo 'backends:'
      for n in A B; do echo "  - {name: $n, url: \"http://127.0.0.1:${PORT[$n]}\"}"; done
      echo 'routes:'
      echo '  - {name: all, backends: [A, B], policy: round_robin}'
    } >"$d/gateway.yaml"
    for i in $(seq 100); do [ "$(running)" = 0 ] && break; sleep 0.2; done  # a clean backend
    "$binary" gateway --config "$d/gateway.yaml" >"$d/gateway.out" 2>"$d/gateway.err" &
    gw=$!; STARTED+=($gw)
    gw_port=$(wait_ready "$d/gateway.out")
    [ -n "$gw_port" ] || { cat "$d/gateway.err" >&2; echo "gateway did not start" >&2; exit 1; }
    wait_http "http://127.0.0.1:$gw_port/health" || { echo "gateway /health not 200" >&2; exit 1; }
    sleep 0.5
    idle=$(rss_kib $gw)
    log "round $round $v: $STREAMS streams of $TOKENS tokens (~${STREAM_S}s), idle RSS ${idle} KiB"
    timeout $(( ${STREAM_S%.*} + 180 )) "$LLMUX" bench run --url "http://127.0.0.1:$gw_port" \
      --endpoint chat --concurrency "$STREAMS" --num-requests "$STREAMS" --input-len "$INPUT" \
      --output-len "$TOKENS" --ignore-eos --timeout $(( ${STREAM_S%.*} + 120 )) --idle-timeout 30 \
      --connect-timeout 30 --no-progress --no-plots --out "$d" >"$d/bench.txt" 2>&1 &
    client=$!
    peak=0; samples=0
    while kill -0 "$client" 2>/dev/null; do  # bounded by the client's timeout
      r=$(rss_kib $gw); [ "$r" -gt "$peak" ] && peak=$r
      samples=$((samples + 1)); sleep 0.5
    done
    rc=0; wait "$client" || rc=$?
    stop_pid $gw
    $PY - "$d/run.json" "$v" "$round" "$idle" "$peak" "$samples" "$rc" "$STREAMS" >>"$RESULTS" <<'EOF'
import json, sys
path, variant, rnd, idle, peak, samples, rc, streams = sys.argv[1:]
try:
    agg = json.load(open(path))["levels"][0]["aggregate"]
except (OSError, ValueError, KeyError, IndexError):
    agg = {}
print(json.dumps(dict(variant=variant, round=int(rnd), idle_kib=int(idle), peak_kib=int(peak),
                      samples=int(samples), client_exit=int(rc), ok=agg.get("ok"),
                      failed=agg.get("failed"), output_tokens=agg.get("output_tokens"),
                      kib_per_stream=(int(peak) - int(idle)) / int(streams))))
EOF
  done
done
stop_all; STARTED=()

mkdir -p "$OUT"
$PY - "$RESULTS" "$OUT" "$CMDLINE" "$STREAMS" "$TOKENS" "$T0" "$INPUT" "$ROUNDS" \
  "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
  "$(cat "${BASELINE}.rev" 2>/dev/null | head -1 || true)" <<'EOF'
import json, os, statistics, sys
results, out, cmdline, streams, tokens, t0, input_len, rounds, head, base_rev = sys.argv[1:]
rows = [json.loads(line) for line in open(results)]
by = {}
for row in rows:
    by.setdefault(row["variant"], []).append(row)
median = {v: statistics.median(r["kib_per_stream"] for r in rs) for v, rs in by.items()}
doc = dict(cmdline=cmdline, git_head=head, baseline_rev=base_rev, streams=int(streams),
           tokens=int(tokens), t0_s=float(t0), input_tokens=int(input_len), rounds=int(rounds),
           median_kib_per_stream=median, runs=rows)
if "base" in median:
    doc["new_vs_base"] = median["new"] / median["base"]
    doc["new_off_vs_base"] = median["new_off"] / median["base"]
doc["new_vs_new_off"] = median["new"] / median["new_off"]
os.makedirs(out, exist_ok=True)
json.dump(doc, open(os.path.join(out, "held_stream_memory.json"), "w"), indent=2)
names = {"new": "this binary, migration on (keeps body and text)",
         "new_off": "this binary, `migration: {enabled: false}`",
         "base": f"baseline {base_rev}"}
lines = ["# Memory per held stream, long streams on a route of two backends", "",
         f"`{cmdline}` at {head}: {streams} streaming chat requests at once (prompts of "
         f"{input_len} tokens, {tokens} tokens each, one every {t0} s) through `llmux gateway` "
         "(one thread, round_robin over two `llmux sim`); KiB per stream = (peak RSS while the "
         "streams run - idle RSS) / streams, median of the rounds.", "",
         "| variant | KiB per stream (median) | per round | failed |", "|---|---:|---|---:|"]
for v in ("new", "new_off", "base"):
    if v not in by:
        continue
    per_round = ", ".join(f"{r['kib_per_stream']:.1f}" for r in sorted(by[v], key=lambda r: r["round"]))
    failed = sum(r.get("failed") or 0 for r in by[v])
    lines.append(f"| {names[v]} | {median[v]:.1f} | {per_round} | {failed} |")
lines.append("")
lines.append(f"Migration on / off: {doc['new_vs_new_off']:.2f}"
             + (f"; on / baseline: {doc['new_vs_base']:.2f}; off / baseline: "
                f"{doc['new_off_vs_base']:.2f}" if "base" in median else "") + ".")
open(os.path.join(out, "held_stream_memory.md"), "w").write("\n".join(lines) + "\n")
EOF
log "report: $OUT/held_stream_memory.md"
