#!/usr/bin/python3
"""Calibration of `llmux sim --preset dgx-spark-qwen3.6-35b-a3b-fp8` against the seed.

Drives the simulator exactly the way the seed's qwen36-throughput.py drove vLLM: non-streaming
/v1/completions with urllib (a fresh connection per request), temperature 0, max_tokens 128, a
medium prompt of about 100 tokens; tok/s = completion_tokens / request wall time, and for N
concurrent requests started together the aggregate = their tokens / wall time until the last
ends. Starts its own simulator on a free loopback port and stops it by pid.

Targets (the seed's figures): one stream 50 tok/s (+-5%), N=8 300 tok/s aggregate (+-5%),
N=16 at most 1.2x N=8 (one machine saturates). Writes bench/results/sim_calibration.{md,json}.

Usage: bench/sim_calibration.py [--llmux build/llmux] [--time-scale 1] [extra sim flags...]
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SHORT = "Say hello in one short sentence."
MEDIUM = ("You are a helpful assistant running on a small cluster of two machines. Explain, in "
          "plain words and with one concrete example, how continuous batching lets a single "
          "inference server keep its accelerator busy while many clients send requests of very "
          "different lengths, and why the throughput of each stream drops a little as the batch "
          "grows while the total keeps rising until the machine saturates.")
LONG = " ".join([MEDIUM] * 10)


def start_sim(llmux, extra):
    proc = subprocess.Popen([llmux, "sim", "--port", "0"] + extra, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    deadline = time.time() + 15
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if ev.get("event") == "ready":
            return proc, ev["port"]
    proc.kill()
    raise SystemExit("simulator did not become ready")


def one(port, prompt, max_tokens):
    body = json.dumps({"model": "Qwen3.6-35B-A3B", "prompt": prompt, "max_tokens": max_tokens,
                       "temperature": 0.0}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    t0 = time.time()
    with urllib.request.urlopen(req, timeout=300) as r:
        d = json.loads(r.read())
    return time.time() - t0, d["usage"]["completion_tokens"], d["usage"]["prompt_tokens"]


def concurrent(port, n, prompt, max_tokens):
    results = [None] * n
    barrier = threading.Barrier(n)

    def worker(i):
        barrier.wait()
        results[i] = one(port, prompt, max_tokens)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.time() - t0
    tokens = sum(r[1] for r in results)
    return tokens / wall, tokens, wall


def measure(llmux, scale, extra, levels):
    proc, port = start_sim(llmux, ["--time-scale", str(scale)] + extra)
    try:
        serial = {}
        for name, prompt in (("short", SHORT), ("medium", MEDIUM), ("long", LONG)):
            runs = []
            for _ in range(3):
                wall, toks, ptoks = one(port, prompt, 128)
                runs.append(toks / (wall * scale))
            serial[name] = {"prompt_tokens": ptoks, "tok_s": runs, "mean": sum(runs) / len(runs)}
        conc = {}
        for n in levels:
            agg, toks, wall = concurrent(port, n, MEDIUM, 128)
            conc[n] = {"aggregate_tok_s": agg / scale, "tokens": toks, "wall_s": wall * scale}
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
    return {"serial": serial, "levels": conc}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llmux", default=os.path.join(ROOT, "build", "llmux"))
    ap.add_argument("--time-scale", type=float, default=1.0)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--levels", default="4,8,16")
    ap.add_argument("--machines", type=int, default=1,
                    help="simulated machines to measure one after the other (the seed ran the "
                         "script on each of its two Sparks)")
    args, extra = ap.parse_known_args()
    scale = args.time_scale
    levels = [int(x) for x in args.levels.split(",") if x]
    machines = [measure(args.llmux, scale, extra, levels) for _ in range(args.machines)]
    names = [f"server{i + 1}" for i in range(len(machines))]

    first = machines[0]
    single = first["serial"]["medium"]["mean"]
    checks = [("single stream (medium) ~ 50 tok/s +-5%", 47.5 <= single <= 52.5, f"{single:.1f}")]
    if 8 in first["levels"]:
        a8 = first["levels"][8]["aggregate_tok_s"]
        checks.append(("N=8 aggregate ~ 300 tok/s +-5%", 285 <= a8 <= 315, f"{a8:.1f}"))
        if 16 in first["levels"]:
            r = first["levels"][16]["aggregate_tok_s"] / a8
            checks.append(("N=16 <= 1.2x N=8 (one machine saturates)", r <= 1.2, f"{r:.2f}x"))
    if len(machines) > 1:
        vals = [m["serial"]["medium"]["mean"] for m in machines]
        spread = (max(vals) - min(vals)) / max(vals) * 100
        checks.append(("machines agree within 2% (single stream)", spread <= 2.0, f"{spread:.2f}%"))

    lines = ["# llmux sim calibration (DGX Spark preset, the seed's method)", "",
             f"Non-streaming /v1/completions, temperature 0, max_tokens 128, tok/s = "
             f"completion_tokens / wall time. Time scale {scale:g}: figures are in model time "
             f"(wall x scale).", "",
             "Single-stream decode (tok/s, mean of 3 runs):", "",
             "| Prompt | prompt tokens | " + " | ".join(names) + " |",
             "|---|---:|" + "---:|" * len(names)]
    for name in first["serial"]:
        cells = " | ".join(f"{m['serial'][name]['mean']:.1f}" for m in machines)
        lines.append(f"| {name} | {first['serial'][name]['prompt_tokens']} | {cells} |")
    lines += ["", "Concurrent aggregate (medium prompt, max_tokens 128; tok/s):", "",
              "| Concurrency | " + " | ".join(names) + " | per stream |",
              "|---:|" + "---:|" * len(names) + "---:|"]
    for n in levels:
        cells = " | ".join(f"{m['levels'][n]['aggregate_tok_s']:.1f}" for m in machines)
        lines.append(f"| N={n} | {cells} | {first['levels'][n]['aggregate_tok_s'] / n:.1f} |")
    lines += ["", "| Check | result | value |", "|---|---|---:|"]
    for name, ok, val in checks:
        lines.append(f"| {name} | {'PASS' if ok else 'FAIL'} | {val} |")
    report = "\n".join(lines)
    print(report)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "sim_calibration.md"), "w") as f:
        f.write(report + "\n")
    with open(os.path.join(args.out, "sim_calibration.json"), "w") as f:
        json.dump({"time_scale": scale, "machines": machines,
                   "checks": [{"name": n, "pass": ok, "value": v} for n, ok, v in checks]}, f, indent=2)
    return 0 if all(ok for _, ok, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
