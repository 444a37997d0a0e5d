#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Helper of bench/fault_bench.sh (issue 9): a light streaming load client and the report.

  fault_bench.py load --url http://127.0.0.1:PORT --streams 100 --duration 90 --out DIR ...
      Closed loop: STREAMS streams, each sends its next streaming chat completion when the
      previous one ends, until DURATION seconds; then waits up to --drain seconds for the
      running ones. One JSON line per request in DIR/records.jsonl (start, end, status, backend
      from X-Llmux-Backend, [DONE] seen, error event seen, tokens, outcome), tokens per second
      per backend, GET /health polled every --health-poll seconds (each backend's state), and
      the RSS of --rss-pid every --rss-every seconds. Written on asyncio streams with a
      hand-rolled HTTP/1.1 + chunked + SSE reader (no JSON parse per token), so 100 streams
      cost a few percent of a core.
  fault_bench.py report --runs DIR ... --out-md F --out-json F --meta F
      Reads the runs written by fault_bench.sh and writes the Markdown table and the JSON.

Outcomes of a request (records.jsonl "outcome"):
  ok            200, stream ended with data: [DONE] and no error event
  error_event   an OpenAI error object arrived in the stream (the gateway's way to end a stream
                whose upstream failed), with or without [DONE] after it
  cut           the stream ended (connection closed, or final chunk) with neither [DONE] nor
                an error event: cut without an error event
  http_error    a non-200 answer (status and message kept)
  connect_error the gateway itself could not be reached
  idle_timeout  no byte for --idle-timeout seconds: the client gave up (stalled or hung)
  closed_before_answer  the connection closed before any response byte (kept-alive reuse race)
  unfinished    still running when the drain ended (cancelled by the client)
"""
import argparse
import asyncio
import json
import math
import os
import re
import resource
import time
from datetime import datetime

MODEL = "Qwen3.6-35B-A3B"


# ------------------------------------------------------------------------------------------
# load client
# ------------------------------------------------------------------------------------------
def request_body(a, rid, stream):
    """Request `rid`'s body: the same prompt and sampling streamed by `load` and asked again
    whole by `verify`."""
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": f"fault bench request {rid}: write a story"}],
        "max_tokens": a.max_tokens, "ignore_eos": True, "temperature": a.temperature, "seed": rid,
    }
    if stream:
        body.update(stream=True, stream_options={"include_usage": True})
    return json.dumps(body).encode()


class Req:
    __slots__ = ("id", "stream", "start", "headers_at", "first_token", "end", "status",
                 "backend", "done", "error", "tokens", "usage_tokens", "outcome", "last_byte",
                 "writer", "message", "reused", "timed_out", "text", "last_token", "max_gap")

    def __init__(self, rid, stream, now):
        self.id, self.stream, self.start = rid, stream, now
        self.headers_at = self.first_token = self.end = None
        self.status = None
        self.backend = None
        self.done = False
        self.error = None
        self.tokens = 0
        self.usage_tokens = None
        self.outcome = None
        self.last_byte = now
        self.writer = None
        self.message = None
        self.reused = False
        self.timed_out = False
        self.text = []  # the content pieces, as sent (JSON-escaped)
        self.last_token = None
        self.max_gap = 0.0  # the longest wait between two tokens (a migration's shows here)

    def record(self):
        return dict(id=self.id, stream=self.stream, start=self.start, headers_at=self.headers_at,
                    first_token=self.first_token, end=self.end, status=self.status,
                    backend=self.backend, done=self.done, error=self.error, tokens=self.tokens,
                    usage_tokens=self.usage_tokens, outcome=self.outcome, message=self.message,
                    reused_conn=self.reused, text=b"".join(self.text).decode("utf-8", "replace"),
                    max_gap=round(self.max_gap, 4))


class Stop(Exception):
    pass


class Client:
    def __init__(self, a):
        self.a = a
        m = re.match(r"http://([^:/]+):(\d+)", a.url)
        self.host, self.port = m.group(1), int(m.group(2))
        self.t0 = a.t0 or time.time()
        self.t_stop = self.t0 + a.duration
        self.t_hard = self.t_stop + a.drain
        self.active = {}
        self.records = []
        self.tok = {}          # backend -> {second: tokens}
        self.next_id = 0
        self.health = []       # [t, {name: state}] on change
        self.health_polls = 0
        self.health_errors = 0
        self.rss = []
        self.stopping = False

    def add_tokens(self, backend, now, n=1):
        sec = int(now - self.t0)
        d = self.tok.setdefault(backend or "?", {})
        d[sec] = d.get(sec, 0) + n

    def body(self, rid):
        return request_body(self.a, rid, stream=True)

    async def one(self, stream, conn):
        """One request on conn (reader, writer) or a fresh connection. Returns the connection
        if it can carry the next request, else None (and it is closed)."""
        rid = self.next_id
        self.next_id += 1
        r = Req(rid, stream, time.time())
        self.active[rid] = r
        keep = False
        try:
            if conn is None:
                try:
                    conn = await asyncio.wait_for(asyncio.open_connection(self.host, self.port), 10)
                except Exception as e:  # noqa: BLE001
                    r.outcome, r.message = "connect_error", repr(e)
                    return None
            else:
                r.reused = True
            reader, writer = conn
            r.writer = writer
            body = self.body(rid)
            writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: %s:%d\r\n"
                         b"Content-Type: application/json\r\nAccept: text/event-stream\r\n"
                         b"Content-Length: %d\r\nX-Request-Id: fb-%d\r\n\r\n"
                         % (self.host.encode(), self.port, len(body), rid) + body)
            keep = await self.read_response(r, reader)
        except (ConnectionError, OSError, asyncio.IncompleteReadError, ValueError) as e:
            if r.outcome is None:
                r.outcome = self.classify_eof(r)
                r.message = r.message or repr(e)
        finally:
            if r.timed_out and r.outcome in (None, "cut"):
                r.outcome = "idle_timeout"
            if r.outcome is None:
                r.outcome = "unfinished"
            r.end = r.end or time.time()
            self.active.pop(rid, None)
            self.records.append(r.record())
            if not keep and r.writer is not None:
                try:
                    r.writer.close()
                except Exception:  # noqa: BLE001
                    pass
        return conn if keep else None

    def classify_eof(self, r):
        if r.timed_out:
            return "idle_timeout"
        if r.status is None:
            # no answer at all: a kept-alive connection closed under the request is not a cut
            return "closed_before_answer"
        if r.status != 200:
            return "http_error"
        if r.error is not None:
            return "error_event"
        return "ok" if r.done else "cut"

    async def read_response(self, r, reader):
        """Reads one response; True when the connection can carry another request."""
        head = await reader.readuntil(b"\r\n\r\n")
        now = time.time()
        r.last_byte = now
        r.headers_at = now
        lines = head.decode("latin-1").split("\r\n")
        r.status = int(lines[0].split(" ")[1])
        hdr = {}
        for ln in lines[1:]:
            if ":" in ln:
                k, v = ln.split(":", 1)
                hdr[k.strip().lower()] = v.strip()
        r.backend = hdr.get("x-llmux-backend")
        close = hdr.get("connection", "").lower() == "close"
        chunked = "chunked" in hdr.get("transfer-encoding", "").lower()
        if r.status != 200:
            if "content-length" in hdr:
                data = await reader.readexactly(int(hdr["content-length"]))
            elif chunked:
                data = b"".join([c async for c in self.chunks(r, reader)])
            else:
                data = await reader.read(65536)
            r.outcome = "http_error"
            r.message = data[:300].decode("utf-8", "replace")
            r.end = time.time()
            return not close and (chunked or "content-length" in hdr)
        buf = b""
        complete = False
        if chunked:
            source = self.chunks(r, reader)
        else:
            source = self.until_eof(r, reader)
        async for piece in source:
            if piece is None:
                complete = True
                break
            buf += piece
            while True:
                i = buf.find(b"\n\n")
                if i < 0:
                    break
                ev, buf = buf[:i], buf[i + 2:]
                self.event(r, ev)
        r.end = time.time()
        if r.error is not None:
            r.outcome = "error_event"
        elif r.done and (complete or not chunked):
            r.outcome = "ok"
        else:
            r.outcome = "idle_timeout" if r.timed_out else "cut"
            if r.done:
                r.message = "[DONE] seen but the chunked body never ended"
        return complete and not close and r.outcome == "ok"

    def event(self, r, ev):
        for line in ev.split(b"\n"):
            if not line.startswith(b"data:"):
                continue
            d = line[5:].strip()
            if d == b"[DONE]":
                r.done = True
            elif b'"error"' in d and b'"choices"' not in d:
                try:
                    e = json.loads(d).get("error", {})
                    r.error = str(e.get("message", e))[:300]
                except Exception:  # noqa: BLE001
                    r.error = d[:300].decode("utf-8", "replace")
            elif b'"usage"' in d and b'"choices":[]' in d:
                try:
                    r.usage_tokens = json.loads(d)["usage"]["completion_tokens"]
                except Exception:  # noqa: BLE001
                    pass
            elif b'"content":"' in d and b'"content":""' not in d:
                now = time.time()
                if r.first_token is None:
                    r.first_token = now
                if r.last_token is not None:
                    r.max_gap = max(r.max_gap, now - r.last_token)
                r.last_token = now
                r.tokens += 1
                self.add_tokens(r.backend, now)
                # The piece as sent (the simulator's words need no escapes): compared whole with
                # an uninterrupted answer by `verify`.
                at = d.find(b'"content":"') + 11
                r.text.append(d[at:d.find(b'"', at)])

    async def chunks(self, r, reader):
        """Yields the decoded chunks, then None after the last (0-size) chunk."""
        while True:
            line = await reader.readuntil(b"\r\n")
            r.last_byte = time.time()
            size = int(line.split(b";")[0].strip(), 16)
            if size == 0:
                await reader.readuntil(b"\r\n")   # no trailers expected
                yield None
                return
            data = await reader.readexactly(size + 2)
            r.last_byte = time.time()
            yield data[:-2]

    async def until_eof(self, r, reader):
        while True:
            data = await reader.read(65536)
            if not data:
                return
            r.last_byte = time.time()
            yield data

    async def stream_loop(self, stream):
        conn = None
        # spread the first requests over the first 0.5 s so 100 connects do not land at once
        await asyncio.sleep(0.5 * stream / max(1, self.a.streams))
        while time.time() < self.t_stop:
            conn = await self.one(stream, conn)

    async def watchdog(self):
        """Closes requests silent for --idle-timeout, and everything at the hard end."""
        while True:
            await asyncio.sleep(0.25)
            now = time.time()
            hard = now >= self.t_hard
            for r in list(self.active.values()):
                if hard or now - r.last_byte > self.a.idle_timeout:
                    if not hard:
                        r.timed_out = True
                        r.message = f"no byte for {self.a.idle_timeout:g} s: the client gave up"
                    elif r.outcome is None:
                        r.outcome = "unfinished"
                    if r.writer is not None:
                        r.writer.close()
                        try:
                            r.writer.transport.abort()
                        except Exception:  # noqa: BLE001
                            pass
            if hard:
                return

    async def health_loop(self):
        if self.a.health_poll <= 0:
            return
        conn = None
        last = None
        while time.time() < self.t_hard and not self.stopping:
            t = time.time()
            try:
                if conn is None:
                    conn = await asyncio.wait_for(asyncio.open_connection(self.host, self.port), 2)
                reader, writer = conn
                writer.write(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 2)
                m = re.search(rb"(?i)content-length:\s*(\d+)", head)
                body = await asyncio.wait_for(reader.readexactly(int(m.group(1))), 2)
                states = {b["name"]: b["state"] for b in json.loads(body)["backends"]}
                self.health_polls += 1
                if states != last:
                    self.health.append([t, states])
                    last = states
            except Exception:  # noqa: BLE001
                self.health_errors += 1
                if conn is not None:
                    conn[1].close()
                conn = None
            await asyncio.sleep(max(0.0, self.a.health_poll - (time.time() - t)))

    async def rss_loop(self):
        if not self.a.rss_pid:
            return
        while time.time() < self.t_stop:
            try:
                with open(f"/proc/{self.a.rss_pid}/status") as f:
                    for ln in f:
                        if ln.startswith("VmRSS:"):
                            self.rss.append([time.time() - self.t0, int(ln.split()[1])])
            except OSError:
                self.rss.append([time.time() - self.t0, None])
            await asyncio.sleep(self.a.rss_every)

    async def main(self):
        if self.t0 > time.time():
            await asyncio.sleep(self.t0 - time.time())
        wd = asyncio.create_task(self.watchdog())
        aux = [asyncio.create_task(self.health_loop()), asyncio.create_task(self.rss_loop())]
        loops = [asyncio.create_task(self.stream_loop(i)) for i in range(self.a.streams)]
        try:
            await asyncio.wait_for(asyncio.gather(*loops, return_exceptions=True),
                                   self.t_hard - time.time() + 5)
        except asyncio.TimeoutError:
            for t in loops:
                t.cancel()
        self.stopping = True
        wd.cancel()
        for t in aux:
            t.cancel()
        await asyncio.gather(wd, *aux, return_exceptions=True)


def cmd_load(a):
    c = Client(a)
    asyncio.run(c.main())
    ru = resource.getrusage(resource.RUSAGE_SELF)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "records.jsonl"), "w") as f:
        for rec in sorted(c.records, key=lambda x: x["start"]):
            f.write(json.dumps(rec) + "\n")
    json.dump(dict(t0=c.t0, duration=a.duration, streams=a.streams, max_tokens=a.max_tokens,
                   idle_timeout=a.idle_timeout, drain=a.drain, ended=time.time(),
                   tokens_per_second={k: {str(s): n for s, n in sorted(v.items())}
                                      for k, v in c.tok.items()},
                   health=c.health, health_polls=c.health_polls, health_errors=c.health_errors,
                   rss=c.rss, client_cpu_s=ru.ru_utime + ru.ru_stime,
                   client_maxrss_kib=ru.ru_maxrss),
              open(os.path.join(a.out, "client.json"), "w"))
    n = len(c.records)
    by = {}
    for rec in c.records:
        by[rec["outcome"]] = by.get(rec["outcome"], 0) + 1
    print(json.dumps(dict(requests=n, outcomes=by, client_cpu_s=round(ru.ru_utime + ru.ru_stime, 2))))


# ------------------------------------------------------------------------------------------
# report
# ------------------------------------------------------------------------------------------
def pct(xs, p):
    """numpy's default (linear) percentile; None for an empty list."""
    xs = sorted(xs)
    if not xs:
        return None
    k = (len(xs) - 1) * p / 100.0
    f = math.floor(k)
    c = min(f + 1, len(xs) - 1)
    return xs[f] + (xs[c] - xs[f]) * (k - f)


LOG_RE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})\] \[[^\]]*\] \[(\w+)\] (.*)$")


