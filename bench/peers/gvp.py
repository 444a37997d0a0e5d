#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Helpers of bench/gateway_vs_peers.sh: parse one measurement into a JSON line, and turn all
the lines of a run into bench/results/gateway_vs_peers.{md,json}.

    gvp.py bench RUN_JSON [TOKENS]             -> JSON of a `llmux bench run --out` result
                                                  (TOKENS: the token events each stream should
                                                  carry; streams with fewer are counted short)
    gvp.py wrk WRK_OUTPUT                      -> JSON of a `wrk --latency` output
    gvp.py tail RECORDS LATREC_OUTPUT          -> JSON of section (e): bench/peers/gvp_tail.py
    gvp.py report LINES.jsonl META.json MD JSON
"""
import json
import os
import re
import statistics
import sys

import gvp_tail

PATHS = ["direct", "llmux", "llmux-bare", "llmux-logged", "llmux-base", "nginx", "haproxy", "fastapi"]
PROXIES = PATHS[1:]
# New vs baseline (--baseline): (section, key, what, lower is better, headline). Section "d" is
# reported for each stream count of the run ("d@2000", "d@5000").
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


def bench(path, tokens=None):
    d = json.load(open(path))
    (key, s), = d["summary"].items()
    lvl = d["levels"][0]

    def pct(name, p):
        v = s.get(name) or {}
        return v.get(p)

    # What the client received: every SSE event that carried tokens, per measured request (the
    # summary's output_tokens comes from the usage chunk, i.e. what the backend says it sent).
    reqs = [r for r in lvl.get("requests", []) if not r.get("warmup")]
    ev = [r.get("events") or [] for r in reqs]
    short = None
    if tokens:
        short = sum(1 for e in ev if sum(x[1] for x in e) < int(tokens))
    return {
        "events": sum(len(e) for e in ev), "event_tokens": sum(x[1] for e in ev for x in e),
        "streams_short": short,
        "requests": s["requests"], "ok": s["ok"], "failed": s["failed"], "errors": s["errors"],
        "wall_s": s["wall_s"], "output_tokens": s["output_tokens"],
        "output_tok_s": s["output_tok_s"], "requests_per_s": s["requests_per_s"],
        "max_in_flight": lvl.get("max_in_flight"),
        "decode_tok_s_p50": pct("decode_tok_s", "p50"), "decode_tok_s_mean": pct("decode_tok_s", "mean"),
        "ttft_ms_p50": pct("ttft_ms", "p50"), "ttft_ms_p99": pct("ttft_ms", "p99"),
        "itl_ms_p50": pct("itl_ms", "p50"), "itl_ms_p90": pct("itl_ms", "p90"),
        "itl_ms_p99": pct("itl_ms", "p99"), "itl_ms_mean": pct("itl_ms", "mean"),
        "itl_ms_max": pct("itl_ms", "max"), "tpot_ms_p50": pct("tpot_ms", "p50"),
        "e2e_ms_p50": pct("e2e_ms", "p50"), "e2e_ms_p99": pct("e2e_ms", "p99"),
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


def signed(v, nd=2):
    return "–" if v is None else f"{v:+,.{nd}f}"


def pair(a, b, nd=2, sign=False):
    f = (lambda v: signed(v, nd)) if sign else (lambda v: fmt(v, nd))
    return f"{f(a)} / {f(b)}"


def section_key(r):
    """Rows of (d) are grouped by stream count: "d@2000", "d@5000"."""
    return f"d@{r['streams']}" if r["section"] == "d" and r.get("streams") else r["section"]


def d_keys(by):
    return sorted({k[0] for k in by if k[0].startswith("d@")}, key=lambda k: int(k[2:]))


def per_round(by, sec, key, num, den):
    """num/den of KEY for each round in which both paths were measured."""
    a = {r["round"]: r.get(key) for r in by.get((sec, num), [])}
    out = []
    for r in sorted(by.get((sec, den), []), key=lambda r: r["round"]):
        n, b = a.get(r["round"]), r.get(key)
        if n is not None and b:
            out.append(n / b)
    return out


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
    metrics = []
    for sec, key, what, lower_better, headline in BASELINE_METRICS:
        if sec == "d":
            for dk in d_keys(by):
                metrics.append((dk, key, f"{what} at {int(dk[2:]):,} streams", lower_better, headline))
        else:
            metrics.append((sec, key, what, lower_better, headline))
    for sec, key, what, lower_better, headline in metrics:
        new = med([r.get(key) for r in by.get((sec, "llmux"), [])])
        base = med([r.get(key) for r in by.get((sec, "llmux-base"), [])])
        if new is None and base is None:
            continue
        ratio = new / base if new is not None and base else None
        rr = per_round(by, sec, key, "llmux", "llmux-base")
        x = {"new": new, "baseline": base, "ratio": ratio, "change_pct": (ratio - 1) * 100 if ratio else None,
             "per_round_ratios": rr, "per_round_ratio_median": med(rr),
             "per_round_ratio_max": max(rr) if rr else None, "lower_is_better": lower_better}
        out["metrics"][f"{sec}.{key}"] = x
        nd = {"proxy_cpu_us_per_request": 1, "kib_per_stream": 2, "proxy_cpu_us_per_token": 2,
              "itl_ms_p99": 3, "output_tok_s": 2}.get(key, 0)
        label = f"**{what}**" if headline else what
        change = f"{x['change_pct']:+.1f}%" if ratio else "–"
        rounds_txt = ", ".join(f"{v:.3f}" for v in rr) or "–"
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
            md.append(f"- **Memory per held-open stream at {int(sec[2:]):,} streams, new/baseline = "
                      f"{x['ratio']:.3f}** ({x['change_pct']:+.1f}%){spread}.")
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
        by.setdefault((section_key(r), r["path"]), []).append(r)

    def m(section, path, key):
        return med([r.get(key) for r in by.get((section, path), [])])

    def tot(section, path, key):
        return sum((r.get(key) or 0) for r in by.get((section, path), []))

    def ran(section):
        return any(k[0] == section for k in by)

    medians = {}
    goals = []   # the issue-13 goals: dicts for the table at the top and the JSON

    def add_goal(gid, what, target, ratio, ok, rounds=None, measured=None, verdict=None, note=None, missing=None):
        g = {"id": gid, "goal": what, "target": target, "ratio": ratio, "met": ok,
             "per_round_ratios": rounds or [], "note": note}
        if missing:
            g.update(met=None, note=missing)
        g["measured"] = measured if measured is not None else ("–" if ratio is None else f"{ratio:.3f}")
        g["verdict"] = "not measured" if missing else (verdict or goal(ok))
        goals.append(g)

    md = []
    md.append("# llmux gateway vs nginx, HAProxy and a FastAPI + httpx proxy\n")
    md.append(f"Run {meta['started']} on {meta['host']} ({meta['cpus']} CPUs, shared with other "
              f"engineers' builds and tests, so figures are noisy); {meta['rounds']} rounds, the "
              f"paths in a rotated order each round; every figure is the **median over rounds**. "
              f"Every proxy runs one worker (one thread), pinned to CPU {meta['proxy_cpu']}; load "
              f"generator and backend on CPU {meta['load_cpu']} (except where a section says). "
              f"llmux (binary {meta['llmux_sha256'][:12]}, built {meta['llmux_mtime']}): path `llmux` "
              f"= `gateway --threads 1 --access-log off` (metrics on, the default); `llmux-bare` = "
              f"the same from a YAML config with `metrics: {{enabled: false}}` and `access_log: off`; "
              f"`llmux-logged` = that config with metrics on and the access log written to a file. "
              f"{meta['versions']}.\n")
    md.append(f"Command: `{meta['command']}` ({meta['elapsed_s']:.0f} s)\n")
    goals_at = len(md)   # the goals table goes here, once every section is computed
    if any(p == "llmux-base" for _, p in by):
        medians["baseline"] = baseline_section(by, meta, md)

    # (a)
    sec = "a"
    if ran(sec):
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
        rr = per_round(by, sec, "output_tok_s", "llmux", "direct")
        if r:
            md.append(f"\nGoal serial tok/s llmux/direct ≥ 0.99: **{r:.4f}** — {goal(r >= 0.99)}.\n")
        add_goal("a.tok_s", "(a) serial streaming tok/s, llmux/direct", "≥ 0.99", r, r is not None and r >= 0.99,
                 rr, measured=None if r is None else f"{r:.4f}",
                 missing=None if r else "needs the paths llmux and direct in (a)")

    # (b)
    sec = "b"
    if ran(sec):
        md.append("## (b) Small non-streaming POSTs against a fixed fast backend\n")
        md.append(f"Backend: nginx (one worker, CPU {meta['load_cpu']}) answering a canned completion "
                  f"with `return 200`. `wrk -t1 -c{meta['wrk_connections']} -d{meta['wrk_duration']}s "
                  f"--latency -s bench/peers/post.lua` on CPU {meta['load_cpu']} after a 1 s warm-up. "
                  f"Proxy CPU = the proxy's own CPU time / wall time during the measured run "
                  f"(≈100% means the proxy is the bottleneck); proxy CPU µs/request = that CPU time / "
                  f"requests. direct = wrk straight to the backend (sharing CPU {meta['load_cpu']} with it).\n")
        md.append("| path | req/s | p50 µs | p99 µs | proxy CPU | proxy CPU µs/request | errors (non-2xx + socket) |")
        md.append("|---|---:|---:|---:|---:|---:|---:|")
        med_b = {}
        for p in PATHS:
            if (sec, p) not in by:
                continue
            med_b[p] = {k: m(sec, p, k) for k in ("requests_per_s", "lat_p50_us", "lat_p99_us", "proxy_cpu_pct",
                                                   "proxy_cpu_us_per_request", "access_log_lines",
                                                   "gateway_metrics_lines", "requests")}
            med_b[p]["errors_total"] = tot(sec, p, "errors_total")
            med_b[p]["non_2xx_total"] = tot(sec, p, "non_2xx")
            x = med_b[p]
            md.append(f"| {p} | {fmt(x['requests_per_s'], 0)} | {fmt(x['lat_p50_us'], 0)} | "
                      f"{fmt(x['lat_p99_us'], 0)} | {fmt(x['proxy_cpu_pct'], 0)}{'%' if x['proxy_cpu_pct'] is not None else ''} | "
                      f"{fmt(x['proxy_cpu_us_per_request'], 1)} | {x['errors_total']} |")
        medians["b"] = med_b
        L, N, F = med_b.get("llmux"), med_b.get("nginx"), med_b.get("fastapi")
        md.append("")
        key = "proxy_cpu_us_per_request"
        if L and N and L[key] and N[key]:
            r = L[key] / N[key]
            rr = per_round(by, sec, key, "llmux", "nginx")
            medians["b"]["llmux_over_nginx_cpu_per_request"] = r
            md.append(f"- Goal proxy CPU per request llmux/nginx ≤ 1.00 (stretch ≤ 0.85): **{r:.3f}** "
                      f"({L[key]:.1f} vs {N[key]:.1f} µs; per round {', '.join(f'{v:.3f}' for v in rr) or '–'}) — "
                      f"{goal(r <= 1.0)}; stretch {goal(r <= 0.85)}.")
            add_goal("b.cpu_per_request", "(b) proxy CPU µs per small request, llmux/nginx", "≤ 1.00 (stretch ≤ 0.85)",
                     r, r <= 1.0, rr, verdict=f"{goal(r <= 1.0)}; stretch {goal(r <= 0.85)}")
        else:
            add_goal("b.cpu_per_request", "(b) proxy CPU µs per small request, llmux/nginx", "≤ 1.00 (stretch ≤ 0.85)",
                     None, None, missing="needs the paths llmux and nginx in (b)")
        if L and N and L["lat_p99_us"] and N["lat_p99_us"]:
            r = L["lat_p99_us"] / N["lat_p99_us"]
            dp = L["lat_p99_us"] - N["lat_p99_us"]
            rr = per_round(by, sec, "lat_p99_us", "llmux", "nginx")
            medians["b"]["llmux_over_nginx_p99"] = r
            medians["b"]["llmux_minus_nginx_p99_us"] = dp
            md.append(f"- Goal llmux p99 ≤ nginx p99: llmux/nginx = **{r:.3f}** ({dp:+.0f} µs) — {goal(r <= 1.0)}.")
            add_goal("b.p99", "(b) p99 latency of small requests, llmux/nginx", "≤ 1.00", r, r <= 1.0, rr,
                     measured=f"{r:.3f} ({L['lat_p99_us']:,.0f} vs {N['lat_p99_us']:,.0f} µs)")
        else:
            add_goal("b.p99", "(b) p99 latency of small requests, llmux/nginx", "≤ 1.00", None, None,
                     missing="needs the paths llmux and nginx in (b)")
        B, G = med_b.get("llmux-bare"), med_b.get("llmux-logged")
        if B and G and B[key] and G[key]:
            r = G[key] / B[key]
            rr = per_round(by, sec, key, "llmux-logged", "llmux-bare")
            medians["b"]["logged_over_bare_cpu_per_request"] = r
            md.append(f"- Goal with access log and metrics on, CPU per request ≤ 1.10 × both off: "
                      f"llmux-logged/llmux-bare = **{r:.3f}** ({G[key]:.1f} vs {B[key]:.1f} µs; per round "
                      f"{', '.join(f'{v:.3f}' for v in rr) or '–'}) — {goal(r <= 1.10)}.")
            add_goal("b.logged_over_bare", "(b) proxy CPU µs per request with access log + metrics on, llmux-logged/llmux-bare",
                     "≤ 1.10", r, r <= 1.10, rr)
        else:
            add_goal("b.logged_over_bare", "(b) proxy CPU µs per request with access log + metrics on, llmux-logged/llmux-bare",
                     "≤ 1.10", None, None, missing="needs the paths llmux-bare and llmux-logged in (b)")
        if G and G.get("access_log_lines") is not None:
            md.append(f"- llmux-logged wrote {fmt(G['access_log_lines'], 0)} access-log lines per round "
                      f"(median; wrk's measured requests: {fmt(G['requests'], 0)}, plus the 1 s warm-up and "
                      f"the probe); GET /metrics gave {fmt(G['gateway_metrics_lines'], 0)} `llmux_` lines"
                      + (f", llmux-bare {fmt(B['gateway_metrics_lines'], 0)} (metrics off: the request "
                         f"goes to the backend)" if B and B.get("gateway_metrics_lines") is not None else "") + ".")
        if L and N and L["requests_per_s"] and N["requests_per_s"]:
            r = L["requests_per_s"] / N["requests_per_s"]
            medians["b"]["llmux_over_nginx_rps"] = r
            md.append(f"- For reference llmux/nginx req/s = {r:.3f}.")
        if L and F and L["requests_per_s"] and F["requests_per_s"]:
            r = L["requests_per_s"] / F["requests_per_s"]
            medians["b"]["llmux_over_fastapi_rps"] = r
            md.append(f"- Goal (issue 4) llmux ≥ 20× FastAPI req/s: llmux/FastAPI = **{r:.1f}×** — {goal(r >= 20)}.")
        H = med_b.get("haproxy")
        if L and H and L["requests_per_s"] and H["requests_per_s"]:
            medians["b"]["llmux_over_haproxy_rps"] = L["requests_per_s"] / H["requests_per_s"]
            md.append(f"- For reference llmux/HAProxy req/s = {L['requests_per_s'] / H['requests_per_s']:.3f}.")
        md.append("")
    else:
        for gid, what, target, need in (
                ("b.cpu_per_request", "(b) proxy CPU µs per small request, llmux/nginx", "≤ 1.00 (stretch ≤ 0.85)", "llmux, nginx"),
                ("b.p99", "(b) p99 latency of small requests, llmux/nginx", "≤ 1.00", "llmux, nginx"),
                ("b.logged_over_bare", "(b) proxy CPU µs per request with access log + metrics on, llmux-logged/llmux-bare", "≤ 1.10", "llmux-bare, llmux-logged")):
            add_goal(gid, what, target, None, None, missing=f"section (b) not run (paths {need})")

    # (c)
    sec = "c"
    if ran(sec):
        md.append("## (c) Latency added at a high event rate\n")
        md.append(f"`llmux sim --preset none --t0 0.02 --m 0 --c 0 --ctx-cost 0 --prefill-rate 0 "
                  f"--max-num-seqs 4096` (a 20 ms step whatever the batch: 50 tok/s per stream), "
                  f"`llmux bench run --endpoint chat --concurrency {meta['itl_streams']} --num-requests "
                  f"{meta['itl_streams']} --output-len {meta['itl_tokens']} --ignore-eos` "
                  f"(≈{meta['itl_streams'] * 50:,} events/s through the proxy). The sim is on CPU "
                  f"{meta['load_cpu']}, the client on CPUs {meta['itl_client_cpu']} (sim and client on one "
                  f"core cannot sustain this event rate), so the client competes with the proxy for "
                  f"CPU {meta['proxy_cpu']}: a proxy's CPU cost per event shows up as latency. Added = "
                  f"the path's median (over rounds) of a percentile minus direct's: for each SSE event "
                  f"in between (ITL, µs), for the first event (TTFT: request sent → first token, ms) "
                  f"and for the last (E2E: request sent → stream end, ms). Output tok/s below "
                  f"{meta['itl_streams'] * 50:,} means the path (or the machine) could not keep the pace.\n")
        md.append("| path | ITL p50 / p99 ms | ITL added p50 / p99 µs | first event (TTFT) p50 / p99 ms | "
                  "first event added p50 / p99 ms | last event (E2E) p50 / p99 ms | last event added p50 / p99 ms | "
                  "output tok/s | proxy CPU | proxy CPU µs/token | failed |")
        md.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        med_c = {}
        dref = {k: m(sec, "direct", k) for k in ("itl_ms_p50", "itl_ms_p99", "ttft_ms_p50", "ttft_ms_p99",
                                                  "e2e_ms_p50", "e2e_ms_p99")}

        def added(x, k, scale=1.0):
            return (x[k] - dref[k]) * scale if x[k] is not None and dref[k] is not None else None

        for p in PATHS:
            if (sec, p) not in by:
                continue
            x = {k: m(sec, p, k) for k in ("itl_ms_p50", "itl_ms_p99", "ttft_ms_p50", "ttft_ms_p99", "e2e_ms_p50",
                                            "e2e_ms_p99", "output_tok_s", "max_in_flight", "proxy_cpu_pct",
                                            "proxy_cpu_us_per_token")}
            x["failed_total"] = tot(sec, p, "failed")
            x["added_p50_us"] = added(x, "itl_ms_p50", 1e3)
            x["added_p99_us"] = added(x, "itl_ms_p99", 1e3)
            for k in ("ttft_ms_p50", "ttft_ms_p99", "e2e_ms_p50", "e2e_ms_p99"):
                x["added_" + k] = added(x, k)
            med_c[p] = x
            dash = p == "direct"
            md.append(f"| {p} | {pair(x['itl_ms_p50'], x['itl_ms_p99'], 3)} | "
                      f"{'–' if dash else pair(x['added_p50_us'], x['added_p99_us'], 0, True)} | "
                      f"{pair(x['ttft_ms_p50'], x['ttft_ms_p99'], 1)} | "
                      f"{'–' if dash else pair(x['added_ttft_ms_p50'], x['added_ttft_ms_p99'], 2, True)} | "
                      f"{pair(x['e2e_ms_p50'], x['e2e_ms_p99'], 1)} | "
                      f"{'–' if dash else pair(x['added_e2e_ms_p50'], x['added_e2e_ms_p99'], 2, True)} | "
                      f"{fmt(x['output_tok_s'], 0)} | "
                      f"{fmt(x['proxy_cpu_pct'], 0)}{'%' if x['proxy_cpu_pct'] is not None else ''} | "
                      f"{fmt(x['proxy_cpu_us_per_token'], 2)} | {x['failed_total']} |")
        medians["c"] = med_c
        md.append("")
        if ("c", "direct") not in by:
            md.append("No direct path in this run: nothing to subtract, the added columns are empty.\n")

    # (d)
    dks = d_keys(by)
    if dks:
        md.append("## (d) Memory per held-open stream\n")
        md.append(f"Client: `llmux bench run --endpoint completions --concurrency N --num-requests N "
                  f"--input-len 4 --output-len {meta['mem_tokens']} --ignore-eos` (CPUs "
                  f"{meta.get('mem_client_cpu', '?')}: this section measures memory, not CPU) against "
                  f"`llmux sim --preset none --t0 {meta['mem_t0']} --m 0 --c 0` (CPU {meta['load_cpu']}: "
                  f"one token per stream every {meta['mem_t0']} s, so every stream stays open "
                  f"{meta['mem_tokens'] * meta['mem_t0']:g} s and keeps flowing). A fresh proxy per "
                  f"measurement; idle RSS after one warm-up request; loaded RSS = the highest of 3 "
                  f"samples 2 s after the backend runs all N streams (nginx: master + worker). Per stream "
                  f"= (loaded − idle) / streams the backend was running at the sample (all N unless noted). "
                  f"Ramp = seconds from the client's start until the backend ran all N. Then every stream "
                  f"runs to its end: events = the token-carrying SSE events the client received (run.json), "
                  f"summed over rounds, against N × {meta['mem_tokens']} per round; every event delivered = "
                  f"no failed stream, every event received and the usage counts agree. fd limit "
                  f"{meta.get('fd_limit', '?')} per process; HAProxy maxconn {meta.get('haproxy_maxconn', '?')}, "
                  f"nginx worker_connections 16384.\n")
        med_d = {}
        for dk in dks:
            n = int(dk[2:])
            md.append(f"### {n:,} held-open streams\n")
            md.append("| proxy | idle RSS KiB | loaded RSS KiB | KiB per stream | streams at sample | ramp s | "
                      "events delivered / expected | failed streams | every event delivered | RSS after KiB |")
            md.append("|---|---:|---:|---:|---:|---:|---:|---:|---|---:|")
            med_n = {}
            for p in PROXIES:
                rs = by.get((dk, p))
                if not rs:
                    continue
                x = {k: m(dk, p, k) for k in ("idle_rss_kib", "loaded_rss_kib", "kib_per_stream", "backend_running",
                                               "backend_running_at_sample", "ramp_s", "after_rss_kib")}
                x["events_delivered"] = tot(dk, p, "events_delivered")
                x["events_expected"] = tot(dk, p, "events_expected")
                x["failed_total"] = tot(dk, p, "failed")
                x["rounds_all_delivered"] = sum(1 for r in rs if r.get("all_events_delivered"))
                x["rounds"] = len(rs)
                x["all_events_delivered"] = x["rounds_all_delivered"] == len(rs)
                med_n[p] = x
                md.append(f"| {p} | {fmt(x['idle_rss_kib'], 0)} | {fmt(x['loaded_rss_kib'], 0)} | "
                          f"{fmt(x['kib_per_stream'], 2)} | {fmt(x['backend_running_at_sample'], 0)} | "
                          f"{fmt(x['ramp_s'], 2)} | {x['events_delivered']:,} / {x['events_expected']:,} | "
                          f"{x['failed_total']} | {'yes' if x['all_events_delivered'] else 'NO'} "
                          f"({x['rounds_all_delivered']}/{len(rs)} rounds) | {fmt(x['after_rss_kib'], 0)} |")
            md.append("")
            Lx, Hx = med_n.get("llmux"), med_n.get("haproxy")
            what = f"(d) KiB per held-open stream at {n:,} streams, llmux/HAProxy, every event delivered"
            if Lx and Hx and Lx["kib_per_stream"] is not None and Hx["kib_per_stream"]:
                r = Lx["kib_per_stream"] / Hx["kib_per_stream"]
                rr = per_round(by, dk, "kib_per_stream", "llmux", "haproxy")
                ok = r <= 1.0 and Lx["all_events_delivered"]
                extra = []
                if not Lx["all_events_delivered"]:
                    extra.append(f"llmux delivered {Lx['events_delivered']:,} of {Lx['events_expected']:,} events")
                if not Hx["all_events_delivered"]:
                    extra.append(f"HAProxy delivered {Hx['events_delivered']:,} of {Hx['events_expected']:,} events "
                                 f"(its figure is suspect)")
                med_n["llmux_over_haproxy"] = r
                md.append(f"Goal llmux/HAProxy ≤ 1.00 per stream at {n:,} streams, every event delivered: "
                          f"**{r:.3f}** ({Lx['kib_per_stream']:.2f} vs {Hx['kib_per_stream']:.2f} KiB"
                          f"{'; ' + '; '.join(extra) if extra else ''}) — {goal(ok)}.\n")
                add_goal(f"d.kib_per_stream@{n}", what, "≤ 1.00, all events", r, ok, rr,
                         measured=f"{r:.3f} ({Lx['kib_per_stream']:.2f} vs {Hx['kib_per_stream']:.2f} KiB; events "
                                  f"llmux {Lx['events_delivered']:,}/{Lx['events_expected']:,}, HAProxy "
                                  f"{Hx['events_delivered']:,}/{Hx['events_expected']:,})",
                         note="; ".join(extra) or None)
            else:
                add_goal(f"d.kib_per_stream@{n}", what, "≤ 1.00, all events", None, None,
                         missing="needs the paths llmux and haproxy in (d)")
            Nx = med_n.get("nginx")
            if Lx and Nx and Lx["kib_per_stream"] is not None and Nx["kib_per_stream"]:
                med_n["llmux_over_nginx"] = Lx["kib_per_stream"] / Nx["kib_per_stream"]
                md.append(f"For reference llmux/nginx per stream at {n:,} = {med_n['llmux_over_nginx']:.3f}.\n")
            med_d[str(n)] = med_n
        medians["d"] = med_d
    else:
        for n in meta.get("mem_streams") or []:
            add_goal(f"d.kib_per_stream@{n}", f"(d) KiB per held-open stream at {n:,} streams, llmux/HAProxy, "
                     f"every event delivered", "≤ 1.00, all events", None, None, missing="section (d) not run")
    if not ran("a"):
        add_goal("a.tok_s", "(a) serial streaming tok/s, llmux/direct", "≥ 0.99", None, None,
                 missing="section (a) not run (paths llmux, direct)")

    # (e)
    if ran("e"):
        medians["e"] = gvp_tail.report_section(by, meta, md, m, PATHS, fmt, per_round)

    # the goals of issue 13, at the top
    order = ["b.cpu_per_request", "b.p99"] + sorted((g["id"] for g in goals if g["id"].startswith("d.")),
                                                    key=lambda i: int(i.split("@")[1])) + \
        ["b.logged_over_bare", "a.tok_s"]
    goals.sort(key=lambda g: order.index(g["id"]) if g["id"] in order else len(order))
    gmd = ["## Goals (issue 13), as ratios of this run\n",
           "| goal | measured (ratio of medians) | target | per round | verdict |", "|---|---|---|---|---|"]
    for g in goals:
        rr = ", ".join(f"{v:.3f}" for v in g["per_round_ratios"]) or "–"
        gmd.append(f"| {g['goal']} | {g['measured']} | {g['target']} | {rr} | {g['verdict']}"
                   f"{' — ' + g['note'] if g['note'] and g['met'] is None else ''} |")
    gmd.append("")
    if meta["rounds"] < 3:
        gmd.append(f"Only {meta['rounds']} round(s): a smoke test of the plumbing, not a verdict (use 3 or more).\n")
    md[goals_at:goals_at] = gmd
    medians["goals"] = goals

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
        print(json.dumps(bench(*sys.argv[2:4])))
    elif cmd == "wrk":
        print(json.dumps(wrk(sys.argv[2])))
    elif cmd == "tail":
        print(json.dumps(gvp_tail.analyse(sys.argv[2], sys.argv[3])))
    elif cmd == "report":
        report(*sys.argv[2:6])
    else:
        sys.exit("unknown command " + cmd)
