#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The gap a client sees when its stream moves to another backend, against the prompt's length
(issue 37: "the gap the client sees at the migration, p99 <= 1 s for prompts up to 2k tokens;
longer prompts: report the gap against the prompt length, since the new backend prefills again").

Per trial, fresh processes: two `llmux sim` backends (the seed's DGX Spark preset, real time
unless --time-scale) behind `llmux gateway` (round_robin, migration on); one streaming chat
request (greedy, --output tokens, a synthetic prompt of L words: about 2L tokens, the report
gives the tokens the backend counted); after --cut-after
content events the backend serving it (X-Llmux-Backend) is SIGKILLed and the stream read to its
end. The gap: from the last event before the kill to the first content event after it (what the
client waits), and from the kill itself. Each length gets --trials trials. Report: OUT/migration_gap.md
and .json. Loopback only; every process is started here and stopped by pid; every wait is bounded.

Usage: bench/migration_gap.py [--lengths 256,1024,4096,8192] [--trials 5] [--output 200]
         [--cut-after 40] [--time-scale 1] [--out bench/results/migration_gap]
Env: LLMUX (binary, default build/llmux)."""
import argparse
import http.client
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = ("sea river stone light cloud field winter harbour mountain forest morning letter garden "
         "window silver station market bridge evening lantern").split()


def start(argv, log_dir, name):
    """Starts an llmux process; returns (process, port) from its ready line (10 s at most)."""
    out = open(os.path.join(log_dir, name + ".out"), "w+")
    err = open(os.path.join(log_dir, name + ".err"), "w")
    proc = subprocess.Popen(argv, stdout=out, stderr=err)
    deadline = time.time() + 10
    while time.time() < deadline:
        out.seek(0)
        for line in out.read().splitlines():
            if '"event":"ready"' in line:
                return proc, json.loads(line)["port"]
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"{name} did not start: see {log_dir}/{name}.err")


def stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def prompt_of(tokens, rng):
    # About two tokens a word with its space (the simulator's tokenizer).
    return " ".join(rng.choice(WORDS) for _ in range(tokens))


def trial(a, llmux, length, index, log_dir):
    rng = random.Random(length * 1000 + index)
    sims, procs = {}, []
    try:
        for name in ("A", "B"):
            proc, port = start([llmux, "sim", "--port", "0", "--time-scale", str(a.time_scale)],
                               log_dir, f"sim-{name}-{length}-{index}")
            sims[name] = (proc, port)
            procs.append(proc)
        config = os.path.join(log_dir, f"gateway-{length}-{index}.yaml")
        with open(config, "w") as f:
            f.write('listen: "127.0.0.1:0"\nthreads: 1\naccess_log: "off"\nbackends:\n')
            for name, (_, port) in sims.items():
                f.write(f'  - {{name: {name}, url: "http://127.0.0.1:{port}"}}\n')
            f.write("routes:\n  - {name: all, backends: [A, B], policy: round_robin}\n")
        gateway, gw_port = start([llmux, "gateway", "--config", config], log_dir,
                                 f"gateway-{length}-{index}")
        procs.append(gateway)
        body = json.dumps({"model": "Qwen3.6-35B-A3B", "temperature": 0,
                           "max_tokens": a.output, "stream": True,
                           "stream_options": {"include_usage": True},
                           "messages": [{"role": "user", "content": prompt_of(length, rng)}]})
        conn = http.client.HTTPConnection("127.0.0.1", gw_port, timeout=120)
        conn.request("POST", "/v1/chat/completions", body,
                     {"Content-Type": "application/json", "X-Request-Id": f"gap-{length}-{index}"})
        response = conn.getresponse()
        if response.status != 200:
            return dict(error=f"status {response.status}")
        victim = response.getheader("X-Llmux-Backend")
        content_events, last_before, killed_at, first_after = 0, None, None, None
        prompt_tokens, errors, done = None, 0, False
        deadline = time.time() + 300
        while time.time() < deadline:
            line = response.fp.readline()
            if not line:
                break
            line = line.decode().rstrip("\r\n")
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            now = time.monotonic()
            if data == "[DONE]":
                done = True
                break
            chunk = json.loads(data)
            if "error" in chunk:
                errors += 1
                continue
            if chunk.get("usage"):
                prompt_tokens = chunk["usage"].get("prompt_tokens")
            has_content = any((c.get("delta") or {}).get("content") for c in chunk.get("choices", []))
            if not has_content:
                continue
            content_events += 1
            if killed_at is None:
                last_before = now
                if content_events == a.cut_after:
                    os.kill(sims[victim][0].pid, signal.SIGKILL)
                    killed_at = time.monotonic()
            elif first_after is None:
                first_after = now
        conn.close()
        if killed_at is None or first_after is None:
            return dict(error="the stream ended before the cut or never went on", errors=errors)
        return dict(prompt_tokens=prompt_tokens, gap_s=first_after - last_before,
                    gap_from_kill_s=first_after - killed_at, errors=errors, done=done,
                    content_events=content_events)
    finally:
        for proc in reversed(procs):
            stop(proc)


def pct(values, p):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(p / 100 * len(ordered) + 0.5)) - 1))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lengths", default="256,1024,4096,8192")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--output", type=int, default=200)
    ap.add_argument("--cut-after", type=int, default=40)
    ap.add_argument("--time-scale", type=float, default=1)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/results/migration_gap"))
    a = ap.parse_args()
    source = os.environ.get("LLMUX", os.path.join(ROOT, "build/llmux"))
    log_dir = tempfile.mkdtemp(prefix="migration-gap.")
    llmux = os.path.join(log_dir, "llmux")
    shutil.copy(source, llmux)
    started = time.time()
    rows = {}
    for length in [int(x) for x in a.lengths.split(",")]:
        rows[length] = []
        for index in range(a.trials):
            result = trial(a, llmux, length, index, log_dir)
            print(f"[{time.strftime('%H:%M:%S')}] prompt ~{length}: {result}", file=sys.stderr)
            rows[length].append(result)
    summary = []
    for length, results in rows.items():
        good = [r for r in results if "gap_s" in r]
        gaps = [r["gap_s"] for r in good]
        summary.append(dict(
            prompt_words=length,
            prompt_tokens=statistics.median([r["prompt_tokens"] for r in good
                                             if r.get("prompt_tokens")] or [0]),
            trials=len(results), continued=len(good),
            error_events=sum(r.get("errors", 0) for r in results),
            gap_p50_s=pct(gaps, 50), gap_p99_s=pct(gaps, 99), gap_max_s=max(gaps) if gaps else None))
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip() or "unknown"
    cmdline = " ".join(["bench/migration_gap.py"] + sys.argv[1:])
    doc = dict(cmdline=cmdline, git_head=head, elapsed_s=int(time.time() - started),
               time_scale=a.time_scale, output_tokens=a.output, cut_after=a.cut_after,
               summary=summary, trials=rows)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "migration_gap.json"), "w") as f:
        json.dump(doc, f, indent=2)
    fmt = lambda v: "—" if v is None else f"{v:.2f}"
    lines = ["# The gap at a migration, against the prompt's length", "",
             f"`{cmdline}` at {head} ({doc['elapsed_s']} s). Per trial: two `llmux sim` (DGX "
             f"Spark preset, --time-scale {a.time_scale}) behind `llmux gateway` (round_robin, "
             f"migration on), one greedy streaming chat of {a.output} tokens; after {a.cut_after} "
             "content events its backend is SIGKILLed. Gap: the last event before the kill to the "
             "first content event after it (the new backend prefills the prompt and the text "
             "so far again).", "",
             "| prompt tokens | trials | continued | error events | gap p50 s | gap p99 s | gap max s |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for row in summary:
        lines.append(f"| {row['prompt_tokens']:.0f} | {row['trials']} | {row['continued']} "
                     f"| {row['error_events']} | {fmt(row['gap_p50_s'])} | {fmt(row['gap_p99_s'])} "
                     f"| {fmt(row['gap_max_s'])} |")
    with open(os.path.join(a.out, "migration_gap.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    if not os.environ.get("KEEP_TMP"):
        shutil.rmtree(log_dir, ignore_errors=True)
    print(f"report: {a.out}/migration_gap.md", file=sys.stderr)


if __name__ == "__main__":
    main()
