#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End-to-end: `llmux demo --quick` runs the seed's whole experiment and prints a complete report
whose figures are plausible (loose bounds; the tight figures belong to the benchmarks), explains
the rows that differ from the seed, shows one agent turn with a tool call through the gateway
(Codex's and Claude Code's), and removes its temporary directory; with --out DIR it writes
index.html and the benchmarks' charts there; with --preset it runs the atlas preset and checks
against that preset's figures."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

llmux = sys.argv[1]
proc = subprocess.run([llmux, "demo", "--quick"], capture_output=True, text=True, timeout=240)
out = proc.stdout
if proc.returncode != 0:
    print(out, proc.stderr)
    sys.exit(f"demo exited {proc.returncode}")

rows = {}
for line in out.splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) == 5 and cells[0] and not cells[0].startswith("---") and cells[0] != "Figure":
        rows[cells[0]] = cells

failures = []

# The agent turn: a function_call from the gateway's server1, the tool's output sent back, and the
# scripted answer that only that output selects.
agent = out.split("## One agent turn with a tool call, through the gateway", 1)
if len(agent) != 2:
    failures.append("the report has no agent turn section")
else:
    for needle in ("← server1: reasoning", "`function_call` `list_files(", "function_call_output",
                   "← server1: \"The demo's directory holds"):
        if needle not in agent[1]:
            failures.append(f"the agent turn lacks {needle!r}: {agent[1]!r}")
    # The same turn on the Messages API, as Claude Code takes it: a tool_use, its tool_result
    # sent back, the answer only that result selects.
    claude = agent[1].split("as Claude Code takes it", 1)
    if len(claude) != 2:
        failures.append(f"the report has no Claude Code turn: {agent[1]!r}")
    else:
        for needle in ("`POST /v1/messages?beta=true`", "`tool_use` `list_files(", "stop_reason `tool_use`",
                       "`tool_result`", "← server1: \"The demo's directory holds"):
            if needle not in claude[1]:
                failures.append(f"the Claude Code turn lacks {needle!r}: {claude[1]!r}")

# Its temporary directory (named on stderr) is gone.
m = re.search(r"logs in (\S+) \(removed at the end\)", proc.stderr)
if not m:
    failures.append(f"stderr does not name the temporary directory: {proc.stderr!r}")
elif os.path.exists(m.group(1)):
    failures.append(f"the temporary directory {m.group(1)} is still there")


def first_number(text):
    m = re.search(r"[-+]?\d+(?:\.\d+)?", text)
    return float(m.group()) if m else None


def check(row, lo, hi, index=0):
    if row not in rows:
        failures.append(f"missing row: {row}")
        return
    nums = [float(x) for x in re.findall(r"[-+]?\d+(?:\.\d+)?", rows[row][2])]
    if len(nums) <= index or not (lo <= nums[index] <= hi):
        failures.append(f"{row}: {rows[row][2]} not in [{lo}, {hi}]")


check("Single stream, server1 (medium prompt)", 40, 60)
check("Single stream, server2", 40, 60)
check("The two machines agree", 0, 10)
check("N=8 aggregate, per machine", 240, 360, 0)
check("N=8 aggregate, per machine", 240, 360, 1)
check("Gateway overhead, serial, completions", -10, 10)
check("Gateway overhead, serial, chat", -10, 10)
check("N=16 via gateway, chat, vs both machines' N=8 sum", 400, 720, 0)
check("N=16 via gateway, chat, vs both machines' N=8 sum", 70, 110, 2)
check("N=16 direct to server1, chat", 250, 420, 0)
for needle in ("# llmux demo", "Seed (two real Sparks)", "round robin"):
    if needle not in out:
        failures.append(f"report lacks '{needle}'")


def explained(row, *needles):
    """The row refers to a note "[k] <row>: ..." below the table holding every needle."""
    if row not in rows:
        return
    ref = rows[row][4]
    if not re.fullmatch(r"\[\d+\]", ref):
        failures.append(f"{row}: no note explains why it differs from the seed ({rows[row]})")
        return
    note = next((l for l in out.splitlines() if l.startswith(f"{ref} {row}: ")), None)
    if note is None:
        failures.append(f"{row}: note {ref} is missing")
        return
    for n in needles:
        if n not in note:
            failures.append(f"{row}: note lacks '{n}': {note}")


# N=8 through the gateway is above one machine's N=8 because it spans two machines; N=16 is near
# 100% of both machines where the seed had 81%.
explained("N=8 via gateway, chat (4 + 4)", "spans two", "scale-out")
explained("N=16 via gateway, chat, vs both machines' N=8 sum", "8 + 8", "81%")
# A row that matches the seed needs no note.
if rows.get("Single stream, server1 (medium prompt)", [""] * 5)[3] == "yes" and \
        rows["Single stream, server1 (medium prompt)"][4]:
    failures.append("a matching row carries a note")

# --out DIR: the report and the charts stay there.
keep = tempfile.mkdtemp(prefix="llmux-demo-test-")
try:
    p2 = subprocess.run([llmux, "demo", "--quick", "--out", keep], capture_output=True, text=True,
                        timeout=240)
    if p2.returncode != 0:
        failures.append(f"demo --out exited {p2.returncode}: {p2.stderr[-2000:]}")
    index = os.path.join(keep, "index.html")
    if not os.path.exists(index):
        failures.append("demo --out wrote no index.html")
    else:
        html = open(index, encoding="utf-8").read()
        for needle in ("Why it differs from the seed", "spans two", "throughput/index.html",
                       "compare/index.html"):
            if needle not in html:
                failures.append(f"index.html lacks '{needle}'")
        if shutil.which("gnuplot") and "compare/charts/tok_s_vs_concurrency.svg" not in html:
            failures.append("index.html shows no chart although gnuplot is installed")
    for sub in ("throughput", "compare"):
        if not os.path.exists(os.path.join(keep, sub, "index.html")):
            failures.append(f"demo --out wrote no {sub}/index.html")
        if shutil.which("gnuplot") and not os.path.exists(
                os.path.join(keep, sub, "charts", "tok_s_vs_concurrency.png")):
            failures.append(f"demo --out drew no {sub} chart")
finally:
    shutil.rmtree(keep, ignore_errors=True)

# --preset: the simulators run the atlas preset, and its calibration rows are checked against
# inference-atlas's figures (~54 tok/s alone, ~174 at N=8; N=16 keeps gaining past N=8).
p3 = subprocess.run([llmux, "demo", "--quick", "--preset", "dgx-spark-qwen3.6-35b-a3b-fp8-atlas"],
                    capture_output=True, text=True, timeout=240)
if p3.returncode != 0:
    failures.append(f"demo --preset exited {p3.returncode}: {p3.stderr[-2000:]}")
rows = {}
for line in p3.stdout.splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) == 5 and cells[0] and not cells[0].startswith("---") and cells[0] != "Figure":
        rows[cells[0]] = cells
for needle in ("--preset dgx-spark-qwen3.6-35b-a3b-fp8-atlas", "inference-atlas, one Spark: ~54"):
    if needle not in p3.stdout:
        failures.append(f"demo --preset report lacks '{needle}'")
check("Single stream, server1 (medium prompt)", 45, 65)
check("N=8 aggregate, per machine", 140, 230, 0)
check("N=16 direct to server1, chat", 1.2, 2.0, 1)
if failures:
    print(out)
    for f in failures:
        print("FAIL:", f)
    sys.exit(1)
print(f"demo report complete: {len(rows)} figures within bounds")
