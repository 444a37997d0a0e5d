#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A stand-in for `llmux gateway`'s dashboard, for working on the page without a build.

    tests/e2e/dashboard/mock_gateway.py [--port 8099] [--fail-every N]

Serves src/gateway/dashboard/ at /dashboard/ (read from disk on every request, so an edit shows
on reload) and a synthetic GET /dashboard/data of the gateway's shape (docs: the JSON served at
/dashboard/data): two backends whose counters and histograms grow as under load, sim2 ejected
for a while every two minutes. --fail-every N answers every Nth data request with 503, to see
the page's "disconnected" badge. Loopback only. A development tool: no test runs it.
"""
import argparse
import json
import math
import mimetypes
import random
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3] / "src" / "gateway" / "dashboard"
START = time.time()
TTFT_LE = [0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40,
           80, 160, 640]
ITL_LE = [0.001, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3,
          0.4, 0.5, 0.75, 1, 2.5, 5]
E2E_LE = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920]
OVERHEAD_LE = [0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
               0.025, 0.05, 0.1, 0.25, 1]


class Hist:
    def __init__(self, le):
        self.le = le
        self.buckets = [0] * (len(le) + 1)
        self.sum = 0.0

    def observe(self, v):
        i = 0
        while i < len(self.le) and v > self.le[i]:
            i += 1
        self.buckets[i] += 1
        self.sum += v

    def json(self):
        counts, c = [], 0
        for b in self.buckets:
            c += b
            counts.append(c)
        return {"le": self.le + ["+Inf"], "counts": counts, "sum": round(self.sum, 6), "count": c}


class Backend:
    def __init__(self, name, port, speed):
        self.name, self.url, self.speed = name, f"http://127.0.0.1:{port}", speed
        self.requests = self.errors = self.prompt = self.gen = 0
        self.inflight = 0
        self.ttft, self.itl, self.e2e = Hist(TTFT_LE), Hist(ITL_LE), Hist(E2E_LE)

    def state(self, t):
        return "ejected" if self.name == "sim2" and 60 <= t % 120 < 75 else "up"

    def step(self, t, dt):
        up = self.state(t) == "up"
        self.inflight = (4 + int(3 * math.sin(t / 9 + self.speed))) if up else 0
        tokps = self.speed * self.inflight * (1 + 0.1 * math.sin(t / 5)) if up else 0
        self.gen += int(tokps * dt)
        n = int(self.inflight * dt / 2.5 + random.random())
        for _ in range(n):
            self.requests += 1
            self.prompt += 256
            if random.random() < 0.01:
                self.errors += 1
            self.ttft.observe(random.lognormvariate(math.log(0.08 * 40 / self.speed), 0.4))
            self.e2e.observe(random.lognormvariate(math.log(2.5), 0.3))
            for _ in range(20):
                self.itl.observe(random.lognormvariate(math.log(1 / self.speed), 0.2))

    def json(self, t):
        return {
            "name": self.name, "url": self.url, "state": self.state(t), "inflight": self.inflight,
            "max_inflight": 16 if self.name == "sim1" else 0, "weight": 1,
            "requests": self.requests, "errors": self.errors, "prompt_tokens": self.prompt,
            "cached_tokens": 0, "generation_tokens": self.gen,
            "ttft": self.ttft.json(), "itl": self.itl.json(), "e2e": self.e2e.json(),
            "reported": ({"running": self.inflight, "waiting": 0, "kv_usage": 0.02 * self.inflight}
                         if self.name == "sim1" else None),
        }


BACKENDS = [Backend("sim1", 30001, 40.0), Backend("sim2", 30002, 33.0)]
REQUEST_OVERHEAD, RELAY_OVERHEAD = Hist(OVERHEAD_LE), Hist(OVERHEAD_LE)
last_step = [START]
data_requests = [0]


def snapshot():
    now = time.time()
    dt = now - last_step[0]
    last_step[0] = now
    t = now - START
    for b in BACKENDS:
        b.step(t, dt)
    for _ in range(int(dt * 10) + 1):
        REQUEST_OVERHEAD.observe(random.lognormvariate(math.log(0.00004), 0.5))
        RELAY_OVERHEAD.observe(random.lognormvariate(math.log(0.000012), 0.5))
    return {
        "version": "0.1.0", "time": round(now, 3), "uptime_s": round(t, 3),
        "gateway": {"connections": 9, "active_requests": sum(b.inflight for b in BACKENDS),
                    "overhead": {"request": REQUEST_OVERHEAD.json(), "relay": RELAY_OVERHEAD.json()}},
        "backends": [b.json(t) for b in BACKENDS],
        "routes": [
            {"name": "responses", "match": "POST /v1/responses*", "model": "", "policy": "first",
             "backends": ["sim1"], "queued": 0},
            {"name": "chat", "match": "POST /v1/chat/completions", "model": "",
             "policy": "least_inflight", "backends": ["sim1", "sim2"], "queued": 0},
        ],
    }


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if path == "/dashboard/data":
            data_requests[0] += 1
            if ARGS.fail_every and data_requests[0] % ARGS.fail_every == 0:
                return self.reply(503, "application/json", b'{"error":"mock failure"}')
            return self.reply(200, "application/json", json.dumps(snapshot()).encode())
        if path in ("/dashboard", "/dashboard/"):
            path = "/dashboard/index.html"
        if path.startswith("/dashboard/"):
            f = (ROOT / path[len("/dashboard/"):]).resolve()
            if f.is_file() and ROOT in f.parents:
                ctype = mimetypes.guess_type(f.name)[0] or "application/octet-stream"
                return self.reply(200, ctype, f.read_bytes())
        self.reply(404, "text/plain", b"not found\n")

    def reply(self, status, ctype, body):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=8099)
    p.add_argument("--fail-every", type=int, default=0)
    ARGS = p.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    print(json.dumps({"event": "ready", "port": srv.server_address[1]}), flush=True)
    srv.serve_forever()
