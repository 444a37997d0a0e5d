#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# The report of bench/disagg_bench.sh.
#   extract: after each case, its figures (run.json's `mix`, the chats' stalls from every
#            token's time, the gateway's access log, the sims' transfer counters) -> case.json
#   pick:    the unified policy, from the two trial cases
#   report:  every case.json -> OUT/disagg_bench.md and OUT/disagg_bench.json
# The bench measures wall-clock time; every figure reported is simulated (model) time: latencies
# times the time scale, rates divided by it.
import argparse
import glob
import json
import math
import os
import re

STALL_S = 1.0  # a chat gap at least this long (simulated) is a stall a reader notices


def percentile(values, p):
    """Linear interpolation between closest ranks (numpy's default), as llmux bench."""
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * p / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def gaps(events):
    """A request's inter-token gaps (ns): a chunk of k tokens counts k gaps of g/k, as llmux
    bench's ITL; the first event is the first token."""
    out = []
    for (t0, _), (t1, k) in zip(events, events[1:]):
        k = max(k, 1)
        out.extend([(t1 - t0) / k] * k)
    return out


def prom(text, name):
    """Sum of a Prometheus sample `name` over its label sets."""
    total, found = 0.0, False
    for line in text.splitlines():
        m = re.match(re.escape(name) + r'(\{[^}]*\})? ([0-9.eE+-]+|NaN)$', line)
        if m:
            total += float(m.group(2))
            found = True
    return total if found else None


def extract(args):
    d = args.dir
    with open(os.path.join(d, "run", "run.json")) as f:
        doc = json.load(f)
    scale = args.time_scale
    # The chats' stalls from each measured request's token times.
    per_class = {}
    for level in doc["levels"]:
        for r in level["requests"]:
            if r.get("warmup") or r.get("error") != "none" or not r.get("events"):
                continue
            g = gaps(r["events"])
            c = per_class.setdefault(r.get("group") or "", {"gaps": [], "n": 0, "stalled": 0})
            c["gaps"].extend(g)
            c["n"] += 1
            if g and max(g) / 1e9 * scale >= STALL_S:
                c["stalled"] += 1
    stalls = {name: {"requests": c["n"], "stalled": c["stalled"],
                     "itl_p999_s": (percentile(c["gaps"], 99.9) or 0) / 1e9}
              for name, c in per_class.items()}
    # Where the gateway sent the requests.
    legs = {"requests": 0, "disaggregated": 0, "unified_fallback": 0, "failed": 0}
    log = os.path.join(d, "access.log")
    if os.path.exists(log):
        with open(log) as f:
            for line in f:
                if not line.strip():
                    continue
                rec = json.loads(line)
                legs["requests"] += 1
                pb = rec.get("prefill_backend")
                if pb == "unified":
                    legs["unified_fallback"] += 1
                elif pb:
                    legs["disaggregated"] += 1
                if rec.get("status") != 200:
                    legs["failed"] += 1
    # The sims' own counters: transfers (model seconds) and failures.
    sims = {}
    for path in sorted(glob.glob(os.path.join(d, "metrics-*.txt"))):
        name = os.path.basename(path)[len("metrics-"):-len(".txt")]
        with open(path) as f:
            text = f.read()
        sims[name] = {
            "transfers": prom(text, "vllm:nixl_xfer_time_seconds_count"),
            "transfer_seconds": prom(text, "vllm:nixl_xfer_time_seconds_sum"),
            "transfer_bytes": prom(text, "vllm:nixl_bytes_transferred_sum"),
            "failed_transfers": prom(text, "vllm:nixl_num_failed_transfers_total"),
            "expired": prom(text, "vllm:nixl_num_kv_expired_reqs_total"),
        }
        err = os.path.join(d, f"sim-{name}.err")
        if os.path.exists(err):
            with open(err) as f:
                for line in f:
                    m = re.search(r'"msg":"(KV transfer: [^"]*)"', line)
                    if m:
                        sims[name]["log"] = m.group(1)
    # The sims' own clock: each token's engine deadline (token_sched_ns) is model time, free of
    # the wall clock's scheduling noise; token_ns - token_sched_ns is that noise (how late the
    # token left the simulator). The chats' ITL in model time, matched to the bench's measured
    # requests by X-Request-Id (a disaggregated request's decode leg: more than one token).
    measured = {r["request_id"]: r.get("group") or ""
                for level in doc["levels"] for r in level["requests"]
                if not r.get("warmup") and r.get("error") == "none"}
    late, model = [], {}
    for path in sorted(glob.glob(os.path.join(d, "debug-*.json"))):
        try:
            with open(path) as f:
                records = json.load(f)["data"]
        except (OSError, ValueError, KeyError):
            continue
        for rec in records:
            sent, sched = rec.get("token_ns") or [], rec.get("token_sched_ns") or []
            late.extend(a - b for a, b in zip(sent, sched))
            group = measured.get(rec.get("request_id"))
            if group is None or len(sched) < 2:
                continue
            m = model.setdefault(group, {"gaps": [], "n": 0, "stalled": 0})
            g = [b - a for a, b in zip(sched, sched[1:])]
            m["gaps"].extend(g)
            m["n"] += 1
            if max(g) / 1e9 * scale >= STALL_S:
                m["stalled"] += 1
    clock = {
        "lateness_p50_s": (percentile(late, 50) or 0) / 1e9,
        "lateness_p99_s": (percentile(late, 99) or 0) / 1e9,
        "lateness_max_s": (max(late) if late else 0) / 1e9,
        "classes": {name: {"requests": m["n"], "stalled": m["stalled"],
                           "itl_p50_s": percentile(m["gaps"], 50) / 1e9,
                           "itl_p99_s": percentile(m["gaps"], 99) / 1e9,
                           "itl_max_s": max(m["gaps"]) / 1e9}
                    for name, m in model.items() if m["gaps"]},
    }
    workload, config, gbps, variant = args.case.split("/")
    out = {"case": args.case, "workload": workload,
           "config": "unified" if config.startswith("unified") else config,
           "gbps": int(gbps) or None, "variant": variant, "policy": args.policy,
           "sim_args": args.sim_args, "time_scale": scale,
           "mix": doc["mix"], "stalls": stalls, "sim_clock": clock, "gateway": legs,
           "sims": sims}
    with open(os.path.join(d, "case.json"), "w") as f:
        json.dump(out, f, indent=1)