def parse_log(path):
    """Gateway log lines about backend state: [(epoch, backend, kind, text)]."""
    out = []
    if not os.path.exists(path):
        return out
    for ln in open(path, errors="replace"):
        m = LOG_RE.match(ln.rstrip("\n"))
        if not m:
            continue
        msg = m.group(3)
        mb = re.match(r"backend (\S+) (ejected|unhealthy|healthy|back in service)", msg)
        if not mb:
            continue
        t = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").timestamp()
        kind = {"back in service": "back_in_service"}.get(mb.group(2), mb.group(2))
        out.append((t, mb.group(1), kind, msg))
    return out


def access_summary(path, t0):
    """The gateway's view: statuses, retried requests, errors (ports and ids stripped)."""
    out = dict(lines=0, status={}, retried=0, errors={}, by_id={}, migrated=0)
    if not os.path.exists(path):
        return out
    for ln in open(path, errors="replace"):
        try:
            x = json.loads(ln)
        except ValueError:
            continue
        if not str(x.get("request_id", "")).startswith("fb-"):
            continue
        out["lines"] += 1
        out["by_id"][int(x["request_id"][3:])] = dict(backend=x.get("backend") or None,
                                                      error=x.get("error"), status=x.get("status"),
                                                      migrations=x.get("migrations", 0),
                                                      migrated_from=x.get("migrated_from"))
        if x.get("migrations", 0) > 0:
            out["migrated"] += 1
        st = str(x.get("status"))
        out["status"][st] = out["status"].get(st, 0) + 1
        if x.get("attempts", 1) > 1:
            out["retried"] += 1
        if x.get("error"):
            e = re.sub(r"127\.0\.0\.1:\d+", "HOST:PORT", x["error"])
            e = re.sub(r"\d+ bytes", "N bytes", e)
            out["errors"][e] = out["errors"].get(e, 0) + 1
    return out


