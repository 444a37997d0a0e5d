# SPDX-License-Identifier: Apache-2.0
"""Section (e) of bench/gateway_vs_peers.sh: where the latency tail of (b)'s small POSTs comes
from, from every request latrec recorded (bench/peers/latrec.cpp).

A closed loop of C connections against a saturated proxy gives every request about the same
latency (C / throughput); its tail is made of requests that waited longer than the rest. Two
kinds, told apart by the record of every request:
- bursts: at least C/2 requests at or above the path's p99, overlapping in time, i.e. the whole
  path slowed down or stood still at once (the proxy, backend or load generator descheduled or
  sharing its core, or a pause in the proxy);
- the rest: single requests, or a few, served out of turn.
The p99 outside bursts is the p99 of the requests that overlap no burst. Periodic work in the
proxy (llmux's worker ticks every 50 ms and sweeps pools and trims its block cache every 200 ms)
would show as a peak of the autocorrelation of the mean latency per millisecond at that lag over
the lags 10 ms either side ("excess").
"""
import bisect
import json
import struct


def _pct(sorted_xs, q):
    return sorted_xs[min(len(sorted_xs) - 1, int(q / 100 * len(sorted_xs)))]


def analyse(bin_path, summary_path):
    summary = json.loads(open(summary_path).read().strip().splitlines()[-1])
    conns = summary["connections"]
    recs = list(struct.iter_unpack("<QQII", open(bin_path, "rb").read()))
    if not recs:
        raise SystemExit("no records in " + bin_path)
    lat = sorted(r[1] for r in recs)
    p50, p99 = _pct(lat, 50), _pct(lat, 99)
    # episodes: tail requests whose [sent, answered] overlap, merged
    episodes = []   # [start, end, members]
    for s, l in sorted((r[0], r[1]) for r in recs if r[1] >= p99):
        if episodes and s <= episodes[-1][1]:
            episodes[-1][1] = max(episodes[-1][1], s + l)
            episodes[-1][2] += 1
        else:
            episodes.append([s, s + l, 1])
    bursts = [e for e in episodes if e[2] >= conns / 2]
    starts = [e[0] for e in bursts]

    def in_burst(s, l):   # does [s, s+l] overlap a burst? (bursts are disjoint and sorted)
        i = bisect.bisect_right(starts, s + l) - 1
        return i >= 0 and bursts[i][1] >= s

    outside = sorted(r[1] for r in recs if not in_burst(r[0], r[1]))
    tail = [r for r in recs if r[1] >= p99]
    # periodicity: mean latency of the requests sent in each millisecond
    ms = int(max(r[0] for r in recs) // 1_000_000) + 1
    tot, cnt = [0.0] * ms, [0] * ms
    for s, l, _, _ in recs:
        b = int(s // 1_000_000)
        tot[b] += l
        cnt[b] += 1
    series, last = [], p50
    for b in range(ms):
        last = tot[b] / cnt[b] if cnt[b] else last
        series.append(last)
    mean = sum(series) / ms
    var = sum((x - mean) ** 2 for x in series) / ms or 1.0

    def ac(k):
        return sum((series[i] - mean) * (series[i + k] - mean) for i in range(ms - k)) / (ms - k) / var

    periodicity = {f"periodicity_excess_{lag}": round(ac(lag) - (ac(lag - 10) + ac(lag + 10)) / 2, 3)
                   for lag in (50, 100, 200) if lag + 10 < ms // 2}
    us = 1e-3
    return {
        "requests": len(recs), "requests_per_s": len(recs) / summary["seconds"],
        "not_2xx": summary["not_2xx"], "reconnects": summary["reconnects"], "connections": conns,
        "lat_p50_us": p50 * us, "lat_p90_us": _pct(lat, 90) * us, "lat_p99_us": p99 * us,
        "lat_p999_us": _pct(lat, 99.9) * us, "lat_max_us": lat[-1] * us,
        "bursts": len(bursts), "burst_requests": sum(e[2] for e in bursts),
        "burst_ms": sum(e[1] - e[0] for e in bursts) / 1e6,
        "p99_tail_in_bursts_share": sum(1 for r in tail if in_burst(r[0], r[1])) / len(tail),
        "lat_p99_outside_bursts_us": _pct(outside, 99) * us if outside else None,
        "requests_outside_bursts": len(outside),
        **periodicity,
    }


def report_section(by, meta, md, m, paths, fmt, per_round):
    """Appends section (e) to md; returns its medians."""
    sec = "e"
    md.append("## (e) Where the tail of (b) comes from\n")
    md.append(f"The load of (b) again (closed loop, {meta['wrk_connections']} keep-alive connections, the same "
              f"POST, {meta['wrk_duration']} s after a 1 s warm-up, CPU {meta['load_cpu']}) from "
              f"`bench/peers/latrec.cpp`, which records every request. A **burst** = requests at or above "
              f"the path's own p99 overlapping in time, at least half the connections of them (the whole "
              f"path slowed down or stood still at once); **tail in bursts** = the share of the requests "
              f"at or above the p99 that overlap a burst; **p99 outside bursts** = the p99 of the "
              f"requests that overlap none; **proxy preempted** = the proxy's involuntary context "
              f"switches during warm-up and run (another task took its core). **periodic 50/200 ms** = the autocorrelation "
              f"of the mean latency per millisecond at that lag minus its mean at the lags 10 ms either "
              f"side: llmux's worker ticks every 50 ms and sweeps its pools and trims its block cache "
              f"every 200 ms; work there that delayed requests would show as a clear positive excess. "
              f"direct = no proxy: what the machine alone does.\n")
    md.append("| path | req/s | p50 µs | p90 µs | p99 µs | p99.9 µs | proxy CPU | proxy preempted | bursts | "
              "burst ms | tail in bursts | p99 outside bursts µs | periodic 50 ms | periodic 200 ms |")
    md.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    med_e = {}
    for p in paths:
        if (sec, p) not in by:
            continue
        keys = ("requests_per_s", "lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_p999_us", "proxy_cpu_pct",
                "proxy_preempted", "bursts", "burst_ms", "p99_tail_in_bursts_share", "lat_p99_outside_bursts_us",
                "periodicity_excess_50", "periodicity_excess_200")
        x = {k: m(sec, p, k) for k in keys}
        med_e[p] = x
        share = x["p99_tail_in_bursts_share"]
        md.append(f"| {p} | {fmt(x['requests_per_s'], 0)} | {fmt(x['lat_p50_us'], 0)} | {fmt(x['lat_p90_us'], 0)} | "
                  f"{fmt(x['lat_p99_us'], 0)} | {fmt(x['lat_p999_us'], 0)} | "
                  f"{fmt(x['proxy_cpu_pct'], 0)}{'%' if x['proxy_cpu_pct'] is not None else ''} | "
                  f"{fmt(x['proxy_preempted'], 0)} | {fmt(x['bursts'], 0)} | {fmt(x['burst_ms'], 1)} | "
                  f"{'–' if share is None else f'{100 * share:.0f}%'} | {fmt(x['lat_p99_outside_bursts_us'], 0)} | "
                  f"{fmt(x['periodicity_excess_50'], 3)} | {fmt(x['periodicity_excess_200'], 3)} |")
    md.append("")
    L, N = med_e.get("llmux"), med_e.get("nginx")
    if L and N and L["lat_p99_us"] and N["lat_p99_us"]:
        rr = per_round(by, sec, "lat_p99_us", "llmux", "nginx")
        ro = per_round(by, sec, "lat_p99_outside_bursts_us", "llmux", "nginx")
        line = (f"- p99 llmux/nginx in this section: **{L['lat_p99_us'] / N['lat_p99_us']:.3f}** "
                f"(per round {', '.join(f'{v:.3f}' for v in rr) or '–'})")
        if L["lat_p99_outside_bursts_us"] and N["lat_p99_outside_bursts_us"]:
            line += (f"; outside bursts **{L['lat_p99_outside_bursts_us'] / N['lat_p99_outside_bursts_us']:.3f}** "
                     f"(per round {', '.join(f'{v:.3f}' for v in ro) or '–'})")
        md.append(line + ". Medians over rounds; each figure is the path's own, so the ratios pair "
                  "the medians, the per-round ratios the runs of one round.\n")
    return med_e
