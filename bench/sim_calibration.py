#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Calibration of `llmux sim`'s presets against the measurements they were fitted to.

--preset dgx-spark-qwen3.6-35b-a3b-fp8 (the default), against the seed: drives the simulator
exactly the way the seed's qwen36-throughput.py drove vLLM: non-streaming /v1/completions with
urllib (a fresh connection per request), temperature 0, max_tokens 128, a medium prompt of about
100 tokens; tok/s = completion_tokens / request wall time, and for N concurrent requests started
together the aggregate = their tokens / wall time until the last ends. Targets (the seed's
figures): one stream 50 tok/s (+-5%), N=8 300 tok/s aggregate (+-5%), N=16 at most 1.2x N=8
(one machine saturates). Writes OUT/sim_calibration.{md,json}.

--preset dgx-spark-qwen3.6-35b-a3b-fp8-atlas, against 0xBakeer/inference-atlas's sweep of the
same model on one Spark (see bench/fit_preset.py and docs/sim.md): its method, a closed loop:
at concurrency N, N clients send R requests in all (32 for N <= 8, 4N above), each a prompt of
the level's mean length in tokens (distinct token ids, so no prefix-cache hit: the measurements
ran with prefix caching off) and exactly 256 output tokens (ignore_eos); output tok/s = output
tokens / the level's wall time; and the prefill speed of a 10,154-token prompt alone (prompt
tokens / time to its first token), and the time to first token of the sweep's 547-token prompt
alone (measured: ttft_ms.mean at concurrency 1); both times are the simulator's own record
(GET /debug/requests/{id}: first_token_ns - arrival_ns), since at --time-scale 10 the client's
few milliseconds per request would count ten times, after a first request that warms up. Targets:
each level within 10% of the measured output_tok_s, prefill within 5% of 4,833 tok/s, first
token within 10% of 272.7 ms. Writes OUT/sim_calibration.atlas.{md,json}.

Starts its own simulator on a free loopback port and stops it by pid. A run takes about 35 s per
machine for the seed preset at --time-scale 1, and about 1 minute for the atlas preset at
--time-scale 10 (9 minutes of model time). The committed results: `--machines 2` and
`--preset dgx-spark-qwen3.6-35b-a3b-fp8-atlas --time-scale 10`.

Usage: bench/sim_calibration.py [--preset NAME] [--llmux build/llmux] [--time-scale 1]
                                [--machines 1] [extra sim flags...]
