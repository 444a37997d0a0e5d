#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Helper of bench/replicas_bench.sh (issue 15): the load clients and the report.

  replicas_bench.py conv --ports P1,P2,P3 --users 32 --turns 20 --out F [--sticky] ...
      USERS conversations of TURNS non-streaming /v1/responses turns each, every turn after the
      first naming the previous turn's id (previous_response_id). Each turn goes to a replica
      drawn at random (--sticky: user i always to replica i mod n). --stagger S spreads the
      users' first turns evenly over S seconds; --think T waits T seconds between a user's
      turns. One JSON line per turn in F (appended): user, turn, replica port, status, backend
      (X-Llmux-Backend), request id, start/end (Unix seconds), the error message of a non-200.
  replicas_bench.py quota --ports P1,P2,P3 --rate 2000 --duration 180 --key K --out F
      Open loop: --rate requests per minute (evenly spaced, each to a replica drawn at random)
      of a tiny chat completion with `Authorization: Bearer K`, for --duration seconds. One JSON
      line per request: sent, status, Retry-After.
  replicas_bench.py report --dir D --meta F --out-md F --out-json F
      Reads what replicas_bench.sh wrote in D and writes the Markdown table and the JSON.

The client is plain asyncio (HTTP/1.1, kept-alive connections per replica, Content-Length or
chunked bodies): no packages beyond Python's own. Every request is bounded by --timeout.
"""
import argparse
import asyncio
import json
import random
import statistics
import time
import uuid

MODEL = "Qwen3.6-35B-A3B"


# ------------------------------------------------------------------------------------------
# a small HTTP/1.1 client
# ------------------------------------------------------------------------------------------
class Conn:
    def __init__(self, reader, writer):
        self.r, self.w = reader, writer

    async def request(self, method, path, headers, body):
        head = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        if body is not None:
            head += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
        self.w.write(("\r\n".join(head) + "\r\n\r\n").encode() + (body or b""))
        await self.w.drain()
        line = await self.r.readline()
        if not line:
            raise ConnectionError("closed before an answer")
        status = int(line.split()[1])
        hdrs = {}
        while True:
            line = await self.r.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            k, _, v = line.decode("latin-1").partition(":")
            hdrs[k.strip().lower()] = v.strip()
        if "content-length" in hdrs:
            data = await self.r.readexactly(int(hdrs["content-length"]))
        elif hdrs.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int((await self.r.readline()).split(b";")[0], 16)
                if size == 0:
                    while (await self.r.readline()) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                parts.append(await self.r.readexactly(size))
                await self.r.readline()
            data = b"".join(parts)
        else:
            data = await self.r.read()
            hdrs["connection"] = "close"
        return status, hdrs, data

    def close(self):
        self.w.close()


class Pool:
    """Kept-alive connections to one replica."""

    def __init__(self, port):
        self.port, self.idle = port, []

    async def request(self, method, path, headers, body, timeout):
        conn = self.idle.pop() if self.idle else None
        fresh = conn is None
        if fresh:
            conn = Conn(*await asyncio.wait_for(
                asyncio.open_connection("127.0.0.1", self.port), timeout))
        try:
            res = await asyncio.wait_for(conn.request(method, path, headers, body), timeout)
        except (ConnectionError, asyncio.IncompleteReadError, ValueError, IndexError):
            conn.close()
            if fresh:
                raise
            # A kept-alive connection the server closed meanwhile: once more on a new one.
            return await self.request(method, path, headers, body, timeout)
        except BaseException:
            conn.close()
            raise
        if res[1].get("connection", "").lower() == "close":
            conn.close()
        else:
            self.idle.append(conn)
        return res


def message_of(data):
    try:
        return json.loads(data)["error"]["message"][:200]
    except (ValueError, KeyError, TypeError):
        return data[:200].decode("utf-8", "replace")


# ------------------------------------------------------------------------------------------
# conversations
# ------------------------------------------------------------------------------------------
async def conversations(a):
    ports = [int(p) for p in a.ports.split(",")]
    pools = {p: Pool(p) for p in ports}
    rng = random.Random(a.seed)
    out = open(a.out, "a")
    headers = {"Authorization": f"Bearer {a.key}"} if a.key else {}
    t0 = time.time()

    async def user(i):
        await asyncio.sleep(a.stagger * i / max(1, a.users))
        prev = ""
        for turn in range(a.turns):
            port = ports[i % len(ports)] if a.sticky else rng.choice(ports)
            body = {"model": MODEL, "max_output_tokens": a.max_output_tokens,
                    "input": (f"user {a.tag}-{i}: tell me a story about the number {i}"
                              if turn == 0 else f"turn {turn}: go on")}
            if prev:
                body["previous_response_id"] = prev
            rid = f"{a.tag}-u{i}-t{turn}-{uuid.uuid4().hex[:8]}"
            rec = dict(set=a.tag, user=i, turn=turn, port=port, request_id=rid,
                       start=time.time(), prev=prev)
            try:
                status, hdrs, data = await pools[port].request(
                    "POST", "/v1/responses", dict(headers, **{"X-Request-Id": rid}),
                    json.dumps(body).encode(), a.timeout)
                rec.update(status=status, backend=hdrs.get("x-llmux-backend", ""))
                if status == 200:
                    prev = json.loads(data)["id"]
                else:
                    rec["message"] = message_of(data)
            except Exception as e:  # noqa: BLE001 -- every failure is a record
                rec.update(status=0, backend="", message=f"{type(e).__name__}: {e}")
            rec["end"] = time.time()
            out.write(json.dumps(rec) + "\n")
            if rec["status"] != 200:
                return  # the conversation cannot go on without its id
            if a.think:
                await asyncio.sleep(a.think)
            if time.time() - t0 > a.max_seconds:
                return

    await asyncio.gather(*(user(i) for i in range(a.users)))
    out.close()


# ------------------------------------------------------------------------------------------
# a key driven above its quota
# ------------------------------------------------------------------------------------------
async def quota(a):
    ports = [int(p) for p in a.ports.split(",")]
    pools = {p: Pool(p) for p in ports}
    rng = random.Random(a.seed)
    body = json.dumps({"model": MODEL, "max_tokens": 1,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    headers = {"Authorization": f"Bearer {a.key}"}
    out = open(a.out, "w")
    interval = 60.0 / a.rate
    t0 = time.monotonic()
    wall0 = time.time()
    tasks = set()

    async def one(port, sent):
        rec = dict(sent=sent, port=port)
        try:
            status, hdrs, data = await pools[port].request("POST", "/v1/chat/completions",
                                                           headers, body, a.timeout)
            rec.update(status=status, retry_after=hdrs.get("retry-after"))
            if status not in (200, 429):
                rec["message"] = message_of(data)
        except Exception as e:  # noqa: BLE001
            rec.update(status=0, message=f"{type(e).__name__}: {e}")
        rec["end"] = time.time()
        out.write(json.dumps(rec) + "\n")

    n = 0
    while True:
        due = t0 + n * interval
        if due - t0 >= a.duration:
            break
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        t = asyncio.create_task(one(rng.choice(ports), wall0 + n * interval))
        tasks.add(t)
        t.add_done_callback(tasks.discard)
        n += 1
    if tasks:
        await asyncio.wait(tasks, timeout=a.timeout + 5)
    out.close()


# ------------------------------------------------------------------------------------------
# report
# ------------------------------------------------------------------------------------------
def read_jsonl(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def pct(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def access_records(d, names):
    recs = {}
    for n in names:
        for r in read_jsonl(f"{d}/{n}.access.log"):
            if r.get("request_id"):
                recs[r["request_id"]] = r
    return recs


def conv_summary(turns, access):
    by_backend = {}
    for t in turns:
        if t["status"] == 200:
            by_backend[t["backend"]] = by_backend.get(t["backend"], 0) + 1
    ok = sum(by_backend.values())
    aff = {}
    for t in turns:
        a = access.get(t["request_id"], {}).get("affinity") if t["prev"] else None
        if a is not None:
            aff[a] = aff.get(a, 0) + 1
    failed = [t for t in turns if t["status"] != 200]
    not_found = [t for t in failed if t["status"] == 404]
    return dict(turns=len(turns), ok=ok, failed=len(failed), not_found=len(not_found),
                backends=by_backend,
                max_backend_share=max(by_backend.values()) / ok if ok else None,
                affinity=aff, failures=[dict(status=t["status"], message=t.get("message"))
                                        for t in failed[:10]])


def report(a):
    d = a.dir
    meta = json.load(open(a.meta))
    res = dict(meta=meta)
    names = meta["replica_logs"]
    access = access_records(d, names)
    md = ["# Gateway replicas sharing state in Redis (issue 15)", ""]
    md += [f"Command: `{meta['command']}`  ", f"Date: {meta['date']}  ",
           f"Machine: {meta['machine']}", ""]
    md += [f"- {n}" for n in meta["notes"]] + [""]

    # 1. conversations
    c = conv_summary(read_jsonl(f"{d}/conversations.jsonl"), access)
    res["conversations"] = c
    md += ["## 1. Conversations across replicas", "",
           f"{meta['users']} users x {meta['turns']} turns of `/v1/responses` with "
           "`previous_response_id`, each turn at a replica drawn at random.", "",
           "| turns | answered 200 | not found (404) | other failures | "
           + " | ".join(f"backend {b}" for b in sorted(c["backends"])) + " | largest share |",
           "|---|---|---|---|" + "---|" * len(c["backends"]) + "---|",
           f"| {c['turns']} | {c['ok']} | {c['not_found']} | {c['failed'] - c['not_found']} | "
           + " | ".join(str(c["backends"][b]) for b in sorted(c["backends"]))
           + f" | {100 * (c['max_backend_share'] or 0):.1f}% |", "",
           "Where a follow-up turn's owner came from (the replica's access log, `affinity`): "
           + ", ".join(f"{k}: {v}" for k, v in sorted(c["affinity"].items()))
           + " (`known`: the shared table said; `found`: the replica asked the backends).", ""]
    goal1 = c["not_found"] == 0 and c["failed"] == 0 and (c["max_backend_share"] or 1) <= 0.60
    md += [f"Goal: zero not found, neither backend above 60% — **{'met' if goal1 else 'NOT met'}**.", ""]

    # 2. quota
    q = read_jsonl(f"{d}/quota.jsonl")
    if q:
        t0 = min(r["sent"] for r in q)
        dur = meta["quota_duration"]
        last = [r for r in q if r["sent"] - t0 >= dur - 120]
        admitted = sum(1 for r in last if r["status"] == 200)
        window_min = (dur - max(0, dur - 120)) / 60.0
        rate = admitted / window_min
        others = [r for r in q if r["status"] not in (200, 429)]
        per_min = []
        for m in range(int(dur // 60)):
            per_min.append(sum(1 for r in q if r["status"] == 200 and
                               m * 60 <= r["sent"] - t0 < (m + 1) * 60))
        no_retry_after = sum(1 for r in q if r["status"] == 429 and not r.get("retry_after"))
        # The most admitted in any 60 s (by send time), from the first request on.
        ts = sorted(r["sent"] for r in q if r["status"] == 200)
        most, j = 0, 0
        for i in range(len(ts)):
            while j < len(ts) and ts[j] < ts[i] + 60:
                j += 1
            most = max(most, j - i)
        res["quota"] = dict(sent=len(q), admitted_total=sum(1 for r in q if r["status"] == 200),
                            rejected=sum(1 for r in q if r["status"] == 429),
                            other=len(others), admitted_per_min_last_2=rate,
                            admitted_by_minute=per_min, limit=meta["quota_limit"],
                            error=(rate - meta["quota_limit"]) / meta["quota_limit"],
                            rejected_without_retry_after=no_retry_after,
                            most_in_any_60s=most,
                            failures=others[:10])
        qq = res["quota"]
        md += ["## 2. A key over its quota, across the replicas", "",
               f"Key limited to {meta['quota_limit']} requests/minute, sent "
               f"{meta['quota_rate']}/minute (evenly spaced, each to a random replica) for "
               f"{dur} s.", "",
               "| sent | admitted | 429 | other | admitted per minute, by minute | "
               "most admitted in any 60 s | admitted/min over the last 2 min | vs the limit |",
               "|---|---|---|---|---|---|---|---|",
               f"| {qq['sent']} | {qq['admitted_total']} | {qq['rejected']} | {qq['other']} | "
               f"{', '.join(map(str, per_min))} | {most} | {rate:.1f} | "
               f"{100 * qq['error']:+.1f}% |", "",
               f"429s without Retry-After: {no_retry_after}.", ""]
        goal2 = abs(qq["error"]) <= 0.05 and qq["other"] == 0
        md += [f"Goal: within 5% of {meta['quota_limit']} — **{'met' if goal2 else 'NOT met'}**.", ""]

    # 3. Redis outage
    o = read_jsonl(f"{d}/outage.jsonl")
    if o:
        ev = meta["outage"]
        down, up = ev["redis_stopped"], ev["redis_started"]
        failed = [t for t in o if t["status"] != 200]
        started = {}
        for t in o:
            if t["turn"] == 0:
                started[t["user"]] = t["start"]
        during = {u for u, s in started.items() if down <= s < up}
        later = [t for t in o if t["user"] in during and t["start"] >= up + ev["settle"]]
        aff_later = {}
        for t in later:
            k = access.get(t["request_id"], {}).get("affinity", "?")
            aff_later[k] = aff_later.get(k, 0) + 1
        in_outage = [t for t in o if down <= t["start"] < up]
        res["outage"] = dict(turns=len(o), failed=len(failed), turns_during=len(in_outage),
                             users_started_during=len(during), later_turns=len(later),
                             later_ok=sum(1 for t in later if t["status"] == 200),
                             later_affinity=aff_later, redis_down_s=up - down,
                             failures=[dict(status=t["status"], message=t.get("message"))
                                       for t in failed[:10]],
                             p99_ms_during=pct([1000 * (t["end"] - t["start"]) for t in in_outage], 0.99),
                             p99_ms_outside=pct([1000 * (t["end"] - t["start"]) for t in o
                                                 if not down <= t["start"] < up], 0.99))
        oo = res["outage"]
        md += ["## 3. Redis stopped mid-run", "",
               f"{meta['outage_users']} conversations of {meta['turns']} turns (first turns "
               f"spread over {meta['outage_stagger']} s, {meta['outage_think']} s between turns), "
               f"random replicas; redis-server stopped (SIGTERM, no persistence) "
               f"{down - ev['t0']:.1f} s into the run and started again, empty, on the same port "
               f"{up - ev['t0']:.1f} s in ({up - down:.1f} s away).", "",
               "| turns | failed | turns while Redis was away | conversations begun while away "
               "| their turns from 5 s after Redis returned | answered 200 | owner from |",
               "|---|---|---|---|---|---|---|",
               f"| {oo['turns']} | {oo['failed']} | {oo['turns_during']} | "
               f"{oo['users_started_during']} | {oo['later_turns']} | {oo['later_ok']} | "
               + ", ".join(f"{k}: {v}" for k, v in sorted(aff_later.items())) + " |", "",
               f"p99 of a turn while Redis was away: {oo['p99_ms_during']:.1f} ms; otherwise "
               f"{oo['p99_ms_outside']:.1f} ms.", ""]
        goal3 = oo["failed"] == 0 and oo["later_ok"] == oo["later_turns"] and oo["later_turns"] > 0
        md += [f"Goal: zero failed, conversations begun during the outage found afterwards from "
               f"any replica — **{'met' if goal3 else 'NOT met'}** "
               f"({aff_later.get('known', 0)} of {oo['later_turns']} known from the shared table "
               "without asking the backends).", ""]

    # 4. latency and CPU, Redis vs memory
    lat = read_jsonl(f"{d}/latency.jsonl")
    if lat:
        cpu = meta["latency_cpu"]
        rows = []
        for s in meta["latency_sets"]:
            ts = [t for t in lat if t["set"] == s["name"]]
            ms = [1000 * (t["end"] - t["start"]) for t in ts if t["status"] == 200 and t["prev"]]
            n = sum(1 for t in ts if t["status"] == 200)
            rows.append(dict(name=s["name"], desc=s["desc"], requests=n,
                             failed=sum(1 for t in ts if t["status"] != 200),
                             p50=pct(ms, 0.5), p99=pct(ms, 0.99), mean=statistics.fmean(ms) if ms else None,
                             cpu_us=1e6 * cpu[s["name"]] / n if n else None))
        res["latency"] = rows
        base = next(r for r in rows if r["name"] == "memory")
        md += ["## 4. What the Redis path costs", "",
               f"The same conversations ({meta['latency_users']} users x {meta['turns']} turns, "
               f"`max_output_tokens` 1, on simulators with `--zero-cost`) through two sets of "
               f"three replicas (four ways), taking turns in {meta['latency_rounds']} rounds. Latency: a "
               "follow-up turn, sent to answer received, at the client. CPU: the three "
               "replicas' threads' time on a CPU over the rounds (/proc/PID/task/*/schedstat, "
               "ns), per request answered.", "",
               "| set | requests | failed | p50 ms | p99 ms | vs memory p50 | vs memory p99 | gateway CPU µs/request | vs memory |",
               "|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            md.append(f"| {r['name']}: {r['desc']} | {r['requests']} | {r['failed']} | "
                      f"{r['p50']:.2f} | {r['p99']:.2f} | {r['p50'] - base['p50']:+.2f} | "
                      f"{r['p99'] - base['p99']:+.2f} | {r['cpu_us']:.0f} | "
                      f"{r['cpu_us'] / base['cpu_us']:.2f}x |")
        md.append("")

    json.dump(res, open(a.out_json, "w"), indent=1)
    open(a.out_md, "w").write("\n".join(md))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("conv")
    c.add_argument("--ports", required=True)
    c.add_argument("--users", type=int, default=32)
    c.add_argument("--turns", type=int, default=20)
    c.add_argument("--max-output-tokens", type=int, default=16)
    c.add_argument("--stagger", type=float, default=0)
    c.add_argument("--think", type=float, default=0)
    c.add_argument("--sticky", action="store_true")
    c.add_argument("--key", default="")
    c.add_argument("--tag", default="c")
    c.add_argument("--seed", type=int, default=1)
    c.add_argument("--timeout", type=float, default=30)
    c.add_argument("--max-seconds", type=float, default=600)
    c.add_argument("--out", required=True)
    q = sub.add_parser("quota")
    q.add_argument("--ports", required=True)
    q.add_argument("--rate", type=float, default=2000)
    q.add_argument("--duration", type=float, default=180)
    q.add_argument("--key", required=True)
    q.add_argument("--seed", type=int, default=2)
    q.add_argument("--timeout", type=float, default=10)
    q.add_argument("--out", required=True)
    r = sub.add_parser("report")
    r.add_argument("--dir", required=True)
    r.add_argument("--meta", required=True)
    r.add_argument("--out-md", required=True)
    r.add_argument("--out-json", required=True)
    a = p.parse_args()
    if a.cmd == "conv":
        asyncio.run(conversations(a))
    elif a.cmd == "quota":
        asyncio.run(quota(a))
    else:
        report(a)


if __name__ == "__main__":
    main()
