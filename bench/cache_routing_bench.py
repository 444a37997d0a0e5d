#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Report of bench/cache_routing_bench.sh: reads each run's `llmux bench run --out` results
(run.json) and the gateways' access logs, and writes cache_routing_bench.md and .json with the
issue's figures and goals. Usage: see cache_routing_bench.sh."""
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
        if r.get("warmup") or r.get("error") != "none":
            continue
        b = r.get("backend") or "(none)"
        shares[b] = shares.get(b, 0) + 1
    ok = sum(shares.values())
    conv = lv.get("conversation") or {}
    return dict(requests=agg["requests"], ok=agg["ok"], failed=agg["failed"],
                errors=agg.get("errors", {}), not_found=agg.get("not_found", 0),
                tok_s=agg["output_tok_s"], prompt_tokens=agg.get("prompt_tokens", 0),
                cached=agg.get("cached_prompt_tokens") or 0, cached_share=agg.get("cached_share"),
                ttft_mean_ms=agg["ttft_ms"].get("mean"), ttft_p50_ms=agg["ttft_ms"].get("p50"),
                ttft_p99_ms=agg["ttft_ms"].get("p99"), e2e_p99_ms=agg["e2e_ms"].get("p99"),
                by_backend=shares, max_share=(max(shares.values()) / ok) if ok else None,
                turns_completed=conv.get("turns_completed"),
                conversations_completed=conv.get("conversations_completed"))


def affinity_counts(path):
    counts = {}
    try:
        with open(os.path.join(path, "access.log")) as f:
            for line in f:
                try:
                    a = json.loads(line).get("affinity")
                except ValueError:
                    continue
                if a:
                    counts[a] = counts.get(a, 0) + 1
    except OSError:
        pass
    return counts


def pct(x):
    return "n/a" if x is None else f"{100 * x:.1f}%"


def num(x, fmt="{:.1f}"):
    return "n/a" if x is None else fmt.format(x)