def cmd_verify(a):
    """Asks `--url` (a simulator) whole for every request the gateway migrated (its access log
    says `migrations`) and compares the answer's text with what the client's stream said."""
    import concurrent.futures
    import http.client
    recs = {r["id"]: r for r in (json.loads(ln) for ln in open(os.path.join(a.run, "records.jsonl"))
                                 if ln.strip())}
    access = access_summary(os.path.join(a.run, "access.log"), 0)
    migrated = [i for i, x in sorted(access["by_id"].items()) if x["migrations"] > 0 and i in recs]
    host, port = re.match(r"http://([^:/]+):(\d+)", a.url).groups()

    def whole_text(rid):
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        conn.request("POST", "/v1/chat/completions", request_body(a, rid, stream=False),
                     {"Content-Type": "application/json"})
        answer = json.loads(conn.getresponse().read())
        conn.close()
        return answer["choices"][0]["message"]["content"]

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        wholes = dict(zip(migrated, pool.map(whole_text, migrated)))
    ok = [i for i in migrated if recs[i]["outcome"] == "ok"]
    identical = [i for i in ok if json.loads('"%s"' % recs[i]["text"]) == wholes[i]]
    # The gap the client saw at the migration: its stream's longest wait between two tokens, by
    # the backend the stream was cut from (a killed one, a frozen one: stall detection waits).
    gaps = [recs[i].get("max_gap", 0) for i in ok]
    by_from = {}
    for i in ok:
        by_from.setdefault(access["by_id"][i]["migrated_from"] or "?", []).append(recs[i]["max_gap"])
    json.dump(dict(migrated=len(migrated), migrated_ok=len(ok), identical=len(identical),
                   gap_p50_s=pct(gaps, 50), gap_p99_s=pct(gaps, 99), gap_max_s=max(gaps, default=None),
                   gap_by_from={k: dict(n=len(v), p50_s=pct(v, 50), p99_s=pct(v, 99))
                                for k, v in sorted(by_from.items())},
                   different=[i for i in ok if i not in identical][:20],
                   not_ok={str(i): recs[i]["outcome"] for i in migrated if i not in ok}),
              open(os.path.join(a.run, "verify.json"), "w"))


