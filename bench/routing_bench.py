#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Report of bench/routing_bench.sh: reads each case's `llmux bench run --out` results (run.json),
the admission runs' simulator samples and gateway access logs, and writes routing_bench.md and
routing_bench.json with the issue's figures and goals. Usage: see routing_bench.sh."""
import argparse
import json
import os


def load(path):
    try:
        with open(os.path.join(path, "run.json")) as f:
            doc = json.load(f)
    except OSError:
        return None
    lv = doc["levels"][0]
    agg = lv["aggregate"]
    shares = {}
    for r in lv["requests"]:
        if r.get("warmup"):
            continue
        b = r.get("backend") or "(none)"
        shares[b] = shares.get(b, 0) + 1
    return dict(tok_s=agg["output_tok_s"], requests=agg["requests"], ok=agg["ok"],
                failed=agg["failed"], errors=agg.get("errors", {}),
                e2e_p99_ms=agg["e2e_ms"].get("p99"), e2e_p50_ms=agg["e2e_ms"].get("p50"),
                ttft_p99_ms=agg["ttft_ms"].get("p99"), by_backend=shares)


def access(path):
    recs = []
    try:
        with open(os.path.join(path, "access.log")) as f:
            for line in f:
                try:
                    recs.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return recs


def fifo_inversions(recs):
    """Pairs of queued requests admitted out of their arrival order: B arrived clearly after A
    (by more than 5 ms) yet was admitted more than 20 ms before A. Arrival and admission are
    rebuilt from each log line's wall-clock time (ms) and durations, so requests that arrived in
    the same few milliseconds (the closed loop's clients all start together) have no measurable
    order and are not compared."""
    q = []
    for r in recs:
        if r.get("queue_depth", 0) > 0:
            arrival = r["ts"] - r["total_ms"] / 1e3
            q.append((arrival, arrival + r["queue_ms"] / 1e3))
    q.sort()
    inv = 0
    for i, (a_arr, a_adm) in enumerate(q):
        for b_arr, b_adm in q[i + 1:]:
            if b_arr - a_arr > 0.005 and b_adm < a_adm - 0.020:
                inv += 1
    return len(q), inv


def max_running(path):
    """The most running on each simulator, and how many samples were read."""
    out, samples = {}, 0
    try:
        with open(os.path.join(path, "running.txt")) as f:
            for line in f:
                _, n, v = line.split()
                if v != "nan":
                    out[n] = max(out.get(n, 0), float(v))
                    samples += 1
    except OSError:
        pass
    return out, samples


