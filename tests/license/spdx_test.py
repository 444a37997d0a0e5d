# SPDX-License-Identifier: Apache-2.0
"""Every source file of llmux carries an SPDX licence line, and every file under another licence
than the project's (Apache-2.0, LICENSE) is named in NOTICE.

Source files: what git tracks (or, outside a git checkout, every file under the tree) with a
source extension or a shebang, less vendored code (src/gateway/dashboard/vendor/, which keeps its
own licence file) and test data (fuzz corpora). The line must be among a file's first three lines
(after a shebang or an HTML doctype).

Usage: spdx_test.py SOURCE_DIR
"""
import os
import re
import subprocess
import sys

SOURCE_SUFFIXES = (".cpp", ".hpp", ".c", ".h", ".py", ".sh", ".mjs", ".js", ".css", ".lua",
                   ".cmake", ".html")
SOURCE_NAMES = ("CMakeLists.txt", "Makefile")
NOT_OURS = ("src/gateway/dashboard/vendor/", "tests/fuzz/corpus/")
PROJECT_LICENSE = "Apache-2.0"
SPDX_LINE = re.compile(r"SPDX-License-Identifier:\s*([A-Za-z0-9.+\- ()]+?)\s*(?:\*/|-->)?\s*$")


def tracked_files(top):
    try:
        out = subprocess.run(["git", "-C", top, "ls-files", "-z"], check=True,
                             capture_output=True).stdout
        return [p for p in out.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        found = []
        for root, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if not d.startswith(".") or d == ".ci"]
            dirs[:] = [d for d in dirs if not d.startswith("build") and d != "node_modules"]
            for name in files:
                found.append(os.path.relpath(os.path.join(root, name), top))
        return found


def is_source(top, path):
    if path.startswith(NOT_OURS):
        return False
    name = os.path.basename(path)
    if name in SOURCE_NAMES or name.endswith(SOURCE_SUFFIXES):
        return True
    full = os.path.join(top, path)
    if os.path.islink(full) or not os.path.isfile(full):
        return False
    with open(full, "rb") as f:
        return f.read(2) == b"#!"


def licence_of(full):
    with open(full, encoding="utf-8", errors="replace") as f:
        head = [f.readline() for _ in range(3)]
    for line in head:
        m = SPDX_LINE.search(line)
        if m:
            return m.group(1)
    return None


def main():
    top = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    with open(os.path.join(top, "NOTICE"), encoding="utf-8") as f:
        notice = f.read()
    checked = 0
    problems = []
    for path in sorted(tracked_files(top)):
        if not is_source(top, path):
            continue
        full = os.path.join(top, path)
        if not os.path.isfile(full):
            continue
        checked += 1
        licence = licence_of(full)
        if licence is None:
            problems.append(f"{path}: no SPDX-License-Identifier line in its first three lines")
        elif licence != PROJECT_LICENSE and path not in notice:
            problems.append(f"{path}: licensed '{licence}', but NOTICE does not name the file")
    for p in problems:
        print(p)
    print(f"spdx: {checked} source files checked, {len(problems)} without a valid licence line")
    if checked == 0:
        print("spdx: no source file found: is SOURCE_DIR the checkout?")
        return 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