def load_run(d):
    recs = [json.loads(ln) for ln in open(os.path.join(d, "records.jsonl")) if ln.strip()]
    cl = json.load(open(os.path.join(d, "client.json")))
    ev = {}
    p = os.path.join(d, "events.txt")
    if os.path.exists(p):
        for ln in open(p):
            parts = ln.split()
            if len(parts) >= 2:
                ev[parts[0]] = float(parts[1])
    meta = json.load(open(os.path.join(d, "run.json"))) if os.path.exists(os.path.join(d, "run.json")) else {}
    vp = os.path.join(d, "verify.json")
    return dict(dir=d, recs=recs, client=cl, ev=ev, log=parse_log(os.path.join(d, "gateway.err")),
                meta=meta, access=access_summary(os.path.join(d, "access.log"), cl["t0"]),
                verify=json.load(open(vp)) if os.path.exists(vp) else None)


def r1(x, n=1):
    return None if x is None else round(x, n)


def fault_intervals(ev, t0):
    """Ground truth: when each backend could not serve (relative seconds)."""
    iv = {}
    if "a_kill" in ev:
        iv["A"] = (ev["a_kill"] - t0, ev.get("a_back", math.inf) - t0, "killed (SIGKILL)")
    if "b_stall" in ev:
        iv["B"] = (ev["b_stall"] - t0, ev.get("b_clear", math.inf) - t0, "stalling")
    if "c_hang" in ev:
        iv["C"] = (ev["c_hang"] - t0, ev.get("c_clear", math.inf) - t0, "unreachable (hang)")
    return iv