def main():
    ap = argparse.ArgumentParser()
    for a in ("--tmp", "--out", "--cmdline", "--git-head"):
        ap.add_argument(a, required=True)
    for a in ("--duration", "--warmup", "--time-scale", "--elapsed"):
        ap.add_argument(a, type=float, required=True)
    ap.add_argument("--preset", default="dgx-spark-qwen3.6-35b-a3b-fp8")
    o = ap.parse_args()
    res = dict(meta=dict(cmdline=o.cmdline, git_head=o.git_head, preset=o.preset, duration_s=o.duration,
                         warmup_s=o.warmup, time_scale=o.time_scale, elapsed_s=o.elapsed))
    md, goals = [], []
    W = md.append
    W("# Routing benchmark: llmux gateway policies against round robin and fixed splits\n")
    W(f"`{o.cmdline}` on {o.git_head}; each run {o.duration:g} s measured after {o.warmup:g} s of "
      f"warm-up; simulators `--preset {o.preset}`, clock {o.time_scale:g}x (tok/s are the simulated machines' tok/s "
      f"times {o.time_scale:g}); {o.elapsed:.0f} s in all. Workload: streaming chat, prompts "
      "20-380 tokens, output caps 32-512, natural stops, seed 7, closed loop.\n")

    def row(name, r, ref=None):
        if not r:
            return f"| {name} | — | | | | |"
        ratio = f"{r['tok_s'] / ref:.3f}" if ref else ""
        sh = ", ".join(f"{k} {v}" for k, v in sorted(r["by_backend"].items()))
        return (f"| {name} | {r['tok_s']:.0f} | {ratio} | {r['e2e_p99_ms'] / 1e3:.2f} | "
                f"{r['ok']}/{r['requests']} | {sh} |")

    hdr = ("| run | output tok/s | ratio | E2E p99 (s) | ok/requests | requests by backend |\n"
           "|---|---:|---:|---:|---:|---|")
    seed_dir = os.path.join(o.tmp, "seed")
    if os.path.isdir(seed_dir):
        s = {k: load(os.path.join(seed_dir, k)) for k in ("split", "round_robin", "least_inflight", "adaptive")}
        res["seed"] = s
        ref = s["split"]["tok_s"] if s["split"] else None
        W("## The seed's cluster: two Sparks, 16 clients\n")
        W("Ratio: to the same workload split 8+8 straight to the two machines in the same run.\n")
        W(hdr)
        W(row("split 8 + 8 (direct)", s["split"], ref))
        for p in ("round_robin", "least_inflight", "adaptive"):
            W(row(f"gateway, {p}", s[p], ref))
        W("")
        for p in ("least_inflight", "adaptive", "round_robin"):
            if s[p] and ref:
                goals.append((f"seed: {p} ≥ 97% of the split's tok/s", s[p]["tok_s"] >= 0.97 * ref,
                              f"{s[p]['tok_s'] / ref:.3f}"))
    mixed_dir = os.path.join(o.tmp, "mixed")
    if os.path.isdir(mixed_dir):
        splits = {k: load(os.path.join(mixed_dir, f"split{k}")) for k in (4, 6, 8, 10, 12, 14)}
        pol = {p: load(os.path.join(mixed_dir, p)) for p in ("round_robin", "least_inflight", "adaptive")}
        res["mixed"] = dict(splits=splits, policies=pol)
        best_k = max((k for k in splits if splits[k]), key=lambda k: splits[k]["tok_s"], default=None)
        best = splits[best_k]["tok_s"] if best_k else None
        W("## A mixed fleet: one Spark and one three times slower, 16 clients\n")
        W(f"Ratio: to the best fixed split (k clients straight to the fast machine, 16-k to the slow "
          f"one; best k = {best_k}).\n")
        W(hdr)
        for k in sorted(splits):
            W(row(f"split {k} fast + {16 - k} slow (direct)", splits[k], best))
        for p in ("round_robin", "least_inflight", "adaptive"):
            W(row(f"gateway, {p}", pol[p], best))
        W("")
        a, li, rr = pol["adaptive"], pol["least_inflight"], pol["round_robin"]
        if a and best:
            goals.append(("mixed: adaptive ≥ 97% of the best fixed split", a["tok_s"] >= 0.97 * best,
                          f"{a['tok_s'] / best:.3f}"))
        if a and li:
            goals.append(("mixed: adaptive ≥ least_inflight", a["tok_s"] >= li["tok_s"],
                          f"{a['tok_s']:.0f} vs {li['tok_s']:.0f} tok/s"))
        if a and rr:
            goals.append(("mixed: adaptive's E2E p99 below round_robin's",
                          a["e2e_p99_ms"] < rr["e2e_p99_ms"],
                          f"{a['e2e_p99_ms'] / 1e3:.2f} vs {rr['e2e_p99_ms'] / 1e3:.2f} s"))
        for p in ("least_inflight", "adaptive"):
            f = os.path.join(mixed_dir, p, "admin_backends.json")
            try:
                with open(f) as fh:
                    ab = json.load(fh)
                W(f"Learned by the gateway ({p}, GET /admin/backends at the end): " + "; ".join(
                    f"{b['name']}: one stream alone {b.get('predicted_total_tokens_per_s', {}).get('1', 0):.1f} tok/s, "
                    f"8 streams {b.get('predicted_total_tokens_per_s', {}).get('8', 0):.0f} tok/s"
                    for b in ab["backends"]) + " (simulated clock).\n")
            except (OSError, ValueError, KeyError):
                pass
    adm_dir = os.path.join(o.tmp, "admission")
    if os.path.isdir(adm_dir):
        W("## Admission: two Sparks with max_inflight 8 each\n")
        W("queue.size 256: 64 closed-loop clients (16 running, up to 48 waiting). queue.size 16: "
          "Poisson arrivals at about three times what 16 slots serve.\n")
        W("| queue.size | tok/s | ok/requests | gateway statuses | most running on a simulator (its own count, every 100 ms) | queued requests | pairs admitted out of arrival order |")
        W("|---:|---:|---:|---|---|---:|---:|")
        res["admission"] = {}
        for q in (256, 16):
            d = os.path.join(adm_dir, f"q{q}")
            if not os.path.isdir(d):
                continue
            r = load(d)
            recs = access(d)
            st = {}
            for x in recs:
                st[x["status"]] = st.get(x["status"], 0) + 1
            mr, nsamples = max_running(d)
            nq, inv = fifo_inversions(recs)
            res["admission"][q] = dict(run=r, statuses=st, max_running=mr, samples=nsamples,
                                       queued=nq, inversions=inv)
            W(f"| {q} | {r['tok_s']:.0f} | {r['ok']}/{r['requests']} | "
              + ", ".join(f"{k}: {v}" for k, v in sorted(st.items())) + " | "
              + ", ".join(f"{k} {v:g}" for k, v in sorted(mr.items())) + f" ({nsamples} samples) | {nq} | {inv} |")
            enough = nsamples >= 2 * 5 * o.duration  # two simulators, at least 5 samples a second
            goals.append((f"admission (queue {q}): no simulator above 8 running",
                          enough and max(mr.values()) <= 8,
                          ", ".join(f"{k} {v:g}" for k, v in sorted(mr.items())) + f" ({nsamples} samples)"))
            goals.append((f"admission (queue {q}): queued requests admitted in arrival order", inv == 0,
                          f"{inv} of {nq}"))
            if q == 256:
                goals.append(("admission (queue 256, 48 waiting at most): no 429/503", st.get(429, 0) + st.get(503, 0) == 0,
                              f"429: {st.get(429, 0)}, 503: {st.get(503, 0)}"))
            else:
                goals.append(("admission (queue 16, arrivals ~3x the service rate): the excess refused with 429, no 503",
                              st.get(429, 0) > 0 and st.get(503, 0) == 0,
                              f"429: {st.get(429, 0)}, 503: {st.get(503, 0)}"))
        W("")
    W("## Goals\n")
    W("| goal | met | measured |\n|---|---|---|")
    for g, ok, v in goals:
        W(f"| {g} | {'yes' if ok else '**no**'} | {v} |")
    res["goals"] = [dict(goal=g, met=ok, measured=v) for g, ok, v in goals]
    os.makedirs(o.out, exist_ok=True)
    with open(os.path.join(o.out, "routing_bench.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(o.out, "routing_bench.json"), "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
