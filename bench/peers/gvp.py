#!/usr/bin/python3
"""Helpers of bench/gateway_vs_peers.sh: parse one measurement into a JSON line, and turn all
the lines of a run into bench/results/gateway_vs_peers.{md,json}.

    gvp.py bench RUN_JSON                      -> JSON of a `llmux bench run --out` result
    gvp.py wrk WRK_OUTPUT                      -> JSON of a `wrk --latency` output
    gvp.py report LINES.jsonl META.json MD JSON
"""
import json
import os
import re
import statistics
import sys

PATHS = ["direct", "llmux", "llmux-base", "nginx", "haproxy", "fastapi"]
PROXIES = ["llmux", "llmux-base", "nginx", "haproxy", "fastapi"]
# New vs baseline (--baseline): (section, key, what, lower is better, headline)
BASELINE_METRICS = [
    ("b", "proxy_cpu_us_per_request", "(b) proxy CPU µs/request", True, True),
    ("b", "requests_per_s", "(b) req/s", False, False),
    ("b", "lat_p99_us", "(b) p99 µs", True, False),
    ("d", "kib_per_stream", "(d) KiB per held-open stream", True, True),
    ("d", "idle_rss_kib", "(d) idle RSS KiB", True, False),
    ("a", "output_tok_s", "(a) serial tok/s", False, False),
    ("c", "proxy_cpu_us_per_token", "(c) proxy CPU µs/token", True, False),
    ("c", "itl_ms_p99", "(c) ITL p99 ms", True, False),
]


def bench(path):
    d = json.load(open(path))
    (key, s), = d["summary"].items()
    lvl = d["levels"][0]

    def pct(name, p):
        v = s.get(name) or {}
        return v.get(p)

    return {
        "requests": s["requests"], "ok": s["ok"], "failed": s["failed"], "errors": s["errors"],
        "wall_s": s["wall_s"], "output_tokens": s["output_tokens"],
        "output_tok_s": s["output_tok_s"], "requests_per_s": s["requests_per_s"],
        "max_in_flight": lvl.get("max_in_flight"),
        "decode_tok_s_p50": pct("decode_tok_s", "p50"), "decode_tok_s_mean": pct("decode_tok_s", "mean"),
        "ttft_ms_p50": pct("ttft_ms", "p50"), "ttft_ms_p99": pct("ttft_ms", "p99"),
        "itl_ms_p50": pct("itl_ms", "p50"), "itl_ms_p90": pct("itl_ms", "p90"),
        "itl_ms_p99": pct("itl_ms", "p99"), "itl_ms_mean": pct("itl_ms", "mean"),
        "itl_ms_max": pct("itl_ms", "max"), "tpot_ms_p50": pct("tpot_ms", "p50"),
        "e2e_ms_p50": pct("e2e_ms", "p50"),
    }


def _us(v):
    m = re.fullmatch(r"([0-9.]+)(us|ms|s|m)", v)
    if not m:
        return None
    return float(m.group(1)) * {"us": 1, "ms": 1e3, "s": 1e6, "m": 6e7}[m.group(2)]


def wrk(path):
    t = open(path).read()
    out = {"non_2xx": 0, "socket_errors": {"connect": 0, "read": 0, "write": 0, "timeout": 0}}
    m = re.search(r"Requests/sec:\s+([0-9.]+)", t)
    out["requests_per_s"] = float(m.group(1)) if m else None
    m = re.search(r"(\d+) requests in ([0-9.]+)(\w+), ([0-9.]+\w+) read", t)
    out["requests"] = int(m.group(1)) if m else None
    for p in ("50", "75", "90", "99"):
        m = re.search(r"^\s+%s%%\s+(\S+)" % p, t, re.M)
        out["lat_p%s_us" % p] = _us(m.group(1)) if m else None
    m = re.search(r"Latency\s+(\S+)\s+(\S+)\s+(\S+)", t)
    if m:
        out["lat_mean_us"], out["lat_max_us"] = _us(m.group(1)), _us(m.group(3))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
    if m:
        out["non_2xx"] = int(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", t)
    if m:
        out["socket_errors"] = dict(zip(("connect", "read", "write", "timeout"), map(int, m.groups())))
    out["errors_total"] = out["non_2xx"] + sum(out["socket_errors"].values())
    return out


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(v, nd=1):
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:,.{nd}f}"
    return f"{v:,}"


def goal(ok):
    return "✅ met" if ok else "❌ missed"