def analyse_run(run):
    recs, cl, ev = run["recs"], run["client"], run["ev"]
    t0 = cl["t0"]
    dur = cl["duration"]
    backends = run["meta"].get("backends", ["A", "B", "C"])
    iv = fault_intervals(ev, t0)

    def healthy_at(t):
        return [b for b in backends if not (b in iv and iv[b][0] <= t < iv[b][1])]

    # stretches of the timeline with no healthy backend at all (none in the fault runs by design;
    # the reference run, without C, has one while A is down and B stalls)
    none_healthy, x, lo = [], 0.0, None
    while x < dur:
        if not healthy_at(x):
            lo = x if lo is None else lo
        elif lo is not None:
            none_healthy.append([r1(lo, 1), r1(x, 1)])
            lo = None
        x += 0.05
    if lo is not None:
        none_healthy.append([r1(lo, 1), r1(dur, 1)])
    by_id = run["access"].pop("by_id", {})
    for r in recs:
        # the backend that held the request, from the access log when no header came back
        g = by_id.get(r["id"], {})
        r["gw_backend"] = r["backend"] or g.get("backend")
        r["gw_error"] = g.get("error")
        r["s"] = r["start"] - t0
        r["e"] = (r["end"] or r["start"]) - t0
        r["e2e"] = (r["end"] or r["start"]) - r["start"]
    outcomes = {}
    for r in recs:
        outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
    # streams already running on A when it was killed: counted apart
    # (a request sent to A whose answer had not begun has no X-Llmux-Backend: the gateway's
    # error message names A)
    killed = []
    if "A" in iv:
        ka = iv["A"][0]
        on_a = lambda r: r["gw_backend"] == "A" or (
            r["gw_backend"] is None and re.search(r"\bA\b", r.get("message") or "") is not None)
        killed = [r for r in recs if on_a(r) and r["s"] < ka <= r["e"] + 0.5
                  and r["outcome"] != "ok"]
    # streams already running on B when it began stalling: counted apart as well (no gateway can
    # save a stream whose backend stops producing in its middle; it can only end it clearly)
    stalled = []
    if "B" in iv:
        sb = iv["B"][0]
        stalled = [r for r in recs if r["gw_backend"] == "B" and r["s"] < sb <= r["e"] + 0.5
                   and r["outcome"] != "ok"]
    killed_ids = {r["id"] for r in killed} | {r["id"] for r in stalled}
    failed = [r for r in recs if r["outcome"] != "ok" and r["id"] not in killed_ids]
    failed_healthy = [r for r in failed if healthy_at(r["s"])]
    # of those: placed on a faulted backend after its fault began and before the gateway's first
    # log line taking it out (the detection window: nothing had shown the fault yet)
    first_out = {}
    for x in run["log"]:
        if x[2] in ("ejected", "unhealthy") and x[1] in iv and x[0] - t0 >= iv[x[1]][0] - 0.5:
            first_out.setdefault(x[1], x[0] - t0)
    in_window = [r for r in failed_healthy if r["gw_backend"] in iv
                 and iv[r["gw_backend"]][0] <= r["s"] < first_out.get(r["gw_backend"], math.inf)]
    by_kind = {}
    for r in failed_healthy:
        k = f'{r["outcome"]} on {r["gw_backend"]}'
        if r["outcome"] == "http_error":
            k = f'HTTP {r["status"]} from the gateway' + (f' (backend {r["gw_backend"]})' if r["gw_backend"] else "")
        elif r["gw_backend"] is None:
            k = f'{r["outcome"]}, no response header (backend not named, see below)'
        by_kind[k] = by_kind.get(k, 0) + 1
    cut = [r for r in recs if r["outcome"] == "cut"]
    # samples of messages
    samples = {}
    for r in failed + killed:
        k = r["outcome"]
        if k not in samples:
            samples[k] = (r.get("error") or r.get("message") or "")[:200]

    # tokens per second, per backend and total
    tps = cl["tokens_per_second"]
    nsec = int(math.ceil(dur)) + int(cl.get("drain", 0)) + 2
    total = [0] * nsec
    per_b = {}
    for b, d in tps.items():
        arr = [0] * nsec
        for s, n in d.items():
            s = int(s)
            if 0 <= s < nsec:
                arr[s] += n
                total[s] += n
        per_b[b] = arr

    def rate(lo, hi):
        lo, hi = int(math.ceil(lo)), int(math.floor(hi))
        if hi <= lo:
            return None
        return sum(total[lo:hi]) / (hi - lo)

    starts = [v[0] for v in iv.values()]
    ends = [v[1] for v in iv.values() if v[1] != math.inf]
    first_fault = min(starts) if starts else dur
    last_clear = max(ends) if ends else first_fault
    tok = dict(before=rate(2, first_fault), during=rate(first_fault, last_clear),
               after=rate(last_clear, dur), whole=rate(0, dur),
               windows_s=dict(before=[2, r1(first_fault)], during=[r1(first_fault), r1(last_clear)],
                              after=[r1(last_clear), dur]))
    # 5-second bins per backend
    bins = []
    for lo in range(0, int(dur), 5):
        row = dict(t=lo)
        for b in sorted(per_b):
            row[b] = sum(per_b[b][lo:lo + 5]) / 5
        row["total"] = sum(total[lo:lo + 5]) / 5
        row["started"] = sum(1 for r in recs if lo <= r["s"] < lo + 5)
        row["failed"] = sum(1 for r in recs if lo <= r["s"] < lo + 5 and r["outcome"] != "ok")
        bins.append(row)

    # time to eject / re-admit each backend: from the log lines and from /health polls
    health = cl.get("health", [])
    trans = {}
    for b, (lo, hi, what) in iv.items():
        t_lo, t_hi = lo + t0, hi + t0
        out_log = [x for x in run["log"] if x[1] == b and x[2] in ("ejected", "unhealthy") and x[0] >= t_lo - 0.5]
        first_out = min((x for x in out_log), default=None, key=lambda x: x[0])
        back_log = [x for x in run["log"] if x[1] == b and x[2] in ("healthy", "back_in_service") and x[0] >= t_hi - 0.5]
        # /health: first poll after the fault began with the backend not "up"; first poll after
        # the fault ended with it "up" (and "up" or "trial": taking requests again)
        out_poll = next((t for t, st in health if t >= t_lo and st.get(b) not in (None, "up", "trial")), None)
        if out_poll is not None and out_poll > t_hi:
            out_poll_fault = None
        else:
            out_poll_fault = out_poll
        usable_poll = None
        up_poll = None
        state_at_clear = None
        for t, st in health:
            if t <= t_hi:
                state_at_clear = st.get(b)
        if state_at_clear in ("up", "trial"):
            usable_poll = up_poll = None  # never taken out, or already back before the fault ended
        for t, st in health:
            if t >= t_hi and usable_poll is None and st.get(b) in ("up", "trial"):
                usable_poll = t
            if t >= t_hi and up_poll is None and st.get(b) == "up":
                up_poll = t
        states_seen = []
        for t, st in health:
            if t_lo - 0.2 <= t <= t_hi + 30 and (not states_seen or states_seen[-1][1] != st.get(b)):
                states_seen.append((round(t - t_lo, 2), st.get(b)))
        trans[b] = dict(
            fault=what, fault_from_s=r1(lo, 2), fault_to_s=r1(hi, 2),
            out_log_s=r1(first_out[0] - t_lo, 2) if first_out and first_out[0] <= t_hi + 1 else None,
            out_log_line=first_out[3] if first_out and first_out[0] <= t_hi + 1 else None,
            out_poll_s=r1(out_poll_fault - t_lo, 2) if out_poll_fault else None,
            back_log_s=r1(back_log[0][0] - t_hi, 2) if back_log else None,
            back_log_line=back_log[0][3] if back_log else None,
            usable_poll_s=r1(usable_poll - t_hi, 2) if usable_poll and out_poll_fault else None,
            up_poll_s=r1(up_poll - t_hi, 2) if up_poll and out_poll_fault else None,
            state_at_fault_end=state_at_clear,
            states_after_fault_start=states_seen[:12],
        )
    # per faulted backend: requests it was given during its fault, and how they ended
    per_fault = {}
    for b, (lo, hi, what) in iv.items():
        given = [r for r in recs if r["gw_backend"] == b and lo <= r["s"] < hi]
        oc = {}
        for r in given:
            oc[r["outcome"]] = oc.get(r["outcome"], 0) + 1
        per_fault[b] = dict(given=len(given), outcomes=oc,
                            last_given_s=r1(max((r["s"] - lo for r in given), default=None), 2))
    # requests that got no response header and whose backend the access log does not name
    unnamed = [r["s"] for r in recs if r["outcome"] != "ok" and r["gw_backend"] is None
               and r["status"] is None]
    unnamed = dict(n=len(unnamed), first_start_s=r1(min(unnamed, default=None), 2),
                   last_start_s=r1(max(unnamed, default=None), 2))
    log_lines = [dict(t=r1(x[0] - t0, 3), backend=x[1], kind=x[2], line=x[3]) for x in run["log"]]

    # E2E in C's window (by request start) and in the window where C alone is down
    def e2e_window(lo, hi, ok_only=False):
        w = [r for r in recs if lo <= r["s"] < hi and (r["outcome"] == "ok" or not ok_only)]
        xs = [r["e2e"] for r in w]
        failed = sum(1 for r in w if r["outcome"] != "ok")
        return dict(n=len(xs), p50=r1(pct(xs, 50), 3), p99=r1(pct(xs, 99), 3),
                    failed_share=r1(failed / len(w), 4) if w else None)

    return dict(
        requests=len(recs), outcomes=outcomes,
        killed_midstream=dict(n=len(killed),
                              error_event=sum(1 for r in killed if r["outcome"] == "error_event"),
                              cut=sum(1 for r in killed if r["outcome"] == "cut"),
                              other=sum(1 for r in killed if r["outcome"] not in ("error_event", "cut"))),
        stalled_midstream=dict(n=len(stalled),
                               error_event=sum(1 for r in stalled if r["outcome"] == "error_event"),
                               cut=sum(1 for r in stalled if r["outcome"] == "cut"),
                               other=sum(1 for r in stalled if r["outcome"] not in ("error_event", "cut"))),
        failed_in_detection_window=len(in_window),
        failed_with_healthy_backend=len(failed_healthy), failed_with_healthy_by_kind=by_kind,
        failed_with_no_healthy_backend=len(failed) - len(failed_healthy),
        cut_without_error_event=len(cut),
        error_events=outcomes.get("error_event", 0), migrated=run["access"]["migrated"],
        verify=run.get("verify"),
        messages=samples, tok_s=tok, bins=bins, transitions=trans, log_lines=log_lines,
        fault_intervals={b: [r1(v[0], 2), r1(v[1], 2)] for b, v in iv.items()},
        e2e_window=e2e_window, client_cpu_s=r1(cl.get("client_cpu_s"), 2),
        client_cpu_pct=r1(100 * cl.get("client_cpu_s", 0) / max(1e-9, cl["ended"] - t0), 1),
        health_polls=cl.get("health_polls"), health_errors=cl.get("health_errors"),
        t0=t0, duration=dur, access_log=run["access"], per_fault=per_fault, unnamed=unnamed, no_healthy_backend_s=none_healthy,
        events={k: r1(v - t0, 3) for k, v in ev.items() if not k.startswith("cpu_")},
    )