def load_cases(tmp):
    cases = {}
    for path in glob.glob(os.path.join(tmp, "cases", "*", "case.json")):
        with open(path) as f:
            c = json.load(f)
        cases[c["case"]] = c
    return cases


def cls(case, name):
    for c in case["mix"]["classes"]:
        if c["name"] == name:
            return c
    return None


def pick(args):
    """The unified policy: the lower chat TTFT p99 on the agent mix (both policies see the same
    decode stalls, the ITL in the sims' clock; what differs is where a new chat lands while one
    machine is in a long prefill); within 5%, the higher output tok/s."""
    cases = load_cases(args.tmp)
    trial = [cases[k] for k in ("agents/unified-least_inflight/0/base",
                                "agents/unified-prefix_aware/0/base") if k in cases]
    if len(trial) != 2:
        raise SystemExit("the trial cases did not run: give --policy")
    a, b = trial
    pa, pb = cls(a, "chat")["ttft_p99_s"], cls(b, "chat")["ttft_p99_s"]
    if abs(pa - pb) <= 0.05 * min(pa, pb):
        best = a if a["mix"]["all"]["output_tok_s"] >= b["mix"]["all"]["output_tok_s"] else b
    else:
        best = a if pa < pb else b
    print(best["policy"])


# --- report -------------------------------------------------------------------------------

def figures(case):
    """The case's simulated figures (seconds, tok/s) that the tables and the answer use."""
    s = case["time_scale"]
    chat, agent, total = cls(case, "chat"), cls(case, "agent"), case["mix"]["all"]
    ck = case["sim_clock"]["classes"].get("chat", {})
    f = {
        # the bench's (client's) view, run.json's `mix`
        "chat_itl_p50": chat["itl_p50_s"] * s, "chat_itl_p99": chat["itl_p99_s"] * s,
        "chat_itl_max": chat["itl_max_s"] * s,
        "chat_ttft_p50": chat["ttft_p50_s"] * s, "chat_ttft_p99": chat["ttft_p99_s"] * s,
        "chat_e2e_p50": chat["e2e_p50_s"] * s, "chat_e2e_p99": chat["e2e_p99_s"] * s,
        "chat_tok_s": chat["output_tok_s"] / s, "tok_s": total["output_tok_s"] / s,
        "chat_ok": chat["ok"],
        "failed": sum(c["failed"] for c in case["mix"]["classes"]),
        # the sims' clock: the same chats' gaps between engine deadlines, no wall-clock noise
        "sim_chat_itl_p99": ck.get("itl_p99_s", 0) * s,
        "sim_chat_itl_max": ck.get("itl_max_s", 0) * s,
        "chat_stalled": ck.get("stalled", 0) / max(ck.get("requests", 0), 1),
        # how late tokens left the sims (wall-clock scheduling noise, in simulated time)
        "sim_lateness_p99": case["sim_clock"]["lateness_p99_s"] * s,
        "sim_lateness_max": case["sim_clock"]["lateness_max_s"] * s,
    }
    if agent:
        f.update(agent_ttft_p50=agent["ttft_p50_s"] * s, agent_ttft_p99=agent["ttft_p99_s"] * s,
                 agent_e2e_p50=agent["e2e_p50_s"] * s, agent_tok_s=agent["output_tok_s"] / s,
                 agent_ok=agent["ok"])
    consumers = [v for v in case["sims"].values() if v.get("transfers")]
    n = sum(v["transfers"] for v in consumers)
    f["transfers"] = int(n)
    f["transfer_ms_mean"] = (sum(v["transfer_seconds"] for v in consumers) / n * 1e3) if n else None
    f["transfer_mb_mean"] = (sum(v["transfer_bytes"] for v in consumers) / n / 1e6) if n else None
    return f