def baseline_section(by, meta, md):
    """New (llmux) vs baseline (llmux-base): ratios of the medians over rounds, and the ratio of
    each round (both measured in the same round, minutes apart). Returns the JSON medians."""
    bins = {b["role"]: b for b in meta.get("binaries", [])}
    budget = meta.get("baseline_budget_pct", 5.0)
    out = {"budget_pct": budget, "binaries": bins, "metrics": {}}
    md.append("## New vs baseline binary\n")
    md.append("Both binaries ran as the llmux path does (`gateway --threads 1 --access-log off`, CPU "
              f"{meta['proxy_cpu']}), each copied to the run's temp dir first, in every section, "
              "rotated with the other paths. **new** = path `llmux`, **baseline** = path `llmux-base`.\n")
    md.append("| binary | path | mtime | git revision | sha256 |")
    md.append("|---|---|---|---|---|")
    for role, name in (("llmux", "new"), ("llmux-base", "baseline")):
        b = bins.get(role)
        if b:
            g = b.get("git_desc") or "unknown"
            g = g if len(g) <= 72 else g[:71] + "…"
            if b.get("git_how"):
                g += f" — {b['git_how']}"
            md.append(f"| {name} | `{b['path']}` | {b['mtime']} | {g} | {b['sha256'][:12]} |")
    if bins.get("llmux") and bins.get("llmux-base") and bins["llmux"]["sha256"] == bins["llmux-base"]["sha256"]:
        md.append("\nThe two binaries are byte-identical: every ratio below measures only noise.")
    md.append("")
    md.append("| metric | new | baseline | new/baseline | change | per-round new/baseline |")
    md.append("|---|---:|---:|---:|---:|---|")
    headlines = []
    for sec, key, what, lower_better, headline in BASELINE_METRICS:
        new = med([r.get(key) for r in by.get((sec, "llmux"), [])])
        base = med([r.get(key) for r in by.get((sec, "llmux-base"), [])])
        if new is None and base is None:
            continue
        ratio = new / base if new is not None and base else None
        rounds = {r["round"]: r.get(key) for r in by.get((sec, "llmux"), [])}
        per_round = []
        for r in sorted(by.get((sec, "llmux-base"), []), key=lambda r: r["round"]):
            n, b = rounds.get(r["round"]), r.get(key)
            if n is not None and b:
                per_round.append(n / b)
        x = {"new": new, "baseline": base, "ratio": ratio, "change_pct": (ratio - 1) * 100 if ratio else None,
             "per_round_ratios": per_round, "per_round_ratio_median": med(per_round),
             "per_round_ratio_max": max(per_round) if per_round else None, "lower_is_better": lower_better}
        out["metrics"][f"{sec}.{key}"] = x
        nd = {"proxy_cpu_us_per_request": 1, "kib_per_stream": 2, "proxy_cpu_us_per_token": 2,
              "itl_ms_p99": 3, "output_tok_s": 2}.get(key, 0)
        label = f"**{what}**" if headline else what
        change = f"{x['change_pct']:+.1f}%" if ratio else "–"
        rounds_txt = ", ".join(f"{v:.3f}" for v in per_round) or "–"
        md.append(f"| {label} | {fmt(new, nd)} | {fmt(base, nd)} | {fmt(ratio, 3)} | {change} | {rounds_txt} |")
        if headline:
            headlines.append((sec, key, what, x))
    md.append("")
    md.append("new/baseline is the ratio of the medians over rounds; per-round ratios pair the two "
              "binaries' runs of the same round. Lower is better for CPU, latency and memory, higher "
              "for req/s and tok/s.\n")
    if meta["rounds"] < 3:
        md.append(f"Only {meta['rounds']} round(s): a smoke test of the plumbing, not a verdict (use 3 or more).\n")
    for sec, key, what, x in headlines:
        if x["ratio"] is None:
            continue
        rr = x["per_round_ratios"]
        spread = (f" (per round {min(rr):.3f}–{max(rr):.3f}, median {x['per_round_ratio_median']:.3f})"
                  if len(rr) > 1 else "")
        if key == "proxy_cpu_us_per_request":
            md.append(f"- **Proxy CPU per request, new/baseline = {x['ratio']:.3f}** ({x['change_pct']:+.1f}%)"
                      f"{spread}. Budget: the new binary costs at most {budget:g}% more proxy CPU per "
                      f"request — {goal(x['ratio'] <= 1 + budget / 100)}.")
        else:
            md.append(f"- **Memory per held-open stream, new/baseline = {x['ratio']:.3f}** "
                      f"({x['change_pct']:+.1f}%){spread}.")
    md.append("")
    return out