def main():
    ap = argparse.ArgumentParser()
    for a in ("--tmp", "--out", "--cmdline", "--git-head"):
        ap.add_argument(a, required=True)
    ap.add_argument("--time-scale", type=float, required=True)
    ap.add_argument("--prefix-time-scale", type=float, required=True)
    ap.add_argument("--elapsed", type=int, default=0)
    ap.add_argument("--preset", default="dgx-spark-qwen3.6-35b-a3b-fp8")
    args = ap.parse_args()
    runs = {}
    for case in ("previous", "codex", "prefix"):
        d = os.path.join(args.tmp, case)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            r = load(os.path.join(d, name))
            if r is None:
                continue
            r["affinity"] = affinity_counts(os.path.join(d, name))
            runs.setdefault(case, {})[name] = r

    goals = []
    md = ["# Conversations and caches through llmux gateway (issue 11)", "",
          f"`{args.cmdline}` at {args.git_head}; simulated DGX Sparks (`llmux sim "
          f"--preset {args.preset} --enable-prompt-tokens-details`, clock x{args.time_scale:g}, the prefix case "
          f"x{args.prefix_time_scale:g}), fresh simulators for every run; {args.elapsed} s in all. "
          "Rerun: the command above.", ""]

    def table(case, names, cols):
        md.append("| run | " + " | ".join(c[0] for c in cols) + " |")
        md.append("|---|" + "---:|" * len(cols))
        for n in names:
            r = runs[case].get(n)
            if r:
                md.append(f"| {n} | " + " | ".join(c[1](r) for c in cols) + " |")
        md.append("")

    shares = ("share per backend", lambda r: ", ".join(
        f"{b} {100 * k / max(1, sum(r['by_backend'].values())):.0f}%"
        for b, k in sorted(r["by_backend"].items())))
    if "previous" in runs:
        p = runs["previous"]
        md += ["## 32 users x 20-turn conversations with previous_response_id", ""]
        table("previous", ["round_robin", "seed", "llmux", "restart"], [
            ("turns", lambda r: str(r["requests"])), ("ok", lambda r: str(r["ok"])),
            ("not found", lambda r: str(r["not_found"])),
            ("other errors", lambda r: str(r["failed"] - r["not_found"])), shares,
            ("output tok/s", lambda r: num(r["tok_s"])),
            ("affinity (access log)", lambda r: ", ".join(
                f"{k} {v}" for k, v in sorted(r["affinity"].items())) or "-")])
        md += ["round_robin: the gateway without affinity; seed: every turn to server1 (the "
               "seed's pinning); llmux: affinity on, prefix_aware for new conversations; "
               "restart: llmux with the gateway stopped (SIGTERM) and a new process started on "
               "the same port 4 s into the run — turns sent while no gateway listened fail to "
               "connect (other errors; the user waits 500 ms, then goes on from its last "
               "successful turn, whose id the new process finds by asking).", ""]
        for n in ("llmux", "restart"):
            if n in p:
                goals.append((f"previous/{n}: zero not found", p[n]["not_found"] == 0,
                              str(p[n]["not_found"])))
                goals.append((f"previous/{n}: neither backend above 60% of the turns",
                              p[n]["max_share"] is not None and p[n]["max_share"] <= 0.6,
                              pct(p[n]["max_share"])))
        if "restart" in p:
            goals.append(("previous/restart: ids found by asking after the restart",
                          p["restart"]["affinity"].get("found", 0) > 0,
                          str(p["restart"]["affinity"].get("found", 0))))
    if "codex" in runs:
        c = runs["codex"]
        md += ["## 32 Codex-style conversations (store false, history replayed, "
               "prompt_cache_key)", ""]
        table("codex", ["round_robin", "prefix_aware", "fixed"], [
            ("turns ok", lambda r: str(r["ok"])), ("prompt tokens", lambda r: str(r["prompt_tokens"])),
            ("cached prompt tokens", lambda r: str(r["cached"])),
            ("cached %", lambda r: pct(r["cached_share"])), shares,
            ("TTFT mean ms", lambda r: num(r["ttft_mean_ms"])),
            ("output tok/s", lambda r: num(r["tok_s"]))])
        md += ["fixed: each conversation on one backend for all its turns (consistent_hash on "
               "prompt_cache_key, no load bound) — the reference.", ""]
        if "prefix_aware" in c and "fixed" in c and c["fixed"]["cached"]:
            ratio = c["prefix_aware"]["cached"] / c["fixed"]["cached"]
            goals.append(("codex: prefix_aware cached prompt tokens >= 0.8x fixed", ratio >= 0.8,
                          f"{ratio:.3f}"))
            goals.append(("codex: prefix_aware neither backend above 60%",
                          c["prefix_aware"]["max_share"] <= 0.6,
                          pct(c["prefix_aware"]["max_share"])))
            if "round_robin" in c:
                md.append(f"Cached prompt tokens against fixed: prefix_aware {ratio:.3f}, "
                          f"round_robin {c['round_robin']['cached'] / c['fixed']['cached']:.3f}.")
                md.append("")
    if "prefix" in runs:
        x = runs["prefix"]
        md += ["## Shared prefixes: 12 x 2,000-token system prompts, 1.5x one backend's cache", ""]
        table("prefix", ["round_robin", "prefix_aware"], [
            ("requests ok", lambda r: str(r["ok"])), ("cached %", lambda r: pct(r["cached_share"])),
            ("TTFT mean ms", lambda r: num(r["ttft_mean_ms"])),
            ("TTFT p50 ms", lambda r: num(r["ttft_p50_ms"])),
            ("TTFT p99 ms", lambda r: num(r["ttft_p99_ms"])),
            ("output tok/s", lambda r: num(r["tok_s"])), shares])
        if "round_robin" in x and "prefix_aware" in x:
            t = x["prefix_aware"]["ttft_mean_ms"] / x["round_robin"]["ttft_mean_ms"]
            s = x["prefix_aware"]["tok_s"] / x["round_robin"]["tok_s"]
            md.append(f"prefix_aware / round_robin: mean TTFT {t:.3f}, output tok/s {s:.3f}.")
            md.append("")
            goals.append(("prefix: mean TTFT prefix_aware <= 0.5x round_robin", t <= 0.5, f"{t:.3f}"))
            goals.append(("prefix: throughput no lower than round_robin", s >= 1.0, f"{s:.3f}"))
    md += ["## Goals", "", "| goal | met | measured |", "|---|---|---:|"]
    for g, ok, v in goals:
        md.append(f"| {g} | {'yes' if ok else '**no**'} | {v} |")
    md.append("")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "cache_routing_bench.md"), "w") as f:
        f.write("\n".join(md))
    with open(os.path.join(args.out, "cache_routing_bench.json"), "w") as f:
        json.dump(dict(cmdline=args.cmdline, git_head=args.git_head, runs=runs,
                       goals=[dict(goal=g, met=ok, measured=v) for g, ok, v in goals]), f, indent=1)
    print("\n".join(md))


if __name__ == "__main__":
    main()
