#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the llmux binary of a git revision, to compare with the current one side by side:
#   bench/gateway_vs_peers.sh --baseline "$(bench/build_baseline.sh)"
#
# Usage: bench/build_baseline.sh [REV] [OUT]
#   REV  any git revision (default: origin/main when it exists, else HEAD)
#   OUT  where the binary goes (default: /tmp/llmux-<short sha of REV>)
# Prints OUT (the only line on stdout; progress goes to stderr). Next to it, OUT.rev records
# what was built (full sha, then `git describe` and the commit's date and subject), which
# gateway_vs_peers.sh puts in its report.
#
# The build happens in a temporary detached `git worktree` under /tmp, removed afterwards
# (`git worktree remove --force`): the main checkout's files and its build/ are never touched,
# and uncommitted changes there are not part of the baseline. Same CMake flags as the
# Makefile (Ninja, RelWithDebInfo; only the `llmux` target, tests off), and ccache with
# CCACHE_BASEDIR set to the worktree and CCACHE_NOHASHDIR=1, as `make` does for the main
# checkout: every file REV has in common with an earlier build is a cache hit.
# Env: JOBS (default nproc), CMAKE_FLAGS (default as in the Makefile), KEEP_WORKTREE=1 keeps it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
GIT=(git -C "$ROOT")
case ${1:-} in -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;; esac

REV=${1:-}
if [ -z "$REV" ]; then
  if "${GIT[@]}" rev-parse --verify -q origin/main >/dev/null; then REV=origin/main; else REV=HEAD; fi
fi
SHA=$("${GIT[@]}" rev-parse --verify -q "$REV^{commit}") || { echo "build_baseline: unknown revision $REV" >&2; exit 2; }
SHORT=$("${GIT[@]}" rev-parse --short=12 "$SHA")
OUT=${2:-/tmp/llmux-$SHORT}
case $OUT in /*) ;; *) OUT=$PWD/$OUT ;; esac
JOBS=${JOBS:-$(nproc)}
read -r -a CMAKE_FLAGS <<<"${CMAKE_FLAGS:--G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo}"

for t in git cmake ninja; do
  command -v $t >/dev/null || { echo "build_baseline: missing $t (run scripts/setup)" >&2; exit 1; }
done

parent=$(mktemp -d /tmp/llmux-baseline.XXXXXX)
WT=$parent/src
cleanup() {
  if [ "${KEEP_WORKTREE:-0}" = 1 ]; then echo "build_baseline: kept worktree $WT" >&2; return; fi
  if [ -e "$WT" ]; then
    "${GIT[@]}" worktree remove --force "$WT" >&2 || echo "build_baseline: could not remove worktree $WT" >&2
  fi
  rm -rf "$parent"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "build_baseline: $REV = $SHORT, worktree $WT" >&2
"${GIT[@]}" worktree add --detach "$WT" "$SHA" >&2

export CCACHE_BASEDIR=$WT CCACHE_NOHASHDIR=1
t0=$(date +%s)
cmake -S "$WT" -B "$WT/build" "${CMAKE_FLAGS[@]}" -DBUILD_TESTING=OFF >&2
cmake --build "$WT/build" -j "$JOBS" --target llmux >&2
echo "build_baseline: built in $(($(date +%s) - t0)) s" >&2

mkdir -p "$(dirname "$OUT")"
cp "$WT/build/llmux" "$OUT.tmp.$$"
mv -f "$OUT.tmp.$$" "$OUT"
{
  echo "$SHA"
  echo "$("${GIT[@]}" describe --always --tags "$SHA") $("${GIT[@]}" log -1 --format='(%cs) %s' "$SHA") [built from $REV]"
} >"$OUT.rev"
echo "$OUT"