def report(lines_path, meta_path, md_path, json_path):
    rows = [json.loads(l) for l in open(lines_path) if l.strip()]
    for r in rows:  # CPU cost per request of the proxy (robust on a noisy machine)
        if r.get("section") == "b" and r.get("proxy_cpu_pct") and r.get("requests_per_s"):
            r["proxy_cpu_us_per_request"] = r["proxy_cpu_pct"] / 100 / r["requests_per_s"] * 1e6
    meta = json.load(open(meta_path))
    by = {}
    for r in rows:
        by.setdefault((r["section"], r["path"]), []).append(r)

    def m(section, path, key):
        return med([r.get(key) for r in by.get((section, path), [])])

    def tot(section, path, key):
        return sum((r.get(key) or 0) for r in by.get((section, path), []))

    medians = {}
    md = []
    md.append("# llmux gateway vs nginx, HAProxy and a FastAPI + httpx proxy\n")
    md.append(f"Run {meta['started']} on {meta['host']} ({meta['cpus']} CPUs, shared with other "
              f"engineers' builds and tests, so figures are noisy); {meta['rounds']} rounds, the "
              f"paths in a rotated order each round; every figure is the **median over rounds**. "
              f"Proxies pinned to CPU {meta['proxy_cpu']}, load generator and backend to CPU "
              f"{meta['load_cpu']}. llmux: `gateway --threads 1 --access-log off` "
              f"(binary {meta['llmux_sha256'][:12]}, built {meta['llmux_mtime']}). "
              f"{meta['versions']}.\n")
    md.append(f"Command: `{meta['command']}` ({meta['elapsed_s']:.0f} s)\n")
    if any(p == "llmux-base" for _, p in by):
        medians["baseline"] = baseline_section(by, meta, md)

    # (a)
    sec = "a"
    if any(k[0] == sec for k in by):
        d = m(sec, "direct", "output_tok_s")
        md.append(f"## (a) Serial streaming throughput\n")
        md.append(f"`llmux sim` (DGX Spark preset, time scale 1), `llmux bench run --endpoint chat "
                  f"--concurrency 1 --num-requests {meta['serial_requests']} --output-len "
                  f"{meta['serial_tokens']} --ignore-eos`. tok/s = output tokens / wall time "
                  f"(includes TTFT); decode tok/s = 1/TPOT per request.\n")
        md.append("| path | tok/s | ratio to direct | decode tok/s p50 | TTFT p50 ms | ITL p50 ms | failed |")
        md.append("|---|---:|---:|---:|---:|---:|---:|")
        med_a = {}
        for p in PATHS:
            if (sec, p) not in by:
                continue
            v = m(sec, p, "output_tok_s")
            med_a[p] = {k: m(sec, p, k) for k in ("output_tok_s", "decode_tok_s_p50", "ttft_ms_p50", "itl_ms_p50")}
            med_a[p]["failed_total"] = tot(sec, p, "failed")
            med_a[p]["ratio_to_direct"] = v / d if v and d else None
            md.append(f"| {p} | {fmt(v, 2)} | {fmt(med_a[p]['ratio_to_direct'], 4)} | "
                      f"{fmt(med_a[p]['decode_tok_s_p50'], 2)} | {fmt(med_a[p]['ttft_ms_p50'], 2)} | "
                      f"{fmt(med_a[p]['itl_ms_p50'], 3)} | {med_a[p]['failed_total']} |")
        medians["a"] = med_a
        r = med_a.get("llmux", {}).get("ratio_to_direct")
        if r:
            md.append(f"\nGoal llmux within 1% of direct: llmux/direct = **{r:.4f}** — {goal(r >= 0.99)}.\n")

    # (b)
    sec = "b"
    if any(k[0] == sec for k in by):
        md.append("## (b) Small non-streaming POSTs against a fixed fast backend\n")
        md.append(f"Backend: nginx (one worker, CPU {meta['load_cpu']}) answering a canned completion "
                  f"with `return 200`. `wrk -t1 -c{meta['wrk_connections']} -d{meta['wrk_duration']}s "
                  f"--latency -s bench/peers/post.lua` on CPU {meta['load_cpu']} after a 1 s warm-up. "
                  f"Proxy CPU = the proxy's own CPU time / wall time during the measured run "
                  f"(≈100% means the proxy is the bottleneck). direct = wrk straight to the backend "
                  f"(sharing CPU {meta['load_cpu']} with it).\n")
        md.append("| path | req/s | p50 µs | p99 µs | proxy CPU | proxy CPU µs/request | errors (non-2xx + socket) |")
        md.append("|---|---:|---:|---:|---:|---:|---:|")
        med_b = {}
        for p in PATHS:
            if (sec, p) not in by:
                continue
            med_b[p] = {k: m(sec, p, k) for k in ("requests_per_s", "lat_p50_us", "lat_p99_us", "proxy_cpu_pct",
                                            "proxy_cpu_us_per_request")}
            med_b[p]["errors_total"] = tot(sec, p, "errors_total")
            med_b[p]["non_2xx_total"] = tot(sec, p, "non_2xx")
            x = med_b[p]
            md.append(f"| {p} | {fmt(x['requests_per_s'], 0)} | {fmt(x['lat_p50_us'], 0)} | "
                      f"{fmt(x['lat_p99_us'], 0)} | {fmt(x['proxy_cpu_pct'], 0)}{'%' if x['proxy_cpu_pct'] is not None else ''} | "
                      f"{fmt(x['proxy_cpu_us_per_request'], 1)} | {x['errors_total']} |")
        medians["b"] = med_b
        L, N, F = med_b.get("llmux"), med_b.get("nginx"), med_b.get("fastapi")
        md.append("")
        if L and N and L["requests_per_s"] and N["requests_per_s"]:
            r = L["requests_per_s"] / N["requests_per_s"]
            dp = L["lat_p99_us"] - N["lat_p99_us"]
            medians["b"]["llmux_over_nginx_rps"] = r
            medians["b"]["llmux_minus_nginx_p99_us"] = dp
            md.append(f"- Goal llmux req/s ≥ nginx: llmux/nginx = **{r:.3f}** — {goal(r >= 1.0)}.")
            md.append(f"- Goal llmux p99 ≤ nginx p99 + 50 µs: llmux − nginx = **{dp:+.0f} µs** — {goal(dp <= 50)}.")
        if L and F and L["requests_per_s"] and F["requests_per_s"]:
            r = L["requests_per_s"] / F["requests_per_s"]
            medians["b"]["llmux_over_fastapi_rps"] = r
            md.append(f"- Goal llmux ≥ 20× FastAPI: llmux/FastAPI = **{r:.1f}×** — {goal(r >= 20)}.")
        if L and N and L["requests_per_s"]:
            H = med_b.get("haproxy")
            if H and H["requests_per_s"]:
                medians["b"]["llmux_over_haproxy_rps"] = L["requests_per_s"] / H["requests_per_s"]
                md.append(f"- For reference llmux/HAProxy = {L['requests_per_s'] / H['requests_per_s']:.3f}.")
        md.append("")

    # (c)
    sec = "c"
    if any(k[0] == sec for k in by):
        md.append("## (c) Inter-token latency added at a high event rate\n")
        md.append(f"`llmux sim --preset none --t0 0.02 --m 0 --c 0 --ctx-cost 0 --prefill-rate 0 "
                  f"--max-num-seqs 4096` (a 20 ms step whatever the batch: 50 tok/s per stream), "
                  f"`llmux bench run --endpoint chat --concurrency {meta['itl_streams']} --num-requests "
                  f"{meta['itl_streams']} --output-len {meta['itl_tokens']} --ignore-eos` "
                  f"(≈{meta['itl_streams'] * 50:,} events/s through the proxy). The sim is on CPU "
                  f"{meta['load_cpu']}, the client on CPUs {meta['itl_client_cpu']} (sim and client on one "
                  f"core cannot sustain this event rate), so the client competes with the proxy for "
                  f"CPU {meta['proxy_cpu']}: a proxy's CPU cost per event shows up as latency. Added = "
                  f"the path's median minus direct's median; output tok/s below {meta['itl_streams'] * 50:,} "
                  f"means the path (or the machine) could not keep the pace.\n")
        md.append("| path | ITL p50 ms | ITL p99 ms | added p50 µs | added p99 µs | output tok/s | proxy CPU | proxy CPU µs/token | failed |")
        md.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        med_c = {}
        d50, d99 = m(sec, "direct", "itl_ms_p50"), m(sec, "direct", "itl_ms_p99")
        for p in PATHS:
            if (sec, p) not in by:
                continue
            x = {k: m(sec, p, k) for k in ("itl_ms_p50", "itl_ms_p99", "output_tok_s", "max_in_flight",
                                            "proxy_cpu_pct", "proxy_cpu_us_per_token")}
            x["failed_total"] = tot(sec, p, "failed")
            x["added_p50_us"] = (x["itl_ms_p50"] - d50) * 1e3 if x["itl_ms_p50"] is not None and d50 is not None else None
            x["added_p99_us"] = (x["itl_ms_p99"] - d99) * 1e3 if x["itl_ms_p99"] is not None and d99 is not None else None
            med_c[p] = x
            md.append(f"| {p} | {fmt(x['itl_ms_p50'], 3)} | {fmt(x['itl_ms_p99'], 3)} | "
                      f"{fmt(x['added_p50_us'], 0) if p != 'direct' else '–'} | "
                      f"{fmt(x['added_p99_us'], 0) if p != 'direct' else '–'} | {fmt(x['output_tok_s'], 0)} | "
                      f"{fmt(x['proxy_cpu_pct'], 0)}{'%' if x['proxy_cpu_pct'] is not None else ''} | "
                      f"{fmt(x['proxy_cpu_us_per_token'], 2)} | {x['failed_total']} |")
        medians["c"] = med_c
        md.append("")

    # (d)
    sec = "d"
    if any(k[0] == sec for k in by):
        md.append("## (d) Memory per held-open stream\n")
        md.append(f"`h2load --h1 -c {meta['mem_streams']} -n {meta['mem_streams']}` streaming "
                  f"completions (max_tokens 400, ignore_eos) against `llmux sim --preset none --t0 "
                  f"{meta['mem_t0']}` (one token per stream every {meta['mem_t0']} s, so every stream "
                  f"stays open and keeps flowing). A fresh proxy per measurement; idle RSS after one "
                  f"warm-up request; loaded RSS = the highest of 3 samples once the backend runs all "
                  f"{meta['mem_streams']} streams (nginx: master + worker). Per stream = (loaded − idle) "
                  f"/ streams the backend was running at the sample (all {meta['mem_streams']} unless noted). Backend drain = seconds from killing h2load until the backend runs no "
                  f"stream (the proxy aborted its upstream requests).\n")
        md.append("| proxy | idle RSS KiB | loaded RSS KiB | KiB per stream | streams reached backend | backend drain s | RSS after clients left KiB |")
        md.append("|---|---:|---:|---:|---:|---:|---:|")
        med_d = {}
        for p in PROXIES:
            if (sec, p) not in by:
                continue
            x = {k: m(sec, p, k) for k in ("idle_rss_kib", "loaded_rss_kib", "kib_per_stream",
                                            "backend_running", "drain_s", "after_rss_kib")}
            med_d[p] = x
            md.append(f"| {p} | {fmt(x['idle_rss_kib'], 0)} | {fmt(x['loaded_rss_kib'], 0)} | "
                      f"{fmt(x['kib_per_stream'], 2)} | {fmt(x['backend_running'], 0)} | "
                      f"{fmt(x['drain_s'], 1)} | {fmt(x['after_rss_kib'], 0)} |")
        md.append("")
        medians["d"] = med_d
        L, H = med_d.get("llmux"), med_d.get("haproxy")
        if L and H and L["kib_per_stream"] is not None and H["kib_per_stream"] is not None:
            md.append(f"\nGoal llmux ≤ HAProxy per stream: llmux {L['kib_per_stream']:.2f} KiB vs "
                      f"HAProxy {H['kib_per_stream']:.2f} KiB — {goal(L['kib_per_stream'] <= H['kib_per_stream'])}.\n")

    notes = meta.get("notes") or []
    if notes:
        md.append("## Sanity checks and anomalies\n")
        md.extend(f"- {n}" for n in notes)
        md.append("")
    md.append(f"Raw numbers (every round, every path): {os.path.basename(json_path)} next to this file.\n")
    open(md_path, "w").write("\n".join(md))
    json.dump({"meta": meta, "medians": medians, "measurements": rows}, open(json_path, "w"), indent=1)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "bench":
        print(json.dumps(bench(sys.argv[2])))
    elif cmd == "wrk":
        print(json.dumps(wrk(sys.argv[2])))
    elif cmd == "report":
        report(*sys.argv[2:6])
    else:
        sys.exit("unknown command " + cmd)
