#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Fits the step-time constants of `llmux sim --preset dgx-spark-qwen3.6-35b-a3b-fp8-atlas` to
published measurements, and prints the parameters and the residuals.

The measurements (vLLM 0.26.1.dev0, one DGX Spark, Qwen/Qwen3.6-35B-A3B-FP8, MTP speculative
decoding with 2 tokens, --max-num-seqs 24, --max-num-batched-tokens 32768, FP8 KV cache, prefix
caching off) are the result files of the GitHub repository 0xBakeer/inference-atlas, under
results/vllm/Qwen/Qwen3.6-35B-A3B/nvidia-gb10-dgx-spark/ (config 8cd52c733b36ecb7); the figures
below are copied from them (see docs/sim.md, "Calibration").

Method. The sweeps are closed loops: at concurrency N, N clients send R requests in all (a
client sends its next request when its previous one ends), each with a ~550 or ~900-token prompt
(the level's mean: input_tokens_total / requests) and exactly 256 output tokens; output_tok_s =
output tokens / the level's duration. This script replays that workload on a model of the
engine's scheduler that mirrors src/sim/engine.cpp (running sequences first, then waiting ones
FCFS within the token budget and --max-num-seqs; a request sent when another ends joins at the
step after the one already planned; the first token at the end of the prefill step), with

  t_step = max(t0·B^batch_exp + m·(B−1), c·B) + ctx_cost·Σcontext
           + prefill_tokens/prefill_rate + (prefill ? prefill_overhead : 0)

and minimises the squared log error of output_tok_s over the 512-token sweep (Nelder-Mead over
t0 and batch_exp; m, c, ctx_cost and prefill_overhead fixed). A request reaches the engine a
fixed `api_time` after it is sent (the API server's own time before the first token, which the
engine's step times do not hold): it and prefill_rate are solved at each point so that a
request alone has the measured time to first token both at the 512-token sweep's prompt (547
tokens, 272.7 ms) and at the 10,154-token prefill (4,833 tok/s, 2,101 ms). The 1k-token sweep
and the 32k prefill are not fitted: they are the check. It also shows the best fit of the
seed's form (batch_exp = 0, fitting t0, m, c) to say why the exponent is there.

