#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`llmux gateway`'s log lines on stderr (issue 12).

Not on a terminal (a pipe, a file, the journal) every line is one JSON object with ts, level and
msg; a line about a request carries its request id (a client's X-Request-Id escaped as JSON); at
start-up the gateway logs the address it listens on and each backend's first state (up, down,
unchecked). On a terminal (a pty here) the lines are readable text. `--log-format` and
LLMUX_LOG_FORMAT choose either one explicitly; the flag wins.

Usage: gateway_logs_test.py LLMUX_BINARY. Loopback only; every wait is bounded.
"""
import http.client
import http.server
import json
import os
import pty
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

BINARY = sys.argv[1]
FAILURES = []


def check(cond, what, context=""):
    if not cond:
        FAILURES.append(what)
        print(f"FAIL: {what}\n{context}", file=sys.stderr)


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's naming)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_config(directory, up_port, dead_port):
    path = os.path.join(directory, "gw.yaml")
    with open(path, "w") as f:
        f.write(
            'listen: "127.0.0.1:0"\n'
            "threads: 1\n"
            "access_log: off\n"
            "health_checks: {interval: 500ms, timeout: 400ms}\n"
            "backends:\n"
            f'  - {{name: up1, url: "http://127.0.0.1:{up_port}"}}\n'
            f'  - {{name: dead1, url: "http://127.0.0.1:{dead_port}"}}\n'
            f'  - {{name: nocheck1, url: "http://127.0.0.1:{dead_port}",'
            " health_checks: {enabled: false}}\n"
            "routes:\n"
            "  - {name: broken, match: {path: /v1/completions}, backends: [dead1]}\n"
            "  - {name: all, backends: [up1, nocheck1]}\n"
        )
    return path


def start(args, env_extra, stderr):
    env = {k: v for k, v in os.environ.items() if k != "LLMUX_LOG_FORMAT"}
    env.update(SPDLOG_LEVEL="debug", **env_extra)
    proc = subprocess.Popen([BINARY, "gateway", *args], stdout=subprocess.PIPE, stderr=stderr,
                            stdin=subprocess.DEVNULL, env=env)
    ready, _, _ = select.select([proc.stdout], [], [], 10)
    if not ready:
        proc.kill()
        raise SystemExit("the gateway printed no ready line within 10 s")
    line = proc.stdout.readline().decode()
    if not line:
        proc.wait(10)
        raise SystemExit(f"the gateway exited ({proc.returncode}) before its ready line")
    port = json.loads(line)["port"]
    return proc, port


def request(port, request_id):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("POST", "/v1/completions", body=b'{"prompt":"x"}',
              headers={"Content-Type": "application/json", "X-Request-Id": request_id})
    r = c.getresponse()
    r.read()
    c.close()
    return r.status


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        return None


def wait_for(read, needles, seconds=5.0):
    deadline = time.monotonic() + seconds
    text = read()
    while time.monotonic() < deadline and not all(n in text for n in needles):
        time.sleep(0.05)
        text = read()
    return text


def run_to_file(directory, config, args=(), env_extra=None, request_id=None):
    """Runs the gateway with stderr in a file (not a terminal); returns its stderr."""
    err_path = os.path.join(directory, f"err-{time.monotonic_ns()}.log")
    with open(err_path, "wb") as err:
        proc, port = start(["--config", config, *args], env_extra or {}, err)
    read = lambda: open(err_path, encoding="utf-8", errors="replace").read()  # noqa: E731
    needles = ["backend nocheck1 (", "backend up1 (", "backend dead1 ("]
    if request_id is not None:
        check(request(port, request_id) == 503, "the request to a dead backend is answered 503")
        needles.append("connect to dead1")
    wait_for(read, needles)
    check(stop(proc) == 0, "the gateway exits 0 on SIGTERM", read())
    return read(), port


def json_lines(text):
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            check(False, f"a stderr line is not JSON: {line!r}", text)
    return out


def test_json_when_not_a_terminal(directory, config):
    rid = 'rid-"quoted"-\\-back'  # a header value may hold quotes and backslashes
    text, port = run_to_file(directory, config, request_id=rid)
    lines = json_lines(text)
    check(len(lines) >= 5, "JSON lines were written", text)
    for o in lines:
        check(isinstance(o, dict) and {"ts", "level", "msg"} <= o.keys(),
              f"every line has ts, level and msg: {o}")
        check(o.get("ts", "").endswith("Z") and "T" in o.get("ts", ""), f"ts is ISO 8601 UTC: {o}")
    msgs = [o.get("msg", "") for o in lines]
    check(any(f"listening on 127.0.0.1:{port}" in m for m in msgs),
          "the start-up line names the address and port actually bound", text)
    by_backend = {}
    for o in lines:
        if "backend" in o and o["backend"] not in by_backend:
            by_backend[o["backend"]] = o
    check("up (first health check passed)" in by_backend.get("up1", {}).get("msg", ""),
          "the first state of a healthy backend is logged as up", text)
    check("down (first health check failed" in by_backend.get("dead1", {}).get("msg", ""),
          "the first state of a dead backend is logged as down", text)
    check(by_backend.get("dead1", {}).get("level") == "warn", "a backend down is a warning", text)
    check("unchecked (health checks off)" in by_backend.get("nocheck1", {}).get("msg", ""),
          "a backend without checks is logged as unchecked", text)
    about = [o for o in lines if "connect to dead1" in o.get("msg", "")]
    check(len(about) >= 1, "the failed attempt is logged (debug)", text)
    for o in about:
        check(o.get("request_id") == rid, f"the line about the request carries its id: {o}", text)
        check(o["msg"].startswith(f"request {rid}: "), f"the message names the request: {o}")


def test_text_on_request(directory, config):
    text, port = run_to_file(directory, config, args=["--log-format", "text"])
    check(not text.lstrip().startswith("{"), "--log-format text writes text lines", text)
    check(f"[info] llmux gateway: listening on 127.0.0.1:{port}" in text,
          "text lines are spdlog's readable form", text)
    text, _ = run_to_file(directory, config, env_extra={"LLMUX_LOG_FORMAT": "text"})
    check(not text.lstrip().startswith("{"), "LLMUX_LOG_FORMAT=text writes text lines", text)
    text, _ = run_to_file(directory, config, args=["--log-format", "json"],
                          env_extra={"LLMUX_LOG_FORMAT": "text"})
    check(all(line.startswith("{") for line in text.splitlines()) and text,
          "--log-format wins over LLMUX_LOG_FORMAT", text)


def run_on_pty(config, args=(), env_extra=None):
    """Runs the gateway with stderr on a pseudo-terminal; returns what it wrote there.

    The terminal is a color one (TERM=xterm-256color) whatever the environment running the test
    says (a CI job may have TERM unset or "dumb", where colors are rightly left out)."""
    master, slave = pty.openpty()
    env = {"TERM": "xterm-256color", **(env_extra or {})}
    proc, _ = start(["--config", config, *args], env, slave)
    os.close(slave)
    chunks = []

    def drain(seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:
                    return
                if not data:
                    return
                chunks.append(data)
            else:
                text = b"".join(chunks)
                if b"backend nocheck1 (" in text and b"backend up1 (" in text:
                    return

    drain(5)
    proc.send_signal(signal.SIGTERM)
    done = threading.Event()
    threading.Thread(target=lambda: (proc.wait(10), done.set()), daemon=True).start()
    while not done.is_set():
        drain(0.2)
    drain(0.2)
    os.close(master)
    return b"".join(chunks).decode("utf-8", errors="replace").replace("\r\n", "\n")


def test_terminal(config):
    text = run_on_pty(config)
    check("listening on 127.0.0.1:" in text, "the start-up line reaches the terminal", text)
    check(not any(line.startswith("{") for line in text.splitlines()),
          "on a terminal the lines are readable text, not JSON", text)
    check("\x1b[" in text, "on a terminal the level is colored", text)
    text = run_on_pty(config, env_extra={"LLMUX_LOG_FORMAT": "json"})
    lines = [line for line in text.splitlines() if line.strip()]
    check(lines and all(line.startswith("{") for line in lines),
          "LLMUX_LOG_FORMAT=json writes JSON on a terminal too", text)
    for line in lines:
        json.loads(line)


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory() as directory:
        config = write_config(directory, server.server_address[1], free_port())
        test_json_when_not_a_terminal(directory, config)
        test_text_on_request(directory, config)
        test_terminal(config)
    server.shutdown()
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed", file=sys.stderr)
        return 1
    print("gateway logs: every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