def fmt_ms(x):
    return "-" if x is None else f"{x * 1e3:,.0f}"


def fmt_s(x):
    return "-" if x is None else f"{x:,.1f}"


def pct(x):
    return f"{x * 100:.0f}%"


CONFIG_NAME = {"unified": "unified", "pd": "1 prefill + 1 decode", "auto": "auto"}
WORKLOADS = ["agents", "light", "chat"]
WORKLOAD_NAME = {
    "agents": "Agent mix: 4 agents + 16 chats (`--workload agent-mix`)",
    "light": "Light agent share: 2 agents + 16 chats",
    "chat": "Chat only: 16 chats",
}
VARIANT_NAME = {
    "base": "base: overlapped, state x1, efficiency 0.8",
    "overlap_off": "the transfer blocks the consumer's step",
    "state_x4": "recurrent state x4",
    "eff_0.5": "link efficiency 0.5",
    "eff_0.9": "link efficiency 0.9",
    "worst": "all three: blocking, state x4, efficiency 0.5",
}


def label(case):
    if case["config"] == "unified":
        return f"unified ({case['policy']})"
    return f"{CONFIG_NAME[case['config']]}, {case['gbps']} Gb/s"


def row(f, agents, base_tok_s, first):
    cells = [fmt_ms(f["sim_chat_itl_p99"]), fmt_ms(f["sim_chat_itl_max"]), pct(f["chat_stalled"]),
             fmt_ms(f["chat_itl_p50"]), fmt_ms(f["chat_itl_p99"]), fmt_ms(f["chat_itl_max"]),
             fmt_ms(f["chat_ttft_p50"]), fmt_ms(f["chat_ttft_p99"])]
    if agents:
        cells += [fmt_s(f["agent_ttft_p50"]), fmt_s(f["agent_ttft_p99"])]
    cells += [f"{f['tok_s']:,.0f}", f"{f['tok_s'] / base_tok_s:.2f}x"]
    return [first] + cells


HEAD = ["Chat ITL p99, sims' clock (ms)", "Chat ITL max, sims' clock (ms)", "Chats stalled >= 1 s",
        "Chat ITL p50 (ms)", "Chat ITL p99 (ms)", "Chat ITL max (ms)", "Chat TTFT p50 (ms)",
        "Chat TTFT p99 (ms)"]
AGENT_HEAD = ["Agent TTFT p50 (s)", "Agent TTFT p99 (s)"]


