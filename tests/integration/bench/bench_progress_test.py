#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`llmux bench` progress line (issue 12): on a terminal, every subcommand that sends requests
shows one line overwritten in place (\\r) with elapsed time, requests done/failed and tok/s; on a
pipe, none. A simulator on a loopback port is started and stopped by this test (by its pid)."""
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time

llmux = sys.argv[1]
failures = []


def start_sim():
    p = subprocess.Popen([llmux, "sim", "--host", "127.0.0.1", "--port", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    deadline = time.time() + 15
    while time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if isinstance(v, dict) and "port" in v:
            return p, v["port"]
    p.kill()
    sys.exit("the simulator did not become ready")


def run_on_pty(args, timeout=90):
    """Runs args with stderr on a pseudo-terminal (stdout a pipe); returns (rc, stdout, tty)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    tty = b""
    deadline = time.time() + timeout
    while time.time() < deadline:
        r, _, _ = select.select([master], [], [], 0.5)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed its side
                break
            if not chunk:
                break
            tty += chunk
        elif p.poll() is not None:
            break
    out = p.communicate(timeout=max(1, deadline - time.time()))[0]
    os.close(master)
    return p.returncode, out.decode(), tty.decode(errors="replace")


def run_on_pipe(args, timeout=90):
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


sim, port = start_sim()
url = f"http://127.0.0.1:{port}"
try:
    # Requests of 40 tokens at ~50 tok/s: each takes about 0.8 s, longer than the line's period.
    cases = {
        "run": [llmux, "bench", "run", "--url", url, "--concurrency", "2", "--num-requests", "4",
                "--output-len", "40", "--ignore-eos"],
        "throughput": [llmux, "bench", "throughput", "--target", f"server1={url}", "--repeat", "1",
                       "--concurrency", "2", "--max-tokens", "40"],
        "compare": [llmux, "bench", "compare", "--path", f"direct={url},completions",
                    "--path", f"gateway={url},completions", "--repeat", "1", "--concurrency", "2",
                    "--max-tokens", "40"],
    }
    for name, args in cases.items():
        rc, out, tty = run_on_pty(args)
        if rc != 0:
            failures.append(f"{name} on a terminal exited {rc}: {tty[-2000:]}")
            continue
        if "\r" not in tty:
            failures.append(f"{name}: no line overwritten in place (\\r) on the terminal: {tty!r}")
        for needle in (" done", " failed", "tok/s"):
            if needle not in tty:
                failures.append(f"{name}: the progress line lacks '{needle}': {tty!r}")
        if name != "run" and f"llmux bench {name} [" not in tty:
            failures.append(f"{name}: the progress line does not say which step: {tty!r}")
        if "\r" in out or " in flight" in out:
            failures.append(f"{name}: progress went to stdout: {out!r}")
        # The same on a pipe: no progress at all.
        rc, out, err = run_on_pipe(args)
        if rc != 0:
            failures.append(f"{name} on a pipe exited {rc}: {err[-2000:]}")
        if "\r" in err or " in flight" in err:
            failures.append(f"{name}: a progress line on a non-terminal: {err!r}")
    # --no-progress turns it off on a terminal too.
    rc, out, tty = run_on_pty(cases["run"] + ["--no-progress"])
    if " in flight" in tty:
        failures.append(f"run --no-progress: a progress line anyway: {tty!r}")
finally:
    sim.send_signal(signal.SIGTERM)
    try:
        sim.wait(timeout=10)
    except subprocess.TimeoutExpired:
        sim.kill()

if failures:
    for f in failures:
        print("FAIL:", f)
    sys.exit(1)
print("progress line: on a terminal only, for run, throughput and compare")
