#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Report of bench/hedge_bench.sh: reads each run's `llmux bench run --out` results (run.json),
the gateway's /metrics at the run's end and its access log, and writes hedge_bench.md and
hedge_bench.json: TTFT p50/p99 per run against the healthy fleet's p99, and the extra upstream
requests hedging made. Usage: see hedge_bench.sh."""
import argparse
import json
import os
import re

RUNS = ["healthy", "healthy_hedge", "slowed", "slowed_hedge"]


def load(path):
    with open(os.path.join(path, "run.json")) as f:
        doc = json.load(f)
    agg = doc["levels"][0]["aggregate"]
    return dict(requests=int(agg["requests"]), ok=agg["ok"], failed=agg["failed"],
                tok_s=agg["output_tok_s"], ttft_p50_ms=agg["ttft_ms"].get("p50"),
                ttft_p99_ms=agg["ttft_ms"].get("p99"), e2e_p99_ms=agg["e2e_ms"].get("p99"))


def counter_sum(text, name, label=None):
    """The sum of a counter family's samples (those with `label` in their labels, when given)."""
    total = 0.0
    for line in text.splitlines():
        match = re.match(r"^" + re.escape(name) + r"(\{[^}]*\})?\s+([0-9.e+]+)$", line)
        if match and (label is None or label in (match.group(1) or "")):
            total += float(match.group(2))
    return total


def gateway_counts(path):
    try:
        with open(os.path.join(path, "metrics.txt")) as f:
            text = f.read()
    except OSError:
        return {}
    return dict(requests_answered=int(counter_sum(text, "llmux_requests_total")),
                hedges=int(counter_sum(text, "llmux_hedges_total")),
                hedges_won=int(counter_sum(text, "llmux_hedges_total", 'winner="hedge"')))


def main():
    ap = argparse.ArgumentParser()
    for flag in ("--tmp", "--out", "--cmdline", "--after", "--slow", "--clients", "--duration",
                 "--time-scale", "--preset", "--git-head", "--elapsed", "--policy"):
        ap.add_argument(flag, required=True)
    args = ap.parse_args()
    results = {}
    for name in RUNS:
        run = load(os.path.join(args.tmp, name))
        run.update(gateway_counts(os.path.join(args.tmp, name)))
        results[name] = run
    reference = results["healthy"]["ttft_p99_ms"]
    for run in results.values():
        run["ttft_p99_vs_healthy"] = run["ttft_p99_ms"] / reference if reference else None
        # (over the requests the gateway answered: the bench's warm-up included, as the hedges)
        answered = run.get("requests_answered")
        run["extra_upstream_requests"] = run.get("hedges", 0) / answered if answered else None
    hedged = results["slowed_hedge"]
    goals = {
        "ttft_p99_slowed_hedge_le_1_5x_healthy": hedged["ttft_p99_vs_healthy"] is not None
        and hedged["ttft_p99_vs_healthy"] <= 1.5,
        "extra_upstream_requests_le_5pct": hedged["extra_upstream_requests"] is not None
        and hedged["extra_upstream_requests"] <= 0.05,
    }
    doc = dict(cmdline=args.cmdline, git_head=args.git_head, elapsed_s=int(args.elapsed),
               after=args.after, policy=args.policy, slow_factor=float(args.slow), clients=int(args.clients),
               duration_s=float(args.duration), time_scale=float(args.time_scale),
               preset=args.preset, runs=results, goals=goals)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "hedge_bench.json"), "w") as f:
        json.dump(doc, f, indent=2)

    def fmt(value, pattern="{:.0f}"):
        return "—" if value is None else pattern.format(value)

    lines = [
        "# Hedging before the first token: TTFT under random slowdowns",
        "",
        f"`{args.cmdline}` at {args.git_head} ({args.elapsed} s). Two `llmux sim` backends A, B "
        f"(preset {args.preset}, --time-scale {args.time_scale}) behind the gateway's {args.policy}; "
        f"{args.clients} closed-loop streaming chat clients (`llmux bench run`, prompts 256-768 "
        f"tokens, 32-96 tokens out) for {args.duration} s after the warm-up. Slowed runs: A or B "
        f"made {args.slow}x slower (`slow_factor`) at the moments of timeline.txt; hedged runs: "
        f"`hedge: {{after: {args.after}}}`.",
        "",
        "| run | requests | failed | TTFT p50 ms | TTFT p99 ms | p99 / healthy p99 | hedges "
        "| won by the hedge | extra upstream requests |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in RUNS:
        run = results[name]
        lines.append(
            f"| {name} | {run['requests']} | {run['failed']} | {fmt(run['ttft_p50_ms'])} "
            f"| {fmt(run['ttft_p99_ms'])} | {fmt(run['ttft_p99_vs_healthy'], '{:.2f}')} "
            f"| {fmt(run.get('hedges'))} | {fmt(run.get('hedges_won'))} "
            f"| {fmt(run['extra_upstream_requests'] * 100 if run['extra_upstream_requests'] is not None else None, '{:.1f}%')} |")
    lines += [
        "",
        "Goals (issue 37): slowed_hedge's TTFT p99 at most 1.5x the healthy fleet's: "
        f"**{'met' if goals['ttft_p99_slowed_hedge_le_1_5x_healthy'] else 'not met'}**; "
        "extra upstream requests at most 5%: "
        f"**{'met' if goals['extra_upstream_requests_le_5pct'] else 'not met'}**.",
        "",
        "Extra upstream requests: the second attempts hedging started (`llmux_hedges_total`) over "
        "the requests the gateway answered (`llmux_requests_total`, warm-up included as for the "
        "hedges); each cancelled attempt cost its backend the compute until it "
        "was cancelled.",
    ]
    with open(os.path.join(args.out, "hedge_bench.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
