#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Instructions executed in functions whose names match, from callgrind output files.

Usage: callgrind_function_share.py --group NAME=REGEX [--group ...] FILE...
prints one line per group: NAME INSTRUCTIONS (the sum over the files).

An instruction counts for the function whose machine code it is (callgrind's fn=), code the
compiler inlined into it included (helpers from headers, SIMD intrinsics), once: self cost only
(the inclusive cost a `calls=` line carries is skipped), so a function that calls another out of
line does not count the callee's instructions. A group's REGEX is matched against the function's
name (re.search); a function in several groups counts in each. bench/proxy_instructions.sh uses
it for the share of llmux's HTTP parser in the instructions per request.
"""
import argparse
import re
import sys


def function_costs(path):
    """{function name: self instructions} of one callgrind output file."""
    names = {}  # compressed function names (fn=, cfn=): "(3) name" defines id 3, "(3)" refers to it
    costs = {}
    events_ir = 0  # the position of Ir among the events (callgrind's default: the only one)
    positions = 1  # subpositions before the counters (default: the line)
    function = ""
    skip_next = False

    def name_of(value):
        match = re.match(r"\((\d+)\)(?: (.*))?$", value)
        if not match:
            return value
        if match.group(2) is not None:
            names[match.group(1)] = match.group(2)
        return names.get(match.group(1), "")

    with open(path, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if line.startswith("positions:"):
                positions = len(line.split()[1:])
                continue
            if line.startswith("events:"):
                events = line.split()[1:]
                events_ir = events.index("Ir") if "Ir" in events else 0
                continue
            if line.startswith("fn="):
                function = name_of(line[3:].rstrip("\n"))
                continue
            if line.startswith("cfn="):
                name_of(line[4:].rstrip("\n"))  # a callee: may define a compressed name
                continue
            if line.startswith("calls="):
                skip_next = True  # the next cost line is the call's inclusive cost
                continue
            if not line or not (line[0].isdigit() or line[0] in "+-*"):
                continue
            if skip_next:
                skip_next = False
                continue
            fields = line.split()
            if len(fields) <= positions + events_ir:
                continue  # a counter left out at the end of a line is 0
            costs[function] = costs.get(function, 0) + int(fields[positions + events_ir])
    return costs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--group", action="append", default=[], help="NAME=REGEX")
    parser.add_argument("files", nargs="+")
    options = parser.parse_args()
    groups = [(name, re.compile(pattern))
              for name, _, pattern in (group.partition("=") for group in options.group)]
    totals = {name: 0 for name, _ in groups}
    for path in options.files:
        for function, instructions in function_costs(path).items():
            for name, pattern in groups:
                if pattern.search(function):
                    totals[name] += instructions
    for name, _ in groups:
        print(name, totals[name])


if __name__ == "__main__":
    sys.exit(main())