def fmt(x, unit=""):
    if x is None:
        return "—"
    if isinstance(x, float):
        return f"{x:.2f}{unit}" if abs(x) < 100 else f"{x:.0f}{unit}"
    return f"{x}{unit}"


def cmd_report(a):
    meta = json.load(open(a.meta))
    runs = {}
    for d in a.runs:
        name = os.path.basename(d.rstrip("/"))
        runs[name] = analyse_run(load_run(d))
    res = dict(meta=meta, runs={})
    md = []
    W = md.append
    W("# Fault benchmark: llmux gateway under a killed, a stalling and an unreachable backend\n")
    W(f"Produced by `{meta['command']}` on {meta['started']} ({meta['elapsed_s']:.0f} s).")
    W(f"Machine: {meta['machine']}. Load average at start {meta['loadavg_start']}, at end "
      f"{meta['loadavg_end']}. **Shared machine**: other engineers' builds and tests ran "
      "meanwhile, so absolute latencies and tok/s carry that noise; everything (3 simulators, "
      "gateway, client) runs on the same 2 cores.\n")
    W(f"Binary: `{meta['binary']}` (copy of build/llmux, mtime {meta['binary_mtime']}, sha256 "
      f"{meta['binary_sha256'][:16]}…, checkout HEAD {meta['git_head']}).\n")
    W("## Setup\n")
    for line in meta["setup"]:
        W(f"- {line}")
    W("")
    W("Timeline (seconds after the load started; actual times in the JSON):\n")
    W("| backend | fault | from | to |")
    W("|---|---|---:|---:|")
    for b, f, lo, hi in meta["timeline_rows"]:
        W(f"| {b} | {f} | {lo} | {hi} |")
    W("")
    for note in meta.get("timeline_notes", []):
        W(f"- {note}")
    W("")

    order = [n for n in ("faults", "faults_no_health", "reference_no_c") if n in runs]
    label = dict(faults="defaults (health checks + outlier detection)",
                 faults_no_health="health checks and outlier detection off",
                 reference_no_c="reference: C removed from the config")
    W("## Results\n")
    hdr = "| figure | goal | " + " | ".join(label[n] for n in order) + " |"
    W(hdr)
    W("|---|---|" + "---:|" * len(order))

    def row(name, goal, f):
        W(f"| {name} | {goal} | " + " | ".join(f(runs[n]) for n in order) + " |")

    row("requests (started in the run)", "", lambda r: str(r["requests"]))
    row("ok (200, [DONE], no error event)", "", lambda r: str(r["outcomes"].get("ok", 0)))
    row("**failed although a healthy backend existed**", "0",
        lambda r: f'**{r["failed_with_healthy_backend"]}**')
    row("… by kind", "", lambda r: "<br>".join(f"{k}: {v}" for k, v in sorted(r["failed_with_healthy_by_kind"].items(), key=lambda kv: -kv[1])) or "—")
    row("… of which placed on a faulted backend before the gateway's first log line about it", "",
        lambda r: str(r.get("failed_in_detection_window", "—")))
    row("streams running on A when killed: error event / cut / other", "(apart)",
        lambda r: "{error_event} / {cut} / {other}".format(**r["killed_midstream"]))
    row("streams running on B when it began stalling: error event / cut / other", "(apart)",
        lambda r: "{error_event} / {cut} / {other}".format(**r["stalled_midstream"]) if "stalled_midstream" in r else "—")
    row("**streams cut without an error event**", "0", lambda r: f'**{r["cut_without_error_event"]}**')
    row("**streams ended by an error event**", "", lambda r: f'**{r["error_events"]}**')
    row("streams continued on another backend (access log `migrations`)", "",
        lambda r: str(r["migrated"]))
    row("… of them ended ok / with text identical to the whole answer (`verify`)", "",
        lambda r: "—" if not r.get("verify") else f'{r["verify"]["migrated_ok"]} / {r["verify"]["identical"]}')
    row("… their longest gap between two tokens (the migration's), p50 / p99 / max", "",
        lambda r: "—" if not r.get("verify") else
        f'{fmt(r["verify"].get("gap_p50_s"), " s")} / {fmt(r["verify"].get("gap_p99_s"), " s")} / {fmt(r["verify"].get("gap_max_s"), " s")}')
    row("… by the backend they were cut from: streams, gap p50 / p99", "",
        lambda r: "—" if not r.get("verify") else "<br>".join(
            f'{k}: {g["n"]}, {fmt(g["p50_s"], " s")} / {fmt(g["p99_s"], " s")}'
            for k, g in r["verify"].get("gap_by_from", {}).items()) or "—")
    row("client gave up (no byte for the idle timeout)", "", lambda r: str(r["outcomes"].get("idle_timeout", 0)))
    row("still running at the end of the drain", "", lambda r: str(r["outcomes"].get("unfinished", 0)))
    for b in ("A", "B", "C"):
        row(f"{b}: taken out after the fault began (log line / /health poll)", "",
            lambda r, b=b: (lambda t: "—" if t is None else f'{fmt(t["out_log_s"], " s")} / {fmt(t["out_poll_s"], " s")}')(r["transitions"].get(b)))
        row(f"{b}: back after the fault ended (log line / /health up-or-trial / up)", "",
            lambda r, b=b: (lambda t: "—" if t is None else f'{fmt(t["back_log_s"], " s")} / {fmt(t["usable_poll_s"], " s")} / {fmt(t["up_poll_s"], " s")}')(r["transitions"].get(b)))
    cw = meta["c_window"]
    solo = meta["c_solo_window"]
    for n in order:
        r = runs[n]
        r["p99"] = dict(c_window=r["e2e_window"](*cw), c_window_ok=r["e2e_window"](*cw, ok_only=True),
                        c_solo=r["e2e_window"](*solo), c_solo_ok=r["e2e_window"](*solo, ok_only=True))
    ref = runs.get("reference_no_c")

    def p99cell(r, key):
        x = r["p99"][key]
        s = f'{fmt(x["p99"], " s")} (n={x["n"]})'
        if ref is not None and r is not ref and ref["p99"][key]["p99"] and x["p99"] is not None:
            s += f' = {x["p99"] / ref["p99"][key]["p99"]:.2f}× ref'
        return s
    row(f"E2E p99, requests started while C is unreachable [{cw[0]:.0f}, {cw[1]:.0f}) s, all outcomes", "≤ 1.10× ref",
        lambda r: p99cell(r, "c_window"))
    row("… only the ok ones", "", lambda r: p99cell(r, "c_window_ok"))
    row(f"E2E p99, requests started while C alone is out [{solo[0]:.0f}, {solo[1]:.0f}) s, all outcomes", "≤ 1.10× ref",
        lambda r: p99cell(r, "c_solo"))
    row("… only the ok ones", "", lambda r: p99cell(r, "c_solo_ok"))
    row("E2E p50 while C is unreachable, all outcomes", "", lambda r: fmt(r["p99"]["c_window"]["p50"], " s"))
    row("gateway: requests retried on another backend (access log)", "", lambda r: str(r["access_log"]["retried"]))
    row("gateway: statuses (access log)", "", lambda r: ", ".join(f"{k}: {v}" for k, v in sorted(r["access_log"]["status"].items())))
    row("tok/s before the faults", "", lambda r: fmt(r["tok_s"]["before"]))
    row("tok/s during the faults", "", lambda r: fmt(r["tok_s"]["during"]))
    row("tok/s after the faults", "", lambda r: fmt(r["tok_s"]["after"]))
    row("client CPU (% of one core)", "", lambda r: fmt(r["client_cpu_pct"], "%"))
    W("")
    W("Windows: before = [2 s, first fault), during = [first fault, last fault cleared), after = "
      "[last fault cleared, end of load]; tok/s counts content tokens as they reached the client. "
      "Taken out / back: seconds after the fault began / ended; \"—\" = never (within the run). "
      f"A request the client gave up on counts with the time it gave up ({meta.get('idle_timeout_s', '?')} s "
      "of silence), so a p99 of all outcomes that lands on one is that timeout, not a latency: "
      "the ok-only rows and the window where C alone is out are the comparable ones.\n")

    for n in order:
        r = runs[n]
        W(f"### {label[n]}\n")
        if r["no_healthy_backend_s"]:
            W("By the timeline no backend is healthy during "
              + ", ".join(f"[{lo}, {hi}) s" for lo, hi in r["no_healthy_backend_s"])
              + ": requests started then are not counted as 'failed although a healthy backend existed'.\n")
        W("Requests the gateway gave each backend while it was faulty (by start time):\n")
        W("| backend | fault | given | how they ended | last one given, s after the fault began |")
        W("|---|---|---:|---|---:|")
        for b, pf in r["per_fault"].items():
            W(f'| {b} | {r["transitions"][b]["fault"]} | {pf["given"]} | '
              + (", ".join(f"{k}: {v}" for k, v in sorted(pf["outcomes"].items(), key=lambda kv: -kv[1])) or "—")
              + f' | {fmt(pf["last_given_s"])} |')
        W("")
        u = r["unnamed"]
        if u["n"]:
            W(f'Not in the table: {u["n"]} failed requests got no response header, and the gateway\'s '
              f'access log names no backend for them (`"backend": ""`, "client left before the response '
              f'began"); they started between {u["first_start_s"]} and {u["last_start_s"]} s. '
              "Only a backend that holds a request without answering (C, hung) does that here.\n")
        W("Tokens per second per backend, requests started and not ok, per 5 s:\n")
        bs = sorted(k for k in r["bins"][0] if k not in ("t", "total", "started", "failed"))
        W("| t (s) | " + " | ".join(bs) + " | total tok/s | started | not ok |")
        W("|---:|" + "---:|" * (len(bs) + 3))
        for b in r["bins"]:
            W(f'| {b["t"]} | ' + " | ".join(f"{b[k]:.0f}" for k in bs) + f' | {b["total"]:.0f} | {b["started"]} | {b["failed"]} |')
        W("")
        if r["log_lines"]:
            W("Gateway log lines about backends (s after start):\n")
            W("```")
            for x in r["log_lines"][:40]:
                W(f'{x["t"]:8.3f}  {x["line"]}')
            if len(r["log_lines"]) > 40:
                W(f'… {len(r["log_lines"]) - 40} more in the JSON')
            W("```")
        if r["access_log"]["errors"]:
            W("\nErrors in the gateway's access log (count: error):\n")
            for k, v in sorted(r["access_log"]["errors"].items(), key=lambda kv: -kv[1])[:12]:
                W(f"- {v}: `{k[:220]}`")
        if r["messages"]:
            W("\nA message of each failure kind (client side):\n")
            for k, v in r["messages"].items():
                W(f"- {k}: `{v}`")
        W("")

    soak = None
    if a.soak and os.path.exists(os.path.join(a.soak, "client.json")):
        cl = json.load(open(os.path.join(a.soak, "client.json")))
        recs = [json.loads(ln) for ln in open(os.path.join(a.soak, "records.jsonl")) if ln.strip()]
        rss = [(t, v) for t, v in cl["rss"] if v is not None]
        wu = meta["soak_warmup_s"]
        at_wu = next((v for t, v in rss if t >= wu), None)
        end = rss[-1][1] if rss else None
        outc = {}
        for r in recs:
            outc[r["outcome"]] = outc.get(r["outcome"], 0) + 1
        toks = sum(sum(d.values()) for d in cl["tokens_per_second"].values())
        soak = dict(streams=cl["streams"], duration_s=cl["duration"], warmup_s=wu,
                    rss_after_warmup_kib=at_wu, rss_end_kib=end,
                    rss_min_kib=min(v for _, v in rss) if rss else None,
                    rss_max_kib=max(v for _, v in rss) if rss else None,
                    ratio=(end / at_wu) if at_wu and end else None, requests=len(recs),
                    outcomes=outc, tok_s=toks / cl["duration"],
                    client_cpu_pct=100 * cl["client_cpu_s"] / max(1e-9, cl["ended"] - cl["t0"]),
                    rss_samples=cl["rss"])
        W("## Soak\n")
        W(f'{soak["streams"]} streams for {soak["duration_s"] / 60:.1f} min through the gateway '
          f'(defaults, three healthy backends); gateway RSS from /proc every {meta["soak_rss_every"]} s.\n')
        W("| figure | goal | value |")
        W("|---|---|---:|")
        W(f'| RSS after the {wu:.0f} s warm-up | | {fmt(at_wu)} KiB |')
        W(f'| RSS at the end | ≤ 1.10× warm-up | {fmt(end)} KiB ({fmt(soak["ratio"])}×) |')
        W(f'| RSS min / max over the run | | {fmt(soak["rss_min_kib"])} / {fmt(soak["rss_max_kib"])} KiB |')
        W(f'| requests / not ok | | {len(recs)} / {len(recs) - outc.get("ok", 0)} |')
        W(f'| tok/s | | {soak["tok_s"]:.0f} |')
        W(f'| client CPU | | {soak["client_cpu_pct"]:.1f}% |')
        W("")
        step = max(1, len(rss) // 20)
        W("RSS samples (s: KiB): " + ", ".join(f"{t:.0f}: {v}" for t, v in rss[::step]) + "\n")

    # goals
    W("## Goals\n")
    goals = []
    f = runs.get("faults")
    if f:
        goals.append(("no request failed although a healthy backend existed (defaults)",
                      f["failed_with_healthy_backend"] == 0, str(f["failed_with_healthy_backend"])))
        goals.append(("no stream cut without an error event (defaults)",
                      f["cut_without_error_event"] == 0, str(f["cut_without_error_event"])))
        if ref:
            for key, what in (("c_window", "E2E p99 of all requests started while C is unreachable"),
                              ("c_window_ok", "E2E p99 of the ok requests started while C is unreachable"),
                              ("c_solo", "E2E p99 of all requests started while C alone is out")):
                x, y = f["p99"][key]["p99"], ref["p99"][key]["p99"]
                fx, fy = f["p99"][key]["failed_share"], ref["p99"][key]["failed_share"]
                capped = (fx or 0) > 0.01 and (fy or 0) > 0.01
                goals.append((f"{what} within 10% of the reference without C",
                              x is not None and y is not None and x <= 1.10 * y,
                              f"{fmt(x)} s vs {fmt(y)} s" + (f" ({x / y:.2f}×)" if x and y else "")
                              + (f" — over 1% of these requests failed in both runs ({100 * fx:.0f}% and {100 * fy:.0f}%), "
                                 "so a p99 of all outcomes is set by the failure tail (client timeouts, held requests), not by the latency of served requests" if capped else "")))
    if f:
        # time to take each faulted backend out and back: within two check intervals of the
        # defaults (health_checks.interval 2 s), by the gateway's log lines
        for b, t in sorted(f["transitions"].items()):
            out_s, back_s = t.get("out_log_s"), t.get("back_log_s")
            goals.append((f"{b} ({t['fault']}): taken out within 4 s of the fault (defaults)",
                          out_s is not None and out_s <= 4.0, "never" if out_s is None else f"{out_s} s"))
            goals.append((f"{b} ({t['fault']}): back within 4 s of the fault's end (defaults)",
                          back_s is not None and back_s <= 4.0, "never" if back_s is None else f"{back_s} s"))
    if soak:
        goals.append(("soak: RSS at the end within 10% of RSS after the warm-up",
                      soak["ratio"] is not None and soak["ratio"] <= 1.10,
                      f'{fmt(soak["rss_end_kib"])} vs {fmt(soak["rss_after_warmup_kib"])} KiB'))
    W("| goal | met | measured |")
    W("|---|---|---|")
    for g, ok, v in goals:
        W(f"| {g} | {'yes' if ok else '**no**'} | {v} |")
    W("")
    cpu_notes = []
    for d in list(a.runs) + ([a.soak] if a.soak else []):
        p = os.path.join(d, "events.txt")
        if not os.path.exists(p):
            continue
        c = {ln.split()[0]: ln.split()[1] for ln in open(p) if ln.startswith("cpu_")}
        name = os.path.basename(d.rstrip("/"))
        restarted = "a_back" in open(p).read()
        cpu_notes.append(f"CPU seconds in run {name} (from /proc at its end): "
                     + ", ".join(f"{k[4:-2].replace('sim_', 'sim ')} {v}" for k, v in c.items())
                     + (" (A: its restarted process only)." if restarted else "."))
    for note in cpu_notes + [x for x in meta.get("notes", []) if not x.startswith("CPU seconds in run")]:
        W(f"- {note}")

    for n in order:
        r = dict(runs[n])
        r.pop("e2e_window", None)
        res["runs"][n] = r
    res["soak"] = soak
    res["goals"] = [dict(goal=g, met=ok, measured=v) for g, ok, v in goals]
    json.dump(res, open(a.out_json, "w"), indent=1, default=str)
    open(a.out_md, "w").write("\n".join(md) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    l = sub.add_parser("load")
    l.add_argument("--url", required=True)
    l.add_argument("--streams", type=int, default=100)
    l.add_argument("--duration", type=float, default=90)
    l.add_argument("--t0", type=float, default=0, help="epoch at which to start (default now)")
    l.add_argument("--max-tokens", type=int, default=64)
    l.add_argument("--temperature", type=float, default=0.0)
    l.add_argument("--idle-timeout", type=float, default=30)
    l.add_argument("--drain", type=float, default=40)
    l.add_argument("--health-poll", type=float, default=0.1)
    l.add_argument("--rss-pid", type=int, default=0)
    l.add_argument("--rss-every", type=float, default=5)
    l.add_argument("--out", required=True)
    v = sub.add_parser("verify")
    v.add_argument("--url", required=True, help="a simulator that answers as the run's did")
    v.add_argument("--run", required=True, help="the run's directory (records.jsonl, access.log)")
    v.add_argument("--max-tokens", type=int, default=64)
    v.add_argument("--temperature", type=float, default=0.0)
    r = sub.add_parser("report")
    r.add_argument("--runs", nargs="*", default=[])
    r.add_argument("--soak")
    r.add_argument("--meta", required=True)
    r.add_argument("--out-md", required=True)
    r.add_argument("--out-json", required=True)
    a = p.parse_args()
    {"load": cmd_load, "verify": cmd_verify, "report": cmd_report}[a.cmd](a)


if __name__ == "__main__":
    main()
