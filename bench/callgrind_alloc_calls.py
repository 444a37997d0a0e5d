#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Calls into the C allocator recorded in callgrind output files (bench/proxy_instructions.sh).

Usage: callgrind_alloc_calls.py FILE...   prints the total over the files.

Counts the `calls=` lines whose callee is an allocator entry point (malloc, calloc, realloc, the
aligned forms, mimalloc's mi_* allocation functions, operator new and new[] where an allocator
library defines them) and whose caller is not in an allocator library itself (so mimalloc's
aligned_alloc calling its mi_malloc_aligned counts once). Callgrind compresses names: "(12) name"
defines id 12 for object (ob=/cob=) or function (fn=/cfn=) names, "(12)" refers to it.
"""
import re
import sys

ENTRY = {
    "malloc", "calloc", "realloc", "reallocarray", "aligned_alloc", "posix_memalign", "memalign",
    "valloc", "pvalloc", "mi_malloc", "mi_calloc", "mi_realloc", "mi_zalloc", "mi_malloc_aligned",
    "mi_zalloc_aligned", "mi_new", "mi_new_aligned", "mi_new_nothrow",
}
NEW = re.compile(r"^operator new(\[\])?\(")
ALLOCATOR_LIB = re.compile(r"(libmimalloc|libjemalloc|libtcmalloc|/libc\.so|/libc-)")


def count(path):
    names = {"ob": {}, "fn": {}}
    total = 0
    ob = ""
    cfn = ""
    cob = None

    def resolve(kind, text):
        m = re.match(r"\((\d+)\)(?: (.*))?$", text)
        if not m:
            return text
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
            return m.group(2)
        return names[kind].get(m.group(1), "")

    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("ob="):
                ob = resolve("ob", line[3:].rstrip("\n"))
            elif line.startswith("cob="):
                cob = resolve("ob", line[4:].rstrip("\n"))
            elif line.startswith(("fn=", "fl=", "fi=", "fe=")):
                if line.startswith("fn="):
                    resolve("fn", line[3:].rstrip("\n"))
                cob = None
            elif line.startswith("cfn="):
                cfn = resolve("fn", line[4:].rstrip("\n"))
            elif line.startswith("calls="):
                n = int(line[6:].split()[0])
                callee_lib = cob if cob is not None else ob
                is_entry = cfn in ENTRY or (NEW.match(cfn) and ALLOCATOR_LIB.search(callee_lib or ""))
                if is_entry and not ALLOCATOR_LIB.search(ob):
                    total += n
                cob = None
    return total


if __name__ == "__main__":
    print(sum(count(p) for p in sys.argv[1:]))
