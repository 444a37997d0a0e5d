#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# The report of bench/fairness_bench.sh: reads each case's `llmux bench run` JSON (per-tenant
# figures) and the gateway's access log, writes OUT/fairness_bench.md and OUT/fairness_bench.json.
import argparse
import json
import os


def tenants(path):
    """name -> the tenant's figures of a bench run's run.json."""
    with open(path) as f:
        doc = json.load(f)
    return {t["name"]: t for t in doc["tenants"]["tenants"]}, doc


def access_records(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            rec = json.loads(line)
            if not rec.get("tenant") or rec.get("status") != 200:
                continue
            end = rec["ts"]
            start = end - rec["total_ms"] / 1000.0
            dispatch = start + max(rec.get("queue_ms", 0.0), 0.0) / 1000.0
            out.append(dict(tenant=rec["tenant"], start=start, dispatch=dispatch, end=end,
                            tokens=rec.get("completion_tokens", 0) or 0))
    return out


def spread_tokens(recs, t0, t1):
    """Tokens of `recs` generated within [t0, t1], each request's spread over its run."""
    total = 0.0
    for r in recs:
        run = max(r["end"] - r["dispatch"], 1e-9)
        overlap = max(0.0, min(r["end"], t1) - max(r["dispatch"], t0))
        total += r["tokens"] * overlap / run
    return total


def steady_tok_s(path, warmup, duration):
    """The fleet's tokens per second while every client ran: from warm-up to the run's end."""
    recs = access_records(path)
    t0 = min(r["start"] for r in recs)
    return spread_tokens(recs, t0 + warmup, t0 + duration) / (duration - warmup)


def heavy_light(path, warmup, slots):
    recs = access_records(path)
    light = [r for r in recs if r["tenant"] == "light"]
    heavy = [r for r in recs if r["tenant"] == "heavy"]
    t0 = min(r["start"] for r in recs) + warmup
    t1 = max(r["start"] for r in light)  # the light tenant's last request began: both backlogged

    def rate(rs):
        return spread_tokens(rs, t0, t1) / (t1 - t0)

    light_rate, heavy_rate = rate(light), rate(heavy)
    light_end = max(r["end"] for r in light)
    # When, after the light tenant's last request ended, the heavy one first ran on every slot.
    events = sorted([(r["dispatch"], 1) for r in heavy] + [(r["end"], -1) for r in heavy])
    running, takeover = 0, None
    for t, step in events:
        running += step
        if t >= light_end and running >= slots:
            takeover = t - light_end
            break
    if takeover is None and running >= slots:
        takeover = 0.0
    return dict(window_s=t1 - t0, light_tok_s=light_rate, heavy_tok_s=heavy_rate,
                min_over_max=min(light_rate, heavy_rate) / max(light_rate, heavy_rate),
                takeover_s=takeover)


def main():
    ap = argparse.ArgumentParser()
    for name in ["tmp", "out", "cmdline", "preset", "git-head"]:
        ap.add_argument("--" + name, required=True)
    for name in ["duration", "warmup", "time-scale", "elapsed"]:
        ap.add_argument("--" + name, type=float, required=True)
    args = ap.parse_args()
    case = lambda name, run="run": os.path.join(args.tmp, name, run, "run.json")

    alone, _ = tenants(case("alone"))
    fifo, _ = tenants(case("fifo"))
    fair, _ = tenants(case("fair"))
    steady = lambda name: steady_tok_s(os.path.join(args.tmp, name, "access.log"), args.warmup,
                                       args.duration)
    weights, _ = tenants(case("weights"))
    vllm_fcfs, _ = tenants(case("vllm_fcfs"))
    vllm_priority, _ = tenants(case("vllm_priority"))
    split = heavy_light(os.path.join(args.tmp, "heavy_light", "access.log"), args.warmup, 8)

    alone_p99 = alone["alice"]["ttft_p99_s"]
    result = {
        "interactive_ttft_p99_s": {
            "alone": alone_p99,
            "fifo": fifo["alice"]["ttft_p99_s"],
            "fair": fair["alice"]["ttft_p99_s"],
            "fifo_over_alone": fifo["alice"]["ttft_p99_s"] / alone_p99,
            "fair_over_alone": fair["alice"]["ttft_p99_s"] / alone_p99,
        },
        "batch_tok_s": {"fifo": fifo["nightly"]["output_tok_s"],
                        "fair": fair["nightly"]["output_tok_s"]},
        "fleet_tok_s_steady": {
            "tenants": {"fifo": steady("weights_fifo"), "fair": steady("weights"),
                        "fair_over_fifo": steady("weights") / steady("weights_fifo")},
            "classes": {"fifo": steady("fifo"), "fair": steady("fair"),
                        "fair_over_fifo": steady("fair") / steady("fifo")},
        },
        "heavy_light": split,
        "weights_3_to_1": {"a_tok_s": weights["a"]["output_tok_s"],
                           "b_tok_s": weights["b"]["output_tok_s"],
                           "ratio": weights["a"]["output_tok_s"] / weights["b"]["output_tok_s"]},
        "send_priority_interactive_ttft_p99_s": {
            "off": vllm_fcfs["alice"]["ttft_p99_s"],
            "on": vllm_priority["alice"]["ttft_p99_s"],
            "on_over_off": vllm_priority["alice"]["ttft_p99_s"] / vllm_fcfs["alice"]["ttft_p99_s"],
        },
        "settings": {"duration_s": args.duration, "warmup_s": args.warmup,
                     "time_scale": args.time_scale, "preset": args.preset,
                     "git_head": args.git_head, "command": args.cmdline,
                     "elapsed_s": args.elapsed},
    }
    with open(os.path.join(args.out, "fairness_bench.json"), "w") as f:
        json.dump(result, f, indent=2)

    ms = lambda s: f"{s * 1e3:.1f}"
    tput = result["fleet_tok_s_steady"]
    it = result["interactive_ttft_p99_s"]
    md = [
        "# Sharing two machines between tenants (issue 38)",
        "",
        f"`{args.cmdline}` at {args.git_head}, {args.elapsed:.0f} s. Two `llmux sim --preset "
        f"{args.preset} --time-scale {args.time_scale:g}` (model time {args.time_scale:g}x faster "
        "than the wall clock), each `max_inflight: 4` in the gateway (12 and the simulators "
        "at 4 sequences in the send_priority cases), streaming chat, closed loops of "
        f"`llmux bench run --tenant ...` for {args.duration:g} s ({args.warmup:g} s warm-up "
        "excluded). Interactive: 4 clients, 128 prompt tokens, 64 out; batch: 64 clients, 128 "
        "in, 256 out. Times are wall-clock (model time is "
        f"{args.time_scale:g}x longer).",
        "",
        "| Measure | Figure |",
        "|---|---:|",
        f"| Interactive TTFT p99 alone (ms) | {ms(it['alone'])} |",
        f"| ... with the batch tenant, one FIFO queue (before issue 38) (ms) | {ms(it['fifo'])} "
        f"({it['fifo_over_alone']:.1f}x alone) |",
        f"| ... with the batch tenant, classes and tenants (ms) | {ms(it['fair'])} "
        f"({it['fair_over_alone']:.2f}x alone; goal <= 1.5x) |",
        f"| Fleet output tok/s while all clients run, fair sharing between tenants (weights load) "
        f"over FIFO | {tput['tenants']['fair_over_fifo']:.3f} ({tput['tenants']['fair']:.0f} / "
        f"{tput['tenants']['fifo']:.0f}; goal >= 0.98) |",
        f"| ... classes (interactive + batch load) over FIFO | "
        f"{tput['classes']['fair_over_fifo']:.3f} ({tput['classes']['fair']:.0f} / "
        f"{tput['classes']['fifo']:.0f}) |",
        f"| Equal tenants, 60 vs 6 clients: min/max token rate while both ran | "
        f"{split['min_over_max']:.3f} ({split['light_tok_s']:.0f} / {split['heavy_tok_s']:.0f} "
        f"tok/s over {split['window_s']:.1f} s; goal >= 0.9) |",
        f"| ... after the light tenant's last request, the heavy one holds all 8 slots within (s) | "
        + (f"{split['takeover_s']:.3f} (goal <= 1) |" if split["takeover_s"] is not None
           else "never |"),
        f"| Weights 3:1, 24 clients each: token rate ratio | "
        f"{result['weights_3_to_1']['ratio']:.2f} (goal 3 +- 10%) |",
        f"| send_priority off: interactive TTFT p99 on vLLM-like priority schedulers (ms) | "
        f"{ms(result['send_priority_interactive_ttft_p99_s']['off'])} |",
        f"| send_priority on (ms) | {ms(result['send_priority_interactive_ttft_p99_s']['on'])} "
        f"({result['send_priority_interactive_ttft_p99_s']['on_over_off']:.2f}x off) |",
        "",
        "Each case runs fresh simulators and a fresh gateway. FIFO: the gateway reads no tenant "
        "or priority header and has one class that fills every slot, i.e. the queue as it was "
        "before classes. Sharing: the default classes (batch holds at most half of each "
        "backend's slots) and tenants by token counters. The send_priority cases let 12 requests per "
        "backend through with no slot kept for a class, so the simulators' own queue "
        "(`--scheduling-policy priority --max-num-seqs 4`) decides; with send_priority each "
        "request carries its class as vLLM's `priority`. Token rates in the heavy/light case and the "
        "fleet's throughput are from the gateway's access log (each request's tokens spread over "
        "its run; the throughput from the end of the warm-up to the end of the run, while every "
        "client ran: a closed loop's drain afterwards is left out); the others from "
        "`llmux bench run`'s per-tenant figures.",
        "",
    ]
    with open(os.path.join(args.out, "fairness_bench.md"), "w") as f:
        f.write("\n".join(md))


if __name__ == "__main__":
    main()