Usage: bench/fit_preset.py            (standard library only; about 30 s)
"""
import math
import sys

SRC = ("0xBakeer/inference-atlas results/vllm/Qwen/Qwen3.6-35B-A3B/nvidia-gb10-dgx-spark/"
       "8cd52c733b36ecb7--")
# (concurrency, requests, mean prompt tokens, measured output_tok_s)
SWEEP_512 = {  # sweep-parallel-1-32-i512-o256-v1--77c0d1.json (commit a7c17935)
    "file": SRC + "sweep-parallel-1-32-i512-o256-v1--77c0d1.json",
    "levels": [(1, 32, 17498 / 32, 54.497), (2, 32, 17498 / 32, 85.155),
               (4, 32, 17498 / 32, 110.856), (8, 32, 17498 / 32, 174.326),
               (16, 64, 34937 / 64, 248.621), (32, 128, 83797 / 128, 293.701)],
}
SWEEP_1K = {  # sweep-parallel-1-64-i1k-o256-v1--0fa237.json (commit d67ffd03)
    "file": SRC + "sweep-parallel-1-64-i1k-o256-v1--0fa237.json",
    "levels": [(1, 32, 29161 / 32, 53.313), (2, 32, 29161 / 32, 83.421),
               (4, 32, 29161 / 32, 109.809), (8, 32, 29161 / 32, 167.679),
               (16, 64, 54038 / 64, 240.753), (32, 128, 109083 / 128, 284.351),
               (64, 256, 221332 / 256, 291.253)],
}
# (file, mean prompt tokens, prefill_tok_s = sum(prompt) / sum(ttft)), concurrency 1
PREFILL_8K = (SRC + "prefill-8k-v1--58bdf6.json", 101542 / 10, 4832.965)
# (mean prompt tokens, mean time to first token, s) of the 512-token sweep's concurrency 1
# (sweep[0].metrics.ttft_ms.mean)
TTFT_512 = (17498 / 32, 0.272709)
PREFILL_32K = (SRC + "prefill-32k-v1--fa035d.json", 402911 / 10, 4656.495)
OUTPUT_TOKENS = 256
MAX_NUM_SEQS = 24
BUDGET = 32768
# Fixed, not fitted: the seed preset's 0.36 us per context token of a 96 KiB/token KV cache,
# scaled to this setup's ~12,980 bytes/token (hybrid attention, FP8 KV: 4,690,997 tokens in
# 128 GB x 0.8 - 37.5 - 4); a 2 ms fixed prefill cost as in the seed preset.
CTX_COST = 0.05e-6
PREFILL_OVERHEAD = 0.002


def step_time(p, batch, ctx, prefill):
    t = max(p["t0"] * batch ** p["batch_exp"] + p["m"] * (batch - 1), p["c"] * batch)
    t += p["ctx_cost"] * ctx
    if prefill > 0:
        t += prefill / p["prefill_rate"] + p["prefill_overhead"]
    return t


def closed_loop(p, n, requests, prompt, out=OUTPUT_TOKENS, max_seqs=MAX_NUM_SEQS):
    """output tok/s of n closed-loop clients sending `requests` requests (the engine's rules)."""
    prompt = int(round(prompt))
    sent = min(n, requests)
    waiting = []                  # requests in the engine's queue
    arriving = [p["api_time"]] * sent  # when sent requests reach the engine (after the API)
    running = []                  # [computed, generated]
    now = 0.0

    def plan():
        while arriving and arriving[0] <= now:
            arriving.pop(0)
            waiting.append(0)
        budget, batch, ctx, pre, work = BUDGET, 0, 0, 0, []
        for s in running:
            if budget <= 0:
                break
            if s[1] > 0:
                ctx += prompt + s[1]
                work.append((s, 1))
                budget -= 1
            else:
                chunk = min(prompt - s[0], budget)
                pre += chunk
                work.append((s, chunk))
                budget -= chunk
            batch += 1
        while waiting and budget > 0 and len(running) < max_seqs:
            waiting.pop(0)
            s = [0, 0]
            running.append(s)
            chunk = min(prompt, budget)
            pre += chunk
            work.append((s, chunk))
            budget -= chunk
            batch += 1
        if not work:
            return None
        return work, step_time(p, batch, ctx, pre)

    planned = plan()
    while planned or arriving:
        if not planned:  # idle until the next request reaches the engine
            now = arriving[0]
            planned = plan()
            continue
        work, dt = planned
        now += dt
        finished = 0
        for s, tokens in work:
            if s[1] == 0:
                s[0] += tokens
                if s[0] < prompt:
                    continue
            s[1] += 1
            if s[1] >= out:
                running.remove(s)
                finished += 1
        planned = plan()  # the next step is planned before the clients' new requests arrive
        new = min(finished, requests - sent)
        sent += new
        arriving.extend([now + p["api_time"]] * new)
        if planned is None:
            planned = plan()
    return requests * out / now


def ttft(p, prompt):
    """Time to first token of a prompt alone (concurrency 1), the API's time included."""
    left, t = int(round(prompt)), p["api_time"]
    while left > 0:
        chunk = min(left, BUDGET)
        t += step_time(p, 1, 0, chunk)
        left -= chunk
    return t


def prefill_tok_s(p, prompt):
    """A prompt alone (concurrency 1): prompt tokens / time to first token."""
    return prompt / ttft(p, prompt)


def with_rate(p):
    """Solves prefill_rate and api_time so that a request alone has the measured time to first
    token at the 512-token sweep's prompt and at the 8k point: both one step of a batch of one,
    TTFT(P) = api_time + t0 + prefill_overhead + P / prefill_rate."""
    _, long_prompt, measured = PREFILL_8K
    long_ttft = long_prompt / measured
    short_prompt, short_ttft = TTFT_512
    p = dict(p)
    p["prefill_rate"] = (long_prompt - short_prompt) / (long_ttft - short_ttft)
    p["api_time"] = max(short_ttft - p["t0"] - p["prefill_overhead"] -
                        short_prompt / p["prefill_rate"], 0.0)
    return p


def residuals(p, sweep):
    return [(n, closed_loop(p, n, r, pr), meas) for n, r, pr, meas in sweep["levels"]]


def loss(p):
    return sum(math.log(sim / meas) ** 2 for _, sim, meas in residuals(p, SWEEP_512))


def nelder_mead(f, x0, scale, iters=160):
    pts = [list(x0)] + [[x + (scale[i] if i == j else 0) for i, x in enumerate(x0)]
                        for j in range(len(x0))]
    vals = [f(x) for x in pts]
    for _ in range(iters):
        order = sorted(range(len(pts)), key=lambda i: vals[i])
        pts, vals = [pts[i] for i in order], [vals[i] for i in order]
        centroid = [sum(p[i] for p in pts[:-1]) / (len(pts) - 1) for i in range(len(x0))]
        refl = [c + (c - w) for c, w in zip(centroid, pts[-1])]
        fr = f(refl)
        if fr < vals[0]:
            exp = [c + 2 * (c - w) for c, w in zip(centroid, pts[-1])]
            fe = f(exp)
            pts[-1], vals[-1] = (exp, fe) if fe < fr else (refl, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = refl, fr
        else:
            con = [c + 0.5 * (w - c) for c, w in zip(centroid, pts[-1])]
            fc = f(con)
            if fc < vals[-1]:
                pts[-1], vals[-1] = con, fc
            else:
                pts = [pts[0]] + [[b + 0.5 * (x - b) for x, b in zip(p, pts[0])] for p in pts[1:]]
                vals = [vals[0]] + [f(x) for x in pts[1:]]
    best = min(range(len(pts)), key=lambda i: vals[i])
    return pts[best], vals[best]


def params(t0, batch_exp, m, c):
    return with_rate({"t0": t0, "batch_exp": batch_exp, "m": m, "c": c, "ctx_cost": CTX_COST,
                      "prefill_rate": 1.0, "prefill_overhead": PREFILL_OVERHEAD,
                      "api_time": 0.0})


def show(title, p):
    print(f"\n{title}")
    print("  " + ", ".join(f"{k} {v:.6g}" for k, v in p.items()))
    for sweep in (SWEEP_512, SWEEP_1K):
        print(f"  {sweep['file'].split('--')[1]}: concurrency, sim tok/s, measured, error")
        for n, sim, meas in residuals(p, sweep):
            print(f"    N={n:<3d} {sim:7.1f} {meas:8.1f} {100 * (sim / meas - 1):+6.1f}%")
    for name, prompt, meas in (PREFILL_8K, PREFILL_32K):
        sim = prefill_tok_s(p, prompt)
        print(f"  prefill, {prompt:.0f}-token prompt alone: {sim:.0f} prompt tok/s, measured "
              f"{meas:.0f} ({100 * (sim / meas - 1):+.1f}%)")
    prompt, meas = TTFT_512
    sim = ttft(p, prompt)
    print(f"  time to first token, {prompt:.0f}-token prompt alone: {1000 * sim:.1f} ms, measured "
          f"{1000 * meas:.1f} ({100 * (sim / meas - 1):+.1f}%)")


def main():
    # The seed's form: t0 + m(B-1) against c·B, no exponent.
    x, _ = nelder_mead(lambda v: loss(params(abs(v[0]), 0.0, abs(v[1]), abs(v[2]))),
                       [0.018, 0.003, 0.003], [0.004, 0.001, 0.001], iters=100)
    show("Seed's form (batch_exp 0), best fit:", params(abs(x[0]), 0.0, abs(x[1]), abs(x[2])))
    # The preset's form: the memory-bound floor grows as B^batch_exp. With m free the fit drives
    # it to 0 (2e-12 s), so m = 0; no compute ceiling was reached in the measured range (c = 0).
    x, _ = nelder_mead(lambda v: loss(params(abs(v[0]), min(max(v[1], 0.0), 1.0), 0.0, 0.0)),
                       [0.018, 0.45], [0.003, 0.1], iters=60)
    best = params(abs(x[0]), min(max(x[1], 0.0), 1.0), 0.0, 0.0)
    show("Preset's form (t0·B^batch_exp + m(B-1)), best fit:", best)
    print("\nPreset values (rounded as in src/sim/config.cpp):")
    print(f"  t0 {best['t0']:.4f}  batch_exp {best['batch_exp']:.3f}  m 0  c 0  "
          f"ctx_cost {CTX_COST:g}  prefill_rate {round(best['prefill_rate'], -1):.0f}  "
          f"prefill_overhead {PREFILL_OVERHEAD:g}  api_time {best['api_time']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