"""
import argparse
import json
import math
import os
import random
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


def first_token_s(port, prompt, scale):
    """A 1-token completion's time to first token in model seconds, by the simulator's record."""
    body = json.dumps({"model": "Qwen3.6-35B-A3B", "prompt": prompt, "max_tokens": 1,
                       "temperature": 0.0}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        d = json.loads(r.read())
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/debug/requests/{d['id']}",
                                timeout=30) as r:
        rec = json.loads(r.read())
    return (rec["first_token_ns"] - rec["arrival_ns"]) * 1e-9 * scale, d["usage"]["prompt_tokens"]


def one(port, prompt, max_tokens, ignore_eos=False):
    body = {"model": "Qwen3.6-35B-A3B", "prompt": prompt, "max_tokens": max_tokens,
            "temperature": 0.0}
    if ignore_eos:
        body["ignore_eos"] = True
    body = json.dumps(body).encode()
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


def stop_sim(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


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
        stop_sim(proc)
    return {"serial": serial, "levels": conc}


# inference-atlas, results/vllm/Qwen/Qwen3.6-35B-A3B/nvidia-gb10-dgx-spark/8cd52c733b36ecb7--
# sweep-parallel-1-32-i512-o256-v1--77c0d1.json: (concurrency, requests, mean prompt tokens,
# output_tok_s), and prefill-8k-v1--58bdf6.json: (mean prompt tokens, prefill_tok_s).
ATLAS_SWEEP = [(1, 32, 547, 54.497), (2, 32, 547, 85.155), (4, 32, 547, 110.856),
               (8, 32, 547, 174.326), (16, 64, 546, 248.621), (32, 128, 655, 293.701)]
ATLAS_PREFILL = (10154, 4832.965)
# The same sweep's concurrency 1: (mean prompt tokens, ttft_ms.mean).
ATLAS_TTFT = (547, 272.709)


def token_prompt(rng, n):
    return [rng.randrange(1000, 150000) for _ in range(n)]


def closed_loop(port, clients, requests, prompt_len, rng):
    prompts = [token_prompt(rng, prompt_len) for _ in range(requests)]
    lock = threading.Lock()
    tokens = [0]

    def worker():
        while True:
            with lock:
                if not prompts:
                    return
                prompt = prompts.pop()
            _, toks, _ = one(port, prompt, 256, ignore_eos=True)
            with lock:
                tokens[0] += toks

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return tokens[0], time.time() - t0


def measure_atlas(llmux, scale, extra, levels):
    rng = random.Random(42)
    proc, port = start_sim(llmux, ["--time-scale", str(scale)] + extra)
    try:
        prompt_len, _ = ATLAS_PREFILL
        first_token_s(port, token_prompt(rng, prompt_len), scale)  # warms up
        runs = []
        for _ in range(3):
            seconds, ptoks = first_token_s(port, token_prompt(rng, prompt_len), scale)
            runs.append(ptoks / seconds)
        prefill = {"prompt_tokens": ptoks, "prefill_tok_s": runs, "mean": sum(runs) / len(runs)}
        ttfts = [first_token_s(port, token_prompt(rng, ATLAS_TTFT[0]), scale)[0] * 1000
                 for _ in range(3)]
        ttft = {"prompt_tokens": ATLAS_TTFT[0], "ttft_ms": ttfts, "mean": sum(ttfts) / len(ttfts)}
        conc = {}
        for n, requests, prompt, measured in ATLAS_SWEEP:
            if n not in levels:
                continue
            toks, wall = closed_loop(port, n, requests, prompt, rng)
            conc[n] = {"requests": requests, "prompt_tokens": prompt, "tokens": toks,
                       "wall_s": wall * scale, "output_tok_s": toks / (wall * scale),
                       "measured_output_tok_s": measured}
    finally:
        stop_sim(proc)
    return {"prefill": prefill, "ttft": ttft, "levels": conc}


def write(out, name, report, data, checks):
    print(report)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, name + ".md"), "w") as f:
        f.write(report + "\n")
    data["checks"] = [{"name": n, "pass": ok, "value": v} for n, ok, v in checks]
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(data, f, indent=2)
        f.write("\n")
    return 0 if all(ok for _, ok, _ in checks) else 1


def main_atlas(args, extra):
    scale = args.time_scale
    levels = [int(x) for x in args.levels.split(",") if x] if args.levels else \
        [n for n, _, _, _ in ATLAS_SWEEP]
    m = measure_atlas(args.llmux, scale, ["--preset", args.preset] + extra, levels)
    pf = m["prefill"]["mean"]
    tt = m["ttft"]["mean"]
    checks = [("prefill, 10k prompt alone ~ 4,833 tok/s +-5%",
               abs(pf / ATLAS_PREFILL[1] - 1) <= 0.05, f"{pf:.0f}"),
              ("first token, 547-token prompt alone ~ 272.7 ms +-10%",
               abs(tt / ATLAS_TTFT[1] - 1) <= 0.10, f"{tt:.1f} ms")]
    lines = [f"# llmux sim calibration ({args.preset}, inference-atlas's method)", "",
             "Closed loop: at concurrency N, N clients send the level's requests one after the "
             "other (non-streaming /v1/completions, a prompt of distinct token ids, exactly 256 "
             "output tokens); output tok/s = output tokens / the level's wall time. Measured: "
             "0xBakeer/inference-atlas, results/vllm/Qwen/Qwen3.6-35B-A3B/nvidia-gb10-dgx-spark/"
             "8cd52c733b36ecb7--sweep-parallel-1-32-i512-o256-v1--77c0d1.json. Time scale "
             f"{scale:g}: figures are in model time (wall x scale).", "",
             f"Prefill of a {m['prefill']['prompt_tokens']}-token prompt alone: "
             f"{pf:.0f} prompt tok/s (measured {ATLAS_PREFILL[1]:.0f}, "
             "8cd52c733b36ecb7--prefill-8k-v1--58bdf6.json).", "",
             f"First token of a {ATLAS_TTFT[0]}-token prompt alone: {tt:.1f} ms (measured "
             f"{ATLAS_TTFT[1]:.1f}, the sweep's concurrency 1; the preset's --api-server-time "
             "holds what the engine's step does not).", "",
             "| Concurrency | requests | prompt tokens | sim tok/s | measured tok/s | error |",
             "|---:|---:|---:|---:|---:|---:|"]
    sq = 0.0
    for n, lv in m["levels"].items():
        err = lv["output_tok_s"] / lv["measured_output_tok_s"] - 1
        sq += math.log(1 + err) ** 2
        lines.append(f"| N={n} | {lv['requests']} | {lv['prompt_tokens']} | "
                     f"{lv['output_tok_s']:.1f} | {lv['measured_output_tok_s']:.1f} | "
                     f"{100 * err:+.1f}% |")
        checks.append((f"N={n} within 10% of {lv['measured_output_tok_s']:.1f} tok/s",
                       abs(err) <= 0.10, f"{lv['output_tok_s']:.1f}"))
    if m["levels"]:
        rms = math.sqrt(sq / len(m["levels"]))
        checks.append(("root-mean-square error <= 5%", rms <= 0.05, f"{100 * rms:.1f}%"))
    lines += ["", "| Check | result | value |", "|---|---|---:|"]
    for name, ok, val in checks:
        lines.append(f"| {name} | {'PASS' if ok else 'FAIL'} | {val} |")
    return write(args.out, "sim_calibration.atlas", "\n".join(lines),
                 {"preset": args.preset, "time_scale": scale, "measured": m}, checks)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="dgx-spark-qwen3.6-35b-a3b-fp8",
                    choices=["dgx-spark-qwen3.6-35b-a3b-fp8", "dgx-spark-qwen3.6-35b-a3b-fp8-atlas"])
    ap.add_argument("--llmux", default=os.path.join(ROOT, "build", "llmux"))
    ap.add_argument("--time-scale", type=float, default=1.0)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--levels", default="",
                    help="concurrency levels (default: 4,8,16 for the seed preset, the measured "
                         "sweep's 1,2,4,8,16,32 for the atlas preset)")
    ap.add_argument("--machines", type=int, default=1,
                    help="simulated machines to measure one after the other (the seed ran the "
                         "script on each of its two Sparks; seed preset only)")
    args, extra = ap.parse_known_args()
    if args.preset.endswith("-atlas"):
        return main_atlas(args, extra)
    scale = args.time_scale
    levels = [int(x) for x in (args.levels or "4,8,16").split(",") if x]
    extra = ["--preset", args.preset] + extra
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

    lines = [f"# llmux sim calibration ({args.preset}, the seed's method)", "",
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
    return write(args.out, "sim_calibration", "\n".join(lines),
                 {"preset": args.preset, "time_scale": scale, "machines": machines}, checks)


if __name__ == "__main__":
    sys.exit(main())
