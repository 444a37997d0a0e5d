#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""deploy/grafana/llmux-dashboard.json: valid JSON that Grafana imports (its Prometheus data
source an input, ${DS_PROMETHEUS}, on every panel and variable), panels laid out without
overlap, and every metric an expression names one that the gateway exports at GET /metrics
(histograms by their _bucket, _sum and _count series). The panels the issue asks for are there.

With SOURCE_DIR, each of those metrics must also be named in the gateway's source
(src/gateway/*.cpp, *.hpp), so a metric renamed there fails here.

Usage: grafana_dashboard_test.py DASHBOARD_JSON [SOURCE_DIR]
"""
import glob
import json
import os
import re
import sys

COUNTERS = {
    "llmux_requests_total", "llmux_request_retries_total", "llmux_backend_attempt_failures_total",
    "llmux_backend_ejections_total", "llmux_prompt_tokens_total",
    "llmux_cached_prompt_tokens_total", "llmux_generation_tokens_total",
}
GAUGES = {
    "llmux_backend_inflight_requests", "llmux_route_queued_requests", "llmux_backend_up",
    "llmux_backend_healthy", "llmux_backend_ejected", "llmux_backend_draining",
    "llmux_backend_reported_running_requests", "llmux_backend_reported_waiting_requests",
    "llmux_backend_reported_kv_cache_usage_ratio", "llmux_client_connections",
    "llmux_active_requests", "llmux_response_store_entries", "llmux_build_info",
}
HISTOGRAMS = {
    "llmux_time_to_first_token_seconds", "llmux_inter_token_latency_seconds",
    "llmux_request_duration_seconds", "llmux_gateway_request_overhead_seconds",
    "llmux_gateway_relay_overhead_seconds",
}
DS = "${DS_PROMETHEUS}"
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print(f"FAIL: {what}", file=sys.stderr)


def metric_of(name):
    """The exported metric a series name belongs to, or None."""
    if name in COUNTERS or name in GAUGES or name in HISTOGRAMS:
        return name
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and name[: -len(suffix)] in HISTOGRAMS:
            return name[: -len(suffix)]
    return None


def panels_of(dash):
    for p in dash["panels"]:
        yield p
        yield from p.get("panels", [])


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        dash = json.load(f)
    inputs = {i["name"]: i for i in dash.get("__inputs", [])}
    check(inputs.get("DS_PROMETHEUS", {}).get("pluginId") == "prometheus",
          "__inputs declares DS_PROMETHEUS, a Prometheus data source")
    check(isinstance(dash.get("title"), str) and dash.get("uid"), "title and uid")
    check(isinstance(dash.get("schemaVersion"), int), "schemaVersion")

    exprs = []  # (panel title, expr)
    ids = set()
    cells = {}
    for p in panels_of(dash):
        title = p.get("title", "?")
        check(p.get("id") not in ids, f"panel ids are unique: {title}")
        ids.add(p.get("id"))
        g = p["gridPos"]
        check(g["x"] >= 0 and g["w"] > 0 and g["x"] + g["w"] <= 24, f"{title}: within 24 columns")
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                check((x, y) not in cells, f"{title} overlaps {cells.get((x, y))}")
                cells[(x, y)] = title
        if p["type"] == "row":
            continue
        check(p.get("datasource", {}).get("uid") == DS, f"{title}: data source {DS}")
        check(p.get("targets"), f"{title}: has queries")
        for t in p.get("targets", []):
            check(t.get("datasource", {}).get("uid") == DS, f"{title}: query data source {DS}")
            exprs.append((title, t["expr"]))
    for v in dash["templating"]["list"]:
        check(v.get("datasource", {}).get("uid") == DS, f"variable {v['name']}: data source {DS}")
        exprs.append((f"variable {v['name']}", v["query"]["query"]))

    used = set()
    for title, expr in exprs:
        check(expr.count("(") == expr.count(")"), f"{title}: balanced parentheses: {expr}")
        check(expr.count("{") == expr.count("}"), f"{title}: balanced braces: {expr}")
        names = re.findall(r"\bllmux_[a-z0-9_]+", expr)
        check(names, f"{title}: names an llmux metric: {expr}")
        for n in names:
            m = metric_of(n)
            check(m is not None, f"{title}: '{n}' is not a metric the gateway exports")
            used.add(m)
            if m in HISTOGRAMS:
                check(n != m, f"{title}: a histogram is queried by its series, not '{n}'")
            if m in COUNTERS:
                check(re.search(r"(rate|increase)\(\s*" + n, expr),
                      f"{title}: counter {n} is read through rate() or increase()")
        if "histogram_quantile" in expr:
            check("_bucket" in expr and re.search(r"by \(le\b", expr),
                  f"{title}: quantiles sum buckets by le: {expr}")
    for m in sorted(COUNTERS | GAUGES | HISTOGRAMS):
        check(m in used, f"no panel shows {m}")

    if len(sys.argv) > 2:
        source = ""
        for path in glob.glob(os.path.join(sys.argv[2], "src", "gateway", "*.[ch]pp")):
            with open(path, encoding="utf-8") as f:
                source += f.read()
        for m in sorted(used):
            check(f'"{m}"' in source, f"{m} is not named in src/gateway (renamed or removed?)")

    titles = " | ".join(p.get("title", "") for p in panels_of(dash))
    for wanted in ("Generated tokens/s per backend", "Requests/s by status code", "Error ratio",
                   "In flight per backend", "Queued per route", "Time to first token p50 / p99",
                   "Inter-token latency p50 / p99", "Gateway overhead p50 / p99", "Backend up",
                   "KV cache usage"):
        check(wanted in titles, f"a panel '{wanted}'")
    quantiles = [e for _, e in exprs if "histogram_quantile(0.99" in e]
    check(len(quantiles) >= 4, "p99 panels use histogram_quantile(0.99, ...)")

    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed", file=sys.stderr)
        return 1
    print(f"dashboard: {len(ids)} panels, {len(exprs)} queries, {len(used)} metrics: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