def table(head, rows, left=1):
    out = ["| " + " | ".join(head) + " |",
           "|" + "|".join(["---"] * left + ["---:"] * (len(head) - left)) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def main_table(cases, w, unified):
    rows = [unified] + [cases.get(f"{w}/{c}/{g}/base") for c in ("pd", "auto")
                        for g in (25, 100, 200)]
    rows = [r for r in rows if r]
    agents = w != "chat"
    base = figures(unified)["tok_s"]
    head = ["Configuration"] + HEAD + (AGENT_HEAD if agents else []) + [
        "Output tok/s", "vs unified", "Transfers (mean ms, MB)"]
    out = []
    for r in rows:
        f = figures(r)
        xfer = "-" if not f["transfers"] else (
            f"{f['transfers']} ({f['transfer_ms_mean']:,.0f} ms, {f['transfer_mb_mean']:,.0f} MB)")
        out.append(row(f, agents, base, label(r)) + [xfer])
    return table(head, out)


def sens_table(cases, gbps, unified):
    head = ["Configuration", "Assumption"] + HEAD + AGENT_HEAD + [
        "Output tok/s", "vs unified", "Transfer mean (ms)"]
    base = figures(unified)["tok_s"]
    out = [row(figures(unified), True, base, label(unified)) + ["-"]]
    out[0].insert(1, "(no transfer)")
    for c in ("pd", "auto"):
        for v in VARIANT_NAME:
            r = cases.get(f"agents/{c}/{gbps}/{v}")
            if not r:
                continue
            f = figures(r)
            line = row(f, True, base, f"{CONFIG_NAME[c]}, {gbps} Gb/s")
            line.insert(1, VARIANT_NAME[v])
            out.append(line + [fmt_ms((f["transfer_ms_mean"] or 0) / 1e3)])
    return table(head, out, left=2)


def preset_params(root, preset):
    """The preset's engine figures as src/sim/config.cpp sets them (the assumptions' source)."""
    path = os.path.join(root, "src", "sim", "config.cpp")
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return {}
    start = text.find(f'name == "{preset}"')
    if start < 0:
        return {}
    end = text.find("} else if", start + 1)
    block = text[start:end if end > 0 else len(text)]
    out = {}
    for key in ("t0", "batch_exp", "ctx_cost", "prefill_rate", "prefill_overhead", "max_num_seqs",
                "max_num_batched_tokens", "gpu_memory_utilization", "kv_bytes_per_token",
                "api_server_seconds"):
        m = re.search(r"\b" + key + r"\s*=\s*([0-9.e+-]+)", block)
        if m:
            out[key] = float(m.group(1))
    return out


def span(fs, key, fmt):
    """`fmt` of the smallest and largest `key` over the figures `fs` ("a-b", or one value)."""
    lo, hi = fmt(min(x[key] for x in fs)), fmt(max(x[key] for x in fs))
    return lo if lo == hi else f"{lo}-{hi}"


def spread(values, fmt):
    """"a-b" of the smallest and largest of `values` in `fmt` (one value when they agree)."""
    lo, hi = fmt.format(min(values)), fmt.format(max(values))
    return lo if lo == hi else f"{lo}-{hi}"


def fmt_tok(x):
    return f"{x:,.0f}"


def pays(fu, fd):
    """Whether a disaggregated case pays against unified: the chats' decode stalls at least
    halve (the longest, or the share of chats frozen), and neither their time to first token
    (p99 within 10%) nor the output (within 5%) gets worse."""
    better_stall = (fd["sim_chat_itl_max"] <= 0.5 * fu["sim_chat_itl_max"] or
                    fd["chat_stalled"] <= 0.5 * fu["chat_stalled"] and fu["chat_stalled"] > 0)
    return (better_stall and fd["chat_ttft_p99"] <= 1.1 * fu["chat_ttft_p99"]
            and fd["tok_s"] >= 0.95 * fu["tok_s"])


def disagg_figures(cases, w, config):
    return [figures(cases[k]) for k in (f"{w}/{config}/{g}/base" for g in (25, 100, 200))
            if k in cases]


def answer(cases, unified_of, gbps):
    """The answer, every figure from this run; the wording follows the figures."""
    out, verdicts = [], {}
    for w in WORKLOADS:
        u = unified_of(w)
        pds, autos = disagg_figures(cases, w, "pd"), disagg_figures(cases, w, "auto")
        if not u or not pds:
            continue
        fu = figures(u)
        verdicts[w] = {"pd": [pays(fu, x) for x in pds], "auto": [pays(fu, x) for x in autos]}
        ratio = lambda fs: span(fs, "tok_s", lambda x: f"{x / fu['tok_s']:.2f}x")
        text = f"**{WORKLOAD_NAME[w]}.** "
        stall = fu["chat_stalled"] > 0
        if stall:
            text += (f"Unified, the agents' prefills freeze the chats decoding on the same "
                     f"machine: {pct(fu['chat_stalled'])} of the chat answers stop for "
                     f"{STALL_S:g} s or more, for up to {fmt_s(fu['sim_chat_itl_max'])} s "
                     "(chat ITL "
                     f"p99 {fmt_ms(fu['sim_chat_itl_p99'])} ms, in the sims' clock). ")
        else:
            text += (f"Unified, nothing freezes the chats (ITL max "
                     f"{fmt_ms(fu['sim_chat_itl_max'])} ms, p99 {fmt_ms(fu['sim_chat_itl_p99'])} "
                     "ms, in the sims' clock). ")
        freezes_gone = stall and max(x["chat_stalled"] for x in pds) == 0
        text += ("1 prefill + 1 decode, at any of the three bandwidths, "
                 + ("removes the freezes" if freezes_gone else
                    "changes the freezes" if stall else "makes decoding steadier")
                 + f" (stalled chats {span(pds, 'chat_stalled', pct)}, chat ITL max "
                 f"{span(pds, 'sim_chat_itl_max', fmt_ms)} ms, p99 "
                 f"{span(pds, 'sim_chat_itl_p99', fmt_ms)} ms); the chats' first token comes "
                 + ("later" if min(x["chat_ttft_p50"] for x in pds) > fu["chat_ttft_p50"]
                    else "no later")
                 + f": TTFT p50 {fmt_ms(fu['chat_ttft_p50'])} -> "
                 f"{span(pds, 'chat_ttft_p50', fmt_ms)} ms, p99 {fmt_ms(fu['chat_ttft_p99'])} -> "
                 f"{span(pds, 'chat_ttft_p99', fmt_ms)} ms (every chat's prefill runs on the one "
                 "prefill machine"
                 + (", queued behind the agents' long ones" if w != "chat" else "")
                 + ", and each request passes two API servers and the link); the fleet's output "
                 f"is {ratio(pds)} of unified ({fmt_tok(fu['tok_s'])} -> "
                 f"{span(pds, 'tok_s', fmt_tok)} tok/s): one machine decodes every stream while "
                 "the other only prefills. ")
        if autos and not any(x["transfers"] for x in autos):
            text += ("`auto` never disaggregates here (no prompt above the threshold) and serves "
                     f"as unified does: output {ratio(autos)} of unified, chat TTFT p99 "
                     f"{span(autos, 'chat_ttft_p99', fmt_ms)} ms.")
        elif autos:
            moved = sum(x["transfers"] for x in autos)
            text += (f"`auto` moves only the prompts above the threshold ({moved} transfers over "
                     f"its {len(autos)} case{'s' if len(autos) > 1 else ''}), and the chats still "
                     "decode beside the agents' prefills: stalled chats "
                     f"{span(autos, 'chat_stalled', pct)}, chat ITL max "
                     f"{span(autos, 'sim_chat_itl_max', fmt_ms)} ms, chat TTFT p99 "
                     f"{span(autos, 'chat_ttft_p99', fmt_ms)} ms, output {ratio(autos)} of "
                     "unified. ")
        out += [text, ""]
    # The link: what a transfer costs against what it replaces.
    pd_ag = {g: cases.get(f"agents/pd/{g}/base") for g in (25, 200)}
    auto_ag = {g: cases.get(f"agents/auto/{g}/base") for g in (25, 200)}
    if all(pd_ag.values()) and all(auto_ag.values()):
        fp = {g: figures(c) for g, c in pd_ag.items()}
        fa = {g: figures(c) for g, c in auto_ag.items()}
        out += [f"**The link hardly matters.** A transfer takes {fmt_s(fp[25]['transfer_ms_mean'])}"
                f" ms on average at 25 Gb/s and {fmt_s(fp[200]['transfer_ms_mean'])} ms at 200 "
                f"Gb/s in 1 prefill + 1 decode ({fmt_tok(fp[25]['transfer_mb_mean'])} MB, mostly "
                "a chat's recurrent state), and an agent's prompt "
                f"{fmt_tok(fa[25]['transfer_ms_mean'])} / "
                f"{fmt_tok(fa[200]['transfer_ms_mean'])} ms "
                f"({fmt_tok(fa[25]['transfer_mb_mean'])} MB, in `auto`), where its prefill takes "
                "seconds; since the transfer overlaps the other streams' decode, only the request "
                "itself waits for it.", ""]
        sens = {v: cases.get(f"agents/pd/{gbps}/{v}") for v in ("overlap_off", "worst")}
        base = cases.get(f"agents/pd/{gbps}/base")
        if base and all(sens.values()):
            fb, fo, fw = figures(base), figures(sens["overlap_off"]), figures(sens["worst"])
            out[-2] += (f" What would change it (sensitivity, {gbps} Gb/s): a transfer that blocks "
                        "the decode step instead of overlapping it takes the chats' ITL p99 from "
                        f"{fmt_ms(fb['sim_chat_itl_p99'])} to {fmt_ms(fo['sim_chat_itl_p99'])} ms "
                        f"(max {fmt_ms(fo['sim_chat_itl_max'])} ms); blocking with 4x the "
                        "recurrent state at half the line rate, to "
                        f"{fmt_ms(fw['sim_chat_itl_p99'])} ms with {pct(fw['chat_stalled'])} of "
                        f"the chats frozen {STALL_S:g} s or more (max "
                        f"{fmt_s(fw['sim_chat_itl_max'])} s) and the output at "
                        f"{fw['tok_s'] / figures(unified_of('agents'))['tok_s']:.2f}x of "
                        "unified.")
            alone = [cases.get(f"agents/pd/{gbps}/{v}") for v in ("state_x4", "eff_0.5",
                                                                  "eff_0.9")]
            if all(alone) and all(abs(figures(c)["sim_chat_itl_p99"] - fb["sim_chat_itl_p99"])
                                  <= 0.1 * fb["sim_chat_itl_p99"] for c in alone):
                out[-2] += (" Link efficiency and state size alone, with the transfer overlapped, "
                            "leave the chats' decoding as it was (ITL p99 "
                            + span([figures(c) for c in alone], "sim_chat_itl_p99", fmt_ms)
                            + " ms).")
    return out, verdicts


def recommendation(cases, unified_of, verdicts):
    head = ["Workload mix", "Recommended", "Chats frozen >= 1 s: unified / 1P+1D",
            "Chat TTFT p50, p99 (ms): unified / 1P+1D", "Output tok/s: unified / 1P+1D / auto",
            "Only if no chat may freeze"]
    rows = []
    for w in WORKLOADS:
        u = unified_of(w)
        pd, auto = cases.get(f"{w}/pd/200/base"), cases.get(f"{w}/auto/200/base")
        if not u or not pd or w not in verdicts:
            continue
        fu, fp = figures(u), figures(pd)
        fa = figures(auto) if auto else None
        v = verdicts[w]
        if all(v["pd"]):
            rec = "1 prefill + 1 decode"
        elif v["auto"] and all(v["auto"]):
            rec = "auto"
        else:
            rec = f"unified, `{u['policy']}`"
        only = ("-" if fu["chat_stalled"] == 0 else
                f"1P+1D: {pct(fp['chat_stalled'])} frozen, at {fp['tok_s'] / fu['tok_s']:.2f}x "
                "the output")
        rows.append([WORKLOAD_NAME[w].split(":")[0] + ":" + WORKLOAD_NAME[w].split(":")[1]
                     .split("(")[0].rstrip(), rec,
                     f"{pct(fu['chat_stalled'])} / {pct(fp['chat_stalled'])}",
                     f"{fmt_ms(fu['chat_ttft_p50'])}, {fmt_ms(fu['chat_ttft_p99'])} / "
                     f"{fmt_ms(fp['chat_ttft_p50'])}, {fmt_ms(fp['chat_ttft_p99'])}",
                     f"{fmt_tok(fu['tok_s'])} / {fmt_tok(fp['tok_s'])} / "
                     + (fmt_tok(fa["tok_s"]) if fa else "-"), only])
    return table(head, rows, left=2)


def main_report(args):
    cases = load_cases(args.tmp)
    policy = None
    for k, c in cases.items():
        if c["config"] != "unified" or "/unified-" not in k:
            policy = c["policy"]
    trial = {p: cases.get(f"agents/unified-{p}/0/base") for p in ("least_inflight", "prefix_aware")}
    scale = args.time_scale
    gbps = int(args.sens_gbps)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    params = preset_params(root, args.preset)
    result = {
        "simulated": True,
        "settings": {"command": args.cmdline, "git_head": args.git_head, "preset": args.preset,
                     "preset_params": params, "time_scale": scale,
                     "duration_wall_s": args.duration, "warmup_wall_s": args.warmup,
                     "duration_sim_s": args.duration * scale, "warmup_sim_s": args.warmup * scale,
                     "threshold_tokens": args.threshold, "sensitivity_gbps": gbps,
                     "state_bytes": args.state_bytes, "kv_bytes_per_token": args.kv_bytes_per_token,
                     "unified_policy": policy, "elapsed_s": args.elapsed,
                     "stall_threshold_sim_s": STALL_S},
        "units": "`figures`: simulated seconds and tok/s; `mix`, `stalls`, `sim_clock`: "
                 "wall-clock seconds as measured (times time_scale: simulated)",
        "cases": {k: dict(v, figures=figures(v)) for k, v in sorted(cases.items())},
    }
    with open(os.path.join(args.out, "disagg_bench.json"), "w") as f:
        json.dump(result, f, indent=1)

    def unified_of(w):
        return cases.get(f"{w}/unified/0/base") or cases.get(f"{w}/unified-{policy}/0/base")

    md = ["# Prefill/decode disaggregation on two DGX Sparks (issue 40): simulated", ""]
    md += [f"**Simulated.** Two `llmux sim --preset {args.preset}` processes stand for the two "
           "Sparks, `llmux gateway` in front of them and `llmux bench run` as the clients, all on "
           "loopback on one machine; no GPU ran. Every figure is simulated (model) time: the "
           f"bench's wall-clock latencies times the time scale ({scale:g}), its token rates "
           "divided by it.", "",
           f"`{args.cmdline.strip()}` at {args.git_head}: {args.elapsed:.0f} s of wall clock, "
           f"{len(cases)} cases. Each case: fresh simulators and gateway, {args.duration:g} s of "
           f"load ({args.duration * scale:g} s simulated), the first {args.warmup:g} s "
           f"({args.warmup * scale:g} s simulated) warm-up, excluded; then the closed loops' last "
           "requests finish.", ""]
    paragraphs, verdicts = answer(cases, unified_of, gbps)
    any_pays = [(w, c) for w, v in verdicts.items() for c in ("pd", "auto") if v[c] and all(v[c])]
    md += ["## The answer", ""]
    if any_pays:
        md += ["**Does prefill/decode disaggregation pay on two Sparks? For "
               + ", ".join(f"{WORKLOAD_NAME[w].split(':')[0].lower()} with "
                           f"{CONFIG_NAME[c]}" for w, c in any_pays)
               + "** (simulated; at every bandwidth: its chats freeze less, wait no longer for "
               "their first token and the output holds).", ""]
    else:
        def against_unified(config, key):
            return [figures(cases[k])[key] / figures(unified_of(k.split("/")[0]))[key]
                    for k in cases if k.split("/")[0] in verdicts and k.endswith("/base")
                    and k.split("/")[1] == config]
        tok_pd, tok_auto = against_unified("pd", "tok_s"), against_unified("auto", "tok_s")
        ttft50 = against_unified("pd", "chat_ttft_p50")
        ttft99 = against_unified("pd", "chat_ttft_p99")
        md += ["**Does prefill/decode disaggregation pay on two Sparks for these workloads? No** "
               "(simulated): for none of the three mixes, at none of 25, 100 and 200 Gb/s, does "
               "it cut the chats' decode stalls without costing them time to first token or the "
               "fleet its output. What 1 prefill + 1 decode buys is steady decoding"
               + (", no chat frozen behind an agent's prefill" if max(
                   x["chat_stalled"] for w in verdicts for x in disagg_figures(cases, w, "pd")) == 0
                  else "") + "; what it costs is the chats' first token (TTFT "
               f"p50 {spread(ttft50, '{:.1f}x')}, p99 {spread(ttft99, '{:.1f}x')} unified's) and "
               f"{spread([(1 - x) * 100 for x in tok_pd], '{:.0f}%')} of the output. It is worth "
               "it only where no chat may freeze mid-answer and that price is acceptable (the "
               "last column below). `auto` leaves the freezes where they were, the output at "
               f"{spread(tok_auto, '{:.2f}x')} of unified's.", ""]
    md += paragraphs + [""]
    md += ["### Recommendation by workload mix", ""]
    md += recommendation(cases, unified_of, verdicts) + [""]
    md += ["A configuration is recommended over unified when, at 25, 100 and 200 Gb/s alike, "
           "the chats' freezes at least halve (the longest, or the share of chats frozen; sims' "
           "clock), their TTFT p99 is at most 10% longer and the output at most 5% lower. Not "
           "measured here, and what could change the answer: more than two machines (one "
           "prefill machine feeding several decode machines, or 2+2), a prefill machine that "
           "takes short prompts before long ones (vLLM schedules first come, first served), "
           "agents whose history is served from the prefix cache (each turn's uncached part, "
           "what `auto` measures, is then short), and a unified policy that keeps new chats off "
           "a machine in a long prefill.", ""]
    kv_mb = args.kv_bytes_per_token / 1e3
    state_mb = args.state_bytes / 1e6
    md += ["## Setup and assumptions", ""]
    p = params
    md += [
        f"- **The machines**: the preset `{args.preset}` (src/sim/config.cpp, fitted by "
        "bench/fit_preset.py to inference-atlas's vLLM sweeps of Qwen3.6-35B-A3B-FP8 on one "
        "Spark; docs/sim.md, Calibration): prefill "
        f"{p.get('prefill_rate', float('nan')):,.0f} prompt tok/s, a decode step of "
        f"{p.get('t0', float('nan')) * 1e3:.1f} ms x B^{p.get('batch_exp', float('nan')):g} for B "
        f"sequences, at most {p.get('max_num_seqs', 0):.0f} sequences and "
        f"{p.get('max_num_batched_tokens', 0):,.0f} tokens per step (chunked prefill: a long "
        "prompt's chunk and every running stream's next token share a step, so the step lasts "
        "as long as the chunk's prefill)"
        + (f", {p['api_server_seconds'] * 1e3:.0f} ms of API server before each request reaches "
           "the engine (each leg of a disaggregated request pays it)"
           if p.get("api_server_seconds") else "") + ".",
        "- **What crosses the link** (the sims' defaults, docs/sim.md): "
        f"{args.kv_bytes_per_token:,.0f}"
        f" bytes of KV per prompt token ({kv_mb:.2f} kB: the 10 full-attention layers only; the "
        f"30 Gated DeltaNet layers keep no per-token KV) plus a fixed {state_mb:.1f} MB of "
        "recurrent state per request; transfer time = bytes x 8 / (Gb/s x efficiency), one "
        "transfer at a time on the link. Base assumptions: **efficiency 0.8** of the line rate "
        "(assumed, not measured), the transfer **overlaps** the consumer's decode (NIXL reads "
        "are asynchronous: the request waits, the other streams go on), the state **x1**. The "
        f"sensitivity table varies each at {gbps} Gb/s, where the transfer costs most.",
        "- **The protocol**: the gateway's two legs as vLLM's reference proxy sends them "
        "(docs/config.md, `disaggregation`): a one-token prefill leg (`max_tokens: 1`, not "
        "streamed) on the prefill backend, then the decode leg with its `kv_transfer_params` on "
        "the decode backend, which loads the KV instead of prefilling (the last prompt token "
        "recomputed) and streams the answer. The sims: `--kv-role producer`/`consumer` (pd), "
        "`both` (auto), `none` (unified). Not charged to disaggregation here: vLLM serves this "
        "hybrid model disaggregated only since PR #41869, without async scheduling and prefix "
        "caching (docs/sim.md); the link's latency and NIXL's handshake.",
        f"- **Configurations**: *unified*: both backends role both, no disaggregation, policy "
        f"`{policy}`; *1 prefill + 1 decode*: spark1 role prefill, spark2 role decode, "
        f"`disaggregation: {{mode: always}}`; *auto*: both role both, `{{mode: auto, "
        f"threshold_tokens: {args.threshold:.0f}}}`: a prompt above the threshold prefills on "
        "the backend with the fewest prompt tokens in prefill and decodes on the other, the "
        f"rest is served unified by `{policy}`.",
        "- **Workloads**: closed loops of streaming chat (`llmux bench run --ignore-eos`), every "
        "length drawn uniformly between its bounds; agents 5,000-60,000 prompt tokens, "
        "200-2,000 out; chats 100-500 in, 50-300 out. Every prompt is distinct: nothing is "
        "served from a prefix cache, so every agent turn is a cold prefill of its whole "
        "history — the worst case for unified serving (a real agent that replays its history "
        "finds most of it cached on the machine that served its last turn).",
        "- **Columns**: *sims' clock* figures are the chats' inter-token gaps between the "
        "engine deadlines that produced the tokens (each sim's `/debug/requests`, matched to the "
        f"bench's measured requests by X-Request-Id): the model's own answer, no wall-clock "
        f"noise. *Chats stalled >= 1 s*: the share of the measured chat answers with a gap of "
        f"{STALL_S:g} s or more there. The other ITL, TTFT and tok/s columns are the bench's "
        "(run.json's `mix`, the client's clock): they include the noise of 5 processes "
        f"on 2 shared cores, magnified {scale:g}x by the time scale (see Checks). Output tok/s: "
        "every class's output tokens over the run's window.", ""]
    for w in WORKLOADS:
        u = unified_of(w)
        if u:
            md += [f"## {WORKLOAD_NAME[w]}", ""] + main_table(cases, w, u) + [""]
    u = unified_of("agents")
    if u and any(k.startswith(f"agents/pd/{gbps}/") and not k.endswith("/base") for k in cases):
        md += [f"## Sensitivity: agent mix, {gbps} Gb/s", ""]
        md += sens_table(cases, gbps, u) + [""]
    if all(trial.values()):
        md += ["## Which policy serves unified", ""]
        rows = []
        for name, c in trial.items():
            f = figures(c)
            rows.append(row(f, True, figures(trial["least_inflight"])["tok_s"], name))
        md += table(["Policy"] + HEAD + AGENT_HEAD + ["Output tok/s", "vs least_inflight"], rows)
        md += ["", f"Used for every unified case and for the short prompts of `auto`: "
               f"**{policy}**, the lower chat TTFT p99 (within 5%: the higher output tok/s). "
               "Both see the same decode stalls (the sims' clock); they differ in where a new "
               "chat lands while one machine is in a long prefill: least_inflight sends it to the "
               "machine with fewer requests in flight (the stalled one's do not finish), "
               "prefix_aware, seeing no cached prefix, spreads new prompts evenly among the "
               "backends within 4 requests of the least loaded.", ""]
    failures = [(k, figures(v)["failed"]) for k, v in sorted(cases.items())
                if figures(v)["failed"]]
    fallbacks = [(k, v["gateway"]["unified_fallback"]) for k, v in sorted(cases.items())
                 if v["gateway"]["unified_fallback"]]
    expired = [(k, sum(s.get("expired") or 0 for s in v["sims"].values()))
               for k, v in sorted(cases.items())]
    expired = [(k, n) for k, n in expired if n]
    late = sorted(((figures(v)["sim_lateness_p99"], figures(v)["sim_lateness_max"], k)
                   for k, v in cases.items()), reverse=True)
    chats = [figures(v)["chat_ok"] for v in cases.values()]
    agents = [figures(v)["agent_ok"] for v in cases.values() if "agent_ok" in figures(v)]
    md += ["## Checks", "",
           "- Failed requests: " + (", ".join(f"{k}: {n}" for k, n in failures) or "none")
           + ". Prefills that failed and were served unified: "
           + (", ".join(f"{k}: {n}" for k, n in fallbacks) or "none") + ". Expired handles: "
           + (", ".join(f"{k}: {n:.0f}" for k, n in expired) or "none") + ".",
           "- Wall-clock noise, how late tokens left the simulators after their engine deadline "
           f"(simulated ms): p99 {fmt_ms(min(x[0] for x in late))}-{fmt_ms(late[0][0])} over the "
           f"cases (worst: {late[0][2]}), max up to {fmt_ms(max(x[1] for x in late))}. The "
           "bench's ITL p99 and max include it; the sims' clock columns do not.",
           f"- Measured requests per case: chats {min(chats)}-{max(chats)}, agents "
           f"{min(agents)}-{max(agents)} (the agents' TTFT p99 is about their slowest one; the "
           "chats' TTFT p99 under 1 prefill + 1 decode moves with how many agents' prefills "
           "happen to queue together, so compare its cases as a range).", ""]
    md += ["Source: `bench/disagg_bench.sh` and `bench/disagg_bench.py`; every case's figures "
           "(run.json's `mix`, the sims' clock, transfers, the gateway's legs) in "
           "`disagg_bench.json`.", ""]
    text = "\n".join(md)
    with open(os.path.join(args.out, "disagg_bench.md"), "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("extract")
    for name in ["dir", "case", "policy", "sim-args"]:
        e.add_argument("--" + name, required=True)
    e.add_argument("--time-scale", type=float, required=True)
    p = sub.add_parser("pick")
    p.add_argument("--tmp", required=True)
    r = sub.add_parser("report")
    for name in ["tmp", "out", "cmdline", "preset", "git-head"]:
        r.add_argument("--" + name, required=True)
    for name in ["duration", "warmup", "time-scale", "elapsed", "threshold", "sens-gbps",
                 "state-bytes", "kv-bytes-per-token"]:
        r.add_argument("--" + name, type=float, required=True)
    args = ap.parse_args()
    {"extract": extract, "pick": pick, "report": main_report}[args.cmd](args)


if __name__ == "__main__":
    main()
