#!/usr/bin/python3
"""End-to-end: `llmux demo --quick` runs the seed's whole experiment and prints a complete report
whose figures are plausible (loose bounds; the tight figures belong to the benchmarks)."""
import re
import subprocess
import sys

llmux = sys.argv[1]
proc = subprocess.run([llmux, "demo", "--quick"], capture_output=True, text=True, timeout=240)
out = proc.stdout
if proc.returncode != 0:
    print(out, proc.stderr)
    sys.exit(f"demo exited {proc.returncode}")

rows = {}
for line in out.splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) == 4 and cells[0] and not cells[0].startswith("---") and cells[0] != "Figure":
        rows[cells[0]] = cells

failures = []


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
if failures:
    print(out)
    for f in failures:
        print("FAIL:", f)
    sys.exit(1)
print(f"demo report complete: {len(rows)} figures within bounds")
